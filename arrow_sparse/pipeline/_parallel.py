"""Batch-level parallelism of the local runner: an ordered, bounded thread-pool map.

The steps' kernels release the GIL (Numba ``nogil`` kernels, ``pyarrow.compute``), so
transforming several batches on threads uses several cores while the calling thread
reads the next row group and writes the finished batches, in input order.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .._backend import kernels_may_share_threads, set_kernel_threads

__all__ = ["background", "default_threads", "ordered_map"]

T = TypeVar("T")
R = TypeVar("R")


def default_threads() -> int:
    """Threads the runner uses by default: the cores this process may run on (at most 8).

    Examples
    --------
    >>> 1 <= default_threads() <= 8
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _one_kernel_thread() -> None:
    # Per thread: each pool thread's parallel kernels run on one core, so a pool of
    # n threads keeps n cores busy instead of n * n.
    set_kernel_threads(1)


def ordered_map(fn: Callable[[T], R], items: Iterable[T], threads: int,
                window: int | None = None) -> Iterator[R]:
    """Yield ``fn(item)`` for each item, in order, computing up to ``threads`` at once.

    Parameters
    ----------
    fn
        The function; it should release the GIL for most of its time.
    items
        Consumed lazily on the calling thread, at most ``window`` items ahead of the
        result being yielded (so memory holds about ``window`` batches).
    threads
        Worker threads; 1 (or a Numba threading layer that forbids concurrent
        parallel kernels) maps on the calling thread.
    window
        Items in flight; default ``2 * threads``.

    Yields
    ------
    The results, in the order of ``items``. The first exception raised by ``fn``
    is raised here (after the items before it were yielded); work in flight is
    cancelled or awaited.

    Examples
    --------
    >>> list(ordered_map(lambda x: x * x, range(6), threads=2))
    [0, 1, 4, 9, 16, 25]
    """
    if threads <= 1 or not kernels_may_share_threads():
        for item in items:
            yield fn(item)
        return
    window = max(window or 2 * threads, threads)
    pending: deque[Future[Any]] = deque()
    with ThreadPoolExecutor(threads, thread_name_prefix="arrow-sparse",
                            initializer=_one_kernel_thread) as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


_DONE = object()


def background(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """Iterate ``items`` on a background thread, at most ``depth`` items ahead.

    The runner writes the output on the calling thread while this thread reads the
    input and hands batches to the transform pool, so reading, transforming and
    writing overlap.

    Parameters
    ----------
    items
        Consumed on the background thread only.
    depth
        Items produced ahead of the consumer (memory holds about that many more).

    Yields
    ------
    The items, in order. An exception raised while producing them is raised here;
    closing this generator early stops the thread after its current item.

    Examples
    --------
    >>> list(background(iter(range(5))))
    [0, 1, 2, 3, 4]
    """
    slots: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((_DONE, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put((_DONE, exc))
        finally:
            close = getattr(items, "close", None)
            if callable(close):
                close()

    thread = threading.Thread(target=produce, name="arrow-sparse-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, error = slots.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        thread.join()
