"""Connecting to a Dask cluster for feature-sharded training (:mod:`.sharded`): a local
cluster of worker processes, or an existing scheduler, with the workers' facedetect
version checked. Dask is imported only inside these functions."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os

from ..errors import FacedetectError

CONNECT_TIMEOUT_S = 10


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
        try:
            client = Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as error:
            raise FacedetectError(f"cannot reach the Dask scheduler at {scheduler} within "
                                  f"{timeout:g} s ({type(error).__name__})") from None
    else:
        if not isinstance(workers, int) or workers < 1:
            raise FacedetectError(f"workers must be at least 1, got {workers!r}")
        threads = max(1, (os.cpu_count() or 1) // workers)
        # No work stealing: a shard's search belongs where the shard is; moving one (a
        # gigabyte) to balance a fraction of a second's work would double its memory.
        with dask.config.set({"distributed.scheduler.work-stealing": False}):
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
        from .. import __version__
        return __version__


def disconnect(client) -> None:
    """Close a client from :func:`connect`, and the local cluster it started."""
    cluster = getattr(client, "cluster", None)
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()
