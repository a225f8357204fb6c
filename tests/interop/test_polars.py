"""Polars interop: large_list conversions, zero-copy by buffer address, nulls, errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError

CAFFE2 = [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]


def address(array: Any) -> int:
    """Address of a numpy array's first element."""
    return int(array.ctypes.data)


@pytest.fixture
def pl() -> Any:
    return pytest.importorskip("polars")


def values_address(arr: pa.Array) -> int:
    child = arr.values
    return int(child.buffers()[1].address + child.offset * child.type.bit_width // 8)


def offsets_address(arr: pa.Array) -> int:
    width = 8 if isinstance(arr.type, pa.LargeListType) else 4
    return int(arr.buffers()[1].address + arr.offset * width)


def caffe2(offsets_dtype: Any = np.int64) -> asp.Jagged:
    return asp.Jagged(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]),
                      np.array([0, 3, 7, 7, 9], dtype=offsets_dtype), [True, True, False, True])


# ------------------------------------------------------------------ optional import
def test_import_arrow_sparse_imports_no_polars() -> None:
    code = "import sys, arrow_sparse as a; print(callable(a.to_polars), 'polars' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]


def test_missing_polars_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)  # makes `import polars` fail
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'arrow-sparse\[polars\]'"):
        asp.to_polars(caffe2())
    with pytest.raises(ModuleNotFoundError, match=r"arrow-sparse\[polars\]"):
        asp.to_polars(pa.table({"a": [[1]]}))
    with pytest.raises(ArrowSparseTypeError, match="^from_polars: data must be a polars"):
        asp.from_polars(pa.array([[1]]))
    with pytest.raises(ArrowSparseTypeError, match="^to_polars: data must be"):
        asp.to_polars(object())


# ------------------------------------------------------------------------ to_polars
def test_int64_offsets_round_trip_shares_values_and_offsets(pl: Any) -> None:
    j = caffe2(np.int64)
    s = asp.to_polars(j, name="ids")
    assert s.name == "ids" and s.dtype == pl.List(pl.Int64)
    assert s.to_list() == CAFFE2
    exported = s.to_arrow()
    assert values_address(exported) == address(j.values)  # Polars holds the same buffer
    assert offsets_address(exported) == j.offsets.ctypes.data
    back = asp.from_polars(s)
    assert isinstance(back, asp.Jagged)
    assert address(back.values) == address(j.values)
    assert back.offsets.ctypes.data == j.offsets.ctypes.data
    assert back.to_list() == CAFFE2


def test_int32_offsets_are_widened_once_values_shared(pl: Any) -> None:
    j = caffe2(np.int32)
    s = asp.to_polars(j)
    back = asp.from_polars(s)
    assert isinstance(back, asp.Jagged)
    assert address(back.values) == address(j.values)
    assert back.offsets.dtype == np.int64  # Polars lists are large_list
    assert back.offsets.ctypes.data != j.offsets.ctypes.data
    assert back.offsets.tolist() == j.offsets.tolist()
    assert back.to_list() == CAFFE2


def test_sliced_jagged_keeps_its_slice(pl: Any) -> None:
    j = asp.Jagged.from_arrow(pa.array([[1, 2], [3], None, [4, 5, 6]],
                                       type=pa.large_list(pa.int64())))[1:]
    assert j.offsets[0] == 2
    s = asp.to_polars(j)
    assert s.to_list() == [[3], None, [4, 5, 6]]
    back = asp.from_polars(s)
    assert isinstance(back, asp.Jagged)
    assert back.to_list() == [[3], None, [4, 5, 6]]
    assert address(back.values) == address(j.values)
    assert back.offsets[0] == 2 and address(back.offsets) == address(j.offsets)


def test_nulls_and_vectors_survive(pl: Any) -> None:
    j = asp.Jagged.from_arrow(pa.array([[1.0, None], [], None]))
    s = asp.to_polars(j)
    assert s.to_list() == [[1.0, None], [], None]
    back = asp.from_polars(s)
    assert isinstance(back, asp.Jagged)
    assert back.validity is not None and back.validity.tolist() == [True, True, False]
    assert back.values_validity is not None and not back.values_validity[1]
    vec = asp.Jagged.from_lengths(np.arange(6, dtype=np.float32).reshape(3, 2), [2, 1])
    s = asp.to_polars(vec)
    assert s.dtype == pl.List(pl.Array(pl.Float32, 2))
    back = asp.from_polars(s)
    assert isinstance(back, asp.Jagged)
    assert back.leaf_values.shape == (3, 2) and address(back.values) == address(vec.values)


def test_keyed_and_table_to_polars(pl: Any) -> None:
    kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]},
                                   weights={"b": [[0.5], [1.0, 2.0]]})
    df = asp.to_polars(kj)
    assert df.columns == ["a", "b", "a_weights", "b_weights"]
    assert df["a"].to_list() == [[1, 2], None]
    starts = kj.offset_per_key()
    assert values_address(df["b"].to_arrow()) == address(kj.values) + starts[1] * 8
    table = pa.Table.from_batches([pa.record_batch({"ids": pa.array([[1], [2, 3]])}),
                                   pa.record_batch({"ids": pa.array([None, [4]])})])
    df = asp.to_polars(table)
    assert df["ids"].n_chunks() == 2  # rechunk=False: the chunks are not copied together
    assert df["ids"].to_list() == [[1], [2, 3], None, [4]]
    assert asp.to_polars(pa.record_batch({"ids": pa.array([[1]])})).shape == (1, 1)


def test_to_polars_errors(pl: Any) -> None:
    with pytest.raises(ArrowSparseTypeError, match="^to_polars: data must be a Jagged"):
        asp.to_polars([[1, 2]])
    with pytest.raises(ArrowSparseTypeError, match="^to_polars: name must be a str"):
        asp.to_polars(caffe2(), name=3)  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="^to_polars: name must be a str, got "
                                                   "numpy.ndarray"):
        asp.to_polars(asp.KeyedJagged.from_dict({"a": [[1]]}), name=np.zeros(2))  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="name applies to a Jagged"):
        asp.to_polars(pa.table({"a": [[1]]}), name="x")


# ---------------------------------------------------------------------- from_polars
def test_from_polars_frame(pl: Any) -> None:
    df = pl.DataFrame({"ids": [[1, 2], None, [3]], "more": [[4], [5, 6], []],
                       "w": [[0.5, 1.0], None, [2.0]], "user": [1, 2, 3]})
    j = asp.from_polars(df, "ids")
    assert isinstance(j, asp.Jagged) and j.to_list() == [[1, 2], None, [3]]
    assert address(j.values) == values_address(df["ids"].to_arrow())
    kj = asp.from_polars(df, ["ids", "more"], weights={"ids": "w"})
    assert isinstance(kj, asp.KeyedJagged)
    assert kj.keys() == ["ids", "more"]
    assert kj.weights is not None and kj.weights.tolist() == [0.5, 1.0, 2.0, 1, 1, 1]
    assert kj.validity is not None and kj.validity.tolist() == [True, False, True] + [True] * 3
    every = asp.from_polars(df.select("ids", "more", "w"), weights={"ids": "w"})
    assert isinstance(every, asp.KeyedJagged) and every.keys() == ["ids", "more"]


def test_from_polars_several_chunks_are_rechunked(pl: Any) -> None:
    s = pl.concat([pl.Series("a", [[1, 2]]), pl.Series("a", [None, [3]])], rechunk=False)
    assert s.n_chunks() == 2
    j = asp.from_polars(s)
    assert isinstance(j, asp.Jagged) and j.to_list() == [[1, 2], None, [3]]


def test_from_polars_errors(pl: Any) -> None:
    df = pl.DataFrame({"ids": [[1], [2]], "n": [1, 2],
                       "arr": pl.Series([[1, 2], [3, 4]], dtype=pl.Array(pl.Int64, 2)),
                       "s": [["a"], ["b"]]})
    with pytest.raises(ArrowSparseTypeError, match="^from_polars: data must be a polars"):
        asp.from_polars(object())
    with pytest.raises(ArrowSparseTypeError, match=r"^from_polars: column 'n' must hold lists"):
        asp.from_polars(df, "n")
    with pytest.raises(ArrowSparseTypeError, match=r"column 'arr' must hold lists, got .*fixed"):
        asp.from_polars(df, "arr")
    with pytest.raises(ArrowSparseTypeError, match="not supported"):
        asp.from_polars(df, "s")
    with pytest.raises(ArrowSparseKeyError, match=r"^from_polars: 'nope' is not a column"):
        asp.from_polars(df, "nope")
    with pytest.raises(IndexError, match="is not a column"):
        asp.from_polars(df, [3])
    with pytest.raises(ArrowSparseValueError, match="selected twice"):
        asp.from_polars(df, ["ids", "ids"])
    with pytest.raises(ArrowSparseValueError, match="apply to a DataFrame"):
        asp.from_polars(df["ids"], weights={"ids": "ids"})
    with pytest.raises(ArrowSparseValueError, match="weights apply to several columns"):
        asp.from_polars(df, "ids", weights={"ids": "ids"})
    with pytest.raises(ArrowSparseTypeError, match="hashable"):
        asp.from_polars(df, ["ids", ["x"]])
