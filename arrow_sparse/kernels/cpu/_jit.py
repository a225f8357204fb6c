"""The Numba decorators every CPU kernel uses."""

from __future__ import annotations

import types
from typing import Any, Callable

import numba

#: Below this many elements of work a kernel runs on one thread: waking the
#: thread pool costs more than it saves.
PARALLEL_THRESHOLD = 1 << 16


def kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn`` for one thread (cached on disk, GIL released)."""
    return numba.njit(cache=True, nogil=True)(fn)


def parallel_kernel(fn: Callable[..., Any]) -> tuple[Any, Any]:
    """Compile ``fn`` (written with ``prange``) twice: ``(serial, parallel)``.

    Numba's on-disk cache keys entries by the function's qualified name and
    signature but not by the ``parallel`` flag, so the serial twin is compiled from
    a copy of the function under its own name.
    """
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial",
                              fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    serial = numba.njit(cache=True, nogil=True)(twin)
    parallel = numba.njit(cache=True, nogil=True, parallel=True)(fn)
    return serial, parallel


def pick(pair: tuple[Any, Any], work: int) -> Any:
    """The serial or the parallel twin of a :func:`parallel_kernel` for ``work`` elements."""
    return pair[1] if work >= PARALLEL_THRESHOLD else pair[0]
