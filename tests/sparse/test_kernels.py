"""The sparse kernels: the CPU (Numba) ones and their CUDA twins (``kernels/cuda/sparse.cu``).

Every launcher runs on the CPU emulator (``tests/cuda_emu``) through the real dispatch
and launch code and must match its CPU (Numba) twin on random inputs of every dtype
variant the public operations produce: all ten value dtypes (bools where a kernel
moves them), int32 and int64 ``indptr`` and indices, ``indptr`` starting above zero
(a slice) with entries before and after the addressed ones, empty lines, repeated
coordinates, unsorted lines, empty inputs.

Bit for bit: every integer result and every order (conversions, permutations, run
sums, flags), and the float results of ``csr_spmm``, ``dense_csr``, ``csc_spmm`` and
``sum_duplicates`` / ``canonical_lines`` (one lane or thread sums each output in the
CPU's order). ``csr_spmv`` and ``major_sums`` combine 32 lane partials with atomics, and
``compressed_to_dense`` and ``scatter_add`` add repeated coordinates with atomics: their
float results are within ``32 eps`` of the sum of the magnitudes added (NaN where NaN).
Every launch also runs in reversed and shuffled thread order and must give the same
integers. The launchers also run on device arrays of the stand-in CuPy (with their
documented synchronisations), and ``gpu``-marked tests run them on CuPy where a device
exists; the public sparse operations are compared with the CPU through the emulator in
test_tensor.py. ``nvcc --ptx`` is in ``test_cuda_infra.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.errors import (
    ArrowSparseIndexError,
    ArrowSparseValueError,
)
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import sparse as cpu_sparse
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import sparse as cuda_sparse
from tests._matrix import pairwise_parametrize
from tests.conftest import NUMERIC_DTYPES, OFFSETS_DTYPES, cupy_or_skip
from tests.cuda_emu import fake_cupy
from tests.cuda_emu.emu import Emulator, emulated
from tests.sparse._helpers import assert_same, compressed, values_of


# --------------------------------------------------------------------------- CPU kernels
def test_radix_argsort_matches_lexsort() -> None:
    from arrow_sparse.kernels.cpu import sparse as kernels

    rng = np.random.default_rng(0)
    keys: list[np.ndarray] = [rng.integers(0, 5, 1000), rng.integers(0, 50, 1000).astype(np.int32),
            rng.integers(0, 3, 1000)]
    perm = kernels.radix_argsort(keys, [5, 50, 3])
    np.testing.assert_array_equal(perm, np.lexsort(keys[::-1]))


def test_compressed_transpose_kernel_is_stable() -> None:
    from arrow_sparse.kernels.cpu import sparse as kernels

    indptr = np.array([0, 2, 4])
    indices = np.array([1, 1, 0, 1])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    ptr, idx, val = kernels.compressed_transpose(indptr, indices, values, 2)
    assert ptr.tolist() == [0, 1, 4]
    assert idx.tolist() == [1, 0, 0, 1]
    assert val.tolist() == [3.0, 1.0, 2.0, 4.0]


# ------------------------------------------------------------------ the CUDA launchers
INDEX_DTYPES = [np.dtype(np.int32), np.dtype(np.int64)]
SUM_DTYPES = [np.dtype(t) for t in (np.int64, np.uint64, np.float32, np.float64)]
MOVED_DTYPES = [np.dtype(t) for t in (*NUMERIC_DTYPES, np.bool_)]
#: Launchers whose float sums combine with atomics (the others give the same bits in
#: every thread order).
ATOMIC = ("csr_spmv", "major_sums", "compressed_to_dense", "scatter_add")


# ------------------------------------------------------------------------ inputs
def copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else
                 list(copies(tuple(a))) if isinstance(a, list) else a for a in args)


def run_both(emu: Emulator, name: str, args: tuple[Any, ...], written: tuple[int, ...] = ()
             ) -> tuple[Any, Any]:
    """The CPU kernel and the CUDA launcher (on the emulator) on copies of ``args``.

    Returns ``(expected, got)``: the return values, or the arrays at ``written``.
    """
    cpu_args, gpu_args = copies(args), copies(args)
    expected = getattr(cpu_sparse, name)(*cpu_args)
    launcher = _backend.get_kernel("sparse", name)
    assert launcher.func is getattr(cuda_sparse, name)
    before = len(emu.launches)
    got = launcher(*gpu_args)
    cuda.check_errors(name)
    if name not in ATOMIC:  # the same bits in every thread order
        assert not set(emu.launches[before:]) & set(emu.order_effects)
    if written:
        return tuple(cpu_args[i] for i in written), tuple(gpu_args[i] for i in written)
    return expected, got


def assert_close(got: np.ndarray, expected: np.ndarray, scale: np.ndarray) -> None:
    """Integers bit for bit; floats within 32 eps of ``scale`` (the magnitudes added)."""
    if got.dtype.kind != "f":
        assert_same(got, expected)
        return
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    diff = np.abs(got[~nan].astype(np.float64) - expected[~nan])
    assert (diff <= 32 * np.finfo(got.dtype).eps * scale[~nan]).all()


def magnitudes(name: str, args: tuple[Any, ...], written: int) -> np.ndarray:
    """The CPU kernel on the absolute values in float64: the scale of a float sum."""
    absolute = tuple(np.abs(a).astype(np.float64) if isinstance(a, np.ndarray) and
                     a.dtype.kind == "f" else a for a in args)
    absolute = copies(absolute)
    getattr(cpu_sparse, name)(*absolute)
    return absolute[written]  # type: ignore[no-any-return]


# ------------------------------------------------------------------ registry and source
def test_name_expressions_cover_every_variant_once() -> None:
    names = cuda.name_expressions("sparse")
    assert len(names) == len(set(names)) == 2 + 4 + 4 + 20 + 2 + 4 + 40 + 40 + 8 + 40 + 20 + 2
    for dtype in NUMERIC_DTYPES:
        c = _launch.DTYPE_TO_CTYPE[np.dtype(dtype)]
        assert f"csr_spmm<{c}, int, long long>" in names
        assert f"sum_runs<long long, {c}>" in names
    assert "csr_spmv<signed char, int, long long, int>" in names
    assert "scatter_add<unsigned short, unsigned int, long long>" in names
    assert "major_sums<unsigned long long, int>" in names


def test_launchers_take_the_cpu_kernels_arguments() -> None:
    assert set(cuda_sparse.__all__) == set(_backend.cpu_kernel_names("sparse"))
    for name in cuda_sparse.__all__:
        cpu_params = list(inspect.signature(getattr(cpu_sparse, name)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_sparse, name)).parameters)
        assert cuda_params == ["xp", *cpu_params], name


# ------------------------------------------------------------------------ products
@pairwise_parametrize("values_dtype,offsets_dtype,idx", NUMERIC_DTYPES, OFFSETS_DTYPES,
                      INDEX_DTYPES)
def test_csr_spmm_matches_cpu_bit_for_bit(cuda_emu: Emulator, values_dtype: np.dtype,
                                          offsets_dtype: np.dtype, idx: np.dtype) -> None:
    for width in (1, 3, 32, 45):
        rng = np.random.default_rng(width)
        indptr, indices, values = compressed(rng, 11, 7, ptr=offsets_dtype, idx=idx,
                                             dtype=values_dtype)
        dense = values_of(rng, values_dtype, 7 * width).reshape(7, width)
        out = values_of(rng, values_dtype, 11 * width).reshape(11, width)  # added to
        expected, got = run_both(cuda_emu, "csr_spmm", (indptr, indices, values, dense, out),
                                 written=(4,))
        assert_same(got, expected)


@pairwise_parametrize("values_dtype,offsets_dtype,idx", NUMERIC_DTYPES, OFFSETS_DTYPES,
                      INDEX_DTYPES)
def test_csr_spmv_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                              offsets_dtype: np.dtype, idx: np.dtype) -> None:
    rng = np.random.default_rng(1)
    # lines longer than the 32 lanes, so lanes hold several entries
    indptr, indices, values = compressed(rng, 9, 50, ptr=offsets_dtype, idx=idx,
                                         dtype=values_dtype, max_len=80)
    args = (indptr, indices, values, values_of(rng, values_dtype, 50),
            np.zeros(9, values_dtype))
    (expected,), (got,) = run_both(cuda_emu, "csr_spmv", args, written=(4,))
    assert_close(got, expected, magnitudes("csr_spmv", args, 4))


@pytest.mark.parametrize("name", ["dense_csr", "csc_spmm"])
@pairwise_parametrize("values_dtype,offsets_dtype,idx", NUMERIC_DTYPES, OFFSETS_DTYPES,
                      INDEX_DTYPES)
def test_ordered_scatters_run_as_spmm_bit_for_bit(cuda_emu: Emulator, name: str,
                                                  values_dtype: np.dtype,
                                                  offsets_dtype: np.dtype, idx: np.dtype) -> None:
    rng = np.random.default_rng(2)
    lines, minor, width = 10, 6, 5
    indptr, indices, values = compressed(rng, lines, minor, ptr=offsets_dtype, idx=idx,
                                         dtype=values_dtype)
    if name == "dense_csr":  # out[m, minor] += dense[m, lines] @ csr
        dense = values_of(rng, values_dtype, width * lines).reshape(width, lines)
        args = (dense, indptr, indices, values, np.zeros((width, minor), values_dtype))
    else:  # out[minor, k] += csc @ dense[lines, k]
        dense = values_of(rng, values_dtype, lines * width).reshape(lines, width)
        args = (indptr, indices, values, dense, np.zeros((minor, width), values_dtype))
    expected, got = run_both(cuda_emu, name, args, written=(4,))
    assert_same(got, expected)


def test_dense_csr_skips_zero_operands_like_the_cpu(cuda_emu: Emulator) -> None:
    """``0 * nan`` is never formed: a zero of ``dense`` contributes nothing."""
    indptr, indices = np.array([0, 2, 3]), np.array([0, 1, 1])
    values = np.array([np.nan, np.inf, 2.0])
    dense = np.array([[0.0, 1.0], [-0.0, 0.0], [3.0, 0.5]])
    expected, got = run_both(cuda_emu, "dense_csr",
                             (dense, indptr, indices, values, np.zeros((3, 2))), written=(4,))
    assert_same(got, expected)
    assert np.isnan(got[0][2, 0]) and got[0][0].tolist() == [0.0, 2.0]


# ------------------------------------------------------------------ sums, scatters
@pairwise_parametrize("values_dtype,offsets_dtype,idx", NUMERIC_DTYPES, OFFSETS_DTYPES,
                      INDEX_DTYPES)
def test_compressed_to_dense_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                         offsets_dtype: np.dtype, idx: np.dtype) -> None:
    rng = np.random.default_rng(3)
    indptr, indices, values = compressed(rng, 8, 6, ptr=offsets_dtype, idx=idx,
                                         dtype=values_dtype)
    for transposed in (False, True):
        out = np.zeros((6, 8) if transposed else (8, 6), values_dtype)
        args = (indptr, indices, values, out, transposed)
        (expected,), (got,) = run_both(cuda_emu, "compressed_to_dense", args, written=(3,))
        assert_close(got, expected, magnitudes("compressed_to_dense", args, 3))


def test_compressed_to_dense_without_duplicates_is_exact(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(4)
    dense = values_of(rng, np.float32, 60).reshape(6, 10)
    csr = asp.SparseCSR.from_dense(dense)
    out = np.zeros((6, 10), np.float32)
    expected, got = run_both(cuda_emu, "compressed_to_dense",
                             (csr.indptr, csr.indices, csr.values, out, False), written=(3,))
    assert_same(got, expected)
    assert_same(got[0], dense)


@pytest.mark.parametrize("dtype", SUM_DTYPES, ids=str)
def test_major_sums_match_cpu(cuda_emu: Emulator, dtype: np.dtype,
                              offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(5)
    indptr, _, values = compressed(rng, 12, 80, ptr=offsets_dtype, dtype=dtype, max_len=90)
    args = (indptr, values, values_of(rng, dtype, 12))
    (expected,), (got,) = run_both(cuda_emu, "major_sums", args, written=(2,))
    assert_close(got, expected, magnitudes("major_sums", args, 2))


def test_scatter_add_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype) -> None:
    rng = np.random.default_rng(6)
    for pos_dtype in INDEX_DTYPES:
        positions = rng.integers(0, 13, size=200).astype(pos_dtype)  # many repeats
        args = (values_of(rng, values_dtype, 15), positions,
                values_of(rng, values_dtype, 200))
        (expected,), (got,) = run_both(cuda_emu, "scatter_add", args, written=(0,))
        assert_close(got, expected, magnitudes("scatter_add", args, 0))


def test_narrow_and_non_contiguous_outputs_are_written_back(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(7)
    indptr, indices, values = compressed(rng, 6, 5, dtype=np.int8)
    wide = values_of(rng, np.int8, 6 * 6).reshape(6, 6)
    cases: list[tuple[str, tuple[Any, ...], int]] = [
        ("csr_spmv", (indptr, indices, values, values_of(rng, np.int8, 5), wide[:, 1]), 4),
        ("csr_spmm", (indptr, indices, values, values_of(rng, np.int8, 10).reshape(5, 2),
                      wide[:, 1:3]), 4),
        ("scatter_add", (wide[:, 2], rng.integers(0, 6, size=30), values[:30]), 0),
        ("major_sums", (indptr, values.astype(np.int64),
                        values_of(rng, np.int64, 12)[::2]), 2),
        ("compressed_to_dense", (indptr, indices, values, wide[:, 1:], False), 3),
    ]
    for name, args, written in cases:
        expected, got = run_both(cuda_emu, name, args, written=(written,))
        assert_same(got, expected)


# ------------------------------------------------------------------------- checks
LEX_CASES = {
    "strict": ([0, 0, 1, 2], [1, 3, 0, 0]),
    "repeated pair": ([0, 1, 1, 2], [4, 2, 2, 0]),
    "second unsorted": ([0, 1, 1, 2], [0, 3, 2, 0]),
    "first unsorted": ([0, 2, 1, 3], [0, 0, 0, 0]),
    "one": ([5], [7]),
    "none": ([], []),
}


@pytest.mark.parametrize("case", list(LEX_CASES))
def test_lex_order2_matches_cpu(cuda_emu: Emulator, case: str) -> None:
    first, second = LEX_CASES[case]
    for a, b in ((np.int32, np.int32), (np.int64, np.int64), (np.int32, np.int64)):
        expected, got = run_both(cuda_emu, "lex_order2",
                                 (np.array(first, a), np.array(second, b)))
        assert_same(got, expected)


LINE_CASES = {
    "strict": ([2, 4, 4, 7], [9, 9, 0, 5, 1, 3, 8, 9]),
    "repeat": ([2, 4, 4, 7], [9, 9, 0, 5, 1, 3, 3, 9]),
    "decreasing": ([2, 4, 4, 7], [9, 9, 0, 5, 4, 3, 8, 9]),
    "across lines": ([0, 3, 5], [1, 2, 3, 0, 1]),
    "no lines": ([4], [0, 1]),
    "empty lines": ([1, 1, 1], [3]),
}


@pytest.mark.parametrize("case", list(LINE_CASES))
def test_lines_strictly_increasing_matches_cpu(cuda_emu: Emulator, case: str,
                                               offsets_dtype: np.dtype) -> None:
    indptr, indices = LINE_CASES[case]
    for idx in INDEX_DTYPES:
        expected, got = run_both(cuda_emu, "lines_strictly_increasing",
                                 (np.array(indptr, offsets_dtype), np.array(indices, idx)))
        assert_same(got, expected)
    rng = np.random.default_rng(8)
    for sort in (False, True):
        indptr, indices, _ = compressed(rng, 20, 1000, ptr=offsets_dtype, sort=sort)
        assert_same(*run_both(cuda_emu, "lines_strictly_increasing", (indptr, indices))[::-1])


# -------------------------------------------------------------------- conversions
@pytest.mark.parametrize("out_dtype", [*INDEX_DTYPES, np.dtype(np.int16)], ids=str)
def test_expand_major_matches_cpu(cuda_emu: Emulator, offsets_dtype: np.dtype,
                                  out_dtype: np.dtype) -> None:
    rng = np.random.default_rng(9)
    indptr, _, _ = compressed(rng, 13, 5, ptr=offsets_dtype)
    n = int(indptr[-1] - indptr[0])
    for out in (np.full(n, -1, out_dtype), np.full(n + 4, -1, out_dtype),  # tail left alone
                np.full((n, 2), -1, out_dtype)[:, 1]):  # non-contiguous
        (expected,), (got,) = run_both(cuda_emu, "expand_major", (indptr, out), written=(1,))
        assert_same(got, expected)
    empty = (np.zeros(1, offsets_dtype), np.empty(0, out_dtype))
    assert_same(*run_both(cuda_emu, "expand_major", empty)[::-1])


@pairwise_parametrize("dtype,offsets_dtype,idx", MOVED_DTYPES, OFFSETS_DTYPES, INDEX_DTYPES)
def test_compressed_transpose_matches_cpu(cuda_emu: Emulator, dtype: np.dtype,
                                          offsets_dtype: np.dtype, idx: np.dtype) -> None:
    rng = np.random.default_rng(10)
    indptr, indices, values = compressed(rng, 9, 6, ptr=offsets_dtype, idx=idx, dtype=dtype)
    for num_minor in (6, 9):  # trailing empty lines in the other layout
        expected, got = run_both(cuda_emu, "compressed_transpose",
                                 (indptr, indices, values, num_minor))
        assert_same(got, expected)
    empty = (np.array([4, 4], offsets_dtype), np.zeros(5, np.int32), np.zeros(5, dtype), 3)
    assert_same(*run_both(cuda_emu, "compressed_transpose", empty)[::-1])


def coo_pairs(rng: np.random.Generator, n: int, num_major: int, num_minor: int,
              dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    return (rng.integers(0, num_major, size=n).astype(dtype),
            rng.integers(0, num_minor, size=n).astype(dtype))


@pytest.mark.parametrize("dtype", MOVED_DTYPES, ids=str)
def test_coo_to_compressed_matches_cpu(cuda_emu: Emulator, dtype: np.dtype) -> None:
    rng = np.random.default_rng(11)
    for key_dtype in INDEX_DTYPES:
        for n in (0, 1, 60):
            major, minor = coo_pairs(rng, n, 7, 5, key_dtype)  # repeated pairs
            values = values_of(rng, dtype, n)
            for num_minor in (5, None):
                expected, got = run_both(cuda_emu, "coo_to_compressed",
                                         (major, minor, values, 8, num_minor))
                assert_same(got, expected)
        major, minor = np.sort(major), np.sort(minor)  # already in order
        expected, got = run_both(cuda_emu, "coo_to_compressed", (major, minor, values, 7, 5))
        assert_same(got, expected)


def test_coo_to_compressed_with_a_range_too_wide_to_ravel(cuda_emu: Emulator) -> None:
    """Two stable passes when ``num_major * num_minor`` exceeds int64: the same order."""
    rng = np.random.default_rng(12)
    major, minor = coo_pairs(rng, 50, 4, 6, np.int64)
    minor[::5] = 2 ** 62 - 1
    values = values_of(rng, np.float64, 50)
    expected = cpu_sparse.coo_to_compressed(major, minor, values, 4, None)
    got = cuda_sparse.coo_to_compressed(np, major, minor, values, 4, 2 ** 62)
    assert_same(got, expected)


@pairwise_parametrize("dtype,offsets_dtype,idx", MOVED_DTYPES, OFFSETS_DTYPES, INDEX_DTYPES)
def test_sum_duplicates_and_canonical_lines_match_cpu(cuda_emu: Emulator, dtype: np.dtype,
                                                      offsets_dtype: np.dtype,
                                                      idx: np.dtype) -> None:
    rng = np.random.default_rng(13)
    for sort in (True, False):
        indptr, indices, values = compressed(rng, 14, 4, ptr=offsets_dtype, idx=idx,
                                             dtype=dtype, sort=sort)
        if sort:
            assert_same(*run_both(cuda_emu, "sum_duplicates", (indptr, indices, values))[::-1])
        assert_same(*run_both(cuda_emu, "canonical_lines", (indptr, indices, values))[::-1])
    empty = (np.array([2, 2, 2], offsets_dtype), np.zeros(3, idx), values[:3])
    for name in ("sum_duplicates", "canonical_lines"):
        assert_same(*run_both(cuda_emu, name, empty)[::-1])


@pytest.mark.parametrize("sizes", [[7], [3, 5], [2, 3, 4], [6, 1]])
def test_radix_argsort_matches_cpu(cuda_emu: Emulator, sizes: list[int]) -> None:
    rng = np.random.default_rng(len(sizes))
    for dtype in INDEX_DTYPES:
        for n in (0, 1, 70):
            keys = [rng.integers(0, s, size=n).astype(dtype) for s in sizes]
            assert_same(*run_both(cuda_emu, "radix_argsort", (keys, sizes))[::-1])
    assert_same(cuda_sparse.radix_argsort(np, [], []), cpu_sparse.radix_argsort([], []))


def test_radix_argsort_beyond_int64_sorts_one_key_at_a_time(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(14)
    keys = [rng.integers(0, 3, size=40), rng.integers(0, 2 ** 40, size=40),
            rng.integers(0, 4, size=40)]
    keys[1][::3] = 7
    got = cuda_sparse.radix_argsort(np, keys, [3, 2 ** 40, 2 ** 30])
    assert_same(got, np.lexsort(keys[::-1]).astype(np.int64))


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5), st.integers(-3, 3)),
                max_size=40))
def test_canonical_coo_matches_an_independent_reference(
        entries: list[tuple[int, int, int]]) -> None:
    """COO -> canonical CSR through the launchers, against a dictionary of sums."""
    major = np.array([e[0] for e in entries], dtype=np.int64)
    minor = np.array([e[1] for e in entries], dtype=np.int32)
    values = np.array([e[2] for e in entries], dtype=np.int64)
    with emulated():
        ptr, cols, vals = cuda_sparse.coo_to_compressed(np, major, minor, values, 5, 6)
        ptr, cols, vals = cuda_sparse.sum_duplicates(np, ptr, cols, vals)
        rows = cuda_sparse.expand_major(np, ptr, np.empty(len(cols), np.int64))
        cuda.check_errors("canonical")
    sums: dict[tuple[int, int], int] = {}
    for r, c, v in entries:
        sums[r, c] = sums.get((r, c), 0) + v
    assert list(zip(rows.tolist(), cols.tolist(), vals.tolist(), strict=True)) == \
        [(r, c, v) for (r, c), v in sorted(sums.items())]
    assert ptr.tolist() == np.searchsorted(rows, np.arange(6)).tolist()


# ------------------------------------------------------------------ grid-stride loops
def test_grid_stride_loops_cover_more_work_than_threads(
        cuda_emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """One block of 256 threads (8 lane groups) for every launch, on bigger inputs."""
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)
    rng = np.random.default_rng(15)
    indptr, indices, values = compressed(rng, 300, 40, max_len=40)
    sorted_ptr, sorted_idx, _ = compressed(rng, 300, 40, max_len=12, sort=True)
    dense = values_of(rng, np.float64, 40 * 40).reshape(40, 40)
    n = int(indptr[-1] - indptr[0])
    major, minor = coo_pairs(rng, 900, 300, 40, np.int64)
    cases: list[tuple[str, tuple[Any, ...], tuple[int, ...]]] = [
        ("csr_spmm", (indptr, indices, values, dense, np.zeros((300, 40))), (4,)),
        ("csr_spmv", (indptr, indices, values, dense[0], np.zeros(300)), (4,)),
        ("dense_csr", (values_of(rng, np.float64, 3 * 300).reshape(3, 300), indptr, indices,
                       values, np.zeros((3, 40))), (4,)),
        ("csc_spmm", (indptr, indices, values, values_of(rng, np.float64, 300 * 2)
                      .reshape(300, 2), np.zeros((40, 2))), (4,)),
        ("compressed_to_dense", (indptr, indices, values, np.zeros((300, 40)), False), (3,)),
        ("major_sums", (indptr, values, np.zeros(300)), (2,)),
        ("scatter_add", (np.zeros(300), major, values[:900]), (0,)),
        ("lines_strictly_increasing", (sorted_ptr, sorted_idx), ()),
        ("expand_major", (indptr, np.empty(n, np.int64)), ()),
        ("compressed_transpose", (indptr, indices, values, 40), ()),
        ("coo_to_compressed", (major, minor, values[:900], 300, 40), ()),
        ("sum_duplicates", (sorted_ptr, sorted_idx, values[:len(sorted_idx)]), ()),
        ("canonical_lines", (indptr, indices, values), ()),
        ("radix_argsort", ([major, minor], [300, 40]), ()),
    ]
    for name, args, written in cases:
        expected, got = run_both(cuda_emu, name, args, written)
        if name in ATOMIC:
            scale = magnitudes(name, args, written[0])
            assert_close(got[0], expected[0], scale)
        else:
            assert_same(got, expected)


# ------------------------------------------------------------ device checks and errors
def bad_spmm() -> tuple[Any, ...]:
    indptr, indices = np.array([1, 3, 5]), np.array([9, 0, 2, 7, 1])
    return indptr, indices, np.ones(5), np.ones((3, 2)), np.zeros((2, 2))


DEVICE_ERRORS: dict[str, tuple[Callable[[], Any], type, str]] = {
    "csr_spmm": (lambda: cuda_sparse.csr_spmm(np, *bad_spmm()), ArrowSparseIndexError,
                 r"indices out of range of the dimension \(first at position 3;"),
    "csr_spmv": (lambda: cuda_sparse.csr_spmv(np, *bad_spmm()[:3], np.ones(3), np.zeros(2)),
                 ArrowSparseIndexError, r"indices out of range of the dimension \(first at "
                 r"position 3;"),
    "compressed_to_dense": (lambda: cuda_sparse.compressed_to_dense(
        np, *bad_spmm()[:3], np.zeros((2, 3)), False), ArrowSparseIndexError,
        r"indices out of range of the dimension \(first at position 3;"),
    "coo_to_compressed": (lambda: cuda_sparse.coo_to_compressed(
        np, np.array([0, 1, 2, 5]), np.zeros(4, np.int64), np.ones(4), 3, 1),
        ArrowSparseIndexError, r"indices out of range of the dimension \(first at position 3;"),
    "scatter_add": (lambda: cuda_sparse.scatter_add(np, np.zeros(4), np.array([0, -1, 4]),
                                                    np.ones(3)),
                    ArrowSparseIndexError, r"positions out of range of the output \(first at "
                    r"position 1;"),
    "csr_spmm entries": (lambda: cuda_sparse.csr_spmm(
        np, np.array([0, 2, 9]), np.zeros(4, np.int64), np.ones(4), np.ones((1, 2)),
        np.zeros((2, 2))), ArrowSparseValueError,
        r"indptr addresses entries outside the stored indices \(first at position 2;"),
    "major_sums entries": (lambda: cuda_sparse.major_sums(np, np.array([0, 5]), np.ones(4),
                                                          np.zeros(1)),
                           ArrowSparseValueError, r"indptr addresses entries outside the "
                           r"stored indices \(first at position 1;"),
    "compressed_to_dense entries": (lambda: cuda_sparse.compressed_to_dense(
        np, np.array([2, 3, 8]), np.zeros(4, np.int64), np.ones(4), np.zeros((2, 3)), False),
        ArrowSparseValueError, r"indptr addresses entries outside the stored indices \(first "
        r"at position 2;"),
    "lines_strictly_increasing entries": (lambda: cuda_sparse.lines_strictly_increasing(
        np, np.array([-1, 2]), np.zeros(4, np.int64)), ArrowSparseValueError,
        r"indptr addresses entries outside the stored indices \(first at position 0;"),
    "check_index_range": (lambda: cuda_sparse.check_index_range(
        np, np.array([0, 3, 1, -1, 5], np.int32), 3), ArrowSparseIndexError,
        r"indices out of range of the dimension \(first at position 1;"),
    "check_index_range window": (lambda: cuda_sparse.check_index_range(
        np, np.array([7, 0, 5, 1, 9]), 3, np.array([1, 4])), ArrowSparseIndexError,
        r"indices out of range of the dimension \(first at position 2;"),
}


def test_check_index_range_reads_only_its_window(cuda_emu: Emulator) -> None:
    idx = np.array([7, 0, 2, 1, 9])
    for window in ([1, 4], [1, 2], [3, 3], [4, 1]):
        cuda_sparse.check_index_range(np, idx, 3, np.array(window))
        cuda.check_errors("window")  # 7 and 9 are outside every window
    for window, position in (([2, 99], 4), ([-3, 1], 0)):  # clipped to the indices
        cuda_sparse.check_index_range(np, idx, 3, np.array(window))
        with pytest.raises(ArrowSparseIndexError, match=f"first at position {position};"):
            cuda.check_errors("clipped")
    cuda_sparse.check_index_range(np, idx[:0], 3)
    assert cuda_emu.launches == ["check_index_range<long long>"] * 6


@pytest.mark.parametrize("case", list(DEVICE_ERRORS))
def test_device_checks_record_bad_indices_and_ranges(cuda_emu: Emulator, case: str) -> None:
    call, error, message = DEVICE_ERRORS[case]
    call()
    with pytest.raises(error, match=rf"^{case.split()[0]}: {message} found by a device "
                       r"check\)$"):
        cuda.check_errors(case.split()[0])


def test_bad_terms_are_skipped_and_the_rest_computed(cuda_emu: Emulator) -> None:
    *args, out = bad_spmm()
    cuda_sparse.csr_spmm(np, *args, out)
    with pytest.raises(ArrowSparseIndexError):
        cuda.check_errors("csr_spmm")
    assert out.tolist() == [[2.0, 2.0], [1.0, 1.0]]  # entry 3 skipped, entry 0 never read


HOST_ERRORS: dict[str, tuple[Callable[[], Any], type, str]] = {
    "csr_spmm": (lambda: cuda_sparse.csr_spmm(np, *bad_spmm()[:4], np.zeros((3, 2))),
                 ArrowSparseValueError, r"^csr_spmm: out must have shape \(2, 2\), got \(3, 2\)$"),
    "csr_spmv": (lambda: cuda_sparse.csr_spmv(np, *bad_spmm()[:3], np.ones(3), np.zeros(3)),
                 ArrowSparseValueError, r"^csr_spmv: out must have shape \(2,\), got \(3,\)$"),
    "dense_csr": (lambda: cuda_sparse.dense_csr(np, np.ones((2, 3)), *bad_spmm()[:3],
                                                np.zeros((2, 4))),
                  ArrowSparseValueError, r"^dense_csr: dense must have shape \(2, 2\), got "
                  r"\(2, 3\)$"),
    "csc_spmm": (lambda: cuda_sparse.csc_spmm(np, *bad_spmm()[:3], np.ones((3, 2)),
                                              np.zeros((4, 2))),
                 ArrowSparseValueError, r"^csc_spmm: dense must have shape \(2, 2\), got "
                 r"\(3, 2\)$"),
    "compressed_to_dense": (lambda: cuda_sparse.compressed_to_dense(
        np, *bad_spmm()[:3], np.zeros((3, 3)), True), ArrowSparseValueError,
        r"^compressed_to_dense: out has shape \(3, 3\) but indptr has 2 columns$"),
    "major_sums": (lambda: cuda_sparse.major_sums(np, np.array([0, 1]), np.ones(1), np.zeros(2)),
                   ArrowSparseValueError, r"^major_sums: out must have shape \(1,\), got "
                   r"\(2,\)$"),
    "scatter_add": (lambda: cuda_sparse.scatter_add(np, np.zeros(3), np.zeros(2, np.int64),
                                                    np.ones(3)),
                    ArrowSparseValueError, r"^scatter_add: values must have shape \(2,\), got "
                    r"\(3,\)$"),
    "lex_order2": (lambda: cuda_sparse.lex_order2(np, np.zeros(3), np.zeros(2)),
                   ArrowSparseValueError, r"^lex_order2: second must have shape \(3,\)"),
    "coo_to_compressed": (lambda: cuda_sparse.coo_to_compressed(
        np, np.zeros(3, np.int64), np.zeros(2, np.int64), np.ones(3), 1, 1), ArrowSparseValueError,
        r"^coo_to_compressed: minor must have shape \(3,\)"),
    "float16": (lambda: cuda_sparse.csr_spmm(np, *bad_spmm()[:4], np.zeros((2, 2), np.float16)),
                NotImplementedError, r"^csr_spmm: no cuda kernel for float16$"),
    "major_sums int32": (lambda: cuda_sparse.major_sums(np, np.array([0, 1]), np.ones(1, np.int32),
                                                        np.zeros(1, np.int32)),
                         NotImplementedError, r"^major_sums: no cuda kernel for int32$"),
    "sum_duplicates int16": (lambda: cuda_sparse.sum_duplicates(
        np, np.array([0, 2]), np.zeros(2, np.int16), np.ones(2)), NotImplementedError,
        r"^sum_duplicates: no cuda kernel for int16$"),
}


@pytest.mark.parametrize("case", list(HOST_ERRORS))
def test_host_checks_of_the_launchers(cuda_emu: Emulator, case: str) -> None:
    call, error, message = HOST_ERRORS[case]
    with pytest.raises(error, match=message):
        call()
    assert cuda_emu.launches == []


# ---------------------------------------------------------------- on device arrays
def device_cases() -> dict[str, tuple[tuple[Any, ...], tuple[int, ...], int]]:
    """Per launcher: host arguments, the arrays it writes (none: it returns), and the
    synchronisations its docstring documents."""
    rng = np.random.default_rng(17)
    indptr, indices, values = compressed(rng, 8, 6)
    sorted_ptr, sorted_idx, sorted_vals = compressed(rng, 8, 6, sort=True)
    major, minor = coo_pairs(rng, 30, 8, 6, np.int64)
    dense = values_of(rng, np.float64, 6 * 3).reshape(6, 3)
    return {
        "csr_spmm": ((indptr, indices, values, dense, np.zeros((8, 3))), (4,), 0),
        "csr_spmv": ((indptr, indices, values, dense[:, 0].copy(), np.zeros(8)), (4,), 0),
        "dense_csr": ((values_of(rng, np.float64, 16).reshape(2, 8), indptr, indices, values,
                       np.zeros((2, 6))), (4,), 1),
        "csc_spmm": ((indptr, indices, values, values_of(rng, np.float64, 16).reshape(8, 2),
                      np.zeros((6, 2))), (4,), 1),
        "compressed_to_dense": ((indptr, indices, values, np.zeros((8, 6)), False), (3,), 0),
        "major_sums": ((indptr, values, np.zeros(8)), (2,), 0),
        "scatter_add": ((np.zeros(8), major, values_of(rng, np.float64, 30)), (0,), 0),
        "lex_order2": ((major, minor), (), 1),
        "lines_strictly_increasing": ((sorted_ptr, sorted_idx), (), 1),
        "expand_major": ((indptr, np.empty(int(indptr[-1] - indptr[0]), np.int64)), (1,), 0),
        "compressed_transpose": ((indptr, indices, values, 6), (), 1),
        "coo_to_compressed": ((major, minor, values_of(rng, np.float64, 30), 8, 6), (), 0),
        "sum_duplicates": ((sorted_ptr, sorted_idx, sorted_vals), (), 2),
        "canonical_lines": ((indptr, indices, values), (), 2),
        "radix_argsort": (([major, minor], [8, 6]), (), 0),
    }


def to_device(module: Any, x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return module.asarray(x)
    if isinstance(x, (tuple, list)):
        return type(x)(to_device(module, item) for item in x)
    return x


def to_host(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x)(to_host(item) for item in x)
    return x.get() if isinstance(x, fake_cupy.ndarray) else x


@pytest.mark.parametrize("name", cuda_sparse.__all__)
def test_launchers_on_device_arrays(name: str) -> None:
    args, written, syncs = device_cases()[name]
    expected_args = copies(args)
    expected = getattr(cpu_sparse, name)(*expected_args)
    with fake_cupy.emulated_cupy(check_orders=("reverse",)) as module:
        device = to_device(module, args)
        launcher = _backend.get_kernel("sparse", name, module)
        module.stats.reset()
        got = launcher(*device)
        assert module.stats.syncs == syncs
        cuda.check_errors(name)
        if written:
            got, expected = to_host(tuple(device[i] for i in written)), \
                tuple(expected_args[i] for i in written)
        got = to_host(got)
    if name in ATOMIC:
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-12, atol=1e-12)
    else:
        assert_same(got, expected)


# ------------------------------------------------------------------ on a real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("name", cuda_sparse.__all__)
def test_gpu_launchers_match_cpu(name: str) -> None:
    cupy = cupy_or_skip()
    args, written, _ = device_cases()[name]
    expected_args = copies(args)
    expected = getattr(cpu_sparse, name)(*expected_args)
    device = to_device(cupy, args)
    got = _backend.get_kernel("sparse", name, cupy)(*device)
    cuda.check_errors(name)
    if written:
        got, expected = tuple(device[i] for i in written), tuple(expected_args[i] for i in written)
    got = tuple(g.get() if isinstance(g, cupy.ndarray) else g for g in got) \
        if isinstance(got, tuple) else got.get() if isinstance(got, cupy.ndarray) else got
    if name in ATOMIC:
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-12, atol=1e-12)
    else:
        assert_same(got, expected)
