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

from .._optional import import_optional
from ..jagged import Jagged
from ._methods import JAGGED_DOC, TO_PADDED_DOC, add_methods, apply, series_doc
from .polars import from_polars

pl = import_optional("polars", "polars")

__all__ = ["SparseExprNamespace", "SparseSeriesNamespace"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


class _Ops:
    """The ops both namespaces offer (written from ``_methods.METHODS``).

    ``_apply(op, *args, **kwargs)`` is what differs: at once on a Series, batch by
    batch in an expression.
    """

    def _apply(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


add_methods(_Ops, "polars")


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
        return self._expr.map_batches(lambda s: apply(s, s.to_arrow(), op, *args, **kwargs),
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
        return apply(self._series, self._series.to_arrow(), op, *args, **kwargs)

    @series_doc(JAGGED_DOC, "polars", "[[1, 2], None]", reader="from_polars",
                offsets="int64", copy="the values zero-copy (one chunk)")
    def jagged(self) -> Jagged:
        """Return the Series as a :class:`~arrow_sparse.Jagged`."""
        return from_polars(self._series)  # type: ignore[return-value]

    @series_doc(TO_PADDED_DOC, "polars", "[[1, 2, 3], None, [3, 6]]")
    def to_padded(self, max_length: int | None = None, pad_value: Any = 0) -> np.ndarray:
        """Rows padded (or truncated) to ``max_length``, as a 2-D numpy array."""
        return self.jagged().to_padded(max_length, pad_value)
