"""Columns, strategies and comparisons shared by the tests of ``arrow_sparse.transforms``.

Hypothesis strategies for integer and string list arrays (sliced, with null rows and
elements); the columns of the ``backend`` tests (empty rows, ``offsets[0] > 0``, null
rows over values, nesting, no rows); and what the runs of public transforms through the
CUDA emulator compare.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import transforms as kernels

from .._strategies import list_arrays
from ..conftest import from_backend, to_backend
from ..cuda_emu.emu import Emulator, emulated

CAFFE2 = [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
STRING_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]


@st.composite
def string_list_arrays(draw: st.DrawFn, value_type: pa.DataType | None = None,
                       null_rows: bool = True, alphabet: str = "ab\u00e9\u4e2d",
                       max_size: int = 40) -> tuple[pa.Array, list[Any]]:
    """A (maybe sliced) list<string-like> array with null rows and elements, and its rows."""
    if value_type is None:
        value_type = draw(st.sampled_from(STRING_TYPES))
    binary = pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)
    text = st.text(alphabet, max_size=max_size)
    leaf: st.SearchStrategy[Any] = text.map(str.encode) if binary else text
    row = st.lists(st.one_of(st.none(), leaf), max_size=5)
    rows_st = st.lists(st.one_of(st.none(), row) if null_rows else row, max_size=8)
    rows = draw(rows_st)
    t = draw(st.sampled_from([pa.list_(value_type), pa.large_list(value_type)]))
    if draw(st.booleans()):
        before, after = draw(rows_st), draw(rows_st)
        return pa.array(before + rows + after, type=t).slice(len(before), len(rows)), rows
    return pa.array(rows, type=t), rows


def int_arrays(null_values: bool = True) -> st.SearchStrategy[tuple[pa.Array, list[Any]]]:
    return st.sampled_from(INTS).flatmap(
        lambda d: list_arrays(np.dtype(d), null_values=null_values))


def same_buffer(a: pa.Buffer | None, b: pa.Buffer | None) -> bool:
    return a is not None and b is not None and a.address == b.address


def kernel_xxh3(data: bytes, seed: int) -> int:
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    return int(kernels.xxh3_bytes(buf, 0, len(data), np.uint64(seed), kernels.SECRET,
                                  kernels.long_secret(seed)))


def child_with_offset() -> tuple[pa.Array, list[Any]]:
    """A list array over a sliced child (child.offset > 0) whose null row covers values."""
    child = pa.array([100, 101, 102, 1, None, 3, 7, 7, 5])
    arr = pa.ListArray.from_arrays(pa.array([0, 3, 5, 6], pa.int32()), child.slice(3),
                                   mask=pa.array([False, True, False]))
    rows = arr.to_pylist()
    assert rows == [[1, None, 3], None, [5]]
    assert arr.values.offset == 3
    return arr, rows


# ------------------------------------------------------------------------- every backend
# Jagged columns (and flat arrays) on every backend: cpu, cuda_emu (host arrays through
# the CUDA launchers), cupy_emu (device arrays of the stand-in CuPy, the device path)
# and cupy (a GPU). Device results are compared with the host results of the same
# Jagged. Strings live in Arrow's host buffers, so only numbers go to the device.
def _null_rows_over_values() -> pa.Array:
    values = pa.array([1, None, 3, 4, 5, 6, None, 8, 9], type=pa.int16())
    return pa.ListArray.from_arrays(pa.array([0, 2, 5, 5, 9], pa.int32()), values,
                                    mask=pa.array([False, True, False, True]))
COLUMNS: dict[str, pa.Array] = {
    "caffe2": pa.array([[1, 2, 3], [2, None, 6, 7], None, [3, 6], []]),
    "sliced large": pa.array([[9], [1, 2, 3], None, [2, 4, 6, 7], [3, 6], [5]],
                             pa.large_list(pa.uint32())).slice(1, 4),
    "null rows over values": _null_rows_over_values(),
    "nested": pa.array([[[1, 2], None], None, [[3, 3], [], [7, -2]]],
                       pa.list_(pa.large_list(pa.int8()))),
    "empty": pa.array([], pa.list_(pa.int64())),
}
FLOATS = pa.array([[0.5, None, 2.0], [float("nan"), -1.0], None, [], [2.0, 7.5]]).slice(0)


def on(backend: str, column: pa.Array) -> Any:
    """The column as the backend takes it: a host Jagged, or a Jagged on the device."""
    return to_backend(asp.Jagged.from_arrow(column), backend)


def same_jagged(got: Any, expected: asp.Jagged, backend: str) -> None:
    got = from_backend(got, backend)
    assert isinstance(got, asp.Jagged)
    assert (got.dtype, got.offsets.dtype) == (expected.dtype, expected.offsets.dtype)
    assert got.to_list() == expected.to_list()


# ------------------------------------------------------------------ through the emulator
STRING_POOL = [b"", b"a", b"b", b"ab", b"abcd", b"hello wo", b"0123456789abcdef",
               b"0123456789abcdefg", b"x" * 200, b"y" * 241, b"z" * 1500]


def launched(emu: Emulator, before: int) -> list[str]:
    return [n.split("<")[0] for n in emu.launches[before:]]


def same(a: Any, b: Any) -> bool:
    """Whether two results of a public transform are equal (values, types, nulls)."""
    if isinstance(a, (pa.Array, pa.ChunkedArray)):
        return a.type == b.type and a.equals(b)
    if isinstance(a, asp.Jagged):
        return same(a.to_arrow(), b.to_arrow())
    if hasattr(a, "buckets"):  # KeyedJagged.block_bucketize
        return (same([(k.values, k.lengths, k.weights) for k in a.buckets],
                     [(k.values, k.lengths, k.weights) for k in b.buckets])
                and same(a.unbucketize_permute, b.unbucketize_permute)
                and same(a.positions, b.positions))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, asp.Vocabulary):
        return same(a.values, b.values) and same(a.counts, b.counts)
    return bool(a == b)


def _words() -> pa.Array:
    rng = np.random.default_rng(5)
    pool = [s.decode("latin-1") for s in STRING_POOL] + ["naïve", "日本"]
    rows: list[Any] = [[pool[i] if i < len(pool) else None
                        for i in rng.integers(0, len(pool) + 2, size=k)]
                       for k in rng.integers(0, 7, size=30)]
    rows[4] = None
    return pa.array(rows, type=pa.large_list(pa.string())).slice(2)


def _ints() -> pa.Array:
    rng = np.random.default_rng(6)
    rows: list[Any] = [[None if v % 7 == 0 else int(v) for v in rng.integers(-30, 30, size=k)]
                       for k in rng.integers(0, 8, size=40)]
    rows[3] = None
    return pa.array(rows, type=pa.list_(pa.int64())).slice(1)


def _ranged_nulls() -> pa.Array:
    """Null rows over non-empty ranges (as a filter or a take can leave them)."""
    offsets = pa.array([0, 2, 5, 5, 9], type=pa.int32())
    values = pa.array([1, None, 3, 4, 5, 6, None, 8, 9], type=pa.int64())
    return pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False, True]))


def run_through_the_emulator(case: str, run: Callable[[], Any], kernels: set[str]) -> None:
    """``run()`` through the emulator (every launch also in reversed and shuffled thread
    order) gives what it gives on the CPU, launching at least ``kernels``."""
    expected = run()
    with emulated(check_orders=("reverse", "shuffle")) as emu:
        got = run()
        cuda.check_errors(case)
    assert same(got, expected)
    assert kernels <= set(launched(emu, 0))
