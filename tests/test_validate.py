"""Every input check of ``arrow_sparse._validate``, reached through a public function
outside the op families (the conversions of ``convert.py`` and the ``Jagged``
constructors): the error class, and the message in the project's form
``"{func}: {arg} {problem} (first at position {i}: {value})"``.

The same checks reached through a family's functions are tested with that family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import (
    ArrowSparseError,
    ArrowSparseIndexError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)

U64_BIG = np.array([0, 2**63], dtype=np.uint64)

# (call, error class, message pattern). Each pattern is matched from the start.
CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    # _to_numpy: reading an array-like
    "arrow nulls": (lambda: asp.offsets_to_lengths(pa.array([0, None, 3])), ArrowSparseValueError,
                    r"offsets_to_lengths: offsets must not contain nulls "
                    r"\(first at position 1: None\)"),
    "arrow strings": (lambda: asp.offsets_to_lengths(pa.array(["a"])), ArrowSparseTypeError,
                      "offsets_to_lengths: offsets must be a numeric array, got Arrow type string"),
    "ragged list": (lambda: asp.lengths_to_offsets([[1], [2, 3]]), ArrowSparseTypeError,
                    r"lengths_to_offsets: lengths could not be read as an array \("),
    "object elements": (lambda: asp.lengths_to_offsets([1, None]), ArrowSparseTypeError,
                        "lengths_to_offsets: lengths must be a numeric array, got object elements"),
    "not an array": (lambda: asp.lengths_to_offsets({"a": 1}), ArrowSparseTypeError,
                     r"lengths_to_offsets: lengths must be an array \(numpy, pyarrow or a "
                     r"sequence\), got dict"),
    "zero chunks": (lambda: asp.offsets_to_lengths(pa.chunked_array([], pa.int64())),
                    ArrowSparseValueError,
                    r"offsets_to_lengths: offsets must have at least one element"),
    # as_index_array / as_values_array
    "float ids": (lambda: asp.lengths_to_offsets([1.5]), ArrowSparseTypeError,
                  "lengths_to_offsets: lengths must have an integer dtype, got float64"),
    "2-d lengths": (lambda: asp.lengths_to_offsets([[1]]), ArrowSparseValueError,
                    r"lengths_to_offsets: lengths must be 1-dimensional, got shape \(1, 1\)"),
    "uint64 offsets": (lambda: asp.offsets_to_lengths(U64_BIG), ArrowSparseValueError,
                       r"offsets_to_lengths: offsets exceeds the int64 range "
                       r"\(first at position 1: 9223372036854775808\)"),
    "uint64 sorted ids": (lambda: asp.segment_ids_to_lengths(U64_BIG, num_segments=4),
                          ArrowSparseIndexError,
                          r"segment_ids_to_lengths: segment_ids must be < num_segments=4 "
                          r"\(first at position 1: 9223372036854775808\)"),
    "string values": (lambda: asp.Jagged(np.array(["a"]), [0, 1]), ArrowSparseTypeError,
                      "Jagged: values must have a numeric dtype, got <U1"),
    "1-d dense": (lambda: asp.Jagged.from_padded(np.zeros(2), [1, 1]), ArrowSparseValueError,
                  r"Jagged.from_padded: dense must be at least 2-dimensional, got shape \(2,\)"),
    # check_offsets
    "no offsets": (lambda: asp.offsets_to_lengths([]), ArrowSparseValueError,
                   r"offsets_to_lengths: offsets must have at least one element "
                   r"\(number of rows \+ 1\)"),
    "negative offset": (lambda: asp.offsets_to_lengths([-2, 0]), ArrowSparseValueError,
                        r"offsets_to_lengths: offsets must be non-negative "
                        r"\(first at position 0: -2\)"),
    "decreasing offsets": (lambda: asp.offsets_to_lengths([0, 3, 2]), ArrowSparseValueError,
                           r"offsets_to_lengths: offsets must be non-decreasing "
                           r"\(first at position 2: 2\)"),
    "offsets past values": (lambda: asp.Jagged(np.arange(3), [0, 2, 4]), ArrowSparseValueError,
                            r"Jagged: offsets exceed the number of values 3 "
                            r"\(first at position 2: 4\)"),
    # check_lengths
    "negative length": (lambda: asp.lengths_to_offsets([2, -1]), ArrowSparseValueError,
                        r"lengths_to_offsets: lengths must be non-negative "
                        r"\(first at position 1: -1\)"),
    "huge lengths": (lambda: asp.lengths_to_offsets([2**60, 2**60]), ArrowSparseValueError,
                     r"lengths_to_offsets: lengths sum to more than 2\*\*59 values"),
    "lengths sum": (lambda: asp.Jagged.from_lengths(np.arange(3), [1, 1]), ArrowSparseValueError,
                    "Jagged.from_lengths: lengths sum to 2 but there are 3 values"),
    # check_segment_ids / check_sorted_segment_ids
    "unsorted ids": (lambda: asp.segment_ids_to_lengths([1, 0]), ArrowSparseValueError,
                     r"segment_ids_to_lengths: segment_ids must be sorted \(non-decreasing\) "
                     r"\(first at position 1: 0\)"),
    # check_count / check_bool / check_mask
    "count type": (lambda: asp.segment_ids_to_lengths([0], num_segments=1.0),
                   ArrowSparseTypeError,
                   "segment_ids_to_lengths: num_segments must be an integer, got float"),
    "count negative": (lambda: asp.segment_ids_to_lengths([], num_segments=-1),
                       ArrowSparseValueError,
                       "segment_ids_to_lengths: num_segments must be non-negative, got -1"),
    "count huge": (lambda: asp.segment_ids_to_lengths([], num_segments=2**60),
                   ArrowSparseValueError,
                   r"segment_ids_to_lengths: num_segments must be at most 2\*\*59, "
                   "got 1152921504606846976"),
    "flag": (lambda: asp.Jagged(np.arange(2), [0, 2], validate=1), ArrowSparseTypeError,
             "Jagged: validate must be True or False, got int"),
    "mask dtype": (lambda: asp.Jagged(np.arange(2), [0, 2], validity=[1]), ArrowSparseTypeError,
                   "Jagged: validity must be a bool mask, got dtype int64"),
    "mask shape": (lambda: asp.Jagged(np.arange(2), [0, 2], values_validity=[True]),
                   ArrowSparseValueError,
                   r"Jagged: values_validity has shape \(1,\) but 2 entries are needed"),
    # check_dtype
    "dtype object": (lambda: asp.lengths_to_segment_ids([1], dtype=[np.int32]),
                     ArrowSparseTypeError,
                     "lengths_to_segment_ids: dtype must be a dtype, got list"),
    "dtype name": (lambda: asp.lengths_to_segment_ids([1], dtype="int99"), ArrowSparseTypeError,
                   "lengths_to_segment_ids: dtype must be a dtype, got 'int99'"),
    "float dtype for ids": (lambda: asp.lengths_to_segment_ids([1], dtype=np.float32),
                            ArrowSparseTypeError,
                            "lengths_to_segment_ids: dtype must be an integer dtype, got float32"),
    "string dtype for values": (lambda: asp.Jagged.from_list([[1]], dtype=np.str_),
                                ArrowSparseTypeError,
                                "Jagged.from_list: dtype must be a numeric dtype, got <U0"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_class_and_message(case: str) -> None:
    call, error, pattern = CASES[case]
    with pytest.raises(error, match=f"^{pattern}") as info:
        call()
    assert isinstance(info.value, ArrowSparseError)


def test_zero_chunk_arrays_are_empty_arrays() -> None:
    empty_ids = pa.chunked_array([], pa.int64())
    assert asp.lengths_to_offsets(empty_ids).to_pylist() == [0]
    assert asp.gather(np.ones((2, 2)), empty_ids).shape == (0, 2)
    assert asp.offsets_to_lengths(pa.chunked_array([pa.array([0]), pa.array([2, 5])])) \
        .to_pylist() == [2, 3]


# ------------------------------------------------ issue 14: check_no_overlap, check_nbytes
def test_check_no_overlap_is_exact_on_the_host_issue14() -> None:
    from arrow_sparse._validate import check_no_overlap

    wide = np.zeros((4, 6))
    check_no_overlap("f", "out", wide[:, :2], a=wide[:, 2:4], b=wide[:, 4:])  # disjoint
    check_no_overlap("f", "out", wide[::2], a=wide[1::2])  # interleaved rows
    check_no_overlap("f", "out", wide[:0], a=wide)  # nothing is written
    check_no_overlap("f", "out", None, a=wide)
    with pytest.raises(ArrowSparseValueError, match=r"^f: out and b\[1\] share memory; "):
        check_no_overlap("f", "out", wide[:, 1:3], a=None, b=[np.zeros(2), wide[:, 2]])
    with pytest.raises(ArrowSparseValueError, match=r"^f: out and a share memory; why$"):
        check_no_overlap("f", "out", wide, why="why", a=wide)


def test_check_no_overlap_reads_arrow_buffers_and_containers_issue14() -> None:
    from arrow_sparse._validate import check_no_overlap

    memory = np.arange(8)
    with pytest.raises(ArrowSparseValueError, match=r"^f: out and ids share memory"):
        check_no_overlap("f", "out", memory[4:], ids=pa.chunked_array([pa.array(memory)]))
    check_no_overlap("f", "out", memory[4:], ids=pa.array(memory[:4]))
    j = asp.Jagged(memory[:4], np.array([0, 1, 4]))
    with pytest.raises(ArrowSparseValueError, match=r"^f: out and j.values share memory"):
        check_no_overlap("f", "out", memory[2:], j=j)
    with pytest.raises(ArrowSparseValueError, match=r"^f: out and j.offsets share memory"):
        check_no_overlap("f", "out", j.offsets, j=j)
    check_no_overlap("f", "out", np.zeros(3), j=j, n=3, s="abc", x=1.5)


def test_check_no_overlap_compares_device_arrays_by_extent_issue14() -> None:
    from arrow_sparse._validate import check_no_overlap
    from tests.cuda_emu.fake_cupy import emulated_cupy

    with emulated_cupy() as cp:
        wide = cp.zeros((4, 6))
        with pytest.raises(ArrowSparseValueError, match=r"^f: out and a share memory"):
            check_no_overlap("f", "out", wide[:, :2], a=wide[:, 2:])  # extents overlap
        check_no_overlap("f", "out", wide[:2], a=wide[2:])
        host = np.zeros(3)
        check_no_overlap("f", "out", cp.zeros(3), a=host)  # host and device never overlap


def test_every_public_out_parameter_is_checked_issue14() -> None:
    # A new function with out= needs a check_no_overlap call and its tests (issue 14):
    # lookup and maplookup are tested in tests/embedding/test_lookups.py.
    import inspect

    found = set()
    for module in (asp, asp.embedding, asp.masked):
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not inspect.isclass(obj):
                try:
                    params = inspect.signature(obj).parameters
                except (TypeError, ValueError):
                    continue
                if "out" in params:
                    found.add(name)
    assert found == {"lookup", "maplookup"}


def test_check_nbytes_names_the_size_and_the_bound_issue14() -> None:
    from arrow_sparse._validate import check_nbytes, memory_limit

    check_nbytes("f", "the result", (1024, 1024), 8)
    with pytest.raises(ArrowSparseValueError, match=r"^f: the result of n=2\*\*60 needs "
                                                    r"8.0 EiB \(1,152,921,504,606,846,976 "
                                                    r"elements x 8 bytes\), more than this "
                                                    r"machine's memory \(.* [GTMK]iB\)$"):
        check_nbytes("f", "the result of n=2**60", 2**60, 8)
    assert memory_limit() >= 2**20
