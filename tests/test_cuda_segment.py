"""The CUDA segment kernels (``kernels/cuda/segment.cu``).

Like ``test_cuda_convert.py``: ``nvcc --ptx`` compiles every instantiation (the
parametrized test there picks up ``segment.cu``); here every public segment function
runs through the real dispatch and launch code against the CPU emulator
(``tests/cuda_emu``) and must equal the CPU (Numba) result; ``gpu``-marked tests run the
launchers on CuPy arrays where a device exists.

Tolerance: sorted and fused reductions follow the CPU kernels operation by operation,
so they are compared exactly (logsumexp too: g++ calls the same libm; on a GPU
libdevice's exp/log may differ by 2 ulp), except 1-D float sums and means (the CPU adds
in 64-byte vector lanes, the CUDA twin in four partial sums: ``rtol=1e-12``). Scatter
sums combine in atomic order: exact for integers, and in the emulator's thread order
(the CPU's input order while one pass of the grid covers the input); with a grid
smaller than the input the floats are compared with ``rtol=1e-12``. Floats are also
compared by sign bit (max/min follow IEEE maximum/minimum on both sides, so the sign
of a zero is defined), NaN by position only (its payload is not).

Thread order: every launch runs forward, reversed and shuffled (``emulated``'s
``check_orders``) and must give the same results; only the float atomic sums
(``scatter_add`` into double) may differ within the emulator's tolerance, and no other
kernel may show an order effect at all (integers, max/min with signed zeros,
positions).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse import segment as segment_module
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import segment as cpu_segment
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import segment as cuda_segment
from tests import _reference_segment as ref
from tests.conftest import FLOAT_DTYPES, NUMERIC_DTYPES
from tests.cuda_emu.emu import BUILD_SECONDS, Emulator, emulated


def use_factory(factory: Emulator | None) -> None:
    """Switch the CUDA module factory, forgetting kernels ``segment.py`` has memoised."""
    _backend.set_cuda_module_factory(factory)
    # segment._kernel may be functools.cache'd: it would keep serving the first backend.
    getattr(segment_module._kernel, "cache_clear", lambda: None)()


def float_atomic_sum(name: str) -> bool:
    """Whether launch ``name`` adds floats with atomics (its result depends on the order)."""
    return name.startswith("scatter_add<") and ", double, " in name


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """Route the CUDA kernel families through the CPU emulator (tests/cuda_emu).

    Every launch also runs in reversed and shuffled thread order; afterwards only float
    atomic sums may have shown an order effect.
    """
    with emulated(check_orders=("reverse", "shuffle")) as emulator:
        use_factory(emulator)
        yield emulator
    use_factory(None)
    unexpected = {k: n for k, n in emulator.order_effects.items() if not float_atomic_sum(k)}
    assert not unexpected, f"results depend on the thread order: {unexpected}"


def cpu_and_emu(emu: Emulator, fn: Callable[..., Any], *args: Any,
                **kwargs: Any) -> tuple[Any, Any, list[str]]:
    """``fn`` on the CPU kernels, then through the emulator; and the launches it made."""
    use_factory(None)
    expected = fn(*args, **kwargs)
    use_factory(emu)
    before = len(emu.launches)
    got = fn(*args, **kwargs)
    return expected, got, emu.launches[before:]


def dense_of(x: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The non-null rows of an Arrow result as numpy (flattening fixed-size lists)."""
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    x = x.filter(pc.invert(x.is_null()))
    while pa.types.is_fixed_size_list(x.type):
        x = x.flatten()
    return np.asarray(x.to_numpy(zero_copy_only=False))


def assert_same(expected: Any, got: Any, rtol: float = 0.0) -> None:
    if isinstance(expected, (pa.Array, pa.ChunkedArray)):
        assert type(got) is type(expected)
        assert got.type == expected.type
        assert got.is_null().to_pylist() == expected.is_null().to_pylist()
        expected, got = (dense_of(x) for x in (expected, got))
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if got.dtype.kind == "f":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(expected[~nan]))
    if rtol:
        np.testing.assert_allclose(got, expected, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, expected)


def kernels(launches: list[str]) -> list[str]:
    return [name.split("<")[0] for name in launches]


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


WIDTHS = [None, 3]
WIDTH_IDS = ["1d", "2d"]
SORTED: dict[str, Callable[..., Any]] = {
    "segment_sum": asp.segment_sum, "segment_mean": asp.segment_mean,
    "segment_max": asp.segment_max, "segment_min": asp.segment_min,
    "segment_prod": asp.segment_prod, "segment_logsumexp": asp.segment_logsumexp,
    "segment_argmax": asp.segment_argmax, "segment_argmin": asp.segment_argmin,
}
SORTED_KERNEL = {
    "segment_sum": "sorted_sum", "segment_mean": "sorted_sum",
    "segment_max": "sorted_extreme", "segment_min": "sorted_extreme",
    "segment_prod": "sorted_prod", "segment_logsumexp": "sorted_logsumexp",
    "segment_argmax": "sorted_arg_extreme", "segment_argmin": "sorted_arg_extreme",
}


# ------------------------------------------------------------------ registry and source
def cpu_kernel_names() -> list[str]:
    return sorted(n for n, f in vars(cpu_segment).items() if not n.startswith("_")
                  and inspect.isfunction(f) and f.__module__ == cpu_segment.__name__)


def test_every_cpu_segment_kernel_has_a_cuda_twin_with_its_signature() -> None:
    names = cpu_kernel_names()
    assert sorted(cuda_segment.__all__) == names
    for name in names:
        cpu_params = list(inspect.signature(getattr(cpu_segment, name)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_segment, name)).parameters)
        assert cuda_params == ["xp", *cpu_params], name


def test_get_kernel_routes_to_the_cuda_launcher_only_under_a_factory() -> None:
    assert _backend.get_kernel("segment", "sorted_sum") is cpu_segment.sorted_sum
    use_factory(Emulator())
    try:
        for name in cpu_kernel_names():
            assert _backend.get_kernel("segment", name).func is getattr(cuda_segment, name)
        with pytest.raises(NotImplementedError, match="nope: no cuda kernel in family 'segment'"):
            _backend.get_kernel("segment", "nope")
    finally:
        use_factory(None)


def test_name_expressions_are_unique_and_cover_every_dtype() -> None:
    names = cuda.name_expressions("segment")
    assert len(names) == len(set(names))
    for dtype in NUMERIC_DTYPES:
        c = _launch.DTYPE_TO_CTYPE[np.dtype(dtype)]
        for o in ("int", "long long"):
            assert f"sorted_sum<{c}, double, double, {o}>" in names
            assert f"sorted_extreme<{c}, {o}>" in names
            assert f"gather_reduce<{c}, double, double, {o}, int>" in names
        assert f"scatter_add<{c}, double, int>" in names


def test_unsupported_dtype_raises_not_implemented() -> None:
    values = np.zeros(3, np.float16)
    out = np.zeros(1, np.float16)
    with pytest.raises(NotImplementedError, match="sorted_extreme: no cuda kernel for float16"):
        cuda_segment.sorted_extreme(np, values, np.array([0, 3]), None, None, True,
                                    np.float16(-np.inf), 1, np.float16(0), out, None)


def test_source_has_no_includes_and_no_barriers() -> None:
    text = re.sub(r"//[^\n]*", "", cuda.source("segment"))  # code, not comments
    # The shared header's lane-group helpers keep their warp shuffles in the GPU branch
    # of an ARROW_SPARSE_EMULATOR variant; segment.cu has no variants and calls none.
    own = (Path(cuda.__file__).parent / "segment.cu").read_text(encoding="utf-8")
    assert cuda.EMULATOR_MACRO not in own
    text = re.sub(rf"#if defined\({cuda.EMULATOR_MACRO}\)(.*?)#else.*?#endif", r"\1", text,
                  flags=re.DOTALL)
    for banned in ("#include", "__syncthreads", "__shared__", "__shfl"):
        assert banned not in text


# ------------------------------------------------------------ sorted reductions
@pytest.mark.parametrize("width", WIDTHS, ids=WIDTH_IDS)
@pytest.mark.parametrize("op", sorted(SORTED))
def test_sorted_reductions_match_cpu(cuda_emu: Emulator, op: str, values_dtype: np.dtype,
                                     offsets_dtype: np.dtype, width: int | None) -> None:
    values, offsets = sample(values_dtype, width)
    expected, got, launches = cpu_and_emu(cuda_emu, SORTED[op], values,
                                          offsets=offsets.astype(offsets_dtype))
    if values_dtype.kind == "f" and width is None and op in ("segment_sum", "segment_mean"):
        # The CPU's 1-D float sums add into several lanes, then fold them; the CUDA
        # twin adds in row order. Same inputs, other rounding: equal within 1e-12.
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    else:
        assert_same(expected, got)
    assert kernels(launches) == [SORTED_KERNEL[op]]
    assert launches[0].endswith(f"{_launch.DTYPE_TO_CTYPE[offsets_dtype]}>")


WEIGHT_DTYPES = [np.uint8, np.int32, np.uint64, np.float32, np.float64]


@pytest.mark.parametrize("width", WIDTHS, ids=WIDTH_IDS)
@pytest.mark.parametrize("weights_dtype", WEIGHT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_segment_weighted_sum_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                          weights_dtype: Any, width: int | None) -> None:
    values, offsets = sample(values_dtype, width, signed=False)
    weights, _ = sample(weights_dtype, None, seed=3, signed=False)
    expected, got, launches = cpu_and_emu(cuda_emu, asp.segment_weighted_sum, values, weights,
                                          offsets=offsets)
    assert_same(expected, got)
    assert kernels(launches) == ["sorted_sum"]


def test_sorted_floats_nan_inf_and_signed_zero_match_cpu(cuda_emu: Emulator) -> None:
    values = np.array([0.0, -0.0, 1.5, np.nan, 2.0, -np.inf, -np.inf, np.inf, 3.0, -0.0, 0.0,
                       np.nan, 7.0, -1.0, -2.0])
    lengths = [2, 3, 2, 1, 2, 2, 3]
    for width in (None, 2):
        vals = values if width is None else np.stack([values, values[::-1]], axis=1)
        for fn in SORTED.values():
            expected, got, _ = cpu_and_emu(cuda_emu, fn, vals, lengths=lengths)
            assert_same(expected, got)


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


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_max_keeps_plus_zero_and_min_minus_zero_on_every_path(cuda_emu: Emulator,
                                                              dtype: Any) -> None:
    # audit B1: the sign of a zero max/min was the first zero seen (or the CPU's lane
    # split); now IEEE maximum/minimum on every path, whatever the order.
    below, lengths, plus, _ = signed_zero_rows(dtype, -1.0, 1)
    ids = np.repeat(np.arange(len(lengths)), lengths)
    perm = np.random.default_rng(2).permutation(len(ids))
    table_ids = np.arange(len(ids))
    maxima = {
        "sorted 1-D": lambda x: asp.segment_max(x, lengths=lengths),
        "sorted 2-D": lambda x: asp.segment_max(np.stack([x, x], axis=1), lengths=lengths)[:, 1],
        "unsorted": lambda x: asp.unsorted_segment_max(x[perm], ids[perm], len(lengths)),
        "fused": lambda x: asp.sparse_segment_max(x[:, None], table_ids, lengths=lengths)[:, 0],
        "fused weighted": lambda x: asp.sparse_segment_max(
            x[:, None], table_ids, lengths=lengths, weights=np.ones(len(x), dtype))[:, 0],
        "embedding_bag": lambda x: asp.embedding_bag(x[:, None], table_ids, lengths=lengths,
                                                     mode="max")[:, 0],
    }
    for name, call in maxima.items():
        expected, got, _ = cpu_and_emu(cuda_emu, call, below)
        np.testing.assert_array_equal(expected, 0.0)
        np.testing.assert_array_equal(np.signbit(expected), ~plus, err_msg=name)
        assert_same(expected, got)
    above, lengths, _, minus = signed_zero_rows(dtype, 1.0, 3)
    ids = np.repeat(np.arange(len(lengths)), lengths)
    perm = np.random.default_rng(4).permutation(len(ids))
    minima = {
        "sorted 1-D": lambda x: asp.segment_min(x, lengths=lengths),
        "sorted 2-D": lambda x: asp.segment_min(np.stack([x, x], axis=1), lengths=lengths)[:, 1],
        "unsorted": lambda x: asp.unsorted_segment_min(x[perm], ids[perm], len(lengths)),
    }
    for name, call in minima.items():
        expected, got, _ = cpu_and_emu(cuda_emu, call, above)
        np.testing.assert_array_equal(expected, 0.0)
        np.testing.assert_array_equal(np.signbit(expected), minus, err_msg=name)
        assert_same(expected, got)


@pytest.mark.parametrize("op", ["segment_sum", "segment_mean", "segment_max",
                                "segment_argmin", "segment_logsumexp"])
def test_sorted_by_segment_ids_with_num_segments(cuda_emu: Emulator, op: str,
                                                 offsets_dtype: np.dtype) -> None:
    ids = np.array([0, 0, 2, 2, 2, 5, 6, 6], dtype=offsets_dtype)
    values = np.arange(16, dtype=np.float32).reshape(8, 2)
    expected, got, launches = cpu_and_emu(cuda_emu, SORTED[op], values, segment_ids=ids,
                                          num_segments=9)
    assert_same(expected, got)
    assert kernels(launches) == ["ids_to_offsets", SORTED_KERNEL[op]]


def arrow_rows(large: bool, dtype: Any = None) -> pa.Array:
    rows = [[1, 2, 3], None, [], [4, None, 6, 7, 8], None, [9], [None, None], [10, 11]]
    dtype = pa.float32() if dtype is None else dtype
    typ = pa.large_list(dtype) if large else pa.list_(dtype)
    return pa.array(rows, typ).slice(1)  # offsets[0] > 0 and a leading null row


@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
@pytest.mark.parametrize("op", sorted(SORTED) + ["segment_weighted_sum"])
def test_sorted_arrow_null_rows_and_values_match_cpu(cuda_emu: Emulator, op: str,
                                                     large: bool) -> None:
    for dtype in (pa.float32(), pa.int16(), pa.uint64()):
        rows = arrow_rows(large, dtype)
        if op == "segment_weighted_sum":
            weights = pa.array([[0.5] * (len(r) if r is not None else 0)
                                for r in rows.to_pylist()], pa.list_(pa.float64()))
            expected, got, _ = cpu_and_emu(cuda_emu, asp.segment_weighted_sum, rows, weights)
        else:
            kwargs = {"min_count": 2} if op in ("segment_sum", "segment_max") else {}
            expected, got, _ = cpu_and_emu(cuda_emu, SORTED[op], rows, **kwargs)
        assert_same(expected, got)
    chunked = pa.chunked_array([arrow_rows(large), arrow_rows(large)])
    if op != "segment_weighted_sum":
        expected, got, _ = cpu_and_emu(cuda_emu, SORTED[op], chunked)
        assert_same(expected, got)


def test_bool_values_match_cpu(cuda_emu: Emulator) -> None:
    values = np.array([True, False, True, True, False, False, True])
    for op in ("segment_sum", "segment_max", "segment_min", "segment_mean"):
        expected, got, _ = cpu_and_emu(cuda_emu, SORTED[op], values, lengths=[3, 0, 2, 2])
        assert_same(expected, got)


def test_integer_overflow_wraps_like_cpu(cuda_emu: Emulator) -> None:
    big = np.array([2**62, 2**62, 2**62, 3, -(2**63), -1], dtype=np.int64).reshape(6, 1)
    for op in ("segment_sum", "segment_prod"):
        expected, got, _ = cpu_and_emu(cuda_emu, SORTED[op], big, lengths=[3, 3])
        assert_same(expected, got)
    assert asp.segment_sum(big, lengths=[3, 3])[1, 0] == 2 - 2**63  # exact, in int64


def test_1d_int64_sum_is_exact_like_the_cuda_twin(cuda_emu: Emulator) -> None:
    big = np.array([3, -(2**63) + 10, -1], dtype=np.int64)
    expected, got, _ = cpu_and_emu(cuda_emu, asp.segment_sum, big, lengths=[3])
    assert got[0] == 12 - 2**63
    assert_same(expected, got)


# ------------------------------------------------------------ unsorted (scatter)
UNSORTED: dict[str, Callable[..., Any]] = {
    "unsorted_segment_sum": asp.unsorted_segment_sum,
    "unsorted_segment_mean": asp.unsorted_segment_mean,
    "unsorted_segment_max": asp.unsorted_segment_max,
    "unsorted_segment_min": asp.unsorted_segment_min,
}


@pytest.mark.parametrize("width", WIDTHS, ids=WIDTH_IDS)
@pytest.mark.parametrize("op", sorted(UNSORTED))
def test_unsorted_reductions_match_cpu(cuda_emu: Emulator, op: str, values_dtype: np.dtype,
                                       offsets_dtype: np.dtype, width: int | None) -> None:
    values, _ = sample(values_dtype, width)
    ids = np.random.default_rng(5).integers(0, 6, size=len(values)).astype(offsets_dtype)
    expected, got, launches = cpu_and_emu(cuda_emu, UNSORTED[op], values, ids, 8)
    assert_same(expected, got)
    kernel = "scatter_extreme" if op.endswith(("max", "min")) else "scatter_add"
    assert kernels(launches) == [kernel, "scatter_finish"]


@pytest.mark.parametrize("weights_dtype", WEIGHT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_unsorted_weighted_sum_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                           weights_dtype: Any) -> None:
    values, _ = sample(values_dtype, 2, signed=False)
    weights, _ = sample(weights_dtype, None, seed=3, signed=False)
    ids = np.random.default_rng(5).integers(0, 6, size=len(values))
    expected, got, _ = cpu_and_emu(cuda_emu, asp.unsorted_segment_weighted_sum, values,
                                   weights, ids, 7)
    assert_same(expected, got)


def test_unsorted_arrow_nulls_and_floats_match_cpu(cuda_emu: Emulator) -> None:
    values = pa.array([1.5, None, -0.0, np.nan, 4.0, None, -3.0, 0.0], pa.float64())
    ids = np.array([3, 0, 1, 2, 3, 1, 1, 1])
    for fn in UNSORTED.values():
        expected, got, _ = cpu_and_emu(cuda_emu, fn, values, ids, 5, min_count=1)
        assert_same(expected, got)
    ints = pa.array([5, None, -7, 2, None], pa.int8())
    for fn in UNSORTED.values():
        expected, got, _ = cpu_and_emu(cuda_emu, fn, ints, np.array([1, 1, 0, 1, 3]))
        assert_same(expected, got)


def test_out_of_range_ids_raise_like_cpu_before_any_launch(cuda_emu: Emulator) -> None:
    # The CPU kernels check ids as they read them; the CUDA launchers check on the host.
    values = np.arange(6.0)
    for fn in UNSORTED.values():
        for ids, match in (([0, 1, 9, 2, -1, 0], r"must be < num_segments=3 "
                                                 r"\(first at position 2: 9\)"),
                           ([0, -1, 9, 2, 1, 0], r"must be non-negative "
                                                 r"\(first at position 1: -1\)")):
            for factory in (None, cuda_emu):
                use_factory(factory)
                before = len(cuda_emu.launches)
                with pytest.raises(IndexError, match=match):
                    fn(values, np.array(ids), 3)
                assert len(cuda_emu.launches) == before
    table = np.ones((4, 2))
    ids = pa.array([[0, 1], None, [2, None, 7], [5]], pa.list_(pa.int64()))
    for fn in FUSED.values():
        for factory in (None, cuda_emu):
            use_factory(factory)
            with pytest.raises(IndexError, match=r"indices out of range \[0, 4\) "
                                                 r"\(first at position 4: 7\)"):
                fn(table, ids)


# ------------------------------------------------------------ fused gather + reduce
FUSED: dict[str, Callable[..., Any]] = {
    "sparse_segment_sum": asp.sparse_segment_sum,
    "sparse_segment_mean": asp.sparse_segment_mean,
    "sparse_segment_max": asp.sparse_segment_max,
}


def table_and_ids(dtype: Any, ids_dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    table, _ = sample(dtype, 3, seed=11)
    table = table[:9]
    offsets = 1 + np.concatenate([[0], np.cumsum(LENGTHS)])  # offsets[0] > 0
    ids = np.random.default_rng(2).integers(0, 9, size=int(offsets[-1])).astype(ids_dtype)
    return table, ids, offsets


@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64, np.uint16], ids=["i32", "i64", "u16"])
@pytest.mark.parametrize("op", sorted(FUSED))
def test_sparse_segment_reductions_match_cpu(cuda_emu: Emulator, op: str,
                                             values_dtype: np.dtype, offsets_dtype: np.dtype,
                                             ids_dtype: Any) -> None:
    table, ids, offsets = table_and_ids(values_dtype, ids_dtype)
    expected, got, launches = cpu_and_emu(cuda_emu, FUSED[op], table, ids,
                                          offsets=offsets.astype(offsets_dtype))
    assert_same(expected, got)
    assert kernels(launches) == ["gather_reduce"]


@pytest.mark.parametrize("weights_dtype", WEIGHT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_sparse_segment_weighted_match_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                           weights_dtype: Any) -> None:
    table, ids, offsets = table_and_ids(values_dtype, np.int64)
    if values_dtype.kind == "i":
        table = np.abs(table)
    weights, _ = sample(weights_dtype, None, seed=3, signed=False)
    weights = weights[:len(ids)]
    for fn in (asp.sparse_segment_weighted_sum, asp.sparse_segment_mean,
               asp.sparse_segment_max):
        expected, got, _ = cpu_and_emu(cuda_emu, fn, table, ids, offsets=offsets,
                                       weights=weights)
        assert_same(expected, got)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_cpu(cuda_emu: Emulator, mode: str, values_dtype: np.dtype,
                                   offsets_dtype: np.dtype) -> None:
    table, ids, offsets = table_and_ids(values_dtype, np.int32)
    starts = (offsets[:-1] - 1).astype(offsets_dtype)
    ids = ids[1:]
    expected, got, _ = cpu_and_emu(cuda_emu, asp.embedding_bag, table, ids, offsets=starts,
                                   mode=mode, include_last_offset=False)
    assert_same(expected, got)
    psw = np.linspace(0.5, 2.0, len(ids)).astype(np.float32)
    expected, got, _ = cpu_and_emu(cuda_emu, asp.embedding_bag, table, ids, offsets=starts,
                                   mode=mode, include_last_offset=False,
                                   per_sample_weights=psw)
    assert_same(expected, got)


@pytest.mark.parametrize("width", [8, 16, 40, 70, 256], ids=lambda w: f"D{w}")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_fused_wide_float_tables_match_the_cpu_fast_path(cuda_emu: Emulator, dtype: Any,
                                                         width: int) -> None:
    rng = np.random.default_rng(width)
    table = (rng.standard_normal((30, width)) * 1e3).astype(dtype)
    offsets = np.concatenate([[2], 2 + np.cumsum(LENGTHS)])
    ids = rng.integers(0, 30, size=int(offsets[-1]))
    for fn in (asp.sparse_segment_sum, asp.sparse_segment_mean, asp.sparse_segment_max):
        expected, got, _ = cpu_and_emu(cuda_emu, fn, table, ids, offsets=offsets)
        assert_same(expected, got)
    for mode in ("sum", "mean"):
        expected, got, _ = cpu_and_emu(cuda_emu, asp.embedding_bag, table, ids[2:],
                                       offsets=offsets[:-1] - 2, mode=mode,
                                       include_last_offset=False)
        assert_same(expected, got)


@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
def test_fused_arrow_null_bags_and_ids_match_cpu(cuda_emu: Emulator, large: bool) -> None:
    table = np.arange(20, dtype=np.float64).reshape(10, 2) - 7.5
    rows = [[1, 2, 3], None, [], [4, None, 6, 7, 9], None, [9], [None], [0, 0]]
    typ = pa.large_list(pa.int32()) if large else pa.list_(pa.int64())
    ids = pa.array(rows, typ).slice(1)
    for fn in (*FUSED.values(), asp.embedding_bag):
        expected, got, launches = cpu_and_emu(cuda_emu, fn, table, ids)
        assert_same(expected, got)
        assert kernels(launches) == ["gather_reduce"]


# ------------------------------------------------------------ gather and scatters
def test_gather_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype) -> None:
    table, ids, _ = table_and_ids(values_dtype, np.int64)
    expected, got, _ = cpu_and_emu(cuda_emu, asp.gather, table, ids[:12].reshape(4, 3))
    assert_same(expected, got)
    arrow = pa.array([[1, 2], None, [3]], pa.list_(pa.int32()))
    expected, got, _ = cpu_and_emu(cuda_emu, asp.gather, arrow, [2, 1, 0, 2])
    assert expected.equals(got)


def test_scatter_assign_last_write_wins_like_cpu(cuda_emu: Emulator,
                                                 values_dtype: np.dtype) -> None:
    data, _ = sample(values_dtype, 3)
    idx = np.array([4, 0, 4, 7, 4, 0])
    slices, _ = sample(values_dtype, 3, seed=9)
    slices = slices[:len(idx)]
    expected, got, launches = cpu_and_emu(
        cuda_emu, lambda: asp.scatter_assign(data.copy(), idx, slices))
    assert_same(expected, got)
    assert kernels(launches) == ["scatter_claim", "scatter_assign_rows"]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("w0", [0.3, 1.0])
def test_scatter_weighted_sum_scales_then_adds_like_cpu(
        cuda_emu: Emulator, dtype: Any, offsets_dtype: np.dtype, w0: float) -> None:
    # Caffe2's two loops: every occurrence scales, then every slice adds, in index order.
    data, _ = sample(dtype, 3)
    idx = np.array([4, 0, 4, 7, 4, 0, 2], dtype=offsets_dtype)
    slices, _ = sample(dtype, 3, seed=9)
    slices = slices[:len(idx)]
    expected, got, launches = cpu_and_emu(
        cuda_emu, lambda: asp.scatter_weighted_sum(data.copy(), w0, idx, slices, 1.7))
    assert_same(expected, got)
    assert kernels(launches) == ["scatter_weighted_sum_runs"]
    oracle = ref.scatter_weighted_sum(data.astype(np.float64).tolist(), w0, idx.tolist(),
                                      slices.astype(np.float64).tolist(), 1.7)
    np.testing.assert_allclose(got, oracle, rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_scatter_weighted_sum_repeats_far_apart_like_cpu(cuda_emu: Emulator) -> None:
    # Every row listed several times, its repeats spread over the whole index array
    # (the case a scan from each first occurrence would make quadratic).
    rng = np.random.default_rng(5)
    data = rng.standard_normal((50, 4))
    idx = np.tile(rng.permutation(50), 6)
    slices = rng.standard_normal((len(idx), 4))
    expected, got, _ = cpu_and_emu(
        cuda_emu, lambda: asp.scatter_weighted_sum(data.copy(), 0.9, idx, slices, -0.4))
    assert_same(expected, got)


# ------------------------------------------------------------ grids and edge cases
def test_grid_stride_loops_cover_more_work_than_threads(cuda_emu: Emulator,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads for thousands of elements
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 30, size=300)
    offsets = np.concatenate([[4], 4 + np.cumsum(lengths)])
    values = rng.standard_normal((int(offsets[-1]), 3))
    for fn in SORTED.values():
        expected, got, _ = cpu_and_emu(cuda_emu, fn, values, offsets=offsets)
        assert_same(expected, got)
    ids = rng.integers(0, 40, size=len(values))
    for fn in UNSORTED.values():
        expected, got, _ = cpu_and_emu(cuda_emu, fn, values, ids, 40)
        assert_same(expected, got, rtol=1e-12)
    table = rng.standard_normal((50, 3))
    bag_ids = rng.integers(0, 50, size=int(offsets[-1]))
    for fn in FUSED.values():
        expected, got, _ = cpu_and_emu(cuda_emu, fn, table, bag_ids, offsets=offsets)
        assert_same(expected, got)
    sorted_ids = np.sort(rng.integers(0, 700, size=2000))
    expected, got, _ = cpu_and_emu(cuda_emu, asp.segment_sum, np.ones(2000), segment_ids=sorted_ids)
    assert_same(expected, got)


def test_no_rows_and_no_values_launch_nothing(cuda_emu: Emulator) -> None:
    for offsets in (np.array([0]), np.array([3, 3, 3])):
        for fn in SORTED.values():
            expected, got, launches = cpu_and_emu(cuda_emu, fn, np.zeros(3, np.int32),
                                                  offsets=offsets)
            assert_same(expected, got)
            # no rows: nothing to launch; empty rows still get `empty` written
            assert len(launches) == (0 if len(offsets) == 1 else 1)


def test_emulator_build_time_is_reported(cuda_emu: Emulator) -> None:
    asp.segment_sum(np.ones(3), lengths=[3])
    assert "segment" in cuda_emu.modules
    print(f"cuda_emu build seconds this process: {sum(BUILD_SECONDS):.2f}")


# ------------------------------------------------------------------ on a real GPU
def cupy_or_skip() -> Any:
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy


@pytest.mark.gpu
def test_gpu_launchers_match_cpu(values_dtype: np.dtype, offsets_dtype: np.dtype) -> None:
    cupy = cupy_or_skip()
    values, offsets = sample(values_dtype, 3)
    offsets = offsets.astype(offsets_dtype)
    rows = len(offsets) - 1
    acc = np.dtype(np.float64) if values_dtype.kind == "f" else (
        np.dtype(np.uint64) if values_dtype == np.uint64 else np.dtype(np.int64))
    out_dtype = values_dtype if values_dtype.kind == "f" else acc
    expected = np.empty((rows, 3), out_dtype)
    cpu_segment.sorted_sum(values, offsets, None, None, None, None, False, acc.type(0), 0,
                           out_dtype.type(0), expected, None)
    out = cupy.empty((rows, 3), out_dtype)
    _backend.get_kernel("segment", "sorted_sum", cupy)(
        cupy.asarray(values), cupy.asarray(offsets), None, None, None, None, False,
        acc.type(0), 0, out_dtype.type(0), out, None)
    np.testing.assert_array_equal(cupy.asnumpy(out), expected)
    ids = np.random.default_rng(1).integers(0, 5, size=len(values))
    for is_max in (True, False):
        info = np.finfo if values_dtype.kind == "f" else np.iinfo
        init = values_dtype.type(info(values_dtype).min if is_max else info(values_dtype).max)
        exp_out = np.empty((5, 3), values_dtype)
        exp_counts = np.empty(5, np.int64)
        cpu_segment.scatter_extreme(values, ids, None, is_max, init, 1, values_dtype.type(0),
                                    exp_out, exp_counts)
        got_out = cupy.empty((5, 3), values_dtype)
        got_counts = cupy.empty(5, np.int64)
        _backend.get_kernel("segment", "scatter_extreme", cupy)(
            cupy.asarray(values), cupy.asarray(ids), None, is_max, init, 1,
            values_dtype.type(0), got_out, got_counts)
        cuda.check_errors("test")
        np.testing.assert_array_equal(cupy.asnumpy(got_out), exp_out)
        np.testing.assert_array_equal(cupy.asnumpy(got_counts), exp_counts)
