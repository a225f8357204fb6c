"""The Numba decorators every CPU kernel uses, and where their on-disk cache goes.

Kernels are compiled with ``cache=True``. Numba stores the cache next to the source
(``__pycache__``), in ``NUMBA_CACHE_DIR`` when that is set, or in the user-wide cache
(``~/.cache/numba``), whichever it can write. When none is writable (a read-only
install with a read-only home directory), Numba refuses to build cached functions;
this module then points Numba at a private directory under the system temporary
directory (``arrow_sparse-numba-<user>``, mode 0700, owned by the user). When even
that fails, kernels are compiled without a cache, in every process, and one
``RuntimeWarning`` says how to fix it.

Parallel kernels are serial Numba functions over a range ``[lo, hi)`` of independent
iterations (rows, row blocks, chunks): :func:`run` calls one once for a small input,
or splits the range over this thread and the *kernel threads* (a thread pool; the
kernels release the GIL). Numba's ``parallel=True`` is not used: its parallel-loop
passes made a kernel several times as slow to compile, every kernel was compiled
twice (a serial twin for small inputs), and its ``workqueue`` threading layer aborts
when two threads run parallel kernels at once. ``numba.set_num_threads`` (per
thread) still sets how many threads a call uses. :func:`balanced_bounds` cuts rows
into parts of about equal cost for them.
"""

from __future__ import annotations

import concurrent.futures
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba.core import event
from numba.core.caching import FunctionCache
from numba.core.compiler import CompilerBase, DefaultPassBuilder

#: Below this many elements of work a kernel runs on one thread: waking the
#: kernel threads costs more than it saves.
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


def cache_path() -> str | None:
    """Return the directory Numba caches the kernels in; None when they are not cached."""
    if not CACHE:
        return None
    return str(numba.njit(cache=True)(_probe)._cache._cache_path)


#: The package whose compiles :func:`watch_compiles` reports.
_KERNELS = __name__.rpartition(".")[0] + "."


class _CompileListener(event.Listener):
    """Tell ``callback(started, name)`` of each top-level compile of a CPU kernel.

    Numba sends a ``numba:compile`` event only when it compiles (a signature loaded
    from the on-disk cache sends none). A kernel's helpers compile inside it: only the
    outermost compile of a thread is reported.
    """

    def __init__(self, callback: Callable[[bool, str], None]) -> None:
        self._callback = callback
        self._depth = threading.local()

    def _name(self, ev: Any) -> str | None:
        func = ev.data["dispatcher"].py_func
        module = getattr(func, "__module__", "") or ""
        return module[len(_KERNELS):] + "." + func.__qualname__ \
            if module.startswith(_KERNELS) else None

    def on_start(self, ev: Any) -> None:
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        name = self._name(ev)
        if depth == 0 and name is not None:
            self._callback(True, name)

    def on_end(self, ev: Any) -> None:
        self._depth.n = depth = getattr(self._depth, "n", 1) - 1
        name = self._name(ev)
        if depth == 0 and name is not None:
            self._callback(False, name)


def watch_compiles(callback: Callable[[bool, str], None]) -> Callable[[], None]:
    """Report each compile of a CPU kernel; return a function that stops watching.

    ``callback(True, name)`` is called when a kernel starts compiling and
    ``callback(False, name)`` when it is done; ``name`` is ``"<module>.<function>"``
    (``"segment.sum_1d"``). Kernels loaded from the on-disk cache are not compiled, so
    they are not reported.
    """
    listener = _CompileListener(callback)
    event.register("numba:compile", listener)
    return lambda: event.unregister("numba:compile", listener)


def kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn`` for one thread (cached on disk, GIL released)."""
    return numba.njit(cache=CACHE, nogil=True)(fn)


def parallel_kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn``, a loop over ``range(lo, hi)`` whose iterations are independent.

    ``lo, hi`` are ``fn``'s last two parameters. :func:`run` calls it once for a small
    input, or once per part of the range on the kernel threads: one compiled function
    serves both, and Numba's parallel-loop passes (which made a ``prange`` kernel cost
    several times a serial one to compile) never run.

    It is compiled with NumPy's error model, as Numba compiles the body of a
    ``prange`` loop: a division by zero gives inf, nan (floats) or 0 (integers)
    instead of raising ``ZeroDivisionError``, so a loop with a division carries no
    zero test and vectorises (twice as fast, for one, as the optimizer updates).
    Kernels divide only by what they have checked, so results do not change.

    Its array arguments are declared not to overlap (:class:`_NoAliasCompiler`), as
    Numba declares those of a ``prange`` loop's body: a loop that reads one array and
    writes another then needs no run-time overlap test before it vectorises, and loads
    need not be repeated after every store. No caller passes one buffer as two
    arguments of which one is written. These options are part of the key of each
    kernel's cache entries (:class:`_OptionsKeyedCache`).
    """
    dispatcher = numba.njit(cache=CACHE, pipeline_class=_NoAliasCompiler,
                            **_PARALLEL_JIT_OPTIONS)(fn)
    if CACHE:
        dispatcher._cache = _OptionsKeyedCache(fn)
    return dispatcher


#: ``njit`` options of the parallel kernels.
_PARALLEL_JIT_OPTIONS = {"error_model": "numpy", "nogil": True}

#: What parallel kernels are compiled with beyond their source and signature.
PARALLEL_OPTIONS = (*sorted(_PARALLEL_JIT_OPTIONS.items()), ("noalias", True))


class _OptionsKeyedCache(FunctionCache):
    """Numba's on-disk cache of a kernel, with :data:`PARALLEL_OPTIONS` in every key.

    Numba keys a cache entry by signature, CPU and bytecode, and checks the source
    file's time stamp, but not compile options: a kernel cached before an option
    changed (``noalias`` was added) would still be loaded from a kept cache, and run
    without it. With the options in the key, such an entry is never found; the kernel
    is compiled again and stored beside it.
    """

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        return (*super()._index_key(sig, codegen), PARALLEL_OPTIONS)


class _NoAliasCompiler(CompilerBase):
    """Numba's nopython pipeline, with every pointer argument marked LLVM ``noalias``.

    It is the flag Numba sets for the function it makes of a ``prange`` loop's body
    (``parfor_lowering``); ``njit`` has no option for it.
    """

    def define_pipelines(self) -> list[Any]:
        self.state.flags.noalias = True
        return [DefaultPassBuilder.define_nopython_pipeline(self.state)]


def threads_for(work: int) -> int:
    """Kernel threads for ``work`` elements: 1 below :data:`PARALLEL_THRESHOLD`, else all.

    "All" is this thread's Numba thread count (``numba.set_num_threads`` is per
    thread), and 1 inside the kernel pool itself.
    """
    if work < PARALLEL_THRESHOLD or getattr(_LOCAL, "in_pool", False):
        return 1
    return int(numba.get_num_threads())


def run(fn: Any, work: int, n: int, *args: Any) -> list[Any]:
    """Run the :func:`parallel_kernel` ``fn(*args, lo, hi)`` over ``range(n)``.

    With one kernel thread for ``work`` elements (:func:`threads_for`) or ``n < 2``,
    one call ``fn(*args, 0, n)`` on this thread. Otherwise ``range(n)`` is cut into
    ``min(threads, n)`` contiguous parts: this thread runs the first, the kernel pool
    the others (kernels release the GIL). Returns each part's result, in order.
    """
    parts = min(threads_for(work), n)
    if parts <= 1:
        return [fn(*args, 0, n)]
    cuts = [n * p // parts for p in range(parts + 1)]
    pool = _pool()
    futures = [pool.submit(fn, *args, cuts[p], cuts[p + 1]) for p in range(1, parts)]
    try:
        first = fn(*args, 0, cuts[1])
    finally:
        concurrent.futures.wait(futures)
    return [first, *(f.result() for f in futures)]


@kernel
def balanced_bounds(offsets, start, stop, parts, row_cost):  # pragma: no cover
    """Cut rows ``[start, stop)`` into ``parts`` runs of about equal cost.

    Row ``k`` costs its values, ``offsets[k + 1] - offsets[k]``, plus ``row_cost``
    (loop set-up, the store: an empty row is not free). Returns ``bounds``, ``parts + 1``
    long: run ``p`` is rows ``[bounds[p], bounds[p + 1])``, ``bounds[0] == start`` and
    ``bounds[parts] == stop``; it starts at the first row whose cumulative cost reaches
    ``p / parts`` of the total (binary searches on the non-decreasing
    ``offsets[k] + row_cost * k``). A row is never split, so runs may be empty.
    """
    bounds = np.empty(parts + 1, dtype=np.int64)
    base = np.int64(offsets[start]) + row_cost * np.int64(start)
    total = np.int64(offsets[stop]) + row_cost * np.int64(stop) - base
    bounds[0] = start
    for p in range(1, parts):
        target = base + total * p // parts
        lo = np.int64(bounds[p - 1])
        hi = np.int64(stop)
        while lo < hi:  # the first row whose cost reaches the target
            mid = (lo + hi) >> 1
            if np.int64(offsets[mid]) + row_cost * mid < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[p] = lo
    bounds[parts] = stop
    return bounds


_LOCAL = threading.local()
_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _enter_pool() -> None:
    _LOCAL.in_pool = True  # a kernel run from the pool never waits on the pool


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """Return the kernel threads, made on first use: one fewer than Numba's most threads."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(
                max(1, int(numba.config.NUMBA_NUM_THREADS) - 1),
                thread_name_prefix="arrow-sparse-kernel", initializer=_enter_pool)
        return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of its parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def concurrent_parallel_kernels() -> bool:
    """Whether several threads may run the parallel CPU kernels at the same time: always.

    The kernels run on arrow_sparse's own kernel threads (:func:`run`), never on
    Numba's threading layer (whose ``workqueue`` layer aborts on concurrent use).
    """
    return True


def set_num_threads(n: int) -> int:
    """Set this thread's Numba thread count to ``n``; return the previous count."""
    before = int(numba.get_num_threads())
    numba.set_num_threads(n)
    return before
