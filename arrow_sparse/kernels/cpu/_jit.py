"""The Numba decorators every CPU kernel uses, and where their on-disk cache goes.

Kernels are compiled with ``cache=True``. Numba stores the cache next to the source
(``__pycache__``), in ``NUMBA_CACHE_DIR`` when that is set, or in the user-wide cache
(``~/.cache/numba``), whichever it can write. When none is writable (a read-only
install with a read-only home directory), Numba refuses to build cached functions;
this module then points Numba at a private directory under the system temporary
directory (``arrow_sparse-numba-<user>``, mode 0700, owned by the user). When even
that fails, kernels are compiled without a cache, in every process, and one
``RuntimeWarning`` says how to fix it.
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile
import types
import warnings
from collections.abc import Callable
from typing import Any

import numba

#: Below this many elements of work a kernel runs on one thread: waking the
#: thread pool costs more than it saves.
PARALLEL_THRESHOLD = 1 << 16


def _probe() -> int:
    """Stand in for every kernel: where this function can be cached, every kernel can."""
    return 0


def _has_locator() -> bool:
    """Whether Numba finds a writable cache directory for functions of this directory."""
    try:
        numba.njit(cache=True)(_probe)
    except RuntimeError as exc:  # "cannot cache function ...: no locator available ..."
        if "no locator available" not in str(exc):
            raise
        return False
    return True


def _private_dir(path: str) -> bool:
    """Create ``path`` (mode 0700) if needed; True if it is ours alone and writable.

    Numba's cache index is a pickle, so a directory another user could write (in a
    shared temporary directory) must not be used.
    """
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o077:
            return False
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return False
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def _user() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def _choose_cache() -> bool:
    """Make sure kernels can be cached; return False when they cannot (warned once)."""
    if _has_locator():
        return True
    path = os.path.join(tempfile.gettempdir(), f"arrow_sparse-numba-{_user()}")
    previous = numba.config.CACHE_DIR
    if _private_dir(path):
        numba.config.CACHE_DIR = path
        if _has_locator():
            return True
        numba.config.CACHE_DIR = previous
    msg = ("arrow_sparse: Numba has no writable directory for its kernel cache (the package "
           f"directory, NUMBA_CACHE_DIR, the user cache and {path} were tried); kernels are "
           "compiled again in every process. Set NUMBA_CACHE_DIR to a writable directory.")
    warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return False


#: Whether kernels are cached on disk (decided once, when the first kernel module loads).
CACHE = _choose_cache()


def kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn`` for one thread (cached on disk, GIL released)."""
    return numba.njit(cache=CACHE, nogil=True)(fn)


def parallel_kernel(fn: Callable[..., Any]) -> tuple[Any, Any]:
    """Compile ``fn`` (written with ``prange``) twice: ``(serial, parallel)``.

    Numba's on-disk cache keys entries by the function's qualified name and
    signature but not by the ``parallel`` flag, so the serial twin is compiled from
    a copy of the function under its own name.
    """
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial",
                              fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    serial = numba.njit(cache=CACHE, nogil=True)(twin)
    parallel = numba.njit(cache=CACHE, nogil=True, parallel=True)(fn)
    return serial, parallel


def pick(pair: tuple[Any, Any], work: int) -> Any:
    """Return the serial or the parallel twin of a :func:`parallel_kernel` for ``work`` elements."""
    return pair[1] if work >= PARALLEL_THRESHOLD else pair[0]


def _count_up(n):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    total = 0
    for i in numba.prange(n):
        total += i
    return total


@functools.cache
def concurrent_parallel_kernels() -> bool:
    """Whether several threads may run ``parallel=True`` kernels at the same time.

    True for Numba's ``tbb`` and ``omp`` threading layers; the ``workqueue`` layer
    aborts the process on concurrent use. A tiny parallel kernel runs first, so that a
    layer is chosen.
    """
    numba.njit(cache=CACHE, nogil=True, parallel=True)(_count_up)(2)
    return str(numba.threading_layer()) in ("tbb", "omp")


def set_num_threads(n: int) -> int:
    """Set this thread's Numba thread count to ``n``; return the previous count."""
    before = int(numba.get_num_threads())
    numba.set_num_threads(n)
    return before
