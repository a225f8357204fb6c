"""What the keyed tests share: samples, the reference check, the backend comparison.

``assert_kj`` compares a KeyedJagged with its ``(keys, table)`` reference
(``_reference.py``) and checks every invariant of the layout. ``same_on_backend`` runs an
operation on a backend of the ``backend`` fixture and compares it with the host: inputs
go to the device with ``.to_device("cuda")`` and results come back with
``.to_device("cpu")``, which must equal the host's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

import arrow_sparse as asp
from arrow_sparse import KeyedJagged
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse.keyed import BlockBuckets

from ..conftest import from_backend, on_device
from ._reference import Table, ref_key_major

MAP_TYPE = pa.map_(pa.int64(), pa.list_(pa.int64()))
CAFFE2_ROWS = [[(1, [10, 11]), (3, [101])],
               [(1, [11]), (2, [50]), (3, [102, 103])]]

#: The sample of the reshaping tests: a null row, empty rows, weights of two keys.
ABC: Table = {"a": [[1], [2, 3], None], "b": [[4], [], [5]], "c": [[6, 7], [8], []]}
ABC_W: Table = {"a": [[0.1], [0.2, 0.3], None], "b": [[1.0], [], [1.0]],
               "c": [[1.0, 2.0], [3.0], []]}


def abc() -> KeyedJagged:
    return KeyedJagged.from_dict({"a": [[1], [2, 3], None], "b": [[4], [], [5]],
                                  "c": [[6, 7], [8], []]},
                                 weights={"a": [[0.1], [0.2, 0.3], []],
                                          "c": [[1.0, 2.0], [3.0], []]})


def lengths32() -> KeyedJagged:
    """:func:`abc` with int32 lengths."""
    kj = abc()
    return KeyedJagged(kj.keys(), kj.values, kj.lengths.astype(np.int32), kj.weights,
                       validity=kj.validity)


def caffe2_map() -> pa.Array:
    return pa.array(CAFFE2_ROWS, type=MAP_TYPE)


def nn(x: np.ndarray | None) -> np.ndarray:
    """``x``, which must not be None (weights, validity)."""
    assert x is not None
    return x


def buffer_view(list_array: pa.Array) -> np.ndarray:
    """The whole values buffer of a list array (to check zero-copy by memory sharing)."""
    child = list_array.values
    return np.frombuffer(child.buffers()[1], dtype=numpy_dtype(child.type))


def batch_table(batch: pa.RecordBatch | pa.Table, keys: list[str]) -> Table:
    return {k: batch.column(k).to_pylist() for k in keys}


def build(keys: list[Any], table: Table, dtype: Any, wtable: Table | None = None,
          lengths_dtype: Any = np.int64) -> KeyedJagged:
    """A KeyedJagged from the constructor (null rows empty, validity set)."""
    values = [x for k in keys for row in table[k] for x in (row or [])]
    lengths = [len(row or []) for k in keys for row in table[k]]
    valid = [row is not None for k in keys for row in table[k]]
    rows = len(next(iter(table.values()))) if table else 0
    weights = None if wtable is None else \
        np.array([x for k in keys for row in wtable[k] for x in (row or [])], np.float32)
    return KeyedJagged(keys, np.array(values, dtype=dtype), np.array(lengths, lengths_dtype),
                       weights, validity=np.array(valid, bool), batch_size=rows)


def weights_of(row: list[Any] | None) -> list[float] | None:
    """Weights of a row: exact in float32, different for each value of the row."""
    return None if row is None else [j + 0.25 for j in range(len(row))]


def pick(table: Table | None, names: list[Any]) -> Table | None:
    return None if table is None else {k: table[k] for k in names}


def assert_kj(kj: KeyedJagged, keys: list[Any], table: Table,
              weights: Table | None = None) -> None:
    """Compare with the reference and check every invariant."""
    kj.validate()
    assert kj.keys() == keys
    rows = len(next(iter(table.values()))) if table else kj.batch_size
    assert kj.batch_size == len(kj) == rows
    values, lengths, valid = ref_key_major(keys, table)
    assert kj.values.tolist() == values
    assert kj.lengths.tolist() == lengths
    assert kj.lengths.dtype in (np.int32, np.int64)
    assert kj.offsets.dtype == np.int64
    assert kj.offsets.tolist() == np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).tolist()
    if all(valid):
        assert kj.validity is None
    else:
        assert nn(kj.validity).tolist() == valid
    per_key = [sum(len(r or []) for r in table[k]) for k in keys]
    assert kj.length_per_key().tolist() == per_key
    assert kj.offset_per_key().tolist() == np.concatenate([[0], np.cumsum(per_key)]).tolist()
    assert {k: j.to_list() for k, j in kj.to_dict().items()} == table
    for key in keys:
        assert kj[key].to_list() == table[key]
        assert key in kj
    if weights is None:
        assert kj.weights is None
    else:
        wvalues, _, _ = ref_key_major(keys, weights)
        assert nn(kj.weights).tolist() == wvalues
        for key in keys:
            assert kj.weights_of(key).to_list() == weights[key]


# ------------------------------------------------------------------- every backend
def host_of(x: Any, backend: str) -> Any:
    """A backend's result on the host: KeyedJagged, Jagged, arrays, lists and dicts."""
    if isinstance(x, KeyedJagged):
        assert (x.device != "cpu") == on_device(backend)
        return x.to_device("cpu")
    if isinstance(x, dict):
        return {k: host_of(item, backend) for k, item in x.items()}
    if isinstance(x, (list, tuple)) and not isinstance(x, BlockBuckets):
        return type(x)(host_of(item, backend) for item in x)
    if isinstance(x, BlockBuckets):
        return BlockBuckets(*(host_of(item, backend) for item in x))
    return from_backend(x, backend)


def same_kj(got: KeyedJagged, want: KeyedJagged) -> None:
    got.validate()
    assert got.keys() == want.keys() and got.batch_size == want.batch_size
    for name in ("values", "lengths", "offsets", "weights"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b)
    valid = [np.ones(len(k.lengths), bool) if k.validity is None else k.validity
             for k in (got, want)]
    np.testing.assert_array_equal(valid[0], valid[1])


def same(got: Any, want: Any) -> None:
    if isinstance(want, KeyedJagged):
        same_kj(got, want)
    elif isinstance(want, asp.Jagged):
        assert (got.dtype, got.to_list()) == (want.dtype, want.to_list())
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            same(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            same(a, b)
    elif want is None:
        assert got is None
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def same_on_backend(backend: str, op: Callable[[KeyedJagged], Any],
                    make: Callable[[], KeyedJagged]) -> None:
    """``op`` on ``make()`` moved to the backend's device gives what it gives on the host."""
    host = make()
    kj = host.to_device("cuda") if on_device(backend) else host
    same(host_of(op(kj), backend), op(host))


#: The samples of the backend tests: int64 and int32 lengths.
MAKES = [abc, lengths32]
MAKE_IDS = ["int64", "int32"]

#: The reshaping operations, each as a method of KeyedJagged (the backend tests of
#: test_reshape.py; test_keyed_jagged.py calls them on the device as members).
RESHAPE_OPS: dict[str, Callable[[KeyedJagged], Any]] = {
    "permute": lambda kj: kj.permute(["c", "a", "c"]),
    "permute view": lambda kj: kj.permute(["b", "c"]),
    "split": lambda kj: kj.split([1, 0, 2]),
    "concat": lambda kj: KeyedJagged.concat(kj.split([2, 1])),
    "regroup": lambda kj: KeyedJagged.regroup(kj.split([1, 2]), [["c", "a"], [], ["b"]]),
    "regroup_as_dict": lambda kj: KeyedJagged.regroup_as_dict(kj, [["b"]], ["x"]),
    "block_bucketize": lambda kj: kj.block_bucketize([2, 3, 1], 3, sequence=True,
                                                     bucketize_pos=True),
    "block_bucketize keep": lambda kj: kj.block_bucketize(2, 2, keep_orig_idx=True),
    "to_padded_dict": lambda kj: kj.to_padded_dict(pad_value=-1),
    "to_padded_dict sized": lambda kj: kj.to_padded_dict({"a": 1, "c": 3}),
}
