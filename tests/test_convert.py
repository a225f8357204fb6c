"""Tests of ``arrow_sparse.convert``: representation conversions against the plain-Python
reference, on every backend (cpu, the CUDA emulator, the stand-in CuPy, a GPU), and the
public conversions through the CUDA emulator against the CPU (the launchers and device
checks called directly are in ``test_convert_kernels.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError, ArrowSparseTypeError
from arrow_sparse.kernels.cuda import _launch

from . import _reference as ref
from ._convert_helpers import assert_same, cpu_and_emu, sample
from ._strategies import lengths, list_arrays, offsets
from .conftest import from_backend, to_backend
from .cuda_emu.emu import Emulator, emulated

# FBGEMM's two-level example: 3 rows of [rows of 4-wide values]. The doc prints
# Offsets[0] as [0, 4, 6, 8], but its own table (7 groups; row 2 holds only group 7)
# and Offsets[1] (8 entries = 7 groups) need [0, 4, 6, 7].
FBGEMM_OFFSETS = [np.array([0, 4, 6, 7]), np.array([0, 2, 3, 3, 5, 6, 7, 9])]
FBGEMM_VALUES = np.array([[1, 2, 3, 4], [5, 6, 7, 8],  # group 1
                          [1, 2, 3, 4],                # group 2
                          [1, 2, 3, 4], [5, 6, 7, 8],  # group 4 (group 3 is empty)
                          [1, 2, 3, 4],                # group 5
                          [1, 2, 7, 9],                # group 6
                          [1, 2, 3, 4], [8, 8, 9, 6]], dtype=np.float32)


# ------------------------------------------------------ offsets, lengths, segment ids
def test_caffe2_representations(backend: str) -> None:
    def run(func: object, *args: object, **kwargs: object) -> list[int]:
        got = func(*(to_backend(a, backend) for a in args), **kwargs)  # type: ignore[operator]
        return from_backend(got, backend).tolist()  # type: ignore[no-any-return]

    ids = [0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert run(asp.lengths_to_offsets, [3, 4, 2]) == [0, 3, 7, 9]
    assert run(asp.offsets_to_lengths, [0, 3, 7, 9]) == [3, 4, 2]
    assert run(asp.lengths_to_segment_ids, [3, 4, 2]) == ids
    assert run(asp.segment_ids_to_lengths, ids) == [3, 4, 2]
    assert run(asp.offsets_to_segment_ids, [0, 3, 7, 9]) == ids
    assert run(asp.segment_ids_to_offsets, ids) == [0, 3, 7, 9]
    # Sliced offsets (offsets[0] > 0), empty rows, trailing empty segments, int32.
    assert run(asp.offsets_to_segment_ids, [4, 5, 5, 7]) == [0, 2, 2]
    assert run(asp.offsets_to_lengths, np.array([4, 5, 5, 7], np.int32)) == [1, 0, 2]
    assert run(asp.lengths_to_offsets, [1, 0, 2], dtype=np.int32) == [0, 1, 1, 3]
    assert run(asp.segment_ids_to_lengths, [0, 2, 2], num_segments=4) == [1, 0, 2, 0]
    assert run(asp.segment_ids_to_offsets, np.array([1, 1], np.int8), num_segments=3) == \
        [0, 0, 2, 2]
    assert run(asp.lengths_to_segment_ids, np.array([0, 2], np.uint16), dtype=np.int32) == \
        [1, 1]


def test_arrow_in_arrow_out() -> None:
    out = asp.lengths_to_offsets(pa.array([3, 4, 2], pa.int32()), dtype=np.int32)
    assert isinstance(out, pa.Array) and out.type == pa.int32()
    assert out.to_pylist() == [0, 3, 7, 9]
    chunked = pa.chunked_array([pa.array([0, 3]), pa.array([7, 9])])
    assert asp.offsets_to_lengths(chunked).to_pylist() == [3, 4, 2]
    assert asp.segment_ids_to_lengths(pa.array([0, 0, 2])).to_pylist() == [2, 0, 1]


def test_dtypes(backend: str) -> None:
    def run(func: object, arg: object, **kwargs: object) -> np.ndarray:
        got = func(to_backend(np.asarray(arg), backend), **kwargs)  # type: ignore[operator]
        return from_backend(got, backend)  # type: ignore[no-any-return]

    assert run(asp.lengths_to_offsets, [1, 2]).dtype == np.int64
    assert run(asp.lengths_to_offsets, [1, 2], dtype=np.int32).dtype == np.int32
    assert run(asp.offsets_to_lengths, np.array([0, 1], dtype=np.int32)).dtype == np.int32
    assert run(asp.lengths_to_segment_ids, [2], dtype=np.int32).dtype == np.int32
    assert run(asp.offsets_to_lengths, np.array([0, 4], dtype=np.uint16)).tolist() == [4]
    assert run(asp.lengths_to_offsets, np.array([], np.int64)).tolist() == [0]
    assert run(asp.segment_ids_to_lengths, np.array([], np.int64)).tolist() == []
    assert run(asp.segment_ids_to_offsets, np.array([], np.int64), num_segments=2).tolist() == \
        [0, 0, 0]
    assert run(asp.offsets_to_segment_ids, np.array([3], np.int32)).tolist() == []
    assert asp.lengths_to_offsets([]).tolist() == [0]


@given(lengths(max_rows=30, max_len=20))
def test_round_trips(lens: list[int]) -> None:
    offs = asp.lengths_to_offsets(lens)
    assert offs.tolist() == ref.lengths_to_offsets(lens)
    assert asp.offsets_to_lengths(offs).tolist() == lens
    ids = asp.lengths_to_segment_ids(lens)
    assert ids.tolist() == ref.offsets_to_segment_ids(ref.lengths_to_offsets(lens))
    assert asp.segment_ids_to_lengths(ids, num_segments=len(lens)).tolist() == lens
    assert asp.segment_ids_to_offsets(ids, num_segments=len(lens)).tolist() == offs.tolist()
    assert asp.offsets_to_segment_ids(offs).tolist() == ids.tolist()


@given(offsets())
def test_offsets_above_zero(offs: np.ndarray) -> None:
    ids = asp.offsets_to_segment_ids(offs)
    rebased = (offs - offs[0]).tolist()
    assert ids.tolist() == ref.offsets_to_segment_ids(rebased)
    assert asp.offsets_to_lengths(offs).dtype == offs.dtype


def test_conversion_errors() -> None:
    with pytest.raises(ValueError, match=r"lengths_to_offsets: lengths must be non-negative "
                                         r"\(first at position 1: -1\)"):
        asp.lengths_to_offsets([2, -1])
    with pytest.raises(TypeError, match="lengths_to_offsets: lengths must have an integer dtype, "
                                        "got float64"):
        asp.lengths_to_offsets([1.5])
    with pytest.raises(TypeError, match="lengths_to_offsets: lengths must have an integer dtype, "
                                        "got bool"):
        asp.lengths_to_offsets([True])
    with pytest.raises(TypeError, match="dtype must be int32 or int64, got int16"):
        asp.lengths_to_offsets([1], dtype=np.int16)
    with pytest.raises(ValueError, match=r"lengths sum beyond the int32 range; use dtype=np.int64 "
                                         r"\(first at position 1: 2147483647\)"):
        asp.lengths_to_offsets([1, 2**31 - 1], dtype=np.int32)
    with pytest.raises(ValueError, match=r"offsets_to_lengths: offsets must be non-decreasing "
                                         r"\(first at position 1: 2\)"):
        asp.offsets_to_lengths([3, 2])
    with pytest.raises(ValueError, match="offsets_to_lengths: offsets must not contain nulls"):
        asp.offsets_to_lengths(pa.array([0, None]))
    with pytest.raises(TypeError, match="offsets must be a numeric array, got Arrow type string"):
        asp.offsets_to_lengths(pa.array(["a"]))
    with pytest.raises(ValueError, match=r"segment_ids_to_lengths: segment_ids must be sorted "
                                         r"\(non-decreasing\) \(first at position 1: 0\)"):
        asp.segment_ids_to_lengths([1, 0])
    with pytest.raises(IndexError, match=r"segment_ids must be < num_segments=1 \(first at "
                                         r"position 1: 1\)"):
        asp.segment_ids_to_offsets([0, 1], num_segments=1)
    with pytest.raises(TypeError, match="num_segments must be an integer, got float"):
        asp.segment_ids_to_lengths([0], num_segments=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_segments must be non-negative, got -1"):
        asp.segment_ids_to_lengths([], num_segments=-1)
    with pytest.raises(ValueError, match="lengths_to_segment_ids: lengths must be 1-dimensional"):
        asp.lengths_to_segment_ids(np.ones((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"offsets_to_segment_ids: offsets exceed|must be "
                                         r"non-negative \(first at position 0: -2\)"):
        asp.offsets_to_segment_ids([-2, 0])
    with pytest.raises(ValueError, match="exceeds the int64 range"):
        asp.offsets_to_lengths(np.array([0, 2**63], dtype=np.uint64))


# ------------------------------------------------------------- jagged <-> padded dense
def test_fbgemm_two_level_example(backend: str) -> None:
    values, offsets = to_backend(FBGEMM_VALUES, backend), to_backend(FBGEMM_OFFSETS, backend)
    dense = from_backend(asp.jagged_to_padded_dense(values, offsets, [4, 2]), backend)
    assert dense.shape == (3, 4, 2, 4) and dense.dtype == np.float32
    rows = ref.rows_of(FBGEMM_VALUES.tolist(), [o.tolist() for o in FBGEMM_OFFSETS])
    np.testing.assert_array_equal(dense, ref.pad(rows, [4, 2], 0, [0.0] * 4))
    # The table of the FBGEMM doc: row 1 holds groups 5 and 6, row 2 group 7.
    np.testing.assert_array_equal(dense[1, 1, 0], [1, 2, 7, 9])
    np.testing.assert_array_equal(dense[2, 0], [[1, 2, 3, 4], [8, 8, 9, 6]])
    np.testing.assert_array_equal(dense[2, 1:], 0)
    np.testing.assert_array_equal(dense[0, 2], 0)  # group 3 is empty
    back, back_offsets = asp.dense_to_jagged(to_backend(dense, backend), offsets)
    np.testing.assert_array_equal(from_backend(back, backend), FBGEMM_VALUES)
    assert len(back_offsets) == 2
    for got, want in zip(from_backend(back_offsets, backend), FBGEMM_OFFSETS, strict=True):
        np.testing.assert_array_equal(got, want)
    # Default max_lengths are the longest rows: [4, 2].
    default = asp.jagged_to_padded_dense(values, offsets)
    np.testing.assert_array_equal(from_backend(default, backend), dense)


def test_fbgemm_truncation_and_padding_read_back(backend: str) -> None:
    offsets = to_backend(FBGEMM_OFFSETS, backend)
    dense = from_backend(asp.jagged_to_padded_dense(to_backend(FBGEMM_VALUES, backend), offsets,
                                                    [3, 1], padding_value=-1), backend)
    rows = ref.rows_of(FBGEMM_VALUES.tolist(), [o.tolist() for o in FBGEMM_OFFSETS])
    np.testing.assert_array_equal(dense, ref.pad(rows, [3, 1], -1, [-1.0] * 4))
    # A dense smaller than the jagged shape: elements outside it read the padding value.
    back = from_backend(asp.dense_to_jagged(to_backend(dense, backend), offsets,
                                            padding_value=-5)[0], backend)
    expected = ref.dense_to_jagged(dense.tolist(), [o.tolist() for o in FBGEMM_OFFSETS], -5,
                                   [-5.0] * 4)
    np.testing.assert_array_equal(back, expected)


def test_one_level_1d_and_2d(backend: str) -> None:
    def dev(x: object) -> object:
        return to_backend(x, backend)

    def host(x: object) -> np.ndarray:
        return from_backend(x, backend)  # type: ignore[no-any-return]

    values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    offsets = dev(np.array([0, 3, 7, 9]))
    dense = host(asp.jagged_to_padded_dense(dev(values), offsets, 4, padding_value=-1))
    np.testing.assert_array_equal(dense, [[1, 2, 3, -1], [2, 4, 6, 7], [3, 6, -1, -1]])
    np.testing.assert_array_equal(host(asp.dense_to_jagged(dev(dense), offsets)[0]), values)
    emb = np.arange(12, dtype=np.float64).reshape(6, 2)
    dense2 = host(asp.jagged_to_padded_dense(dev(emb), dev([[0, 2, 2, 6]]), [3]))
    assert dense2.shape == (3, 3, 2)
    np.testing.assert_array_equal(dense2[2], emb[2:5])
    back = host(asp.dense_to_jagged(dev(dense2), dev([[0, 2, 2, 6]]))[0])
    np.testing.assert_array_equal(back[:5], emb[:5])


def test_offsets_above_zero_and_arrow_inputs(backend: str) -> None:
    dense = asp.jagged_to_padded_dense(to_backend(pa.array([9, 9, 1, 2, 3]), backend),
                                       to_backend([pa.array([2, 3, 5])], backend), [2])
    np.testing.assert_array_equal(from_backend(dense, backend), [[1, 0], [2, 3]])
    values, _ = asp.dense_to_jagged(dense, to_backend([[2, 3, 5]], backend), padding_value=7)
    np.testing.assert_array_equal(from_backend(values, backend), [7, 7, 1, 2, 3])
    # FBGEMM's total_L, the third positional argument: the values past the offsets' last
    # are padding.
    longer, _ = asp.dense_to_jagged(dense, to_backend([[2, 3, 5]], backend), 7, padding_value=0)
    np.testing.assert_array_equal(from_backend(longer, backend), [0, 0, 1, 2, 3, 0, 0])
    with pytest.raises(ValueError, match=r"^dense_to_jagged: total_length is 4 but the offsets "
                                         r"address 5 values \(offsets\[-1\]\[-1\]\)"):
        asp.dense_to_jagged(dense, to_backend([[2, 3, 5]], backend), 4)


@given(st.data())
def test_padded_matches_reference_two_levels(data: st.DataObject) -> None:
    outer = data.draw(lengths(max_rows=6, max_len=4))
    inner = data.draw(st.lists(st.integers(0, 4), min_size=sum(outer), max_size=sum(outer)))
    offs = [ref.lengths_to_offsets(outer), ref.lengths_to_offsets(inner)]
    total = offs[1][-1]
    width = data.draw(st.integers(1, 3))
    values = np.arange(total * width, dtype=np.int32).reshape(total, width)
    l0, l1 = data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5))
    dense = asp.jagged_to_padded_dense(values, [np.array(o) for o in offs], [l0, l1], -1)
    rows = ref.rows_of(values.tolist(), offs)
    assert dense.tolist() == ref.pad(rows, [l0, l1], -1, [-1] * width)
    back, _ = asp.dense_to_jagged(dense, offs, padding_value=-2)
    assert back.tolist() == ref.dense_to_jagged(dense.tolist(), offs, -2, [-2] * width)


@given(st.data())
def test_three_levels(data: st.DataObject) -> None:
    l0 = data.draw(lengths(max_rows=4, max_len=3))
    l1 = data.draw(st.lists(st.integers(0, 3), min_size=sum(l0), max_size=sum(l0)))
    l2 = data.draw(st.lists(st.integers(0, 3), min_size=sum(l1), max_size=sum(l1)))
    offs = [ref.lengths_to_offsets(x) for x in (l0, l1, l2)]
    values = np.arange(offs[2][-1], dtype=np.float64)
    maxes = [data.draw(st.integers(0, 3)) for _ in range(3)]
    dense = asp.jagged_to_padded_dense(values, offs, maxes, padding_value=0.5)
    assert dense.tolist() == ref.pad(ref.rows_of(values.tolist(), offs), maxes, 0.5, 0.5)


def test_padded_errors() -> None:
    with pytest.raises(ValueError, match="jagged_to_padded_dense: max_lengths has 1 entries but "
                                         "there are 2 offsets levels"):
        asp.jagged_to_padded_dense(FBGEMM_VALUES, FBGEMM_OFFSETS, [4])
    with pytest.raises(ValueError, match=r"offsets\[0\] exceed the number of values 6 \(first at "
                                         r"position 3: 7\)"):
        asp.jagged_to_padded_dense(FBGEMM_VALUES, [FBGEMM_OFFSETS[0], FBGEMM_OFFSETS[1][:-1]],
                                   [4, 2])
    with pytest.raises(ValueError, match=r"offsets\[1\] exceed the number of values 9"):
        asp.jagged_to_padded_dense(FBGEMM_VALUES, [np.array([0, 1]), np.array([0, 10])], [1, 1])
    with pytest.raises(TypeError, match="offsets must be a non-empty list of offsets arrays"):
        asp.jagged_to_padded_dense(FBGEMM_VALUES, [], [])
    with pytest.raises(TypeError, match="values must have a numeric dtype"):
        asp.jagged_to_padded_dense(np.array(["x"]), [[0, 1]], [1])
    with pytest.raises(ValueError, match=r"max_lengths\[0\] must be non-negative, got -1"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], [-1])
    with pytest.raises(ValueError, match="padding_value nan does not fit the values dtype int64"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], [3], padding_value=float("nan"))
    with pytest.raises(ValueError, match=r"dense_to_jagged: dense must have at least 3 axes for 2 "
                                         r"offsets levels, got shape \(3, 4\)"):
        asp.dense_to_jagged(np.zeros((3, 4)), FBGEMM_OFFSETS)
    with pytest.raises(ValueError, match="dense_to_jagged: dense has 2 rows but offsets\\[0\\] "
                                         "describes 3"):
        asp.dense_to_jagged(np.zeros((2, 4)), [[0, 1, 2, 3]])
    with pytest.raises(ValueError, match="dense_to_jagged: total_length must be non-negative, "
                                         "got -1"):
        asp.dense_to_jagged(np.zeros((1, 4)), [[0, 3]], -1)
    # padding_value is keyword-only: FBGEMM's third positional argument is total_L
    with pytest.raises(TypeError, match="dense_to_jagged: total_length must be an integer, "
                                        "got float"):
        asp.dense_to_jagged(np.zeros((1, 4)), [[0, 3]], 0.5)


def test_large_inputs_take_the_parallel_kernels() -> None:
    # Above the parallel threshold (65,536 elements) the prange twins run.
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 9, size=30_000)
    offs = np.concatenate([[0], np.cumsum(lens)])
    values = rng.random(int(offs[-1])).astype(np.float32)
    dense = asp.jagged_to_padded_dense(values, [offs], [8])
    mask = np.arange(8) < lens[:, None]
    np.testing.assert_array_equal(dense[mask], values)
    assert (dense[~mask] == 0).all()
    np.testing.assert_array_equal(asp.dense_to_jagged(dense, [offs])[0], values)
    inner = rng.integers(0, 4, size=int(offs[-1]))
    inner_offs = np.concatenate([[0], np.cumsum(inner)])
    two = asp.jagged_to_padded_dense(np.ones(int(inner_offs[-1])), [offs, inner_offs], [8, 3])
    assert two.sum() == inner.sum()


# ------------------------------------------------ inputs, sizes and padding values
def test_conversion_error_messages_name_the_argument() -> None:
    with pytest.raises(TypeError, match="lengths_to_segment_ids: dtype must be an integer dtype, "
                                        "got float32"):
        asp.lengths_to_segment_ids([1], dtype=np.float32)
    with pytest.raises(TypeError, match="offsets_to_segment_ids: dtype must be an integer dtype"):
        asp.offsets_to_segment_ids([0, 1], dtype=bool)
    with pytest.raises(TypeError, match="jagged_to_padded_dense: max_lengths must be an int or a "
                                        "list of ints, got str"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], "x")


def test_max_lengths_of_another_type_is_a_library_type_error() -> None:
    with pytest.raises(ArrowSparseTypeError, match="^jagged_to_padded_dense: max_lengths must be "
                                                   "an int or a list of ints") as info:
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], "x")
    assert isinstance(info.value, ArrowSparseError)


def test_chunked_array_in_gives_chunked_array_out() -> None:
    chunked = pa.chunked_array([pa.array([0, 3]), pa.array([7, 9])])
    out = asp.offsets_to_lengths(chunked)
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 1
    assert out.to_pylist() == [3, 4, 2]
    ids = asp.lengths_to_segment_ids(pa.chunked_array([[1, 2]]))
    assert isinstance(ids, pa.ChunkedArray) and ids.to_pylist() == [0, 1, 1]


@pytest.mark.parametrize("bad", [[1], np.array([7]), (1, 2), pa.array([1]), "x", None, 1j,
                                 np.complex64(1)])
def test_padding_value_must_be_a_scalar_number(bad: object) -> None:
    with pytest.raises(TypeError, match="jagged_to_padded_dense: padding_value must be a scalar "
                                        "number, got"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], [4], padding_value=bad)
    with pytest.raises(TypeError, match="dense_to_jagged: padding_value must be a scalar number"):
        asp.dense_to_jagged(np.zeros((1, 2)), [[0, 3]], padding_value=bad)


def test_padding_value_forms_and_a_short_message() -> None:
    got = asp.jagged_to_padded_dense(np.arange(3.0), [[0, 2, 3]], padding_value=pa.scalar(2.5))
    np.testing.assert_array_equal(got, [[0.0, 1.0], [2.0, 2.5]])
    got = asp.jagged_to_padded_dense(np.arange(3), [[0, 2, 3]], padding_value=np.array(-1))
    np.testing.assert_array_equal(got, [[0, 1], [2, -1]])
    with pytest.raises(ValueError, match=r"padding_value 1000000000000000000000000000000000000"
                                         r"\.\.\. does not fit the values dtype int64$"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], padding_value=10**400)
    with pytest.raises(TypeError, match=r"got ndarray of shape \(1000,\)$"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], padding_value=np.zeros(1000))


def test_float16_values_are_copied_bit_for_bit(backend: str) -> None:
    values = np.array([1.5, -0.0, np.inf, 65504.0, 6e-8, np.nan], dtype=np.float16)
    offsets = to_backend([np.array([0, 2, 2, 6])], backend)
    dense = asp.jagged_to_padded_dense(to_backend(values, backend), offsets, padding_value=-1)
    host = from_backend(dense, backend)
    assert host.dtype == np.float16 and host.shape == (3, 4)
    expected = np.full((3, 4), -1, np.float16)
    expected[0, :2], expected[2] = values[:2], values[2:]
    np.testing.assert_array_equal(host.view(np.uint16), expected.view(np.uint16))
    back = from_backend(asp.dense_to_jagged(dense, offsets)[0], backend)
    np.testing.assert_array_equal(back.view(np.uint16), values.view(np.uint16))
    arr = to_backend(pa.array([[np.float16(1.5), None], [np.float16(2.5)]],
                              pa.list_(pa.float16())), backend)
    np.testing.assert_array_equal(
        from_backend(asp.jagged_to_padded_dense(arr, padding_value=0.5), backend),
        np.array([[1.5, 0.5], [2.5, 0.5]], np.float16))


def test_result_is_sized_before_any_work() -> None:
    # An empty result returns at once (no row index of 2**40 entries is built) ...
    got = asp.jagged_to_padded_dense(np.arange(3), [[0, 1, 3], [0, 1, 2, 3]], [2**40, 0])
    assert got.shape == (2, 2**40, 0)
    assert asp.jagged_to_padded_dense(np.arange(3), [[0, 3]], [0]).shape == (1, 0)
    # ... and one too large to describe is refused with the library's error.
    with pytest.raises(ValueError, match=r"jagged_to_padded_dense: the result of shape "
                                         r"\(2, 576460752303423488, 576460752303423488\) would "
                                         r"hold \d+ elements, more than 2\*\*59"):
        asp.jagged_to_padded_dense(np.arange(3), [[0, 1, 3], [0, 1, 2, 3]], [2**59, 2**59])


def test_default_max_lengths_count_only_the_rows_that_are_read(backend: str) -> None:
    # Row 0 of the base array (an inner row of 5) lies outside the slice.
    arr = pa.array([[[1, 2, 3, 4, 5]], [[6], [7, 8]], [[9]]]).slice(1)
    j = to_backend(asp.Jagged.from_arrow(arr), backend)
    leaf = j.values.values
    got = from_backend(asp.jagged_to_padded_dense(leaf, [j.offsets, j.values.offsets]), backend)
    assert got.shape == (2, 2, 2)
    assert got.tolist() == [[[6, 0], [7, 8]], [[9, 0], [0, 0]]]
    np.testing.assert_array_equal(
        from_backend(asp.jagged_to_padded_dense(to_backend(arr, backend)), backend), got)
    # A null row covering 7 values does not widen the result.
    null_wide = pa.ListArray.from_arrays(pa.array([0, 2, 9, 10], pa.int32()),
                                         pa.array(np.arange(10.0)),
                                         mask=pa.array([False, True, False]))
    np.testing.assert_array_equal(
        from_backend(asp.jagged_to_padded_dense(to_backend(null_wide, backend)), backend),
        [[0.0, 1.0], [0.0, 0.0], [9.0, 0.0]])


@given(list_arrays(levels=2, null_values=True), st.data())
def test_jagged_and_arrow_inputs_match_reference(case: tuple[pa.Array, list],
                                                 data: st.DataObject) -> None:
    arr, rows = case
    dtype = pa.array([], arr.type.value_type.value_type).to_numpy().dtype
    maxes = [data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))]
    got = asp.jagged_to_padded_dense(arr, None, maxes, padding_value=7)
    assert got.dtype == dtype and got.shape == (len(rows), *maxes)
    filled = [None if r is None else [None if x is None else [7 if e is None else e for e in x]
                                      for x in r] for r in rows]
    assert got.tolist() == ref.pad(filled, maxes, 7, 7)
    j = asp.Jagged.from_arrow(arr)
    np.testing.assert_array_equal(asp.jagged_to_padded_dense(j, None, maxes, 7), got)


def test_jagged_input_errors() -> None:
    j = asp.Jagged.from_list([[1, 2], [3]])
    with pytest.raises(TypeError, match="jagged_to_padded_dense: offsets must be None when values "
                                        "is a Jagged or an Arrow list array"):
        asp.jagged_to_padded_dense(j, [[0, 2, 3]])
    with pytest.raises(TypeError, match="jagged_to_padded_dense: offsets are needed with a values "
                                        "array"):
        asp.jagged_to_padded_dense(np.arange(3))


# ------------------------------------- jagged <-> padded dense through the CUDA emulator
# The CUDA launchers and kernels run on the CPU emulator (tests/cuda_emu) and must give
# the CPU (Numba) results exactly, launching the expected instantiations.
@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """Route the CUDA kernel families through the CPU emulator (tests/cuda_emu)."""
    with emulated() as emulator:
        yield emulator


def test_jagged_to_padded_dense_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                            offsets_dtype: np.dtype) -> None:
    values, offsets = sample(values_dtype)
    offsets = offsets.astype(offsets_dtype)
    for max_lengths in (None, [2], [0]):
        expected, (got, launches) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values,
                                                [offsets], max_lengths, padding_value=9)
        assert_same(expected, got)
        if max_lengths != [0]:
            c, o = _launch.DTYPE_TO_CTYPE[values_dtype], _launch.DTYPE_TO_CTYPE[offsets_dtype]
            assert launches == [f"pad_rows<{c}, {o}>"]


def test_jagged_to_padded_dense_inner_axes(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    values, offsets = sample(np.dtype(np.float32), width=3)
    values = values.reshape(-1, 3, 1)
    expected, (got, _) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values,
                                     [offsets.astype(offsets_dtype)], [4], padding_value=-0.5)
    assert_same(expected, got)


def test_dense_to_jagged_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                     offsets_dtype: np.dtype) -> None:
    values, offsets = sample(values_dtype, width=2)
    offsets = offsets.astype(offsets_dtype)
    dense = asp.jagged_to_padded_dense(values, [offsets], [3], padding_value=0)  # truncates
    expected, (got, launches) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense, [offsets],
                                            padding_value=5)
    assert_same(expected[0], got[0])
    c, o = _launch.DTYPE_TO_CTYPE[values_dtype], _launch.DTYPE_TO_CTYPE[offsets_dtype]
    assert launches == [f"unpad_rows<{c}, {o}>"]


def test_multi_level_round_trip_matches_cpu(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    outer = np.array([1, 3, 3, 6, 7], dtype=offsets_dtype)       # offsets[0] > 0, empty row
    middle = np.array([0, 2, 2, 5, 6, 8, 9, 12], dtype=offsets_dtype)
    inner = np.array([0, 1, 4, 4, 6, 7, 7, 9, 12, 13, 13, 15, 17], dtype=offsets_dtype)
    values = np.arange(1, 18, dtype=np.float64)
    offs = [outer, middle, inner]
    for max_lengths in (None, [2, 2, 2], [3, 1, 4]):
        expected, (dense, launches) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values,
                                                  offs, max_lengths, padding_value=-1)
        assert_same(expected, dense)
        assert [n.split("<")[0] for n in launches] == ["expand_level"] * 2 + ["pad_rows"]
        expected, (back, _) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense, offs,
                                          padding_value=-2)
        assert_same(expected[0], back[0])


def test_grid_stride_loops_cover_more_work_than_threads(cuda_emu: Emulator,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads for thousands of elements
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 40, size=200)
    offsets = np.concatenate([[5], 5 + np.cumsum(lengths)])
    values = rng.standard_normal((int(offsets[-1]), 3))
    expected, (dense, _) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values, [offsets])
    assert_same(expected, dense)
    expected, (back, _) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense, [offsets])
    assert_same(expected[0], back[0])
    two = [np.array([0, 50, 120, 200]), offsets - 5]
    expected, (nested, _) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values[5:], two)
    assert_same(expected, nested)


def test_no_rows_and_no_values_launch_nothing(cuda_emu: Emulator) -> None:
    for offs in (np.array([0]), np.array([3, 3, 3])):
        expected, (got, launches) = cpu_and_emu(
            cuda_emu, asp.jagged_to_padded_dense, np.zeros(3, np.int32), [offs])
        assert_same(expected, got)
        assert launches == []


def test_null_elements_and_float16_match_cpu(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    arr = pa.array([[1.5, None, 2.0], None, [None], [3.0, 4.0]], pa.list_(pa.float16()))
    if offsets_dtype == np.int64:
        arr = arr.cast(pa.large_list(pa.float16()))
    expected, (got, launches) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, arr.slice(1),
                                            None, None, -1)
    assert_same(expected, got)
    assert got.tolist() == [[-1, -1], [-1, -1], [3.0, 4.0]]
    o = _launch.DTYPE_TO_CTYPE[offsets_dtype]
    assert launches == [f"pad_rows<unsigned short, {o}>"]
    dense = np.array([[1.5, 2.5], [np.nan, -0.0]], np.float16)
    expected, (back, launches) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense,
                                             [np.array([0, 1, 4], offsets_dtype)],
                                             padding_value=9)
    np.testing.assert_array_equal(back[0].view(np.uint16), expected[0].view(np.uint16))
    assert launches == [f"unpad_rows<unsigned short, {o}>"]
