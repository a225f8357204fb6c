"""The ``sparse`` namespace on Polars expressions and Series: jagged ops on List columns.

Importing this module imports Polars (``ModuleNotFoundError`` with an install hint when
it is missing) and registers ``Expr.sparse`` and ``Series.sparse``. ``import
arrow_sparse`` does neither (it loads :mod:`arrow_sparse.interop.polars` for
``to_polars`` / ``from_polars`` without importing Polars, so the namespace lives here).
Each method is a one-line call to the public arrow_sparse function of the same name
on the column's Arrow array (Polars exports its buffers without a copy), the result
imported back into Polars; the ops on expressions run batch by batch
(``Expr.map_batches``, element-wise), so they work in ``select``, ``with_columns``
and lazy frames.

Examples
--------
>>> import polars as pl
>>> import arrow_sparse.interop.polars_namespace
>>> df = pl.DataFrame({"ids": [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]})
>>> df.select(pl.col("ids").sparse.hash_bucket(10))["ids"].to_list()
[[8, 7, 9], [7, 6, 5, 5], None, [9, 5]]
>>> df["ids"].sparse.sum().to_list()
[6, 19, None, 9]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._optional import import_optional
from ..jagged import Jagged
from ..segment import (
    segment_logsumexp,
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
)
from ..transforms import (
    Vocabulary,
    bucketize,
    categorify,
    drop_nulls,
    fill_null,
    hash_bucket,
    pad_or_truncate,
)
from .polars import from_polars

pl = import_optional("polars", "polars")

__all__ = ["SparseExprNamespace", "SparseSeriesNamespace"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


def _lengths(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    return pc.list_value_length(arr)


def _on_series(s: Any, op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Apply ``op`` to a Series' Arrow array; return a Series of the same name."""
    out = op(s.to_arrow(), *args, **kwargs)
    return pl.from_arrow(out, rechunk=False).alias(s.name)


class _Ops:
    """The ops both namespaces offer; ``_apply(op, *args)`` is what differs."""

    def _apply(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def hash_bucket(self, num_buckets: int, seed: int = 0) -> Any:
        """Hash every integer or string into ``[0, num_buckets)`` (XXH3-64).

        See :func:`arrow_sparse.hash_bucket`; lists of any nesting, nulls stay null.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([["apple", None], ["kiwi"]]).sparse.hash_bucket(1000, seed=7).to_list()
        [[341, None], [304]]
        """
        return self._apply(hash_bucket, num_buckets, seed)

    def bucketize(self, boundaries: Any, *, right: bool = False) -> Any:
        """Replace every number by the index of its bucket among sorted ``boundaries``.

        See :func:`arrow_sparse.bucketize`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[0.5, 3.0], [10.0]]).sparse.bucketize([1.0, 5.0]).to_list()
        [[0, 1], [2]]
        """
        return self._apply(bucketize, boundaries, right=right)

    def categorify(self, vocabulary: Vocabulary) -> Any:
        """Replace every value by its id in a fitted vocabulary.

        See :func:`arrow_sparse.categorify` and :func:`arrow_sparse.fit_vocabulary`.

        Examples
        --------
        >>> import polars as pl, arrow_sparse as asp
        >>> import arrow_sparse.interop.polars_namespace
        >>> s = pl.Series([[5, 7, 5], [9]])
        >>> vocab = asp.fit_vocabulary(s.to_arrow())
        >>> got = s.sparse.categorify(vocab).to_list()
        >>> got == asp.categorify(s.to_arrow(), vocab).to_pylist()
        True
        """
        return self._apply(categorify, vocabulary)

    def pad_or_truncate(self, length: int, pad_value: Any = 0, side: str = "right") -> Any:
        """Make every non-null row exactly ``length`` long (pad or cut on ``side``).

        See :func:`arrow_sparse.pad_or_truncate`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 2, 3], [4], None]).sparse.pad_or_truncate(2).to_list()
        [[1, 2], [4, 0], None]
        """
        return self._apply(pad_or_truncate, length, pad_value, side)

    def fill_null(self, value: Any, *, empty_null_rows: bool = False) -> Any:
        """Replace null elements by ``value`` (null rows too with ``empty_null_rows``).

        See :func:`arrow_sparse.fill_null`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, None], None]).sparse.fill_null(0).to_list()
        [[1, 0], None]
        """
        return self._apply(fill_null, value, empty_null_rows=empty_null_rows)

    def drop_nulls(self) -> Any:
        """Remove the null elements inside each row (null rows stay null).

        See :func:`arrow_sparse.drop_nulls`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, None, 3], None]).sparse.drop_nulls().to_list()
        [[1, 3], None]
        """
        return self._apply(drop_nulls)

    def lengths(self) -> Any:
        """Count the elements of each row (null for null rows).

        See :func:`pyarrow.compute.list_value_length` (Polars: ``list.len``).

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 2, 3], [], None]).sparse.lengths().to_list()
        [3, 0, None]
        """
        return self._apply(_lengths)

    def sum(self) -> Any:
        """Sum of each row (empty rows 0, null rows null); see :func:`arrow_sparse.segment_sum`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 2, 3], [], None]).sparse.sum().to_list()
        [6, 0, None]
        """
        return self._apply(segment_sum)

    def mean(self) -> Any:
        """Mean of each row (empty and null rows null); see :func:`arrow_sparse.segment_mean`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 2], [], None]).sparse.mean().to_list()
        [1.5, None, None]
        """
        return self._apply(segment_mean)

    def max(self) -> Any:
        """Largest element of each row (empty and null rows null).

        See :func:`arrow_sparse.segment_max`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 5], [], [3]]).sparse.max().to_list()
        [5, None, 3]
        """
        return self._apply(segment_max)

    def min(self) -> Any:
        """Smallest element of each row (empty and null rows null).

        See :func:`arrow_sparse.segment_min`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 5], [], [3]]).sparse.min().to_list()
        [1, None, 3]
        """
        return self._apply(segment_min)

    def prod(self) -> Any:
        """Product of each row (empty rows 1, null rows null).

        See :func:`arrow_sparse.segment_prod`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[2, 3], [], None]).sparse.prod().to_list()
        [6, 1, None]
        """
        return self._apply(segment_prod)

    def logsumexp(self) -> Any:
        """``log(sum(exp(row)))`` (empty and null rows null).

        See :func:`arrow_sparse.segment_logsumexp`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> [round(x, 4) if x is not None else x
        ...  for x in pl.Series([[0.0, 0.0], []]).sparse.logsumexp().to_list()]
        [0.6931, None]
        """
        return self._apply(segment_logsumexp)


@pl.api.register_expr_namespace("sparse")
class SparseExprNamespace(_Ops):
    """``Expr.sparse``: jagged ops on a List column, inside Polars expressions.

    Each op runs :meth:`polars.Expr.map_batches` (element-wise: one output row per
    input row) with the arrow_sparse function on each batch's Arrow array.

    Parameters
    ----------
    expr
        The expression (Polars passes it).

    Examples
    --------
    >>> import polars as pl
    >>> import arrow_sparse.interop.polars_namespace
    >>> df = pl.DataFrame({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]})
    >>> df.with_columns(pl.col("ids").sparse.max().alias("top"))["top"].to_list()
    [3, 7, 6]
    """

    def __init__(self, expr: Any) -> None:
        self._expr = expr

    def _apply(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._expr.map_batches(lambda s: _on_series(s, op, *args, **kwargs),
                                      is_elementwise=True)


@pl.api.register_series_namespace("sparse")
class SparseSeriesNamespace(_Ops):
    """``Series.sparse``: jagged ops on a List Series (zero-copy Arrow export).

    Parameters
    ----------
    series
        The Series (Polars passes it).

    Examples
    --------
    >>> import polars as pl
    >>> import arrow_sparse.interop.polars_namespace
    >>> pl.Series("ids", [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]).sparse.jagged()
    Jagged([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]], dtype=int64, offsets=int64)
    """

    def __init__(self, series: Any) -> None:
        self._series = series

    def _apply(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return _on_series(self._series, op, *args, **kwargs)

    def jagged(self) -> Jagged:
        """Return the Series as a :class:`~arrow_sparse.Jagged`; see :func:`from_polars`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 2], None]).sparse.jagged().lengths
        array([2, 0])
        """
        return from_polars(self._series)  # type: ignore[return-value]

    def to_padded(self, max_length: int | None = None, pad_value: Any = 0) -> np.ndarray:
        """Rows padded (or truncated) to ``max_length``, as a 2-D numpy array.

        See :meth:`Jagged.to_padded`.

        Examples
        --------
        >>> import polars as pl
        >>> import arrow_sparse.interop.polars_namespace
        >>> pl.Series([[1, 2, 3], None, [3, 6]]).sparse.to_padded(pad_value=-1)
        array([[ 1,  2,  3],
               [-1, -1, -1],
               [ 3,  6, -1]])
        """
        return self.jagged().to_padded(max_length, pad_value)
