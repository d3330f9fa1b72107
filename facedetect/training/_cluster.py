"""Connecting to a Dask cluster for feature-sharded training (:mod:`._sharded`): a local
cluster of worker processes, or an existing scheduler, with the workers' facedetect
version checked. Dask is imported only inside these functions."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os

from ..errors import FacedetectError

CONNECT_TIMEOUT_S = 10
# Local worker processes at most: the pool splits into at most one shard per 256 features,
# and more processes than cores only share them.
MAX_LOCAL_WORKERS = 256


def connect(workers: int | None = None, scheduler: str | None = None,
            timeout: float = CONNECT_TIMEOUT_S):
    """A ``dask.distributed.Client``: a ``LocalCluster`` of ``workers`` processes (one
    thread each, the machine's cores shared among them), or the scheduler at ``scheduler``
    (refused after ``timeout`` seconds). Workers must run this facedetect version."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise FacedetectError("training on workers needs Dask: pip install "
                              "'facedetect[distributed]'") from None
    if scheduler is not None:
        scheduler = scheduler_address(scheduler)
        handshake(scheduler, timeout)
        try:
            client = Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as error:
            raise FacedetectError(f"cannot reach the Dask scheduler at {scheduler} within "
                                  f"{timeout:g} s ({type(error).__name__})") from None
    else:
        if not isinstance(workers, int) or not 1 <= workers <= MAX_LOCAL_WORKERS:
            raise FacedetectError(f"workers must be 1..{MAX_LOCAL_WORKERS}, got {workers!r}")
        threads = max(1, (os.cpu_count() or 1) // workers)
        # No work stealing: a shard's search belongs where the shard is; moving one (a
        # gigabyte) to balance a fraction of a second's work would double its memory.
        # A task no worker can run for a minute (the only worker killed, and its nanny
        # with it) fails instead of waiting for ever: the run stops with its checkpoint.
        with dask.config.set({"distributed.scheduler.work-stealing": False,
                              "distributed.scheduler.no-workers-timeout": "60s"}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address="127.0.0.1:0",
                                   silence_logs=logging.ERROR,
                                   env={"NUMBA_NUM_THREADS": str(threads)})
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
    try:
        client.wait_for_workers(workers or 1, timeout=timeout)
        check_versions(client)
    except (OSError, TimeoutError, asyncio.TimeoutError):
        disconnect(client)
        where = f"the Dask scheduler at {scheduler}" if scheduler else "the local cluster"
        raise FacedetectError(f"{where} has no workers after {timeout:g} s") from None
    except BaseException:
        disconnect(client)
        raise
    return client


# Address kinds that work without settings this command cannot take: tls:// needs
# certificates (a Security object), ucx:// the UCX library, inproc:// one process.
SCHEMES = ("tcp", "ws")


def scheduler_address(text: str) -> str:
    """``text`` as ``scheme://host:port`` (a bare ``host:port`` is TCP), or one line saying
    what is wrong with it.

    Examples
    --------
    >>> scheduler_address("127.0.0.1:8786")
    'tcp://127.0.0.1:8786'
    >>> scheduler_address("tls://10.0.0.1:8786")
    Traceback (most recent call last):
    ...
    facedetect.errors.FacedetectError: --scheduler: tls:// addresses are not supported ...
    """
    scheme, separator, rest = text.strip().partition("://")
    if not separator:
        scheme, rest = "tcp", text.strip()
    if scheme.lower() not in SCHEMES:
        raise FacedetectError(f"--scheduler: {scheme[:20]}:// addresses are not supported "
                              "(tls needs certificates, ucx the UCX library, inproc one "
                              "process): use tcp://HOST:PORT or ws://HOST:PORT")
    host, _, port = rest.rpartition(":")
    if not host.strip("[]") or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise FacedetectError(f"--scheduler: expected HOST:PORT with a port of 1..65535, got "
                              f"{text[:60]!r}")
    return f"{scheme.lower()}://{rest}"


def handshake(address: str, timeout: float) -> None:
    """Connect to the scheduler at ``address`` and ask who it is, all within ``timeout``
    seconds: Dask bounds only the TCP connect, and a server that accepts and then stays
    silent (or announces a frame of gigabytes and stops) would keep the run waiting for
    ever. One line names the step that failed."""
    import asyncio
    import time

    from distributed.comm import connect as comm_connect
    step = {"name": "the Dask handshake"}
    deadline = time.monotonic() + timeout

    async def probe():
        comm = await comm_connect(address, timeout=timeout)   # connect, then handshake
        try:
            step["name"] = "the identity request"
            await comm.write({"op": "identity"})
            answer = await comm.read()
        finally:
            comm.abort()
        if not (isinstance(answer, dict) and answer.get("type") == "Scheduler"):
            raise ValueError("the answer is not a Dask scheduler's")

    async def bounded():
        return await asyncio.wait_for(probe(), max(0.1, deadline - time.monotonic()))

    try:
        asyncio.run(bounded())
    except (asyncio.TimeoutError, TimeoutError):
        if step["name"] == "the Dask handshake" and not _accepts(address):
            raise FacedetectError(f"cannot reach the Dask scheduler at {address} within "
                                  f"{timeout:g} s (timed out connecting)") from None
        raise FacedetectError(f"the server at {address} accepted the connection but did not "
                              f"answer {step['name']} within {timeout:g} s: is it a Dask "
                              "scheduler?") from None
    except OSError as error:
        raise FacedetectError(f"cannot reach the Dask scheduler at {address} within "
                              f"{timeout:g} s ({type(error).__name__})") from None
    except Exception as error:   # a server speaking another protocol: anything can fail
        kind = type(error)
        raise FacedetectError(f"the server at {address} does not answer as a Dask scheduler "
                              f"({kind.__module__}.{kind.__qualname__} in {step['name']})"
                              ) from None


def _accepts(address: str) -> bool:
    """Whether a TCP connection to ``address`` is accepted (within a second)."""
    import socket
    host, _, port = address.partition("://")[2].rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def check_versions(client) -> None:
    """Refuse workers that run another facedetect version (or none), naming both.

    The version is asked of the installed distribution through the standard library, so
    that a worker without facedetect, or with an older one, answers instead of failing
    to load the question."""
    ours = _installed_version()
    versions = client.run(importlib.metadata.version, "facedetect", on_error="return")
    for address, version in sorted(versions.items()):
        if isinstance(version, BaseException):
            version = f"none ({type(version).__name__})"
        if version != ours:
            raise FacedetectError(f"worker {address} runs facedetect {version}, this process "
                                  f"{ours}: install the same version everywhere")


def _installed_version() -> str:
    try:
        return importlib.metadata.version("facedetect")
    except importlib.metadata.PackageNotFoundError:
        from .._version import __version__
        return __version__


def disconnect(client) -> None:
    """Close a client from :func:`connect`, and the local cluster it started."""
    cluster = getattr(client, "cluster", None)
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()
