"""pandas interop: ``to_pandas`` / ``from_pandas`` and the ``sparse_lists`` accessors.

Importing this module imports pandas (``ModuleNotFoundError`` with an install hint when
it is missing) and registers two accessors, ``Series.sparse_lists`` and
``DataFrame.sparse_lists``. ``import arrow_sparse`` does neither: the accessors exist
only after ``import arrow_sparse.interop.pandas``. Each accessor method is a one-line
call to a public arrow_sparse function on the column's Arrow array (zero-copy for
``pd.ArrowDtype`` columns); results that have one value per row come back as Series
aligned with the frame's index. The methods the Polars ``sparse`` namespace shares are
written from one table (``interop/_methods.py``).

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

from .._optional import import_optional
from ..errors import ArrowSparseTypeError
from ..jagged import Jagged
from ..keyed import KeyedJagged
from ._common import check_label, type_name
from ._methods import (
    JAGGED_DOC,
    TO_PADDED_DOC,
    add_frame_methods,
    add_methods,
    apply,
    series_doc,
)
from .pandas_convert import _column_to_arrow, _series_to_arrow, from_pandas, to_pandas

pd = import_optional("pandas", "pandas")

__all__ = ["SparseListsFrameAccessor", "SparseListsSeriesAccessor", "from_pandas", "to_pandas"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


_FUNC = "sparse_lists"


def _aligned(like: Any, result: pa.Array | pa.ChunkedArray, name: Hashable) -> Any:
    """One value per row of ``like``: a Series with its index, wrapping the Arrow result."""
    return pd.Series(pd.arrays.ArrowExtensionArray(result), index=like.index, name=name,
                     copy=False)


@pd.api.extensions.register_series_accessor("sparse_lists")
class SparseListsSeriesAccessor:
    """``Series.sparse_lists``: jagged operations on a Series of lists.

    The Series must hold lists: a ``pd.ArrowDtype`` list column (read zero-copy) or
    an object column of lists (converted once per call, a copy). Null rows stay null
    in the per-row results, which keep the Series' index and name.

    Methods: ``jagged``, ``to_padded``, the transforms ``hash_bucket``,
    ``bucketize``, ``categorify``, ``pad_or_truncate``, ``fill_null`` and
    ``drop_nulls``, and one value per row: ``lengths``, ``sum``, ``mean``, ``max``,
    ``min``, ``prod`` and ``logsumexp``. Each calls the arrow_sparse function of that
    name (``segment_sum`` for ``sum``) on the column.

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

    def _apply(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return apply(self._obj, self._arrow(), op, *args, **kwargs)

    @series_doc(JAGGED_DOC, "pandas", "[[1, 2], None]", reader="from_pandas",
                offsets="int32", copy="zero-copy for a ``pd.ArrowDtype`` column")
    def jagged(self) -> Jagged:
        """Return the Series as a :class:`~arrow_sparse.Jagged`."""
        return from_pandas(self._obj)  # type: ignore[return-value]

    @series_doc(TO_PADDED_DOC, "pandas", "[[1, 2, 3], None, [3, 6]]")
    def to_padded(self, max_length: int | None = None, pad_value: Any = 0) -> np.ndarray:
        """Rows padded (or truncated) to ``max_length``, as a 2-D numpy array."""
        return self.jagged().to_padded(max_length, pad_value)


add_methods(SparseListsSeriesAccessor, "pandas")


@pd.api.extensions.register_dataframe_accessor("sparse_lists")
class SparseListsFrameAccessor:
    """``DataFrame.sparse_lists``: jagged operations on a DataFrame's list columns.

    ``columns=None`` means every column; pass a list of labels to pick the list
    columns of a frame that has others. Per-row results (``lengths``, ``sum``,
    ``mean``, ``max``, ``min``, ``prod``, ``logsumexp``) come back as a DataFrame with
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


add_frame_methods(SparseListsFrameAccessor, "pandas")


def _label_list(columns: Any) -> list[Hashable]:
    """``columns`` as a list of labels (a list or tuple; a single label is an error)."""
    if not isinstance(columns, (list, tuple)):
        msg = (f"{_FUNC}: columns must be a list of column labels, got {type_name(columns)}; "
               "use jagged(column) for one column")
        raise ArrowSparseTypeError(msg)
    return [check_label(_FUNC, "columns", c) for c in columns]
