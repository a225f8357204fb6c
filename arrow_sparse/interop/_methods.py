"""The methods of the pandas accessor and the Polars namespace, written once.

``Series.sparse_lists`` (pandas), ``Series.sparse`` and ``Expr.sparse`` (Polars) offer
the same operations on a column of lists. Each is one row of :data:`METHODS`: the
public arrow_sparse function it calls, which of that function's parameters the method
takes, its one-line summary and one example. :func:`add_methods` writes the methods
onto an accessor class from that table, each with the function's own signature (less
the column argument) and a numpydoc docstring whose Examples run as doctests in the
accessor's library, as pyarrow builds its compute functions from one description.
Adding an operation to every accessor is one row here.

No optional dependency is imported: the accessor modules import their library.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow
from .._docs import F, fill_doc
from ..segment import (
    segment_logsumexp,
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
)
from ..transforms import (
    bucketize,
    categorify,
    drop_nulls,
    fill_null,
    hash_bucket,
    pad_or_truncate,
)

__all__ = ["FRAME", "JAGGED_DOC", "METHODS", "TO_PADDED_DOC", "Method", "add_frame_methods",
           "add_methods", "apply", "lengths", "series_doc"]


def lengths(values: Any) -> Any:
    """Row lengths of an Arrow list array, null for null rows (Arrow's own kernel)."""
    return pc.list_value_length(values)


class Method(NamedTuple):
    """One accessor method: the function it calls and how its docstring reads."""

    #: The method's name.
    name: str
    #: The public function, called with the column's Arrow array first.
    func: Callable[..., Any]
    #: One-line summary; ``{null}`` is the library's word for a null row.
    summary: str
    #: The function's parameters the method takes (None: all after the column).
    params: tuple[str, ...] | None
    #: The example: the column's rows, the call's arguments and what comes back
    #: (``None`` for a null row), with lines run first and an expression run after.
    rows: str
    args: str
    result: str
    setup: str = ""
    then: str = ""
    #: Where the See Also points (default the function).
    see: str = ""


#: Every method of ``Series.sparse_lists``, ``Series.sparse`` and ``Expr.sparse``.
METHODS: tuple[Method, ...] = (
    Method("hash_bucket", hash_bucket,
           "Hash every integer or string into ``[0, num_buckets)`` (XXH3-64).", None,
           '[["apple", "kiwi"], None]', "1000, seed=7", "[[341, 304], None]"),
    Method("bucketize", bucketize,
           "Replace every number by the index of its bucket among sorted ``boundaries``.",
           None, "[[0.5, 3.0], [10.0]]", "[1.0, 5.0]", "[[0, 1], [2]]"),
    Method("categorify", categorify, "Replace every value by its id in a fitted vocabulary.",
           None, "[[5, 7, 5], [9], None]", "vocab", "[[2, 3, 2], [4], None]",
           setup="vocab = asp.fit_vocabulary(pa.array([[5, 7, 5], [9]]))"),
    Method("pad_or_truncate", pad_or_truncate,
           "Make every non-null row exactly ``length`` long (pad or cut on ``side``).", None,
           "[[1, 2, 3], [4], None]", "2", "[[1, 2], [4, 0], None]"),
    Method("fill_null", fill_null,
           "Replace null elements by ``value`` (null rows too with ``empty_null_rows``).",
           None, "[[1, None], None]", "0", "[[1, 0], None]"),
    Method("drop_nulls", drop_nulls,
           "Remove the null elements inside each row (null rows stay {null}).", None,
           "[[1, None, 3], None]", "", "[[1, 3], None]"),
    Method("lengths", lengths, "Count the elements of each row ({null} for null rows).", (),
           "[[1, 2, 3], [], None]", "", "[3, 0, None]",
           see="pyarrow.compute.list_value_length"),
    Method("sum", segment_sum, "Sum of each row (empty rows 0, null rows {null}).", (),
           "[[1, 2, 3], [], None]", "", "[6, 0, None]"),
    Method("mean", segment_mean, "Mean of each row (empty and null rows {null}).", (),
           "[[1, 2], [], None]", "", "[1.5, None, None]"),
    Method("max", segment_max, "Largest element of each row (empty and null rows {null}).", (),
           "[[1, 5], [], [3]]", "", "[5, None, 3]"),
    Method("min", segment_min, "Smallest element of each row (empty and null rows {null}).", (),
           "[[1, 5], [], [3]]", "", "[1, None, 3]"),
    Method("prod", segment_prod, "Product of each row (empty rows 1, null rows {null}).", (),
           "[[2, 3], [], None]", "", "[6, 1, None]"),
    Method("logsumexp", segment_logsumexp,
           "``log(sum(exp(row)))`` of each row (empty and null rows {null}).", (),
           "[[0.0, 0.0], []]", "", "[0.6931, None]", then=".round(4)"),
)

#: The methods a pandas DataFrame accessor offers per column: those that take no
#: argument (the reductions and lengths), so the columns can be its only one.
FRAME: tuple[Method, ...] = tuple(m for m in METHODS if m.params == ())


class _Library(NamedTuple):
    """How one accessor's docstrings read."""

    series: str     # "pandas.Series"
    null: str       # the word for a null row
    imports: str    # the example's import lines
    make: str       # the expression building a Series from rows, {rows}
    attr: str       # the accessor's attribute
    to_list: str    # the method listing a Series
    returns: str    # what the result keeps


_LIBRARIES = {
    "pandas": _Library("pandas.Series", "``<NA>``",
                       ">>> import pandas as pd\n>>> import arrow_sparse.interop.pandas",
                       "pd.Series({rows})", "sparse_lists", "tolist",
                       "Same index and name as the Series; ``pd.ArrowDtype``."),
    "polars": _Library("polars.Series or polars.Expr", "null",
                       ">>> import polars as pl\n>>> import arrow_sparse.interop.polars_namespace",
                       "pl.Series({rows})", "sparse", "to_list",
                       "Same name as the Series (an expression: its column's)."),
}

_DOC = """{summary}
{parameters}
Returns
-------
{series}
    {returns}

See Also
--------
{see} : The function this calls.

Examples
--------
{imports}
{setup}>>> {make}.{attr}.{name}({args}){then}.{to_list}()
{result}
"""

_FRAME_DOC = """{summary}

Parameters
----------
columns
    Columns to compute; default every column.

Returns
-------
pandas.DataFrame
    One ``pd.ArrowDtype`` column per selected column, same index.

See Also
--------
{see} : The function this calls.
SparseListsSeriesAccessor.{name} : The same on one column.

Examples
--------
{imports}
{setup}>>> pd.DataFrame({{"a": {rows}}}).sparse_lists.{name}()["a"]{then}.tolist()
{result}
"""


def _signature(m: Method) -> inspect.Signature:
    """``func``'s signature with ``self`` for its first parameter, and only ``m.params``."""
    sig = inspect.signature(m.func)
    kept = [p for p in list(sig.parameters.values())[1:]
            if m.params is None or p.name in m.params]
    self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sig.replace(parameters=[self, *kept], return_annotation="Any")


def _fill(m: Method, lib: _Library, template: str, **extra: Any) -> str:
    """Return the docstring of method ``m`` in library ``lib``."""
    sig = _signature(m)
    names = list(sig.parameters)[1:]
    see = m.see or f"arrow_sparse.{m.func.__name__}"
    parameters = "" if not names else (
        f"\nParameters\n----------\n{', '.join(names)}\n    As in :func:`{see}`.\n")
    result = m.result
    if lib.null == "``<NA>``":  # pandas lists a null row as <NA>, a null inside a row as None
        rows = ast.literal_eval(m.result)
        result = "[" + ", ".join("<NA>" if r is None else repr(r) for r in rows) + "]"
    setup = "".join(f">>> {line}\n" for line in m.setup.splitlines())
    return template.format(
        summary=m.summary.format(null=lib.null), parameters=parameters, series=lib.series,
        returns=lib.returns, see=see, imports=lib.imports, setup=setup,
        make=lib.make.format(rows=m.rows), attr=lib.attr, name=m.name, args=m.args,
        then=m.then, to_list=lib.to_list, rows=m.rows, result=result, **extra)


def add_methods(cls: type, library: str, methods: tuple[Method, ...] = METHODS) -> type:
    """Write ``methods`` onto ``cls``: each calls ``self._apply(func, *args, **kwargs)``.

    The method has the function's signature less the column (arguments are bound to
    it at the call, so a wrong call raises ``TypeError`` at once, also for a Polars
    expression that runs later) and its docstring from the table.
    """
    lib = _LIBRARIES[library]
    for m in methods:
        _install(cls, m.name, _fill(m, lib, _DOC), _signature(m), _series_body(m))
    return cls


def add_frame_methods(cls: type, library: str, methods: tuple[Method, ...] = FRAME) -> type:
    """Write ``methods`` onto a DataFrame accessor: ``(columns=None)``, one column each.

    Each calls ``self._per_column(columns, func)``.
    """
    lib = _LIBRARIES[library]
    signature = inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("columns", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                          annotation="list[Hashable] | None")], return_annotation="Any")
    for m in methods:
        summary = m.summary.replace("each row", "each row of each column", 1)
        doc = _fill(m._replace(summary=summary), lib, _FRAME_DOC)
        _install(cls, m.name, doc, signature, _frame_body(m))
    return cls


def _series_body(m: Method) -> Callable[..., Any]:
    bind, func = _signature(m).bind, m.func

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        bind(self, *args, **kwargs)  # a wrong call fails here, as a plain method would
        return self._apply(func, *args, **kwargs)
    return method


def _frame_body(m: Method) -> Callable[..., Any]:
    func = m.func

    def method(self: Any, columns: list[Any] | None = None) -> Any:
        return self._per_column(columns, func)
    return method


def _install(cls: type, name: str, doc: str, signature: inspect.Signature,
             method: Callable[..., Any]) -> None:
    """Name ``method`` as ``cls.name``, give it ``doc`` and ``signature``, and set it."""
    method.__name__ = name
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    method.__module__ = cls.__module__
    method.__doc__ = doc
    method.__signature__ = signature  # type: ignore[attr-defined]
    setattr(cls, name, method)


def apply(series: Any, arrow: pa.Array | pa.ChunkedArray, func: Callable[..., Any],
          *args: Any, **kwargs: Any) -> Any:
    """``func`` on a Series' Arrow array, the result back as that kind of Series."""
    return _arrow.like_series(series)(func(arrow, *args, **kwargs))


#: The body of the Series accessors' ``jagged()`` docstring (each keeps its summary).
JAGGED_DOC = """
Returns
-------
Jagged
    Rows in positional order, null rows in ``validity``; {copy}.

See Also
--------
{reader} : The function this calls.

Examples
--------
{imports}
>>> {make}.{attr}.jagged()
Jagged([[1, 2], None], dtype=int64, offsets={offsets})
"""

#: The body of the Series accessors' ``to_padded()`` docstring.
TO_PADDED_DOC = """
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
{imports}
>>> {make}.{attr}.to_padded(pad_value=-1)
array([[ 1,  2,  3],
       [-1, -1, -1],
       [ 3,  6, -1]])
"""


def series_doc(template: str, library: str, rows: str, **fields: Any) -> Callable[[F], F]:
    """:func:`~arrow_sparse._docs.fill_doc` with ``library``'s example lines on ``rows``."""
    lib = _LIBRARIES[library]
    return fill_doc(template, imports=lib.imports, make=lib.make.format(rows=rows),
                    attr=lib.attr, **fields)
