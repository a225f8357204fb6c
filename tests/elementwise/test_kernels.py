"""The CUDA jagged arithmetic kernels (``kernels/cuda/elementwise.cu``), launched directly.

Every launcher runs on the CPU emulator (``tests/cuda_emu``) through the real dispatch
and launch code and must match its CPU (Numba) twin on random inputs of every dtype
variant the public operations produce: empty rows, rows longer than a 32-lane group,
``offsets[0] > 0``, values no row addresses, int32 and int64 offsets, null rows and
null elements. Every launch also runs in reversed and shuffled thread order and must
leave the same bits (the only atomics add integers).

Exact (bit for bit) for every kernel but two: ``softmax``, whose exponentials come from
another library (numpy's SIMD exp on the CPU; the C library in the emulator, libdevice
on a GPU), and whose 1-D row sums add 32 lane partials as a butterfly instead of the
CPU's left-to-right loop: float32 within ``rtol=5e-7`` (4 ulp) and float64 within
``rtol=5e-15`` of the CPU, NaN where NaN, in the emulator (``1e-6`` / ``1e-14`` on a
GPU, where libdevice's exp is within 2 ulp); and ``unique_rows``, whose float zeros may
keep the other sign (``-0.0`` and ``0.0`` are one value; which one a row keeps depends
on the sort). The public operations are compared with the CPU through the emulator in
the tests of their modules; ``gpu``-marked tests run the launchers on CuPy arrays where
a device exists. ``nvcc --ptx`` of both variants is in ``tests/test_cuda_infra.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from arrow_sparse import _backend
from arrow_sparse.errors import ArrowSparseIndexError, ArrowSparseValueError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import elementwise as cpu_ew
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import elementwise as cuda_ew

from .._matrix import pairwise_parametrize
from ..conftest import FLOAT_DTYPES, NUMERIC_DTYPES, OFFSETS_DTYPES, cupy_or_skip
from ..cuda_emu.emu import Emulator
from ._helpers import (
    SOFTMAX_ATOL,
    assert_bits,
    assert_softmax_close,
    name,
    random_values,
    unique_values,
)

KERNELS = ("softmax", "cumsum", "gather_ranges", "ranges_to_indices", "repeat_rows",
           "unique_rows", "jagged_dense_jagged_out", "jagged_dense_dense_out",
           "jagged_dense_bmm", "jagged_jagged_bmm")
INT64_MAX = int(np.iinfo(np.int64).max)
SCAN_DTYPES = [np.int64, np.uint64, np.float32, np.float64]
WORD_DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]
MASKS = ["none", "rows", "elems", "both"]


# ----------------------------------------------------------------------- random problems
def layout(seed: int, num_rows: int = 9, start: int = 3) -> np.ndarray:
    """int64 offsets from ``start``: empty rows, short rows and one row of 40 (> 32 lanes)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, size=num_rows)
    lengths[::4] = 0
    if num_rows > 1:
        lengths[1] = 40
    return start + np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def masks(kind: str, num_rows: int, num_values: int, rng: np.random.Generator
          ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(row mask, element mask) as the public functions pass them: uint8 or None."""
    rows = (rng.random(num_rows) < 0.7).astype(np.uint8) if kind in ("rows", "both") else None
    elems = (rng.random(num_values) < 0.7).astype(np.uint8) if kind in ("elems", "both") \
        else None
    return rows, elems


def copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def run_both(kernel: str, cpu_args: tuple[Any, ...], gpu_args: tuple[Any, ...] | None = None
             ) -> tuple[Any, Any, tuple[Any, ...], tuple[Any, ...]]:
    """The CPU kernel and the CUDA launcher (through the dispatch) on copies of the args.

    Returns both results and both argument tuples (the outputs are written in place).
    """
    expected_args = copies(cpu_args)
    got_args = copies(cpu_args if gpu_args is None else gpu_args)
    expected = getattr(cpu_ew, kernel)(*expected_args)
    launcher = _backend.get_kernel("elementwise", kernel)
    assert launcher.func is getattr(cuda_ew, kernel)
    got = launcher(*got_args)
    cuda.check_errors(kernel)
    return expected, got, expected_args, got_args


def widened(offsets: np.ndarray, dtype: Any) -> np.ndarray:
    """The offsets as ``dtype`` (what a launcher may be given; the CPU gets int64)."""
    return offsets.astype(dtype)


# ------------------------------------------------------------------- registry and source
def test_launchers_take_the_cpu_kernels_arguments() -> None:
    assert sorted(cuda_ew.__all__) == sorted(KERNELS) == _backend.cpu_kernel_names("elementwise")
    for kernel in KERNELS:
        cpu_params = list(inspect.signature(getattr(cpu_ew, kernel)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_ew, kernel)).parameters)
        assert cuda_params == ["xp", *cpu_params], kernel


def test_name_expressions_cover_every_variant_once() -> None:
    names = cuda.name_expressions("elementwise")
    assert len(names) == len(set(names)) == 2 * 2 + 4 + 2 * 4 + 2 + 6 * 10 + 1
    for dtype in NUMERIC_DTYPES:
        for kernel in ("unique_run_starts", "unique_write", "jagged_dense_jagged_out",
                       "jagged_dense_dense_out", "jagged_dense_bmm", "jagged_jagged_bmm"):
            assert name(kernel, dtype) in names
    for dtype in FLOAT_DTYPES:
        assert name("softmax_rows", dtype) in names and name("softmax_columns", dtype) in names


def test_device_error_messages_are_declared() -> None:
    table = cuda.error_messages(cuda.source("elementwise"))
    assert {code: cls for code, (_, cls, _) in table.items()} == {
        1: ArrowSparseIndexError, 2: ArrowSparseIndexError, 3: ArrowSparseIndexError,
        4: ArrowSparseIndexError, cuda_ew.ROWS_DIFFER: ArrowSparseValueError,
        cuda_ew.PADDED_SHORT: ArrowSparseValueError}


# -------------------------------------------------------------------- softmax and cumsum
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("width", [1, 3, 40])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_softmax_matches_cpu(cuda_emu: Emulator, dtype: Any, width: int, mask: str,
                             offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(width)
    offsets = layout(width)
    num_values = int(offsets[-1]) + 2
    x = random_values(dtype, (num_values, width), rng)
    rows, elems = masks(mask, len(offsets) - 1, num_values, rng)
    for max_length in (0, 1, 3, INT64_MAX):
        out = np.full((num_values, width), 9, dtype)  # positions no row addresses stay 9
        args = (x, offsets, rows, elems, max_length, out)
        _, _, expected, got = run_both("softmax", args,
                                       (x, widened(offsets, offsets_dtype), *args[2:]))
        assert_softmax_close(got[-1], expected[-1])
    kernel = "softmax_rows" if width == 1 else "softmax_columns"
    assert set(cuda_emu.launches) == {name(kernel, dtype)}


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_softmax_special_values_match_cpu(cuda_emu: Emulator, dtype: Any, width: int) -> None:
    inf, nan = np.inf, np.nan
    rows = [[1.0, nan, 2.0], [inf, 1.0], [-inf, -inf], [-inf, 0.0, -inf], [-0.0, 0.0],
            [1e30, -1e30, 5.0], [-50.0, -100.0, -103.0], [5.0] * 37 + [nan]]
    offsets = np.concatenate([[1], 1 + np.cumsum([len(r) for r in rows])]).astype(np.int64)
    flat = np.array([0.0] + [v for r in rows for v in r], dtype=dtype)
    x = np.repeat(flat[:, None], width, axis=1)
    elems = np.ones(len(flat), np.uint8)
    elems[offsets[3]] = 0  # a null -inf: the row's other -inf is alone
    for elem_valid in (None, elems):
        out = np.zeros_like(x)
        _, _, expected, got = run_both("softmax", (x, offsets, None, elem_valid, INT64_MAX,
                                                   out))
        assert_softmax_close(got[-1], expected[-1])


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("width", [1, 3, 40])
@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=str)
def test_cumsum_matches_cpu_bit_for_bit(cuda_emu: Emulator, dtype: Any, width: int, mask: str,
                                        offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(2 * width)
    offsets = layout(width + 1)
    num_values = int(offsets[-1]) + 2
    x = random_values(dtype, (num_values, width), rng)  # int64 and uint64 sums wrap
    rows, elems = masks(mask, len(offsets) - 1, num_values, rng)
    for exclusive in (False, True):
        out = np.full((num_values + 1, width), 7, dtype)
        args = (x, offsets, rows, elems, exclusive, out)
        _, _, expected, got = run_both("cumsum", args,
                                       (x, widened(offsets, offsets_dtype), *args[2:]))
        assert_bits(got[-1], expected[-1])
    assert set(cuda_emu.launches) == {name("cumsum", dtype)}


def test_softmax_and_cumsum_convert_values_to_the_output_dtype(cuda_emu: Emulator) -> None:
    offsets = layout(5)
    x = np.arange(int(offsets[-1]) * 2, dtype=np.int32).reshape(-1, 2) % 7
    sums = np.zeros(x.shape, np.int64)
    cuda_ew.cumsum(np, x, offsets, None, None, False, sums)
    expected = np.zeros(x.shape, np.int64)
    cpu_ew.cumsum(x.astype(np.int64), offsets, None, None, False, expected)
    np.testing.assert_array_equal(sums, expected)
    soft = np.zeros(x.shape)
    cuda_ew.softmax(np, x, offsets, None, None, INT64_MAX, soft)
    expected_soft = np.zeros(x.shape)
    cpu_ew.softmax(x.astype(np.float64), offsets, None, None, INT64_MAX, expected_soft)
    assert_softmax_close(soft, expected_soft)


# --------------------------------------------------------------------------- row gathers
@pytest.mark.parametrize("width", [0, 1, 3])
@pytest.mark.parametrize("dtype", [*WORD_DTYPES, np.float64, np.int16, np.complex128], ids=str)
def test_gather_ranges_matches_cpu(cuda_emu: Emulator, dtype: Any, width: int) -> None:
    rng = np.random.default_rng(width)
    src = rng.integers(0, 250, size=(60, width)).astype(dtype)
    lengths = rng.integers(0, 6, size=12)
    lengths[[0, 5]] = 0
    starts = rng.integers(0, 60 - lengths + 1)
    out_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    out = np.full((int(out_offsets[-1]) + 2, width), 3, dtype)  # two rows no range fills
    _, _, expected, got = run_both("gather_ranges", (src, starts, out_offsets, out))
    assert_bits(got[-1], expected[-1])
    word = np.dtype(f"u{np.dtype(dtype).itemsize}") if np.dtype(dtype).itemsize <= 8 \
        else np.dtype(np.uint8)
    assert cuda_emu.launches == ([name("gather_ranges", word)] if width else [])


@pytest.mark.parametrize("given", [False, True], ids=["allocated", "into out"])
@pytest.mark.parametrize("num_ranges", [0, 1, 12])
def test_ranges_to_indices_matches_cpu(cuda_emu: Emulator, num_ranges: int, given: bool) -> None:
    rng = np.random.default_rng(num_ranges)
    lengths = rng.integers(0, 6, size=num_ranges)
    starts = rng.integers(0, 100, size=num_ranges).astype(np.int32)  # widened on the way
    out_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    out = (np.full(int(out_offsets[-1]), -7, np.int64),) if given else ()
    expected, got, _, got_args = run_both("ranges_to_indices",
                                          (starts.astype(np.int64), out_offsets, *out),
                                          (starts, out_offsets, *out))
    assert got.dtype == np.int64 and (not given or got is got_args[-1])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("base_below", [0, 2])
@pytest.mark.parametrize("width", [1, 3])
@pytest.mark.parametrize("dtype", [*WORD_DTYPES, np.float32, np.bool_], ids=str)
def test_repeat_rows_matches_cpu(cuda_emu: Emulator, dtype: Any, width: int, base_below: int,
                                 offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(width)
    offsets = layout(width, start=5)
    src = rng.integers(0, 2 if dtype == np.bool_ else 250,
                       size=(len(offsets) - 1, width)).astype(dtype)
    base = int(offsets[0]) - base_below  # positions before the first row stay as they are
    out = np.zeros((int(offsets[-1]) - base, width), dtype)
    _, _, expected, got = run_both("repeat_rows", (src, offsets, base, out),
                                   (src, widened(offsets, offsets_dtype), base, out))
    assert_bits(got[-1], expected[-1])


# -------------------------------------------------------------------------------- unique
@pairwise_parametrize("dtype,offsets_dtype,mask", NUMERIC_DTYPES, OFFSETS_DTYPES, MASKS)
def test_unique_rows_matches_cpu(cuda_emu: Emulator, dtype: Any, mask: str,
                                 offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(3)
    offsets = layout(4)
    num_values = int(offsets[-1]) + 2
    values = unique_values(dtype, num_values, rng)
    rows, elems = masks(mask, len(offsets) - 1, num_values, rng)
    args = (values, offsets, rows, elems)
    expected, got, _, _ = run_both("unique_rows", args,
                                   (values, widened(offsets, offsets_dtype), *args[2:]))
    (out, counts), (want, want_counts) = got, expected
    assert counts.dtype == np.int64 and out.dtype == values.dtype
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(out, want)  # NaN equals NaN, -0.0 equals 0.0
    assert cuda_emu.launches[-2:] == [name("unique_run_starts", dtype),
                                      name("unique_write", dtype)]


@pytest.mark.parametrize("case", ["no rows", "empty rows", "all hidden"])
def test_unique_rows_without_visible_values(cuda_emu: Emulator, case: str) -> None:
    values = np.array([4, 1, 4], np.int16)
    offsets = {"no rows": [1], "empty rows": [2, 2, 2], "all hidden": [0, 2, 3]}[case]
    elems = np.zeros(3, np.uint8) if case == "all hidden" else None
    args = (values, np.array(offsets, np.int64), None, elems)
    expected, got, _, _ = run_both("unique_rows", args)
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
    assert cuda_emu.launches == ([] if case == "no rows" else  # nothing is read back first
                                 ["unique_element_rows<long long>", "unique_run_starts<short>",
                                  "unique_write<short>"])


# ------------------------------------------------------------------------ jagged x dense
def dense_problem(dtype: Any, width: int, mapped: bool, seed: int = 0
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """(x, dense [P, 3, D], dense_row_of or None, offsets): rows longer than the dense."""
    rng = np.random.default_rng(seed)
    offsets = layout(seed + 7)
    num_rows = len(offsets) - 1
    x = random_values(dtype, (int(offsets[-1]) + 2, width), rng)
    num_dense = num_rows + 2 if mapped else num_rows
    dense = random_values(dtype, (num_dense, 3, width), rng)
    row_of = None
    if mapped:  # rows read other dense rows, two read none
        row_of = rng.permutation(num_dense)[:num_rows].astype(np.int64)
        row_of[[0, 3]] = -1
    return x, dense, row_of, offsets


@pairwise_parametrize("dtype,offsets_dtype,op,width,mapped", NUMERIC_DTYPES, OFFSETS_DTYPES,
                      ["add", "mul", "read"], [1, 3], ["identity", "mapped"])
def test_jagged_dense_jagged_out_matches_cpu(cuda_emu: Emulator, dtype: Any, width: int,
                                             op: str, mapped: str,
                                             offsets_dtype: np.dtype) -> None:
    op, mapped = ["add", "mul", "read"].index(op), mapped == "mapped"
    x, dense, row_of, offsets = dense_problem(dtype, width, mapped)
    if dtype in FLOAT_DTYPES:
        x[[3, 4], 0] = [np.inf, -np.inf]  # x * 0 outside the dense: NaN, as on the CPU
    out = np.full(x.shape, 5, dtype)
    x_arg = out if op == 2 else x  # the read passes out as x, as the public code does
    _, _, expected, got = run_both(
        "jagged_dense_jagged_out", (x_arg, dense, row_of, offsets, op, out),
        (x_arg, dense, row_of, widened(offsets, offsets_dtype), op, out))
    assert_bits(got[-1], expected[-1])
    word = np.dtype(f"u{np.dtype(dtype).itemsize}") if op == 2 else dtype
    assert cuda_emu.launches == [name("jagged_dense_jagged_out", word)]


@pytest.mark.parametrize("dtype", [np.bool_, np.complex128], ids=str)
def test_jagged_dense_read_copies_any_dtype_as_words(cuda_emu: Emulator, dtype: Any) -> None:
    rng = np.random.default_rng(1)
    offsets = layout(2)
    dense = (rng.random((len(offsets) - 1, 4, 2)) * 3).astype(dtype)
    out = np.ones((int(offsets[-1]), 2), dtype)
    _, _, expected, got = run_both("jagged_dense_jagged_out", (out, dense, None, offsets, 2, out))
    assert_bits(got[-1], expected[-1])


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("mapped", [False, True], ids=["identity", "mapped"])
@pytest.mark.parametrize("width", [1, 3])
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_jagged_dense_dense_out_matches_cpu(cuda_emu: Emulator, dtype: Any, width: int,
                                            mapped: bool, mask: str) -> None:
    x, dense, _, offsets = dense_problem(dtype, width, False, seed=2)
    rng = np.random.default_rng(5)
    num_rows = len(offsets) - 1
    row_index = None
    if mapped:  # more output rows than jagged rows, some of them padding
        row_index = rng.integers(-1, num_rows, size=num_rows + 3)
        dense = random_values(dtype, (num_rows + 3, 3, width), rng)
    valid, elems = masks(mask, num_rows, len(x), rng)
    out = np.empty_like(dense)
    _, _, expected, got = run_both("jagged_dense_dense_out",
                                   (x, row_index, offsets, valid, elems, dense, out))
    assert_bits(got[-1], expected[-1])
    assert cuda_emu.launches == [name("jagged_dense_dense_out", dtype)]


# ----------------------------------------------------------------------------------- bmm
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize(("depth", "width"), [(3, 5), (1, 1), (0, 2), (4, 33)])
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_jagged_dense_bmm_matches_cpu_bit_for_bit(cuda_emu: Emulator, dtype: Any, depth: int,
                                                  width: int, mask: str) -> None:
    rng = np.random.default_rng(depth + width)
    offsets = layout(depth)
    num_rows, total = len(offsets) - 1, int(offsets[-1])
    x = random_values(dtype, (total, depth), rng)  # integer products and sums wrap
    dense = random_values(dtype, (num_rows, depth, width), rng)
    valid, elems = masks(mask, num_rows, total, rng)
    for max_length in (2, INT64_MAX):
        out = random_values(dtype, (total, width), rng)  # the kernel adds to out
        _, _, expected, got = run_both("jagged_dense_bmm",
                                       (x, offsets, valid, elems, dense, max_length, out))
        assert_bits(got[-1], expected[-1])
    assert set(cuda_emu.launches) == {name("jagged_dense_bmm", dtype)}


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize(("rows_m", "cols_n"), [(2, 3), (1, 1), (3, 40)])
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_jagged_jagged_bmm_matches_cpu_bit_for_bit(cuda_emu: Emulator, dtype: Any, rows_m: int,
                                                   cols_n: int, mask: str,
                                                   offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(rows_m * cols_n)
    x_offsets = layout(rows_m)
    y_offsets = x_offsets - x_offsets[0] + 1  # the same rows elsewhere in y
    num_rows = len(x_offsets) - 1
    x = random_values(dtype, (int(x_offsets[-1]), rows_m), rng)
    y = random_values(dtype, (int(y_offsets[-1]) + 1, cols_n), rng)
    valid, x_valid = masks(mask, num_rows, len(x), rng)
    y_valid = None if mask == "none" else (rng.random(len(y)) < 0.7).astype(np.uint8)
    for max_length in (0, 3, INT64_MAX):
        out = random_values(dtype, (num_rows, rows_m, cols_n), rng)
        args = (x, x_offsets, x_valid, y, y_offsets, y_valid, valid, max_length, out)
        _, _, expected, got = run_both(
            "jagged_jagged_bmm", args,
            (x, widened(x_offsets, offsets_dtype), x_valid, y,
             widened(y_offsets, offsets_dtype), *args[5:]))
        assert_bits(got[-1], expected[-1])


# ----------------------------------------------------------------------- grid and layout
def test_grid_stride_loops_cover_more_work_than_threads(
        cuda_emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads, 8 lane groups
    rng = np.random.default_rng(4)
    offsets = layout(9, num_rows=70)
    total = int(offsets[-1])
    x = rng.standard_normal((total, 1))
    out = np.zeros_like(x)
    _, _, expected, got = run_both("softmax", (x, offsets, None, None, INT64_MAX, out))
    assert_softmax_close(got[-1], expected[-1])
    wide = rng.standard_normal((total, 5))
    out = np.zeros_like(wide)
    _, _, expected, got = run_both("cumsum", (wide, offsets, None, None, False, out))
    assert_bits(got[-1], expected[-1])
    dense = rng.standard_normal((len(offsets) - 1, 5, 7))
    out = np.zeros((total, 7))
    _, _, expected, got = run_both("jagged_dense_bmm",
                                   (wide, offsets, None, None, dense, INT64_MAX, out))
    assert_bits(got[-1], expected[-1])
    out = np.zeros((total, 5), np.uint64)
    _, _, expected, got = run_both("repeat_rows", (rng.integers(0, 9, (70, 5)).astype(np.uint64),
                                                   offsets, int(offsets[0]), out))
    assert_bits(got[-1], expected[-1])


def test_a_non_contiguous_out_is_updated_in_place(cuda_emu: Emulator) -> None:
    offsets = layout(3)
    total = int(offsets[-1])
    x = np.random.default_rng(0).standard_normal((total, 3))
    wide = np.full((total, 6), 4.0)
    cuda_ew.cumsum(np, x, offsets, None, None, False, wide[:, ::2])
    expected = np.full((total, 6), 4.0)
    cpu_ew.cumsum(x, offsets, None, None, False, expected[:, ::2])
    assert_bits(wide, expected)
    wide = np.full((total, 6), 4.0)
    cuda_ew.softmax(np, x, offsets, None, None, INT64_MAX, wide[:, ::2])
    soft = np.full((total, 6), 4.0)
    cpu_ew.softmax(x, offsets, None, None, INT64_MAX, soft[:, ::2])
    assert_softmax_close(wide, soft)


# ------------------------------------------------------------------------- device checks
def test_check_positions_records_the_smallest_position(cuda_emu: Emulator) -> None:
    cuda_ew.check_positions(np, np.array([-1, 7, 3, -1, 5]), cuda_ew.ROWS_DIFFER)
    with pytest.raises(ArrowSparseValueError, match=r"^op: rows differ in length between the "
                       r"operands \(first at position 3; found by a device check\)$"):
        cuda.check_errors("op")
    cuda_ew.check_positions(np, np.array([2, 0]), cuda_ew.PADDED_SHORT)
    with pytest.raises(ArrowSparseValueError, match=r"^op: other \(a padded operand\) is "
                       r"shorter than a row of the Jagged \(first at position 0;"):
        cuda.check_errors("op")
    cuda_ew.check_positions(np, np.array([-1, -1]), cuda_ew.ROWS_DIFFER)
    cuda_ew.check_positions(np, np.empty(0, np.int64), cuda_ew.ROWS_DIFFER)
    cuda.check_errors("op")
    assert cuda_emu.launches == ["check_positions<long long>"] * 3
    with pytest.raises(ValueError, match="^check_positions: unknown error code 1$"):
        cuda_ew.check_positions(np, np.array([0]), 1)


def test_a_range_outside_the_source_is_caught_by_the_device_check(cuda_emu: Emulator) -> None:
    src = np.arange(8, dtype=np.uint32).reshape(4, 2)
    out = np.zeros((5, 2), np.uint32)
    cuda_ew.gather_ranges(np, src, np.array([1, 3, 0]), np.array([0, 2, 4, 5]), out)
    with pytest.raises(ArrowSparseIndexError,
                       match=r"^index_select: a range reaches outside the source rows \(first "
                             r"at position 1; found by a device check\)$"):
        cuda.check_errors("index_select")
    assert out.tolist() == [[2, 3], [4, 5], [6, 7], [0, 0], [0, 1]]  # the rest is copied
    cuda_ew.repeat_rows(np, src, np.array([0, 1, 1, 3, 6, 7]), 0, np.zeros((7, 2), np.uint32))
    with pytest.raises(ArrowSparseIndexError, match=r"source rows \(first at position 4;"):
        cuda.check_errors("repeat")


def test_rows_outside_the_values_are_caught_by_the_device_check(cuda_emu: Emulator) -> None:
    x = np.ones((6, 1))
    bad = np.array([0, 2, 9], np.int64)
    calls: list[Callable[[], Any]] = [
        lambda: cuda_ew.softmax(np, x, bad, None, None, INT64_MAX, np.zeros((6, 1))),
        lambda: cuda_ew.softmax(np, np.ones((6, 2)), bad, None, None, INT64_MAX,
                                np.zeros((6, 2))),
        lambda: cuda_ew.cumsum(np, x, bad, None, None, False, np.zeros((6, 1))),
        lambda: cuda_ew.unique_rows(np, np.ones(6), bad, None, None),
        lambda: cuda_ew.jagged_dense_dense_out(np, x, None, bad, None, None, np.zeros((2, 8, 1)),
                                               np.zeros((2, 8, 1))),
        lambda: cuda_ew.jagged_jagged_bmm(np, x, bad, None, x, bad, None, None, INT64_MAX,
                                          np.zeros((2, 1, 1))),
        lambda: cuda_ew.jagged_dense_bmm(np, x[:2], np.array([0, 1, 3]), None, None,
                                         np.ones((2, 1, 1)), INT64_MAX, np.zeros((3, 1))),
    ]
    for call in calls:
        call()
        with pytest.raises(ArrowSparseIndexError,
                           match=r"^op: a row reaches outside the values \(offsets out of range"
                                 r"\) \(first at position 1; found by a device check\)$"):
            cuda.check_errors("op")


def test_row_indices_out_of_range_are_caught_by_the_device_check(cuda_emu: Emulator) -> None:
    x = np.arange(5.0).reshape(5, 1)
    offsets = np.array([0, 2, 5])
    out = x.copy()
    cuda_ew.jagged_dense_jagged_out(np, x, np.ones((2, 3, 1)), np.array([1, 2]), offsets, 0, out)
    with pytest.raises(ArrowSparseIndexError,
                       match=r"^add: dense row out of range of the dense tensor \(first at "
                             r"position 1;"):
        cuda.check_errors("add")
    assert out[:2, 0].tolist() == [1.0, 2.0]  # row 0 was still added
    cuda_ew.jagged_dense_bmm(np, x, offsets, None, None, np.ones((1, 1, 1)), INT64_MAX,
                             np.zeros((5, 1)))
    with pytest.raises(ArrowSparseIndexError, match="dense row out of range .*position 1;"):
        cuda.check_errors("bmm")
    cuda_ew.jagged_dense_dense_out(np, x, np.array([0, -1, 2]), offsets, None, None,
                                   np.zeros((3, 2, 1)), np.zeros((3, 2, 1)))
    with pytest.raises(ArrowSparseIndexError,
                       match=r"^add: row index out of range of the jagged rows \(first at "
                             r"position 2;"):
        cuda.check_errors("add")
    cuda.check_errors("add")  # the word was reset


@pytest.mark.parametrize(("call", "match"), [
    (lambda: cuda_ew.gather_ranges(np, np.zeros((3, 2), np.uint8), np.array([0]), np.array([0, 1]),
                                   np.zeros((1, 3), np.uint8)),
     r"^gather_ranges: src must have shape \(3,\), got \(2,\)$"),
    (lambda: cuda_ew.jagged_dense_jagged_out(np, np.zeros((2, 2)), np.zeros((1, 2, 3)), None,
                                             np.array([0, 2]), 0, np.zeros((2, 2))),
     r"^jagged_dense_jagged_out: dense must have shape \(2,\), got \(3,\)$"),
    (lambda: cuda_ew.jagged_dense_dense_out(np, np.zeros((2, 1)), None, np.array([0, 2]), None,
                                            None, np.zeros((1, 2, 1)), np.zeros((1, 3, 1))),
     r"^jagged_dense_dense_out: dense must have shape \(1, 3, 1\), got \(1, 2, 1\)$"),
    (lambda: cuda_ew.jagged_dense_bmm(np, np.zeros((2, 3)), np.array([0, 2]), None, None,
                                      np.zeros((1, 2, 4)), 5, np.zeros((2, 4))),
     r"^jagged_dense_bmm: x must have shape \(2,\), got \(3,\)$"),
    (lambda: cuda_ew.jagged_dense_bmm(np, np.zeros((2, 2)), np.array([0, 2]), None, None,
                                      np.zeros((1, 2, 4)), 5, np.zeros((2, 3))),
     r"^jagged_dense_bmm: out must have shape \(4,\), got \(3,\)$"),
    (lambda: cuda_ew.jagged_jagged_bmm(np, np.zeros((2, 2)), np.array([0, 2]), None,
                                       np.zeros((2, 3)), np.array([0, 2]), None, None, 5,
                                       np.zeros((1, 2, 2))),
     r"^jagged_jagged_bmm: out must have shape \(1, 2, 3\), got \(1, 2, 2\)$"),
    (lambda: cuda_ew.jagged_jagged_bmm(np, np.zeros((2, 2)), np.array([0, 2]), None,
                                       np.zeros((2, 3)), np.array([0, 1, 2]), None, None, 5,
                                       np.zeros((1, 2, 3))),
     r"^jagged_jagged_bmm: y_offsets must have shape \(2,\), got \(3,\)$"),
])
def test_mismatched_shapes_raise_before_launch(cuda_emu: Emulator, call: Callable[[], Any],
                                               match: str) -> None:
    with pytest.raises(ArrowSparseValueError, match=match):
        call()
    assert cuda_emu.launches == []


@pytest.mark.parametrize(("call", "match"), [
    (lambda: cuda_ew.softmax(np, np.zeros((2, 1)), np.array([0, 2]), None, None, 5,
                             np.zeros((2, 1), np.float16)), "softmax: no cuda kernel for float16"),
    (lambda: cuda_ew.cumsum(np, np.zeros((2, 1)), np.array([0, 2]), None, None, False,
                            np.zeros((2, 1), np.int32)), "cumsum: no cuda kernel for int32"),
    (lambda: cuda_ew.unique_rows(np, np.zeros(2, np.float16), np.array([0, 2]), None, None),
     "unique_rows: no cuda kernel for float16"),
    (lambda: cuda_ew.jagged_dense_jagged_out(np, np.zeros((2, 1), np.float16),
                                             np.zeros((1, 2, 1), np.float16), None,
                                             np.array([0, 2]), 0, np.zeros((2, 1), np.float16)),
     "jagged_dense_jagged_out: no cuda kernel for float16"),
])
def test_unsupported_dtypes_raise_not_implemented(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(NotImplementedError, match=match):
        call()


# ------------------------------------------------------------------------- on a real GPU
def gpu_problem(kernel: str, dtype: Any) -> tuple[Any, ...]:
    """CPU-kernel arguments of ``kernel`` on a few hundred rows (floats for softmax)."""
    rng = np.random.default_rng(11)
    offsets = layout(12, num_rows=300)
    total = int(offsets[-1])
    num_rows = len(offsets) - 1
    rows, elems = masks("both", num_rows, total, rng)
    if kernel == "softmax":
        return (random_values(dtype, (total, 1), rng), offsets, rows, elems, 5,
                np.zeros((total, 1), dtype))
    if kernel == "cumsum":
        return (random_values(dtype, (total, 3), rng), offsets, rows, elems, True,
                np.zeros((total, 3), dtype))
    if kernel == "unique_rows":
        values = unique_values(dtype, total, rng)
        return (values, offsets, rows, elems)
    if kernel == "jagged_dense_dense_out":
        dense = random_values(dtype, (num_rows, 6, 2), rng)
        return (random_values(dtype, (total, 2), rng), None, offsets, rows, elems, dense,
                np.empty_like(dense))
    if kernel == "jagged_dense_jagged_out":
        x = random_values(dtype, (total, 2), rng)
        return (x, random_values(dtype, (num_rows, 6, 2), rng), None, offsets, 1,
                np.zeros_like(x))
    if kernel == "jagged_dense_bmm":
        return (random_values(dtype, (total, 4), rng), offsets, rows, elems,
                random_values(dtype, (num_rows, 4, 40), rng), 7, np.zeros((total, 40), dtype))
    words = random_values(np.uint32, (total, 3), rng)
    if kernel == "repeat_rows":
        return (words[:num_rows], offsets, int(offsets[0]), np.zeros_like(words))
    lengths = np.diff(offsets)
    if kernel == "ranges_to_indices":
        return (offsets[:-1], np.concatenate([[0], np.cumsum(lengths)]))
    if kernel == "gather_ranges":
        return (words, offsets[:-1], np.concatenate([[0], np.cumsum(lengths)]),
                np.zeros((int(lengths.sum()), 3), np.uint32))
    assert kernel == "jagged_jagged_bmm"
    return (random_values(dtype, (total, 3), rng), offsets, elems,
            random_values(dtype, (total, 33), rng), offsets, None, rows, 9,
            np.zeros((num_rows, 3, 33), dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int8, np.uint64], ids=str)
@pytest.mark.parametrize("kernel", KERNELS)
def test_gpu_launchers_match_cpu(kernel: str, dtype: Any) -> None:
    cupy = cupy_or_skip()
    if kernel == "softmax" and dtype not in FLOAT_DTYPES:
        dtype = np.float32
    if kernel == "cumsum" and dtype not in FLOAT_DTYPES:
        dtype = np.int64 if np.dtype(dtype).kind == "i" else np.uint64
    args = gpu_problem(kernel, dtype)
    expected_args = copies(args)
    expected = getattr(cpu_ew, kernel)(*expected_args)
    on_device = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    got = _backend.get_kernel("elementwise", kernel, cupy)(*on_device)
    cuda.check_errors(kernel)
    if kernel == "unique_rows":  # (values, counts); a zero may keep the other sign
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_array_equal(cupy.asnumpy(g), e)
        return
    if got is None:  # in place: the last argument
        expected, got = expected_args[-1], cupy.asnumpy(on_device[-1])
    else:
        got = cupy.asnumpy(got)
    if kernel == "softmax":  # libdevice's exp: within 2 ulp
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == np.float32 else 1e-14,
                                   atol=SOFTMAX_ATOL[np.dtype(dtype)])
    else:
        assert_bits(got, expected)
