"""pandas interop: ``to_pandas`` / ``from_pandas`` and the ``sparse_lists`` accessors.

Importing this module imports pandas (``ModuleNotFoundError`` with an install hint when
it is missing) and registers two accessors, ``Series.sparse_lists`` and
``DataFrame.sparse_lists``. ``import arrow_sparse`` does neither: the accessors exist
only after ``import arrow_sparse.interop.pandas``. Each accessor method is a one-line
call to a public arrow_sparse function on the column's Arrow array (zero-copy for
``pd.ArrowDtype`` columns); results that have one value per row come back as Series
aligned with the frame's index.

Examples
--------
>>> import pandas as pd
>>> import arrow_sparse.interop.pandas
>>> s = pd.Series([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]],
...               dtype=pd.ArrowDtype(pa.list_(pa.int64())), index=list("abcd"))
>>> s.sparse_lists.sum()
a       6
b      19
c    <NA>
d       9
dtype: int64[pyarrow]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._docs import fill_doc
from .._optional import import_optional
from ..errors import ArrowSparseTypeError
from ..jagged import Jagged
from ..keyed import KeyedJagged
from ..segment import (
    segment_logsumexp,
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
)
from ._common import check_label, type_name
from .pandas_convert import _column_to_arrow, _series_to_arrow, from_pandas, to_pandas

pd = import_optional("pandas", "pandas")

__all__ = ["SparseListsFrameAccessor", "SparseListsSeriesAccessor", "from_pandas", "to_pandas"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


_FUNC = "sparse_lists"

#: The body of the Series accessor's reductions' docstrings (each has its own summary).
_SERIES_REDUCTION = """
Returns
-------
pandas.Series
    {returns}

See Also
--------
arrow_sparse.segment_{op} : The function this calls.

Examples
--------
>>> import pandas as pd
>>> import arrow_sparse.interop.pandas
{example}
"""

#: The body of the DataFrame accessor's reductions' docstrings.
_FRAME_REDUCTION = """
Parameters
----------
columns
    Columns to reduce; default every column.

Returns
-------
pandas.DataFrame
    One ``pd.ArrowDtype`` column per selected column, same index.

See Also
--------
arrow_sparse.segment_{op} : The function this calls.

Examples
--------
>>> import pandas as pd
>>> import arrow_sparse.interop.pandas
{example}
"""


def _aligned(like: Any, result: pa.Array | pa.ChunkedArray, name: Hashable) -> Any:
    """One value per row of ``like``: a Series with its index, wrapping the Arrow result."""
    return pd.Series(pd.arrays.ArrowExtensionArray(result), index=like.index, name=name,
                     copy=False)


@pd.api.extensions.register_series_accessor("sparse_lists")
class SparseListsSeriesAccessor:
    """``Series.sparse_lists``: jagged operations on a Series of lists.

    The Series must hold lists of numbers: a ``pd.ArrowDtype`` list column (read
    zero-copy) or an object column of lists (converted once per call, a copy).
    Null rows stay null in the per-row results.

    Parameters
    ----------
    series
        The Series (pandas passes it).

    See Also
    --------
    from_pandas : What :meth:`jagged` calls.

    Examples
    --------
    >>> import pandas as pd
    >>> import arrow_sparse.interop.pandas
    >>> s = pd.Series([[1, 2, 3], [2, 4, 6, 7], [3, 6]],
    ...               dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    >>> s.sparse_lists.jagged()
    Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int32)
    """

    def __init__(self, series: Any) -> None:
        self._obj = series

    def _arrow(self) -> pa.Array | pa.ChunkedArray:
        return _series_to_arrow(_FUNC, self._obj, f"series {self._obj.name!r}")

    def _reduced(self, op: Callable[..., Any]) -> Any:
        return _aligned(self._obj, op(self._arrow()), self._obj.name)

    def jagged(self) -> Jagged:
        """Return the Series as a :class:`~arrow_sparse.Jagged` (zero-copy for ArrowDtype).

        Returns
        -------
        Jagged
            Rows in positional order; null rows in ``validity``.

        See Also
        --------
        from_pandas : The function this calls.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> pd.Series([[1, 2], None]).sparse_lists.jagged()
        Jagged([[1, 2], None], dtype=int64, offsets=int32)
        """
        return from_pandas(self._obj)  # type: ignore[return-value]

    def lengths(self) -> Any:
        """Count the elements of each row (``<NA>`` for null rows).

        Returns
        -------
        pandas.Series
            ``int32[pyarrow]`` (``int64[pyarrow]`` for ``large_list``), same index.

        See Also
        --------
        Jagged.lengths : The numpy lengths (null rows report their offsets range).
        pyarrow.compute.list_value_length : The function this calls.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> pd.Series([[1, 2, 3], [], None, [3, 6]]).sparse_lists.lengths().tolist()
        [3, 0, <NA>, 2]
        """
        return self._reduced(_list_lengths)

    def to_padded(self, max_length: int | None = None, pad_value: Any = 0) -> np.ndarray:
        """Rows padded (or truncated) to ``max_length``, as a 2-D numpy array.

        Parameters
        ----------
        max_length
            Padded length; default the longest row.
        pad_value
            Fill value; null rows are all padding.

        Returns
        -------
        numpy.ndarray
            ``[len(series), max_length]``.

        See Also
        --------
        Jagged.to_padded : The method this calls.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> pd.Series([[1, 2, 3], None, [3, 6]]).sparse_lists.to_padded(pad_value=-1)
        array([[ 1,  2,  3],
               [-1, -1, -1],
               [ 3,  6, -1]])
        """
        return self.jagged().to_padded(max_length, pad_value)

    @fill_doc(_SERIES_REDUCTION, op="sum",
              returns="Same index; ``pd.ArrowDtype`` (int64 for integers).",
              example=">>> pd.Series([[1, 2, 3], [], None]).sparse_lists.sum().tolist()\n"
                      "[6, 0, <NA>]")
    def sum(self) -> Any:
        """Sum of each row (empty rows 0, null rows ``<NA>``)."""
        return self._reduced(segment_sum)

    @fill_doc(_SERIES_REDUCTION, op="mean",
              returns="Same index; ``double[pyarrow]`` for integers.",
              example=">>> pd.Series([[1, 2], [], None]).sparse_lists.mean().tolist()\n"
                      "[1.5, <NA>, <NA>]")
    def mean(self) -> Any:
        """Mean of each row (empty and null rows ``<NA>``; null elements skipped)."""
        return self._reduced(segment_mean)

    @fill_doc(_SERIES_REDUCTION, op="max",
              returns="Same index and values dtype.",
              example=">>> pd.Series([[1, 5], [], [3]]).sparse_lists.max().tolist()\n"
                      "[5, <NA>, 3]")
    def max(self) -> Any:
        """Largest element of each row (empty and null rows ``<NA>``)."""
        return self._reduced(segment_max)

    @fill_doc(_SERIES_REDUCTION, op="min",
              returns="Same index and values dtype.",
              example=">>> pd.Series([[1, 5], [], [3]]).sparse_lists.min().tolist()\n"
                      "[1, <NA>, 3]")
    def min(self) -> Any:
        """Smallest element of each row (empty and null rows ``<NA>``)."""
        return self._reduced(segment_min)

    @fill_doc(_SERIES_REDUCTION, op="prod",
              returns="Same index; int64 for integers.",
              example=">>> pd.Series([[2, 3], [], None]).sparse_lists.prod().tolist()\n"
                      "[6, 1, <NA>]")
    def prod(self) -> Any:
        """Product of each row (empty rows 1, null rows ``<NA>``)."""
        return self._reduced(segment_prod)

    @fill_doc(_SERIES_REDUCTION, op="logsumexp",
              returns="Same index; floating point.",
              example=">>> pd.Series([[0.0, 0.0], []]).sparse_lists.logsumexp().round(4).tolist()\n"
                      "[0.6931, <NA>]")
    def logsumexp(self) -> Any:
        """``log(sum(exp(row)))`` of each row (empty and null rows ``<NA>``)."""
        return self._reduced(segment_logsumexp)


@pd.api.extensions.register_dataframe_accessor("sparse_lists")
class SparseListsFrameAccessor:
    """``DataFrame.sparse_lists``: jagged operations on a DataFrame's list columns.

    ``columns=None`` means every column; pass a list of labels to pick the list
    columns of a frame that has others. Per-row results come back as a DataFrame with
    the frame's index and one column per selected column.

    Parameters
    ----------
    frame
        The DataFrame (pandas passes it).

    See Also
    --------
    from_pandas : What :meth:`jagged` and :meth:`keyed` call.
    SparseListsSeriesAccessor : The same operations on one column.

    Examples
    --------
    >>> import pandas as pd
    >>> import arrow_sparse.interop.pandas
    >>> df = pd.DataFrame({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]],
    ...                    "scores": [[0.5, 1.0, 1.5], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0]]})
    >>> df.sparse_lists.sum()
       ids  scores
    0    6     3.0
    1   19     4.0
    2    9     4.0
    >>> df.sparse_lists.keyed(["ids"], weights={"ids": "scores"})
    KeyedJagged(num_keys=1, batch_size=3, dtype=int64, lengths=int32, weights=float64)
      'ids': [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
    """

    def __init__(self, frame: Any) -> None:
        self._obj = frame

    def _per_column(self, columns: Any, op: Callable[..., Any]) -> Any:
        labels = list(self._obj.columns) if columns is None else _label_list(columns)
        parts = [_aligned(self._obj, op(_column_to_arrow(_FUNC, self._obj, label)), label)
                 for label in labels]
        return pd.concat(parts, axis=1) if parts else pd.DataFrame(index=self._obj.index)

    def jagged(self, column: Hashable) -> Jagged:
        """One list column as a :class:`~arrow_sparse.Jagged`.

        Parameters
        ----------
        column
            The column label.

        Returns
        -------
        Jagged
            Zero-copy for a ``pd.ArrowDtype`` column.

        See Also
        --------
        from_pandas : The function this calls.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> pd.DataFrame({"ids": [[1, 2], [3]]}).sparse_lists.jagged("ids")
        Jagged([[1, 2], [3]], dtype=int64, offsets=int32)
        """
        return from_pandas(self._obj, check_label(_FUNC, "column", column))  # type: ignore[return-value]

    def keyed(self, columns: list[Hashable] | None = None,
              weights: dict[Hashable, Hashable] | None = None) -> KeyedJagged:
        """List columns as a :class:`~arrow_sparse.KeyedJagged` keyed by column label.

        Parameters
        ----------
        columns
            Key columns, in key order; default every column except the weights columns.
        weights
            ``{key column: weights column}``.

        Returns
        -------
        KeyedJagged
            Values gathered key-major (a copy).

        See Also
        --------
        from_pandas : The function this calls.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> df = pd.DataFrame({"a": [[1, 2], [3]], "b": [[4], []]})
        >>> df.sparse_lists.keyed().lengths
        array([2, 1, 1, 0], dtype=int32)
        """
        keys = None if columns is None else _label_list(columns)
        return from_pandas(self._obj, keys, weights=weights)  # type: ignore[return-value]

    def lengths(self, columns: list[Hashable] | None = None) -> Any:
        """Count the elements of each row of each column (``<NA>`` for null rows).

        Parameters
        ----------
        columns
            Columns to measure; default every column.

        Returns
        -------
        pandas.DataFrame
            ``int32[pyarrow]`` columns (``int64[pyarrow]`` for ``large_list``).

        See Also
        --------
        SparseListsSeriesAccessor.lengths : The same for one column.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> pd.DataFrame({"a": [[1, 2], None], "b": [[4], []]}).sparse_lists.lengths()
              a  b
        0     2  1
        1  <NA>  0
        """
        return self._per_column(columns, _list_lengths)

    def to_padded(self, column: Hashable, max_length: int | None = None,
                  pad_value: Any = 0) -> np.ndarray:
        """One list column padded to a 2-D numpy array.

        Parameters
        ----------
        column
            The column label.
        max_length
            Padded length; default the longest row.
        pad_value
            Fill value; null rows are all padding.

        Returns
        -------
        numpy.ndarray
            ``[len(frame), max_length]``.

        See Also
        --------
        Jagged.to_padded : The method this calls.

        Examples
        --------
        >>> import pandas as pd
        >>> import arrow_sparse.interop.pandas
        >>> pd.DataFrame({"ids": [[1, 2], [3]]}).sparse_lists.to_padded("ids")
        array([[1, 2],
               [3, 0]])
        """
        return self.jagged(column).to_padded(max_length, pad_value)

    @fill_doc(_FRAME_REDUCTION, op="sum",
              example='>>> pd.DataFrame({"a": [[1, 2], None]}).sparse_lists.sum()\n'
                      "      a\n"
                      "0     3\n"
                      "1  <NA>")
    def sum(self, columns: list[Hashable] | None = None) -> Any:
        """Sum of each row of each column (empty rows 0, null rows ``<NA>``)."""
        return self._per_column(columns, segment_sum)

    @fill_doc(_FRAME_REDUCTION, op="mean",
              example='>>> pd.DataFrame({"a": [[1, 2], []]}).sparse_lists.mean()\n'
                      "      a\n"
                      "0   1.5\n"
                      "1  <NA>")
    def mean(self, columns: list[Hashable] | None = None) -> Any:
        """Mean of each row of each column (empty and null rows ``<NA>``)."""
        return self._per_column(columns, segment_mean)

    @fill_doc(_FRAME_REDUCTION, op="max",
              example='>>> pd.DataFrame({"a": [[1, 5], [3]]}).sparse_lists.max()\n'
                      "   a\n"
                      "0  5\n"
                      "1  3")
    def max(self, columns: list[Hashable] | None = None) -> Any:
        """Largest element of each row of each column (empty and null rows ``<NA>``)."""
        return self._per_column(columns, segment_max)

    @fill_doc(_FRAME_REDUCTION, op="min",
              example='>>> pd.DataFrame({"a": [[1, 5], [3]]}).sparse_lists.min()\n'
                      "   a\n"
                      "0  1\n"
                      "1  3")
    def min(self, columns: list[Hashable] | None = None) -> Any:
        """Smallest element of each row of each column (empty and null rows ``<NA>``)."""
        return self._per_column(columns, segment_min)

    @fill_doc(_FRAME_REDUCTION, op="prod",
              example='>>> pd.DataFrame({"a": [[2, 3], []]}).sparse_lists.prod()\n'
                      "   a\n"
                      "0  6\n"
                      "1  1")
    def prod(self, columns: list[Hashable] | None = None) -> Any:
        """Product of each row of each column (empty rows 1, null rows ``<NA>``)."""
        return self._per_column(columns, segment_prod)

    @fill_doc(_FRAME_REDUCTION, op="logsumexp",
              example='>>> frame = pd.DataFrame({"a": [[0.0, 0.0], []]})\n'
                      ">>> frame.sparse_lists.logsumexp().round(4)\n"
                      "        a\n"
                      "0  0.6931\n"
                      "1    <NA>")
    def logsumexp(self, columns: list[Hashable] | None = None) -> Any:
        """``log(sum(exp(row)))`` of each row of each column (empty and null rows ``<NA>``)."""
        return self._per_column(columns, segment_logsumexp)


def _list_lengths(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Row lengths of an Arrow list array, null for null rows (Arrow's own kernel)."""
    return pc.list_value_length(arr)


def _label_list(columns: Any) -> list[Hashable]:
    """``columns`` as a list of labels (a list or tuple; a single label is an error)."""
    if not isinstance(columns, (list, tuple)):
        msg = (f"{_FUNC}: columns must be a list of column labels, got {type_name(columns)}; "
               "use jagged(column) for one column")
        raise ArrowSparseTypeError(msg)
    return [check_label(_FUNC, "columns", c) for c in columns]
