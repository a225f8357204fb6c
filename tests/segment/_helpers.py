"""What the segment tests share: the Caffe2 batch, the oracle checks, the device checks.

Oracle checks (``expected_array``, ``assert_close``, ``assert_arrow``) compare a result
with ``tests/_reference_segment.py``. Device checks (``same_as_cpu``) run a public
function on a backend of the ``backend`` fixture and compare it with the CPU kernels on
the same data (the host image of the backend's inputs):

* sorted and fused reductions follow the CPU kernels operation by operation, so the
  emulators are compared exactly, sign of zero included (logsumexp too: g++ calls the
  same libm); 1-D float sums and means are not (the CPU adds in 64-byte vector lanes,
  the CUDA twin in four partial sums: ``rtol=1e-12``);
* scatter sums combine in atomic order: exact for integers and, in the emulator's thread
  order (the CPU's input order while one pass of the grid covers the input), for floats;
* on a real GPU, float sums, means and logsumexp (``ROUNDED``) may differ by a rounding
  (atomics, libdevice's exp/log): float64 within ``1e-12``, float32 within one rounding.

NaN is compared by position only (its payload is not defined).
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.kernels import cuda

from ..conftest import from_backend, on_device, to_backend

# Caffe2's batch of three examples, in every representation.
CAFFE2_VALUES = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
CAFFE2_ROWS = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
CAFFE2_LENGTHS = [3, 4, 2]
CAFFE2_OFFSETS = [0, 3, 7, 9]
CAFFE2_IDS = [0, 0, 0, 1, 1, 1, 1, 2, 2]
# Caffe2's SortedSegmentSum matrix example.
CAFFE2_DATA = np.array([[1, 4], [3, 2], [8, 1], [9, 4], [5, 8]])
CAFFE2_DATA_IDS = [0, 0, 0, 1, 1]

SORTED: dict[str, Callable[..., Any]] = {
    "sum": asp.segment_sum, "mean": asp.segment_mean, "max": asp.segment_max,
    "min": asp.segment_min, "prod": asp.segment_prod, "logsumexp": asp.segment_logsumexp,
    "argmax": asp.segment_argmax, "argmin": asp.segment_argmin,
}
UNSORTED: dict[str, Callable[..., Any]] = {
    "sum": asp.unsorted_segment_sum, "mean": asp.unsorted_segment_mean,
    "max": asp.unsorted_segment_max, "min": asp.unsorted_segment_min,
}
SPARSE: dict[str, Callable[..., Any]] = {
    "sum": asp.sparse_segment_sum, "mean": asp.sparse_segment_mean,
    "max": asp.sparse_segment_max,
}
#: The numpy result of an empty row of each reduction (its default ``empty_value``).
EMPTY = {"sum": 0, "weighted_sum": 0, "prod": 1, "mean": 0, "max": 0, "min": 0,
         "logsumexp": -np.inf, "argmax": -1, "argmin": -1}
#: Float results that may differ by a rounding on a real GPU (see the module docstring).
ROUNDED = ("sum", "mean", "logsumexp", "weighted_sum")

#: The values dtypes of the tests that run every input form (offsets, lengths, segment ids,
#: Arrow, Jagged) of a family: a small signed, a wide unsigned and a float dtype. Every
#: dtype meets every offsets and ids width in the dtype-matrix tests
#: (``*_match_the_cpu``); these tests are about the forms.
FORM_DTYPES = [np.dtype(np.int8), np.dtype(np.uint64), np.dtype(np.float32)]

#: The device backends of the ``backend`` fixture.
DEVICE_BACKENDS = ["cuda_emu", "cupy_emu", pytest.param("cupy", marks=pytest.mark.gpu)]
#: Runs a test on the device backends only (it compares them with the CPU).
on_devices = pytest.mark.parametrize("backend", DEVICE_BACKENDS, indirect=True)
#: Runs a test on the host emulator only (it inspects the emulator's launches or grid).
on_the_emulator = pytest.mark.parametrize("backend", ["cuda_emu"], indirect=True)


# ------------------------------------------------------------------ oracle checks
def out_dtype(op: str, dtype: Any, wdtype: Any = None) -> np.dtype:
    """The documented output dtype of each reduction."""
    dtype = np.dtype(dtype)
    if op in ("sum", "prod"):
        if dtype.kind == "f":
            return dtype
        return np.dtype(np.uint64) if dtype == np.uint64 else np.dtype(np.int64)
    if op == "weighted_sum":
        return out_dtype("sum", np.result_type(dtype, wdtype))
    if op in ("mean", "logsumexp"):
        return np.dtype(np.float32) if dtype == np.float32 else np.dtype(np.float64)
    if op in ("argmax", "argmin"):
        return np.dtype(np.int64)
    return dtype


def expected_array(results: list[Any], empty: Any, inner: tuple[int, ...] = ()) -> np.ndarray:
    """Oracle results as a float64 array, missing rows -> ``empty``."""
    out = np.empty((len(results),) + inner, dtype=np.float64)
    for r, x in enumerate(results):
        out[r] = empty if x is None else np.asarray(x, dtype=np.float64)
    return out


def assert_close(actual: Any, expected: Any, dtype: np.dtype) -> None:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if dtype == np.float32:
        np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=1e-3)
    elif dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-9)
    else:
        np.testing.assert_array_equal(actual, expected)


def assert_arrow(result: Any, expected: list[Any], dtype: np.dtype,
                 inner: tuple[int, ...] = ()) -> None:
    """An Arrow result: its type, its nulls and its values."""
    assert isinstance(result, pa.Array)
    t = pa.from_numpy_dtype(dtype)
    for size in reversed(inner):
        t = pa.list_(t, size)
    assert result.type == t
    got = result.to_pylist()
    assert [g is None for g in got] == [e is None for e in expected]
    present = [i for i, e in enumerate(expected) if e is not None]
    if present:
        assert_close([got[i] for i in present],
                     expected_array([expected[i] for i in present], 0, inner), dtype)


# ------------------------------------------------------------------ running on a backend
def run_on(backend: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` with every argument put on ``backend`` (:func:`to_backend`), result on the host.

    The result must come back where the inputs were (on the device for ``cupy_emu`` and
    ``cupy``). Arrow list arguments become a device Jagged there, so a test that expects
    Arrow out passes Arrow inputs to ``fn`` itself (they stay on the host everywhere).
    """
    got = fn(*(to_backend(a, backend) for a in args),
             **{k: to_backend(x, backend) for k, x in kwargs.items()})
    return from_backend(got, backend)


def emulator(backend: str) -> Any:
    """The CUDA emulator that runs ``backend``'s kernels, or None (cpu, real CuPy)."""
    if backend == "cuda_emu":
        return cuda.FACTORY.build
    if backend == "cupy_emu":
        return sys.modules["cupy"].emulator
    return None


def float_atomic_sum(name: str) -> bool:
    """Whether launch ``name`` adds floats with atomics (its result depends on the order)."""
    return name.startswith(("scatter_add<", "gather_scatter_add<")) and ", double, " in name


def kernels(launches: list[str]) -> list[str]:
    """The kernel names of emulator launches (without their template arguments)."""
    return [name.split("<")[0] for name in launches]


@contextlib.contextmanager
def on_the_cpu() -> Iterator[None]:
    """Host arrays run on the CPU kernels inside (the emulator backends send them to CUDA)."""
    factory, host_arrays = cuda.FACTORY.build, cuda.FACTORY.host_arrays
    if factory is None or not host_arrays:
        yield
        return
    _backend.set_cuda_module_factory(None)
    try:
        yield
    finally:
        _backend.set_cuda_module_factory(factory, host_arrays=host_arrays)


def _host_image(x: Any, backend: str) -> Any:
    """What the CPU gets for the backend's input ``x``: its host copy."""
    if isinstance(x, (list, tuple)):
        return type(x)(_host_image(item, backend) for item in x)
    if isinstance(x, asp.Jagged):
        return x.to_device("cpu") if x.device != "cpu" else x
    if _backend.is_cupy_array(x):
        return _backend.to_host(x)
    if isinstance(x, np.ndarray):
        return x.copy()  # the scatters write into theirs
    return x


def same_as_cpu(backend: str, fn: Callable[..., Any], *args: Any, rtol: float = 0.0,
                rounded: bool = False, **kwargs: Any) -> list[str]:
    """``fn`` on ``backend`` gives what it gives on the CPU kernels; returns its launches.

    The inputs go to the backend with :func:`to_backend`; the CPU gets their host image
    (an Arrow list array is a device Jagged on ``cupy_emu`` / ``cupy``, so the CPU reduces
    the same Jagged on the host). The device result must be on the device, and no device
    check may have failed. ``rtol``: floats within it; ``rounded``: floats within one
    rounding of the output dtype (see the module docstring); else exactly.
    """
    dargs = [to_backend(a, backend) for a in args]
    dkwargs = {k: to_backend(x, backend) for k, x in kwargs.items()}
    with on_the_cpu():
        expected = fn(*(_host_image(a, backend) for a in dargs),
                      **{k: _host_image(x, backend) for k, x in dkwargs.items()})
    emu = emulator(backend)
    before = len(emu.launches) if emu is not None else 0
    got = fn(*dargs, **dkwargs)
    if on_device(backend):
        cuda.check_errors("test")
    assert_same(expected, from_backend(got, backend), rtol, rounded=rounded)
    return emu.launches[before:] if emu is not None else []


def dense_of(x: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The non-null rows of an Arrow result as numpy (flattening fixed-size lists)."""
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    x = x.filter(pc.invert(x.is_null()))
    while pa.types.is_fixed_size_list(x.type):
        x = x.flatten()
    return np.asarray(x.to_numpy(zero_copy_only=False))


def assert_same(expected: Any, got: Any, rtol: float = 0.0, *, rounded: bool = False) -> None:
    """Same type (Arrow type and nulls), dtype and shape; same values, float signs, NaNs."""
    if isinstance(expected, (pa.Array, pa.ChunkedArray)):
        assert type(got) is type(expected)
        assert got.type == expected.type
        assert got.is_null().to_pylist() == expected.is_null().to_pylist()
        expected, got = (dense_of(x) for x in (expected, got))
    assert isinstance(got, np.ndarray) and isinstance(expected, np.ndarray)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind == "f":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(expected[~nan]))
        if rounded:  # float64 rounding (atomic order on a GPU), then the output dtype's
            single = got.dtype == np.float32
            np.testing.assert_allclose(got, expected, rtol=2.5e-7 if single else 1e-12,
                                       atol=1e-5 if single else 1e-9)
            return
    if rtol:
        np.testing.assert_allclose(got, expected, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------ device samples
LENGTHS = np.array([3, 0, 5, 1, 0, 2, 7])  # empty rows, rows of 1..7 values


def sample(dtype: Any, width: int | None, start: int = 2, seed: int = 7,
           signed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Values and offsets (``offsets[0] = start > 0``) over rows of ``LENGTHS``."""
    dtype = np.dtype(dtype)
    offsets = start + np.concatenate([[0], np.cumsum(LENGTHS)])
    total = int(offsets[-1]) + 1  # a value after the last row, never read
    shape = (total,) if width is None else (total, width)
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        values = rng.standard_normal(shape).astype(dtype) * 10
    else:
        low = -9 if dtype.kind == "i" and signed else 1
        values = rng.integers(low, 10, size=shape).astype(dtype)
    return values, offsets


def table_and_ids(dtype: Any, ids_dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``[9, 3]`` table, ids into it, and offsets over ``LENGTHS`` with ``offsets[0] > 0``."""
    table, _ = sample(dtype, 3, seed=11)
    table = table[:9]
    offsets = 1 + np.concatenate([[0], np.cumsum(LENGTHS)])  # offsets[0] > 0
    ids = np.random.default_rng(2).integers(0, 9, size=int(offsets[-1])).astype(ids_dtype)
    return table, ids, offsets


def values_of(dtype: Any, size: int | tuple[int, ...], seed: int) -> np.ndarray:
    """Values of ``dtype``: signed integers around 0, floats with a NaN, zeros of both signs."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(size) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-5 if dtype.kind == "i" else 0, 9, size=size).astype(dtype)
    values = (rng.standard_normal(size) * 4).astype(dtype)
    flat = values.reshape(-1)
    flat[::7] = 0.0
    flat[3::7] = -0.0
    if flat.size > 40:
        flat[40] = np.nan
    return values


def host_jagged(dtype: Any, width: int | None = None, seed: int = 0) -> asp.Jagged:
    """A host Jagged from a sliced Arrow batch: null and empty rows, null values,
    ``offsets[0] > 0``; vector values of ``width`` when given."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 7, size=24)
    values = values_of(dtype, (int(lengths.sum()),) if width is None
                       else (int(lengths.sum()), width), seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rows: list[Any] = [values[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:],
                                                              strict=True)]
    for r in range(0, len(rows), 5):
        rows[r] = None
    for r in range(2, len(rows), 4):
        if rows[r]:
            rows[r][0] = None
    typ = pa.from_numpy_dtype(np.dtype(dtype))
    if width is not None:
        typ = pa.list_(typ, width)
    return asp.Jagged.from_arrow(pa.array(rows, pa.large_list(typ)).slice(1))


def signed_zero_rows(dtype: Any, other: float, seed: int) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray, np.ndarray]:
    """Rows of zeros of both signs, a third of them replaced by ``other`` (not the first).

    Returns the values, the row lengths, and whether each row holds a ``0.0`` and a
    ``-0.0``: with ``other`` negative the max of every row is a zero, ``0.0`` where the
    row holds one (IEEE 754-2019 maximum); with ``other`` positive the min is, ``-0.0``
    where the row holds one.
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 40, size=60)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    values = rng.choice(np.array([-0.0, 0.0]), size=int(lengths.sum()))
    replaced = rng.random(len(values)) < 0.3
    replaced[starts] = False
    values[replaced] = other
    row = np.repeat(np.arange(len(lengths)), lengths)
    zero = values == 0
    plus = np.zeros(len(lengths), bool)
    np.logical_or.at(plus, row, zero & ~np.signbit(values))
    minus = np.zeros(len(lengths), bool)
    np.logical_or.at(minus, row, zero & np.signbit(values))
    return values.astype(dtype), lengths, plus, minus


# ------------------------------------------------------------------ long segments
@functools.cache
def long_float32_segment() -> tuple[np.ndarray, float]:
    """10**6 float32 values in ``[-0.5, 1.5)`` and their exact sum (``math.fsum``)."""
    rng = np.random.default_rng(7)
    values = rng.random(1_000_000, dtype=np.float32) * 2 - 0.5
    return values, math.fsum(values.astype(np.float64).tolist())


@functools.cache
def long_float32_batch() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10**6 rows of 16 float32 values in ``[-0.5, 1.5)``, an id in ``{0, 1}`` and a float32
    weight in ``[0, 1)`` for each: one segment long enough for every kernel's precision."""
    rng = np.random.default_rng(17)
    wide = rng.random((1_000_000, 16), dtype=np.float32) * 2 - 0.5
    ids = rng.integers(0, 2, size=len(wide))
    weights = rng.random(len(wide), dtype=np.float32)
    return wide, ids, weights


@functools.cache
def long_float32_batch_sums() -> np.ndarray:
    """The exact sum (``math.fsum``) of each column of :func:`long_float32_batch`'s values."""
    wide, _, _ = long_float32_batch()
    return np.array([math.fsum(col) for col in wide.astype(np.float64).T.tolist()])


# ------------------------------------------------------------------ device errors
def dev(cp: Any, x: Any, dtype: Any = None) -> Any:
    """``x`` as an array of the stand-in CuPy ``cp``."""
    return cp.asarray(np.asarray(x, dtype=dtype))


def raised_later(cp: Any) -> None:
    """The next check: what an earlier operation left in the error word is raised now."""
    asp.offsets_to_lengths(cp.asarray(np.array([0, 1])))


def assert_error(call: Callable[[], Any], error: type[Exception], pattern: str) -> None:
    """``call()`` raises ``error``, an ArrowSparseError, its message matching ``pattern``
    from the start (the project's form, as tests/test_errors.py checks it)."""
    with pytest.raises(error, match=f"^{pattern}") as info:
        call()
    assert isinstance(info.value, ArrowSparseError)


def assert_raised_by_the_next_check(cp: Any, call: Callable[[Any], Any], error: type,
                                    message: str) -> None:
    """``call(cp)`` leaves a device error that the next check raises, once, unsynchronised."""
    call(cp)  # no synchronisation: nothing raised yet
    assert cp.stats.syncs == 0
    with pytest.raises(error, match="^" + message):
        raised_later(cp)
    raised_later(cp)  # raised once


#: The end of the message of a device check's error raised by a later call, and at once.
DEFERRED = r" \(first at position {}; found by a device check, reported by a later call\)$"
AT_ONCE = r" \(first at position {}; found by a device check\)$"
#: The fix a mixed host and device call names.
MIXED_FIX = r"; move them to one device first: to the GPU with Jagged.to_device\('cuda'\)"


# ------------------------------------------------------------------ synchronisations
#: Each segment function on a device batch (``batch`` of tests/test_cuda_dispatch.py:
#: ``flat`` values with ``lengths`` and sorted ``ids`` in ``[0, rows)``, ``values`` with
#: ``offsets`` starting at 2, a ``jagged`` of them, a ``dense`` ``[rows, 3]`` table) and
#: the synchronisations it documents; that module checks them with the conversions'.
SEGMENT_SYNCS: dict[str, tuple[Callable[[dict[str, Any]], Any], int]] = {
    **{fn.__name__: (lambda b, fn=fn: fn(b["jagged"]), 0) for fn in SORTED.values()},
    "segment_sum offsets": (lambda b: asp.segment_sum(b["values"], offsets=b["offsets"]), 0),
    "segment_mean lengths": (lambda b: asp.segment_mean(b["flat"], lengths=b["lengths"]), 0),
    "segment_max segment_ids sized": (
        lambda b: asp.segment_max(b["flat"], segment_ids=b["ids"], num_segments=b["rows"]), 0),
    "segment_max segment_ids": (lambda b: asp.segment_max(b["flat"], segment_ids=b["ids"]), 1),
    "segment_weighted_sum": (
        lambda b: asp.segment_weighted_sum(b["jagged"], b["jagged"], num_segments=b["rows"] + 2),
        0),
    **{fn.__name__: (lambda b, fn=fn: fn(b["flat"], b["ids"], b["rows"]), 0)
       for fn in UNSORTED.values()},
    "unsorted_segment_sum unsized": (lambda b: asp.unsorted_segment_sum(b["flat"], b["ids"]),
                                     1),
    "unsorted_segment_weighted_sum": (lambda b: asp.unsorted_segment_weighted_sum(
        b["flat"], b["flat"], b["ids"], b["rows"]), 0),
    **{fn.__name__: (lambda b, fn=fn: fn(b["dense"], b["ids"], lengths=b["lengths"]), 0)
       for fn in SPARSE.values()},
    "sparse_segment_sum segment_ids": (
        lambda b: asp.sparse_segment_sum(b["dense"], b["ids"], segment_ids=b["ids"]), 1),
    "sparse_segment_weighted_sum": (lambda b: asp.sparse_segment_weighted_sum(
        b["dense"], b["ids"], weights=b["flat"], lengths=b["lengths"]), 0),
    **{name: (lambda b, name=name: getattr(asp, name)(b["dense"], b["ids"], b["ids"],
                                                      b["rows"]), 0)
       for name in ("sparse_unsorted_segment_sum", "sparse_unsorted_segment_mean",
                    "sparse_unsorted_segment_max")},
    "sparse_unsorted_segment_sum unsized": (lambda b: asp.sparse_unsorted_segment_sum(
        b["dense"], b["ids"], b["ids"]), 1),
    "sparse_unsorted_segment_weighted_sum": (lambda b: asp.sparse_unsorted_segment_weighted_sum(
        b["dense"], b["ids"], b["ids"], b["rows"], weights=b["flat"]), 0),
    "embedding_bag": (lambda b: asp.embedding_bag(b["dense"], b["ids"], lengths=b["lengths"],
                                                  mode="max"), 0),
    "embedding_bag bag starts": (lambda b: asp.embedding_bag(
        b["dense"], b["ids"], offsets=b["offsets"][:-1] - 2, include_last_offset=False), 0),
    "gather": (lambda b: asp.gather(b["dense"], b["ids"]), 0),
    "scatter_assign": (lambda b: asp.scatter_assign(b["dense"], b["ids"], b["dense"][b["ids"]]),
                       0),
    "scatter_weighted_sum": (lambda b: asp.scatter_weighted_sum(
        b["dense"], 0.5, b["ids"], b["dense"][b["ids"]], 2.0), 0),
}
