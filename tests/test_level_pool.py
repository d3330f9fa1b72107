"""Pyramid levels scanned side by side: the same windows on any number of threads, in
order; the thread count follows the cores other processes leave free."""

import threading
import time

import numpy as np
import pytest
from PIL import Image

from facedetect.detector import _multiscale as detect_module
from facedetect.detector import _level_pool as level_pool
from facedetect.detector._api import load_model
from facedetect.detector._multiscale import params_for, scan_raw, scanner_for
from facedetect.images import to_grey


@pytest.fixture(scope="module")
def astronaut():
    from skimage import data
    return to_grey(Image.fromarray(data.astronaut()))


@pytest.mark.parametrize("step", ["refine", "auto", 2])
def test_a_scan_gives_the_same_windows_on_one_thread_and_on_several(astronaut, step,
                                                                   monkeypatch):
    model = load_model()
    params = params_for(model, step=step, threshold=params_for(model).threshold - 4.0)
    scanner = scanner_for(model, params)
    found = {}
    for threads in (1, 2, 3):
        monkeypatch.setattr(detect_module, "level_threads", lambda: threads)
        found[threads] = scan_raw(astronaut, scanner, params)
    assert len(found[1][0]) > 10
    for threads in (2, 3):
        for ours, serial in zip(found[threads], found[1]):
            np.testing.assert_array_equal(ours, serial)


def test_ordered_map_keeps_order_and_shares_the_items_with_the_pool():
    names = []
    both = threading.Barrier(2, timeout=30)   # the first two items on two threads at once

    def slow_square(x):
        names.append(threading.current_thread().name)
        if x < 2:
            both.wait()
        time.sleep(0.01 * (5 - x))   # later items finish first
        return x * x

    assert list(level_pool.ordered_map(slow_square, range(5), workers=2)) == \
        [0, 1, 4, 9, 16]
    caller = threading.current_thread().name
    # the caller works too (it does not only wait), and the pool takes its part
    assert caller in names[:2]
    assert all(name == caller or name.startswith("facedetect-levels") for name in names)
    assert any(name.startswith("facedetect-levels") for name in names[:2])
    assert list(level_pool.ordered_map(lambda x: x * x, [3], workers=1)) == [9]


def test_an_error_of_the_function_comes_in_its_items_place():
    def fail_at_three(x):
        if x == 3:
            raise ValueError("three")
        return x

    results = level_pool.ordered_map(fail_at_three, range(8), workers=2)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="three"):
        next(results)


def test_callers_on_several_threads_share_the_pool_and_each_gets_its_own_results():
    def slow_negate(x):
        time.sleep(0.001)
        return -x

    results = {}

    def caller(k):
        results[k] = list(level_pool.ordered_map(slow_negate, range(30 * k, 30 * k + 30),
                                                 workers=2))

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert results == {k: [-x for x in range(30 * k, 30 * k + 30)] for k in range(4)}


def test_a_caller_that_stops_early_leaves_at_most_a_few_items_started():
    list(level_pool.ordered_map(abs, range(10), workers=2))   # a warm pool, as in a suite
    started = []
    both = threading.Barrier(2, timeout=30)   # the pool's thread has surely started

    def record(x):
        started.append(x)
        if x < 2:
            both.wait()
        else:
            time.sleep(0.05)
        return x

    results = level_pool.ordered_map(record, range(100), workers=2)
    assert next(results) == 0
    results.close()   # returns once the pool's thread has finished its item
    after_close = len(started)
    time.sleep(0.2)
    assert after_close <= 4
    assert len(started) == after_close   # nothing started after the close


def test_an_error_of_the_items_themselves_comes_in_its_place():
    def items():
        yield 0
        yield 1
        raise KeyError("the third")

    def slow(x):
        time.sleep(0.02 * (2 - x))
        return x

    for _ in range(5):
        results = level_pool.ordered_map(slow, items(), workers=2)
        assert [next(results), next(results)] == [0, 1]
        with pytest.raises(KeyError, match="the third"):
            next(results)


def test_a_caller_is_not_held_up_by_another_callers_scan():
    list(level_pool.ordered_map(abs, range(10), workers=2))   # a warm pool of one thread
    release = threading.Event()

    def slow(x):
        release.wait(timeout=30)
        return x

    first = level_pool.ordered_map(slow, range(4), workers=2)
    holder = threading.Thread(target=lambda: list(first))
    holder.start()   # its items hold the pool's only thread until released
    start = time.perf_counter()
    assert list(level_pool.ordered_map(abs, range(-5, 0), workers=2)) == [5, 4, 3, 2, 1]
    waited = time.perf_counter() - start
    release.set()
    holder.join(timeout=30)
    assert waited < 10   # done on its own thread, not after the other's 30 s


def _fake_proc(tmp_path, running: int, own_states: list[str]):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"0.50 0.40 0.30 {running}/321 4242\n")
    tasks = tmp_path / "task"
    for k, state in enumerate(own_states):
        (tasks / str(k)).mkdir(parents=True)
        # a command name with spaces and a parenthesis, as /proc allows
        (tasks / str(k) / "stat").write_text(f"{k} (py thon) x) {state} 1 2 3\n")
    return str(loadavg), str(tasks)


@pytest.mark.parametrize("running, own, busy", [
    (1, ["R"], 0),            # only the caller runs
    (2, ["R"], 1),            # one other process holds a core
    (3, ["R", "R", "S"], 1),  # two of the three runnable are this process's threads
    (1, ["S"], 0),            # the caller counts itself even if /proc lagged
])
def test_busy_cores_counts_other_processes_runnable_threads(tmp_path, monkeypatch,
                                                           running, own, busy):
    loadavg, tasks = _fake_proc(tmp_path, running, own)
    monkeypatch.setattr(level_pool, "LOADAVG", loadavg)
    monkeypatch.setattr(level_pool, "TASKS", tasks)
    assert level_pool.busy_cores() == busy


def test_level_threads_leave_busy_cores_alone(monkeypatch):
    import numba
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 4)
    monkeypatch.setattr(level_pool, "busy_cores", lambda: 1)
    assert level_pool.level_threads() == 3
    monkeypatch.setattr(level_pool, "busy_cores", lambda: 9)
    assert level_pool.level_threads() == 1


@pytest.mark.parametrize("free", [1, 2])
def test_kernels_run_in_parallel_only_on_the_cores_left_free(astronaut, free, monkeypatch):
    # Training's scanner asks for parallel kernels on every call. Beside a busy core
    # (one free), they ran on all of numba's threads and waited for the one sharing the
    # busy core: every call must be serial there; with levels side by side, too; a
    # level alone runs in parallel on the free cores.
    import numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    model = load_model()
    params = params_for(model, threshold=params_for(model).threshold - 4.0)
    scanner = detect_module.LevelScanner(model, params.threshold, parallel_min_windows=0)
    calls, scan = [], scanner.scan

    def spy(*args, serial=False, **kwargs):
        calls.append((serial, numba.get_num_threads()))
        return scan(*args, serial=serial, **kwargs)
    monkeypatch.setattr(scanner, "scan", spy)
    monkeypatch.setattr(detect_module, "level_threads", lambda: free)
    several = scan_raw(astronaut, scanner, params)
    assert calls and all(serial for serial, _ in calls)
    calls.clear()
    side = int(max(model.window) * 1.05)   # one level only: it has the free cores
    alone = scan_raw(np.ascontiguousarray(astronaut[:side, :side]), scanner, params)
    assert calls and all(serial == (free == 1) for serial, _ in calls)
    assert all(threads == free for serial, threads in calls if not serial)
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS   # set back
    assert len(several[0]) > 10 and alone is not None


def test_busy_cores_is_zero_where_proc_cannot_be_read(monkeypatch, tmp_path):
    monkeypatch.setattr(level_pool, "LOADAVG", str(tmp_path / "missing"))
    assert level_pool.busy_cores() == 0
