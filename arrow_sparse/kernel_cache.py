"""The CPU kernels' on-disk cache: compile them ahead of time, and tell a first run.

Numba compiles a CPU kernel the first time it is called with new argument types (the
dtypes, the offsets width, whether an array is read-only as Arrow's buffers are) and
keeps the machine code in its on-disk cache, so later processes load it in
milliseconds. :func:`warmup` fills the cache ahead of time, for container images and
CI caches: it calls the public functions on tiny inputs of the common types (every
type with ``scope="all"``). ``arrow-sparse warmup`` runs it from the command line.
Where the cache lives is chosen by the kernels' ``_jit`` module (docs/cli.md,
"Kernel cache and cold start").
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import embedding, masked
from ._backend import kernel_cache_dir, watch_kernel_compiles
from .convert import dense_to_jagged, jagged_to_padded_dense
from .elementwise import (
    jagged_dense_bmm,
    jagged_dense_elementwise_add,
    jagged_jagged_bmm,
    jagged_softmax,
    jagged_unique,
    list_slice,
    repeat,
    segment_cumsum,
    segment_softmax,
)
from .errors import ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged
from .keyed import KeyedJagged
from .segment import (
    embedding_bag,
    segment_argmax,
    segment_logsumexp,
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
    unsorted_segment_max,
    unsorted_segment_sum,
)
from .sparse import SparseCOO
from .transforms import (
    bucketize,
    categorify,
    drop_nulls,
    fill_null,
    fit_vocabulary,
    hash_bucket,
    length_stats,
    pad_or_truncate,
    value_counts,
)

__all__ = ["SCOPES", "WarmupReport", "looks_cold", "warmup"]

#: What :func:`warmup` compiles: ``"common"``, the kernels of the usual calls on the
#: usual types; ``"all"``, those of every public function on every type it takes.
SCOPES = ("common", "all")


@dataclasses.dataclass
class WarmupReport:
    """What a :func:`warmup` did.

    Attributes
    ----------
    scope
        The scope warmed up.
    calls
        Calls made (each on a tiny input).
    compiled
        Kernels compiled (one per kernel and argument types); 0 when the cache held
        them all already.
    seconds
        Wall time.
    cache_dir
        Where the kernels are cached; None when they cannot be (then a warm-up lasts
        only as long as its process).
    """

    scope: str
    calls: int
    compiled: int
    seconds: float
    cache_dir: str | None

    def __str__(self) -> str:
        where = f"cached in {self.cache_dir}" if self.cache_dir else "not cached (see docs/cli.md)"
        what = (f"compiled {self.compiled} kernel{'s' if self.compiled != 1 else ''}"
                if self.compiled else "nothing to compile")
        return (f"warmup ({self.scope}): {self.calls} calls, {what} in {self.seconds:.1f} s; "
                f"{where}")


def warmup(scope: str = "common", *, functions: Sequence[str] | None = None,
           progress: Any = None) -> WarmupReport:
    """Compile the CPU kernels ahead of time into Numba's on-disk cache.

    Calls the public functions on tiny inputs of the common types (Arrow ``list`` and
    ``large_list`` arrays, with and without nulls; float32, float64 and int64 values;
    strings where a function takes them), so that later processes load every kernel
    they need from the cache instead of compiling it on their first call. Kernels
    already in the cache are loaded, not compiled again.

    Parameters
    ----------
    scope
        ``"common"`` (default): the segment reductions, embedding bags, hashing,
        vocabularies, padding and the other calls feature pipelines make. ``"all"``:
        every public function, on every value type it takes (several minutes).
    functions
        Only the calls of these public functions (names as in ``arrow_sparse``, e.g.
        ``["segment_sum"]``); default all of the scope's.
    progress
        None, or an object with ``update(calls)`` (a
        :class:`~arrow_sparse._progress.Progress`) told of each call; its ``total``
        attribute, if any, is set first.

    Returns
    -------
    WarmupReport
        Calls made, kernels compiled, seconds and the cache directory.

    Raises
    ------
    TypeError
        ``scope`` is not a string, ``functions`` not a sequence of names, ``progress``
        has no ``update`` method.
    ValueError
        An unknown scope or function name.

    See Also
    --------
    arrow_sparse.cli : ``arrow-sparse warmup [--all]`` runs this.

    Notes
    -----
    The cache is keyed by the kernels' source files and the CPU: a warm-up is good for
    the installed version on machines of the same CPU type. Where no cache directory
    is writable, kernels are compiled in every process and a warm-up only helps the
    process that runs it.

    Examples
    --------
    Compile (or load from the cache) what ``length_stats`` needs on the common types:

    >>> report = asp.warmup(functions=["length_stats"])
    >>> report.scope, report.calls
    ('common', 4)
    >>> print(report)  # doctest: +ELLIPSIS
    warmup (common): 4 calls, ... s; ...
    """
    if not isinstance(scope, str):
        msg = f"warmup: scope must be a string, got {type(scope).__name__}"
        raise ArrowSparseTypeError(msg)
    if scope not in SCOPES:
        msg = f"warmup: scope must be 'common' or 'all', got {scope!r}"
        raise ArrowSparseValueError(msg)
    if progress is not None:
        _check_progress(progress)
    calls = list(_calls(scope))
    if functions is not None:
        if (isinstance(functions, str) or not isinstance(functions, Sequence)
                or not all(isinstance(f, str) for f in functions)):
            msg = "warmup: functions must be a sequence of function names, e.g. ['segment_sum']"
            raise ArrowSparseTypeError(msg)
        known = {name for name, _ in calls}
        unknown = sorted(set(functions) - known)
        if unknown:
            msg = (f"warmup: no {scope} warm-up calls for {unknown}; known: "
                   f"{', '.join(sorted(known))}")
            raise ArrowSparseValueError(msg)
        calls = [(name, call) for name, call in calls if name in set(functions)]
    compiled = [0]

    def count(started: bool, name: str) -> None:
        compiled[0] += started

    if progress is not None and hasattr(progress, "total"):
        progress.total = len(calls)
    stop = watch_kernel_compiles(count)  # imports Numba
    t0 = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            for _, call in calls:
                call()
                if progress is not None:
                    progress.update(1)
    finally:
        stop()
    return WarmupReport(scope=scope, calls=len(calls), compiled=compiled[0],
                        seconds=time.perf_counter() - t0, cache_dir=kernel_cache_dir())


def _check_progress(progress: Any) -> None:
    """Refuse a ``progress`` without a working ``update(n)`` before any work starts."""
    msg = (f"warmup: progress must be None or have an update(n) method that takes a count "
           f"of calls, got {type(progress).__name__}")
    if not callable(getattr(progress, "update", None)):
        raise ArrowSparseTypeError(msg)
    try:
        progress.update(0)  # another object's update (a Vocabulary's) fails here, not midway
    except Exception as exc:  # noqa: BLE001 - any failure means it is not a progress object
        detail = f"{msg} (update(0) raised {type(exc).__name__}: {exc})"
        raise ArrowSparseTypeError(detail) from None


def looks_cold() -> bool:
    """Whether no CPU kernel has been cached yet where Numba would look (a quick guess).

    Imports nothing: it looks for Numba's index files (``*.nbi``) of the kernels'
    directory in ``NUMBA_CACHE_DIR`` when that is set, else beside the kernels, in the
    user-wide cache and in the private temporary directory ``_jit`` falls back to. A
    first run says it is compiling before Numba is even loaded.
    """
    return not any(path.is_dir() and any(path.glob("*.nbi")) for path in _cache_candidates())


def _cache_candidates() -> list[Path]:
    # Numba's cache locators: NUMBA_CACHE_DIR/<dir>_<sha1 of the source directory>,
    # else __pycache__ beside the source, else the user-wide cache, else (_jit) a
    # private temporary directory.
    source = Path(__file__).resolve().parent / "kernels" / "cpu"
    sub = f"{source.name}_{hashlib.sha1(str(source).encode()).hexdigest()}"
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return [Path(env) / sub]
    user_cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    user = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    return [source / "__pycache__", Path(user_cache).expanduser() / "numba" / sub,
            Path(tempfile.gettempdir()) / f"arrow_sparse-numba-{user}" / sub]


# ----------------------------------------------------------------------- the calls
_OFFSETS = [0, 2, 2, 5, 6]  # four rows: two values, none, three, one
_NUMBERS = ("float32", "float64", "int64")
_MORE_NUMBERS = ("int32", "uint8", "bool")


def _values(dtype: str) -> pa.Array:
    if dtype == "string":
        return pa.array(["a", "bb", "a", "ccc", "dd", "a"])
    if dtype == "bool":
        return pa.array([True, False, True, True, False, True])
    return pa.array(np.array([3, 1, 2, 0, 1, 3], dtype=dtype))


def _lists(dtype: str, width: int, nulls: bool) -> pa.Array:
    """Four rows of ``dtype`` in an Arrow ``list`` (width 32) or ``large_list`` (64)."""
    cls = pa.ListArray if width == 32 else pa.LargeListArray
    offsets = pa.array(_OFFSETS, pa.int32() if width == 32 else pa.int64())
    mask = pa.array([False, True, False, False]) if nulls else None
    return cls.from_arrays(offsets, _values(dtype), mask=mask)


def _flat(dtype: str, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Writable numpy values and offsets (a second set of kernel argument types)."""
    values = np.array([3, 1, 2, 0, 1, 3], dtype=dtype)
    return values, np.array(_OFFSETS, dtype=np.int32 if width == 32 else np.int64)


def _variants(numbers: Sequence[str]) -> Iterator[tuple[str, int, bool]]:
    for dtype in numbers:
        for width in (32, 64):
            for nulls in (False, True):
                yield dtype, width, nulls


Call = tuple[str, Callable[[], Any]]


def _grad(table: np.ndarray) -> embedding.SparseGrad:
    """Return a (coalesced) sparse gradient of ``table`` from four bags."""
    dy = np.ones((4, table.shape[1]), table.dtype)
    return embedding.lookup_backward(dy, _lists("int64", 64, False), num_embeddings=len(table))


def _max_grad(table: np.ndarray) -> embedding.SparseGrad:
    """Return the gradient of four max-pooled bags, through the forward's argmax."""
    ids = _lists("int64", 64, False)
    _, argmax = embedding.lookup(table, ids, mode="max", return_argmax=True)
    dy = np.ones((4, table.shape[1]), table.dtype)
    return embedding.lookup_backward(dy, ids, mode="max", argmax=argmax,
                                     num_embeddings=len(table))


def _calls(scope: str) -> Iterator[Call]:
    yield from _common()
    if scope == "all":
        yield from _everything()


def _common() -> Iterator[Call]:
    table32 = np.ones((8, 4), np.float32)
    table64 = np.ones((8, 4), np.float64)
    for dtype, width, nulls in _variants(_NUMBERS):
        arr = _lists(dtype, width, nulls)
        yield "segment_sum", lambda a=arr: segment_sum(a)
        yield "segment_mean", lambda a=arr: segment_mean(a)
        yield "segment_max", lambda a=arr: segment_max(a)
        yield "segment_min", lambda a=arr: segment_min(a)
        yield "pad_or_truncate", lambda a=arr: pad_or_truncate(a, 3, side="left")
        if dtype != "int64":
            yield "bucketize", lambda a=arr: bucketize(a, [0.5, 2.5])
    for dtype in _NUMBERS:
        for width in (32, 64):
            values, offsets = _flat(dtype, width)
            yield "segment_sum", lambda v=values, o=offsets: segment_sum(v, offsets=o)
            yield "segment_mean", lambda v=values, o=offsets: segment_mean(v, offsets=o)
            yield "segment_max", lambda v=values, o=offsets: segment_max(v, offsets=o)
            yield ("jagged_to_padded_dense",
                   lambda v=values, o=offsets: jagged_to_padded_dense(v, [o], [3]))
    for dtype, width, nulls in _variants(("int64", "string")):
        arr = _lists(dtype, width, nulls)
        yield "hash_bucket", lambda a=arr: hash_bucket(a, 1000)
        yield "fit_vocabulary", lambda a=arr: fit_vocabulary(a)
        yield "categorify", lambda a=arr: categorify(a, fit_vocabulary(a))
        yield "list_slice", lambda a=arr: list_slice(a, -2, None)
        yield "value_counts", lambda a=arr: value_counts(a)
        yield "Jagged.to_csr", lambda a=arr, d=dtype: (
            Jagged.from_arrow(a).to_csr(4).canonical().to_dense() if d == "int64" else None)
    for width, nulls in ((32, False), (32, True), (64, False), (64, True)):
        ids = _lists("int64", width, nulls)
        for table in (table32, table64):
            for mode in ("sum", "mean", "max"):
                yield ("embedding_bag",
                       lambda t=table, i=ids, m=mode: embedding_bag(t, i, mode=m))
        _, offsets = _flat("int64", width)
        yield ("embedding_bag", lambda o=offsets: embedding_bag(
            table32, np.array([0, 1, 2, 3, 1, 0], np.int64), offsets=o, mode="sum"))
        yield "length_stats", lambda a=ids: length_stats(a)
        yield "fill_null", lambda a=ids: fill_null(a, 0)
        yield "drop_nulls", lambda a=ids: drop_nulls(a)


def _everything() -> Iterator[Call]:
    for dtype, width, nulls in _variants(_NUMBERS + _MORE_NUMBERS):
        arr = _lists(dtype, width, nulls)
        if dtype != "bool":
            for name, func in (("segment_sum", segment_sum), ("segment_mean", segment_mean),
                               ("segment_max", segment_max), ("segment_min", segment_min),
                               ("segment_prod", segment_prod),
                               ("segment_argmax", segment_argmax)):
                yield name, lambda f=func, a=arr: f(a)
            yield "bucketize", lambda a=arr: bucketize(a, [0.5, 2.5])
            yield "segment_cumsum", lambda a=arr: segment_cumsum(a)
        if dtype in ("float32", "float64"):
            yield "segment_logsumexp", lambda a=arr: segment_logsumexp(a)
            yield "segment_softmax", lambda a=arr: segment_softmax(a)
        yield "pad_or_truncate", lambda a=arr: pad_or_truncate(a, 3)
        yield "list_slice", lambda a=arr: list_slice(a, 1, None)
        yield "jagged_unique", lambda a=arr: jagged_unique(a)
        yield "fill_null", lambda a=arr, d=dtype: fill_null(a, True if d == "bool" else 0)
        yield "value_counts", lambda a=arr: value_counts(a)
        yield "Jagged.to_padded", lambda a=arr: Jagged.from_arrow(a).to_padded()
        yield "repeat", lambda a=arr: repeat(np.arange(4), a)
        if dtype in ("int32", "int64"):
            yield "hash_bucket", lambda a=arr: hash_bucket(a, 1000)
            yield "fit_vocabulary", lambda a=arr: fit_vocabulary(a)
            yield "categorify", lambda a=arr: categorify(a, fit_vocabulary(a))
            yield "KeyedJagged.permute", lambda a=arr: KeyedJagged.from_dict(
                {"a": a, "b": a}).permute(["b", "a"])
    for dtype in _NUMBERS + ("int32",):
        for width in (32, 64):
            values, offsets = _flat(dtype, width)
            dense = np.ones((4, 3), dtype=dtype)
            yield "segment_sum", lambda v=values, o=offsets: segment_sum(v, offsets=o)
            yield ("segment_sum", lambda v=values, o=offsets: segment_sum(
                np.stack([v, v], axis=1), offsets=o))
            yield ("segment_max", lambda v=values, o=offsets: segment_max(
                np.stack([v, v], axis=1), offsets=o))
            yield ("jagged_to_padded_dense",
                   lambda v=values, o=offsets: jagged_to_padded_dense(v, [o], [3]))
            yield "dense_to_jagged", lambda d=dense, o=offsets: dense_to_jagged(d, [o])
            yield ("jagged_dense_elementwise_add",
                   lambda v=values, o=offsets, d=dense: jagged_dense_elementwise_add(v, [o], d))
            ids = np.repeat(np.arange(4), np.diff(offsets)).astype(offsets.dtype)
            yield ("unsorted_segment_sum",
                   lambda v=values, i=ids: unsorted_segment_sum(v, i, 4))
            yield ("unsorted_segment_max",
                   lambda v=values, i=ids: unsorted_segment_max(v, i, 4))
            if dtype in ("float32", "float64"):
                x = np.ones((6, 2), dtype=dtype)
                yield "jagged_softmax", lambda v=values, o=offsets: jagged_softmax(v, o)
                yield ("jagged_dense_bmm", lambda x=x, o=offsets: jagged_dense_bmm(
                    x, o, np.ones((4, 2, 2), dtype=x.dtype)))
                yield "jagged_jagged_bmm", lambda x=x, o=offsets: jagged_jagged_bmm(x, x, o)
    for dtype in ("float32", "float64"):
        table = np.ones((8, 4), dtype)
        for width in (32, 64):
            ids = _lists("int64", width, False)
            weights = _lists(dtype, width, False)
            yield ("embedding_bag", lambda t=table, i=ids, w=weights: embedding_bag(
                t, i, per_sample_weights=w))
        yield "embedding.sgd", lambda t=table: embedding.sgd(t.copy(), _grad(t), 0.1)
        yield "embedding.adagrad", lambda t=table: embedding.adagrad(
            t.copy(), np.zeros_like(t), _grad(t), 0.1)
        yield "embedding.rowwise_adagrad", lambda t=table: embedding.rowwise_adagrad(
            t.copy(), np.zeros(len(t), t.dtype), _grad(t), 0.1)
        yield "embedding.ftrl", lambda t=table: embedding.ftrl(
            t.copy(), np.zeros_like(t), np.zeros_like(t), _grad(t), 0.1)
        yield "embedding.lookup_backward", lambda t=table: _max_grad(t)
        dense = np.arange(12, dtype=dtype).reshape(3, 4) % 3
        yield "masked.sum", lambda d=dense: masked.sum(d, 1, mask=d > 0)
        for index in ("int32", "int64"):
            rows = np.array([0, 1, 2, 2], index)
            cols = np.array([1, 0, 3, 1], index)
            coo = SparseCOO([rows, cols], np.ones(4, dtype), (3, 4))
            yield "SparseCOO", lambda c=coo: (c.to_csr().to_dense(), c.to_csc().to_dense(),
                                              c.to_csr().canonical(), c.to_csr() @ np.ones(4))
