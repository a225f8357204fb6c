"""pandas interop: ArrowDtype conversions (zero-copy by buffer address), accessors, errors."""

from __future__ import annotations

import importlib
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
def pd() -> Any:
    pandas = pytest.importorskip("pandas")
    importlib.import_module("arrow_sparse.interop.pandas")  # registers the accessors
    return pandas


def values_address(arr: pa.Array | pa.ChunkedArray) -> int:
    """Address of a primitive list array's values data buffer, at its slice offset."""
    if isinstance(arr, pa.ChunkedArray):
        assert arr.num_chunks == 1
        arr = arr.chunk(0)
    child = arr.values
    return int(child.buffers()[1].address + child.offset * child.type.bit_width // 8)


def offsets_address(arr: pa.Array) -> int:
    width = 8 if isinstance(arr.type, pa.LargeListType) else 4
    return int(arr.buffers()[1].address + arr.offset * width)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600)


# ------------------------------------------------------------------ optional import
def test_import_arrow_sparse_imports_no_pandas_and_registers_no_accessor() -> None:
    result = run_python("""
        import sys
        import arrow_sparse as asp
        assert callable(asp.to_pandas) and callable(asp.from_pandas)
        assert "pandas" not in sys.modules, "import arrow_sparse imported pandas"
        import pandas as pd
        assert not hasattr(pd.Series, "sparse_lists")
        asp.to_pandas(asp.Jagged.from_list([[1]]))  # converting registers nothing either
        assert not hasattr(pd.DataFrame, "sparse_lists")
        import arrow_sparse.interop.pandas
        assert hasattr(pd.Series, "sparse_lists") and hasattr(pd.DataFrame, "sparse_lists")
        print("ok")
    """)
    if "No module named 'pandas'" in result.stderr:
        pytest.skip("pandas is not installed")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_missing_pandas_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    j = asp.Jagged.from_list([[1, 2]])
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'arrow-sparse\[pandas\]'"):
        asp.to_pandas(j)
    monkeypatch.delitem(sys.modules, "arrow_sparse.interop.pandas", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"^pandas is required .*arrow-sparse\[pandas\]"):
        importlib.import_module("arrow_sparse.interop.pandas")
    # Type checks need no import: a pandas object cannot exist without pandas.
    with pytest.raises(ArrowSparseTypeError, match="^from_pandas: data must be"):
        asp.from_pandas([[1, 2]])
    with pytest.raises(ArrowSparseTypeError, match="^to_pandas: data must be"):
        asp.to_pandas(object())


# ------------------------------------------------------------------------ to_pandas
def test_to_pandas_jagged_shares_the_buffers(pd: Any, offsets_dtype: np.dtype) -> None:
    j = asp.Jagged(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]),
                   np.array([0, 3, 7, 7, 9], dtype=offsets_dtype), [True, True, False, True])
    s = asp.to_pandas(j, name="ids")
    list_type = pa.list_ if offsets_dtype == np.int32 else pa.large_list
    assert s.dtype == pd.ArrowDtype(list_type(pa.int64()))
    assert s.name == "ids"
    assert pa.array(s).to_pylist() == CAFFE2
    assert s.isna().tolist() == [False, False, True, False]
    arr = pa.array(s)  # the public way back to Arrow (__arrow_array__)
    assert values_address(arr) == address(j.values)
    assert offsets_address(arr) == j.offsets.ctypes.data
    assert values_address(s.array._pa_array) == address(j.values)


def test_to_pandas_sliced_jagged_is_a_view(pd: Any) -> None:
    j = asp.Jagged.from_arrow(pa.array([[1, 2], [3], [4, 5, 6]]))[1:]
    assert j.offsets[0] == 2
    s = asp.to_pandas(j)
    arr = pa.array(s)
    assert arr.to_pylist() == [[3], [4, 5, 6]]
    assert values_address(arr) == address(j.values)  # the whole buffer, as the Jagged has it
    assert offsets_address(arr) == j.offsets.ctypes.data  # offsets still start at 2


def test_to_pandas_keeps_null_elements_and_vectors(pd: Any) -> None:
    s = asp.to_pandas(asp.Jagged.from_arrow(pa.array([[1.0, None], [], None])))
    assert pa.array(s).to_pylist() == [[1.0, None], [], None]
    vec = asp.Jagged.from_lengths(np.arange(6, dtype=np.float32).reshape(3, 2), [2, 1])
    s = asp.to_pandas(vec)
    assert s.dtype == pd.ArrowDtype(pa.large_list(pa.list_(pa.float32(), 2)))
    assert pa.array(s).to_pylist() == [[[0, 1], [2, 3]], [[4, 5]]]


def test_to_pandas_keyed_columns_view_the_values(pd: Any) -> None:
    kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None, [3]], "b": [[4], [5, 6], []]},
                                   weights={"b": [[0.5], [1.0, 2.0], []]})
    df = asp.to_pandas(kj)
    assert list(df.columns) == ["a", "b", "a_weights", "b_weights"]
    assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
    assert df["a"].isna().tolist() == [False, True, False]
    starts = kj.offset_per_key()
    item = kj.values.itemsize
    for pos, key in enumerate(["a", "b"]):
        assert values_address(pa.array(df[key])) == address(kj.values) + starts[pos] * item
    assert kj.weights is not None
    assert values_address(pa.array(df["b_weights"])) == \
        kj.weights.ctypes.data + starts[1] * kj.weights.itemsize


def test_to_pandas_table_every_column_arrow_backed(pd: Any) -> None:
    ids = pa.array([[1, 2], None, [3]])
    table = pa.table({"user": [7, 8, 9], "ids": ids})
    df = asp.to_pandas(table)
    assert df.dtypes["user"] == pd.ArrowDtype(pa.int64())
    assert df.dtypes["ids"] == pd.ArrowDtype(pa.list_(pa.int64()))
    assert values_address(pa.array(df["ids"])) == values_address(ids)
    batch_df = asp.to_pandas(pa.record_batch({"ids": ids}))
    assert values_address(pa.array(batch_df["ids"])) == values_address(ids)


@pytest.mark.parametrize("data,kwargs,exc,match", [
    (object(), {}, ArrowSparseTypeError, "^to_pandas: data must be a Jagged"),
    (pa.array([[1]]), {}, ArrowSparseTypeError, "^to_pandas: data must be a Jagged"),
    (pa.table({"a": [[1]]}), {"name": "x"}, ArrowSparseTypeError, "name applies to a Jagged"),
    (asp.Jagged.from_list([[1]]), {"name": ["x"]}, ArrowSparseTypeError, "hashable"),
])
def test_to_pandas_errors(pd: Any, data: Any, kwargs: dict[str, Any], exc: type,
                          match: str) -> None:
    with pytest.raises(exc, match=match):
        asp.to_pandas(data, **kwargs)


# ---------------------------------------------------------------------- from_pandas
def test_from_pandas_arrow_dtype_is_zero_copy(pd: Any, offsets_dtype: np.dtype) -> None:
    list_type = pa.list_ if offsets_dtype == np.int32 else pa.large_list
    arr = pa.array(CAFFE2, type=list_type(pa.int64()))
    s = pd.Series(pd.arrays.ArrowExtensionArray(arr))
    j = asp.from_pandas(s)
    assert isinstance(j, asp.Jagged)
    assert j.to_list() == CAFFE2
    assert j.offsets.dtype == offsets_dtype
    assert address(j.values) == values_address(arr)
    assert j.offsets.ctypes.data == offsets_address(arr)


def test_jagged_round_trip_through_pandas_keeps_the_buffers(pd: Any) -> None:
    j = asp.Jagged.from_list(CAFFE2)[1:]
    back = asp.from_pandas(asp.to_pandas(j))
    assert isinstance(back, asp.Jagged)
    assert back.to_list() == j.to_list()
    assert address(back.values) == address(j.values)
    assert back.offsets.ctypes.data == j.offsets.ctypes.data
    assert back.validity is not None and back.validity.tolist() == [True, False, True]


def test_from_pandas_object_lists_convert_once(pd: Any) -> None:
    s = pd.Series([[1, 2, 3], None, np.nan, np.array([3, 6]), []], index=list("abcde"))
    assert s.dtype == object
    j = asp.from_pandas(s)
    assert isinstance(j, asp.Jagged)
    assert j.to_list() == [[1, 2, 3], None, None, [3, 6], []]
    assert j.dtype == np.int64


def test_from_pandas_several_chunks_are_concatenated(pd: Any) -> None:
    chunks = pa.chunked_array([pa.array([[1, 2], [3]]), pa.array([None, [4]])])
    j = asp.from_pandas(pd.Series(pd.arrays.ArrowExtensionArray(chunks)))
    assert isinstance(j, asp.Jagged)
    assert j.to_list() == [[1, 2], [3], None, [4]]


def test_from_pandas_frame_single_column_and_keyed(pd: Any) -> None:
    df = pd.DataFrame({"ids": [[1, 2], None, [3]], 7: [[4], [5, 6], []],
                       "w": [[0.5, 1.0], None, [2.0]], "user": [1, 2, 3]})
    j = asp.from_pandas(df, "ids")
    assert isinstance(j, asp.Jagged) and j.to_list() == [[1, 2], None, [3]]
    kj = asp.from_pandas(df, ["ids", 7], weights={"ids": "w"})
    assert isinstance(kj, asp.KeyedJagged)
    assert kj.keys() == ["ids", 7]  # labels kept as they are
    assert kj[7].to_list() == [[4], [5, 6], []]
    assert kj.weights is not None and kj.weights.tolist() == [0.5, 1.0, 2.0, 1, 1, 1]
    assert kj.validity is not None and kj.validity.tolist() == [True, False, True] + [True] * 3
    every = asp.from_pandas(df[["ids", 7]])
    assert isinstance(every, asp.KeyedJagged) and every.keys() == ["ids", 7]


def test_from_pandas_default_columns_leave_out_weights(pd: Any) -> None:
    df = pd.DataFrame({"ids": [[1, 2], [3]], "w": [[0.5, 1.0], [2.0]]})
    kj = asp.from_pandas(df, weights={"ids": "w"})
    assert isinstance(kj, asp.KeyedJagged)
    assert kj.keys() == ["ids"]
    assert kj.weights is not None and kj.weights.tolist() == [0.5, 1.0, 2.0]


def test_from_pandas_errors(pd: Any) -> None:
    df = pd.DataFrame({"ids": [[1], [2]], "n": [1, 2], "s": ["a", "b"],
                       "t": [["a"], ["b"]]})
    with pytest.raises(ArrowSparseTypeError, match="^from_pandas: data must be a pandas"):
        asp.from_pandas(object())
    with pytest.raises(ArrowSparseTypeError, match=r"column 'n' has dtype int64; expected lists"):
        asp.from_pandas(df, "n")
    with pytest.raises(ArrowSparseTypeError, match=r"^from_pandas: column 's' has dtype"):
        asp.from_pandas(df, "s")
    with pytest.raises(ArrowSparseTypeError, match="not supported|numbers"):
        asp.from_pandas(df, "t")
    with pytest.raises(ArrowSparseTypeError, match=r"^from_pandas: series .* must hold lists"):
        asp.from_pandas(pd.Series([1.5, None], dtype=object))
    with pytest.raises(ArrowSparseTypeError, match="could not be read as lists"):
        asp.from_pandas(pd.Series([[1], {"a": 1}], dtype=object))
    with pytest.raises(ArrowSparseKeyError, match=r"^from_pandas: 'nope' is not a column"):
        asp.from_pandas(df, "nope")
    with pytest.raises(IndexError):
        asp.from_pandas(df, ["ids", "nope"])
    with pytest.raises(ArrowSparseTypeError, match="hashable"):
        asp.from_pandas(df, {"ids"})
    with pytest.raises(ArrowSparseValueError, match="selected twice"):
        asp.from_pandas(df, ["ids", "ids"])
    with pytest.raises(ArrowSparseValueError, match="not a selected column"):
        asp.from_pandas(df, ["ids"], weights={"n": "ids"})
    with pytest.raises(ArrowSparseTypeError, match="weights must be a mapping"):
        asp.from_pandas(df, ["ids"], weights=["ids"])
    with pytest.raises(ArrowSparseValueError, match="weights apply to several columns"):
        asp.from_pandas(df, "ids", weights={"ids": "ids"})
    with pytest.raises(ArrowSparseValueError, match="apply to a DataFrame"):
        asp.from_pandas(df["ids"], "ids")
    dup = pd.DataFrame([[[1], [2]]], columns=["a", "a"])
    with pytest.raises(ArrowSparseValueError, match="names several columns"):
        asp.from_pandas(dup, "a")


# ------------------------------------------------------------------------ accessors
def test_series_accessor(pd: Any) -> None:
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(CAFFE2 + [[]])),
                  index=list("abcde"), name="ids")
    acc = s.sparse_lists
    assert acc.jagged().to_list() == CAFFE2 + [[]]
    lengths = acc.lengths()
    assert list(lengths.index) == list("abcde") and lengths.name == "ids"
    assert lengths.tolist() == [3, 4, pd.NA, 2, 0]
    assert acc.to_padded(pad_value=-1).tolist() == [
        [1, 2, 3, -1], [2, 4, 6, 7], [-1, -1, -1, -1], [3, 6, -1, -1], [-1, -1, -1, -1]]
    assert acc.to_padded(2).shape == (5, 2)
    total = acc.sum()
    assert list(total.index) == list("abcde") and total.name == "ids"
    assert isinstance(total.dtype, pd.ArrowDtype)
    assert total.tolist() == [6, 19, pd.NA, 9, 0]
    assert acc.mean().tolist() == [2.0, 4.75, pd.NA, 4.5, pd.NA]
    assert acc.max().tolist() == [3, 7, pd.NA, 6, pd.NA]
    assert acc.min().tolist() == [1, 2, pd.NA, 3, pd.NA]
    assert acc.prod().tolist() == [6, 336, pd.NA, 18, 1]
    lse = acc.logsumexp().tolist()
    assert lse[2] is pd.NA and lse[4] is pd.NA
    assert lse[0] == pytest.approx(np.log(np.exp([1, 2, 3]).sum()))


def test_series_accessor_reductions_match_the_module(pd: Any) -> None:
    arr = pa.array([[1.5, 2.0], [], None, [3.0]])
    s = pd.Series(pd.arrays.ArrowExtensionArray(arr))
    for name in ["sum", "mean", "max", "min", "prod", "logsumexp"]:
        got = pa.array(getattr(s.sparse_lists, name)())
        assert got.equals(getattr(asp, f"segment_{name}")(arr)), name


def test_series_accessor_on_object_lists_and_errors(pd: Any) -> None:
    s = pd.Series([[1, 2], None, [3]])
    assert s.sparse_lists.sum().tolist() == [3, pd.NA, 3]
    with pytest.raises(ArrowSparseTypeError, match=r"^sparse_lists: series None has dtype"):
        pd.Series([1, 2]).sparse_lists.sum()


def test_frame_accessor(pd: Any) -> None:
    df = pd.DataFrame({"a": [[1, 2], None, [3]], "b": [[4.0], [5.0, 6.0], []],
                       "w": [[0.5], [1.0, 2.0], []]}, index=[10, 20, 30])
    acc = df.sparse_lists
    assert acc.jagged("a").to_list() == [[1, 2], None, [3]]
    kj = acc.keyed(["b"], weights={"b": "w"})
    assert kj.keys() == ["b"] and kj.weights is not None
    assert acc.keyed(["b", "w"]).keys() == ["b", "w"]
    with pytest.raises(ArrowSparseTypeError, match="all integers, all floats"):
        acc.keyed()  # every column: int and float columns do not mix
    lengths = acc.lengths()
    assert list(lengths.columns) == ["a", "b", "w"] and list(lengths.index) == [10, 20, 30]
    assert lengths["a"].tolist() == [2, pd.NA, 1]
    sums = acc.sum(["a", "b"])
    assert list(sums.columns) == ["a", "b"]
    assert sums["a"].tolist() == [3, pd.NA, 3] and sums["b"].tolist() == [4.0, 11.0, 0.0]
    assert acc.mean(["b"])["b"].tolist() == [4.0, 5.5, pd.NA]
    assert acc.max(["a"])["a"].tolist() == [2, pd.NA, 3]
    assert acc.min(["a"])["a"].tolist() == [1, pd.NA, 3]
    assert acc.prod(["a"])["a"].tolist() == [2, pd.NA, 3]
    assert acc.logsumexp(["b"])["b"].tolist()[0] == pytest.approx(4.0)
    assert acc.to_padded("b").tolist() == [[4.0, 0.0], [5.0, 6.0], [0.0, 0.0]]
    assert acc.sum([]).shape == (3, 0)
    with pytest.raises(ArrowSparseTypeError, match="^sparse_lists: columns must be a list"):
        acc.sum("a")
    with pytest.raises(ArrowSparseKeyError, match="^sparse_lists: 'zz' is not a column"):
        acc.lengths(["zz"])


def test_series_accessor_transforms_match_the_functions_and_an_oracle(pd: Any) -> None:
    rows = [[1, 2, None], None, [7]]
    arr = pa.array(rows, pa.list_(pa.int64()))
    s = pd.Series(pd.arrays.ArrowExtensionArray(arr), index=[30, 10, 20], name="ids")
    vocab = asp.fit_vocabulary(pa.array([[1, 7]]))
    oracle = {  # (arguments, the rows a plain-Python reading gives)
        "bucketize": (([2],), [[0, 1, None], None, [1]]),
        "categorify": ((vocab,), [[2, 1, 1], None, [3]]),
        "pad_or_truncate": ((2,), [[1, 2], None, [7, 0]]),
        "fill_null": ((0,), [[1, 2, 0], None, [7]]),
        "drop_nulls": ((), [[1, 2], None, [7]]),
        "hash_bucket": ((10,), None),  # XXH3 is checked by tests/transforms
    }
    for name, (args, want) in oracle.items():
        got = getattr(s.sparse_lists, name)(*args)
        assert isinstance(got, pd.Series) and isinstance(got.dtype, pd.ArrowDtype), name
        assert list(got.index) == [30, 10, 20] and got.name == "ids", name
        listed = pa.chunked_array(got).to_pylist()
        assert listed == pa.chunked_array([getattr(asp, name)(arr, *args)]).to_pylist(), name
        if want is not None:
            assert listed == want, name


def test_series_accessor_on_strings_and_a_wrong_call(pd: Any) -> None:
    s = pd.Series([["apple", None], None, ["kiwi"]])
    assert pa.chunked_array(s.sparse_lists.hash_bucket(1000, seed=7)).to_pylist() == \
        asp.hash_bucket(pa.array([["apple", None], None, ["kiwi"]]), 1000, 7).to_pylist()
    with pytest.raises(TypeError, match="missing a required argument: 'num_buckets'"):
        s.sparse_lists.hash_bucket()
