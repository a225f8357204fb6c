"""Streaming statistics of the jagged columns of Parquet files (``arrow-sparse inspect``).

Per list, large_list and map column (and each nested level): rows, null rows, empty
rows, total values, exact length percentiles (a mergeable histogram of lengths) and the
value range. Files are read row group by row group, so memory stays bounded on files
larger than memory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._optional import import_optional
from .._progress import Progress
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ._values import DEFAULT_DISTINCT_LIMIT, DEFAULT_TOP, ValueCounter

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["DEFAULT_BATCH_ROWS", "LevelStats", "inspect_batches", "inspect_parquet",
           "plot_length_histograms"]

DEFAULT_BATCH_ROWS = 65_536
PERCENTILES = (50, 90, 99)

# Lengths below this are counted in a dense np.bincount histogram; longer ones (rare)
# in a sparse dict, so one pathological row cannot make the histogram huge.
_DENSE_LENGTH_LIMIT = 1 << 16


def inspect_parquet(path: str | os.PathLike[str],
                    columns: Sequence[str] | None = None, *,
                    batch_rows: int = DEFAULT_BATCH_ROWS,
                    progress: Progress | None = None,
                    histograms: bool = False,
                    distinct_limit: int = DEFAULT_DISTINCT_LIMIT,
                    top: int = DEFAULT_TOP) -> dict[str, Any]:
    """Statistics of the jagged columns of a Parquet file, streamed batch by batch.

    Parameters
    ----------
    path
        The Parquet file.
    columns
        Top-level columns to inspect; default every list, large_list and map column.
    batch_rows
        Rows per record batch read (memory use is about one row group's column
        chunks plus one batch).
    progress
        Progress bar to drive; its total is set to the file's row count.
    histograms
        Also give each column entry ``"histogram": {"length": [...], "rows": [...]}``:
        the number of non-null rows of each length that occurs, and ``"frequency":
        {"rank": [...], "count": [...]}``: the count of the value of each rank (1 =
        the most frequent), at most 2,000 ranks spread evenly in log scale; None when
        the values are not counted (what :func:`plot_length_histograms` draws).
    distinct_limit
        Distinct values per level counted exactly; past it the distinct count is a
        HyperLogLog estimate (its relative standard error given in the output) and
        the top values a Misra-Gries summary.
    top
        How many of the most frequent values each level reports.

    Returns
    -------
    dict
        ``{"file", "rows", "row_groups", "size_bytes", "columns": [...]}`` where each
        column entry is :meth:`LevelStats.to_dict` (JSON-ready).

    Raises
    ------
    FileNotFoundError
        No file at ``path`` (``IsADirectoryError`` for a directory).
    ValueError
        Not a readable Parquet file; a name in ``columns`` that is not a column; no
        list, large_list or map column to inspect.
    TypeError
        A name in ``columns`` that is not a list, large_list or map column.

    See Also
    --------
    inspect_batches : The same on any iterable of record batches.

    Examples
    --------
    >>> import pyarrow.parquet as pq, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]}), path)
    >>> stats = inspect_parquet(path)["columns"][0]
    >>> stats["rows"], stats["null_rows"], stats["total_values"], stats["length"]["max"]
    (4, 1, 9, 4)
    """
    path = os.fspath(path)
    pf = _open_parquet(path)
    schema = pf.schema_arrow
    selected = _select_columns(path, schema, columns, arg="columns")
    if progress is None:
        progress = Progress(None, enabled=False)
    progress.total = pf.metadata.num_rows

    def batches() -> Iterator[pa.RecordBatch]:
        # One reader per row group: a single iter_batches over the whole file keeps
        # every pre-buffered column chunk alive until the end (memory grows with the
        # file); this way at most one row group's chunks are held.
        for group in range(pf.num_row_groups):
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[group],
                                         columns=selected):
                yield batch
                progress.update(batch.num_rows)

    with progress:
        stats = inspect_batches(batches(), pa.schema([schema.field(n) for n in selected]),
                                distinct_limit=distinct_limit, top=top)
    return {
        "file": path,
        "rows": pf.metadata.num_rows,
        "row_groups": pf.metadata.num_row_groups,
        "size_bytes": os.path.getsize(path),
        "columns": [_entry(level, histograms) for level in stats],
    }


def _entry(level: LevelStats, histogram: bool) -> dict[str, Any]:
    out = level.to_dict()
    if histogram:
        lengths, rows = level.length_histogram()
        out["histogram"] = {"length": lengths.tolist(), "rows": rows.tolist(),
                            "frequency": _thinned_frequencies(level)}
    return out


_FREQUENCY_POINTS = 2000


def _thinned_frequencies(level: LevelStats) -> dict[str, list[int]] | None:
    """Value counts, most frequent first, at most ``_FREQUENCY_POINTS`` ranks (log-spaced)."""
    if level.counter is None or not level.counter.usable:
        return None
    _, counts = level.counter.counts()
    if len(counts) > _FREQUENCY_POINTS:
        ranks = np.unique(np.geomspace(1, len(counts), _FREQUENCY_POINTS).astype(np.int64))
        return {"rank": ranks.tolist(), "count": counts[ranks - 1].tolist()}
    return {"rank": list(range(1, len(counts) + 1)), "count": counts.tolist()}


def plot_length_histograms(result: dict[str, Any], path: str | os.PathLike[str], *,
                           log: bool = False) -> str:
    """Draw the row lengths and the value frequencies of an :func:`inspect_parquet` result.

    One row of two panels per column level. Left: rows per length (a linear y axis
    from zero, or log-scaled with ``log=True``), the empty rows (length 0) and the null
    rows (a bar left of 0) in their own colours, and the p50 / p90 / p99 lengths marked
    (percentiles of equal value share one marker and one label). Right: the count of
    each value against its rank (1 = the most frequent), both axes log-scaled, with the
    distinct count: a straight falling line is a Zipf-like column, a flat one a uniform
    column. Legends sit beside the axes, never over the bars. The image is a PNG, SVG
    or PDF, by the file's extension. matplotlib is imported here, not with the package
    (``pip install 'arrow-sparse[plot]'``).

    Parameters
    ----------
    result
        ``inspect_parquet(path, histograms=True)``.
    path
        The image file to write.
    log
        Log-scale the row counts of the length histograms.

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    ModuleNotFoundError
        matplotlib is not installed; the message says how to install it.
    ValueError
        ``result`` has no histograms (it was made without ``histograms=True``).

    Examples
    --------
    >>> import pyarrow.parquet as pq, tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]}),
    ...                os.path.join(folder, "t.parquet"))
    >>> result = inspect_parquet(os.path.join(folder, "t.parquet"), histograms=True)
    >>> hist = result["columns"][0]["histogram"]
    >>> hist["length"], hist["rows"], hist["frequency"]["count"]
    ([2, 3, 4], [1, 1, 1], [2, 2, 2, 1, 1, 1])
    >>> png = plot_length_histograms(result, os.path.join(folder, "lengths.png"))
    >>> with open(png, "rb") as f:
    ...     f.read(4)[1:]
    b'PNG'
    """
    columns = result.get("columns", [])
    if not columns or any("histogram" not in c for c in columns):
        msg = ("plot_length_histograms: result has no length histograms; make it with "
               "inspect_parquet(..., histograms=True)")
        raise ArrowSparseValueError(msg)
    figure_module = import_optional("matplotlib.figure", extra="plot")
    n = len(columns)
    fig = figure_module.Figure(figsize=(13.0, 3.6 * n), layout="constrained")
    fig.suptitle(f"{os.path.basename(str(result['file']))}: {result['rows']:,} rows")
    for i, col in enumerate(columns):
        _plot_lengths(fig.add_subplot(n, 2, 2 * i + 1), col, log)
        _plot_frequencies(fig.add_subplot(n, 2, 2 * i + 2), col)
    out = os.fspath(path)
    fig.savefig(out, dpi=100)
    return out


_BAR, _EMPTY, _NULL, _MARK = "#3b75af", "#e1a03a", "#8c8c8c", "#c44e52"


def _plot_lengths(ax: Any, col: dict[str, Any], log: bool) -> None:
    lengths = np.asarray(col["histogram"]["length"], dtype=np.int64)
    counts = np.asarray(col["histogram"]["rows"], dtype=np.int64)
    items = "entries" if col["kind"] == "map" else "values"
    ax.set_title(f"{col['name']}  {col['type']}: {items} per row", fontsize="medium")
    ax.set_xlabel(f"{items} per row")
    ax.set_ylabel("rows")
    top = int(lengths.max()) if len(lengths) else 0
    width = 1.0 if top < 200 else (top + 1) / 100
    if len(lengths):
        nonzero = lengths > 0
        bins = np.arange(top + 2) - 0.5 if top < 200 else np.linspace(0.5, top + 0.5, 101)
        if nonzero.any():
            ax.hist(lengths[nonzero], bins=bins, weights=counts[nonzero], color=_BAR,
                    label=f"non-empty rows ({int(counts[nonzero].sum()):,})")
    # empty and null rows as their own bars, so they show however small
    ax.bar([0], [col["empty_rows"]], width=width, color=_EMPTY,
           label=f"empty rows ({col['empty_rows']:,})")
    null_x = -max(1.5 * width, 0.08 * (top + 1))  # far enough left for its tick label
    ax.bar([null_x], [col["null_rows"]], width=width, color=_NULL, hatch="//",
           edgecolor="white", label=f"null rows ({col['null_rows']:,})")
    ticks = [t for t in ax.get_xticks() if 0 <= t <= max(top, 1)]
    ax.set_xticks([null_x, *ticks], ["null", *(f"{t:g}" for t in ticks)])
    marks: dict[int, list[str]] = {}
    for p in PERCENTILES:
        value = col["length"][f"p{p}"]
        if value is not None:
            marks.setdefault(value, []).append(f"p{p}")
    for (value, names), style in zip(sorted(marks.items()), ("-", "--", ":"), strict=False):
        ax.axvline(value, color=_MARK, linestyle=style, linewidth=1.2,
                   label=" = ".join(names) + f" = {value}")
    if log:
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.8)
    else:
        ax.set_ylim(bottom=0)
        ax.ticklabel_format(axis="y", style="plain")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0)


def _plot_frequencies(ax: Any, col: dict[str, Any]) -> None:
    freq = col["histogram"].get("frequency")
    of = "keys" if col["kind"] == "map" else "values"
    distinct = col["values"]["distinct"]
    if not freq or not freq["count"]:
        ax.set_title(f"{col['name']}: {of} by frequency", fontsize="medium")
        ax.text(0.5, 0.5, f"no {of} counted", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    ranks = np.asarray(freq["rank"], dtype=np.int64)
    counts = np.asarray(freq["count"], dtype=np.int64)
    ax.step(ranks, counts, where="post", color=_BAR, linewidth=1.5)
    ax.set_xscale("log")
    if counts[0] >= 20 * counts[-1]:  # a long tail: log-log (a Zipf law is a straight line)
        ax.set_yscale("log")
    else:  # near-uniform: a linear axis from zero shows how flat it is
        ax.set_ylim(bottom=0, top=counts[0] * 1.1)
    ax.yaxis.set_major_formatter(_thousands())
    ax.set_xlabel(f"rank of the {of[:-1]} (1 = most frequent)")
    ax.set_ylabel("occurrences")
    if distinct["exact"]:
        text = f"{distinct['count']:,} distinct (exact)"
    else:
        text = (f"~{distinct['count']:,} distinct (HyperLogLog, "
                f"\u00b1{100 * distinct['relative_standard_error']:.2f}% std. error)\n"
                f"the {len(counts) if len(ranks) == ranks[-1] else ranks[-1]:,} most "
                f"frequent, counts low by at most {col['values']['top']['count_error']:,}")
    ax.set_title(f"{col['name']}: {of} by frequency\n{text}", fontsize="medium")


def _thousands() -> Any:
    ticker = import_optional("matplotlib.ticker", extra="plot")
    return ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")


def inspect_batches(batches: Iterable[pa.RecordBatch], schema: pa.Schema, *,
                    distinct_limit: int = DEFAULT_DISTINCT_LIMIT,
                    top: int = DEFAULT_TOP) -> list[LevelStats]:
    """Statistics of every jagged level of the list-like columns of ``batches``.

    Parameters
    ----------
    batches
        Record batches (any slicing; null rows may hide garbage ranges) of ``schema``.
    schema
        Their schema; every list, large_list, list_view and map column is inspected.
    distinct_limit
        Distinct values per level counted exactly; past it the distinct count is a
        HyperLogLog estimate and the top values a Misra-Gries summary
        (:class:`ValueCounter`).
    top
        How many of the most frequent values each level reports.

    Returns
    -------
    list of LevelStats
        One per level, in column order: a list column, then its nested levels
        (``name.values``, ...); a map column's entries, then its value lists
        (``name.values``) when they are lists.

    Notes
    -----
    Each batch's columns go through :meth:`Jagged.from_arrow` (zero-copy views of the
    Arrow buffers); lengths come from the Jagged offsets and null rows from its
    validity. A row under a null parent row (a map entry of a null map, an inner list
    of a null outer list) is not counted at all. Length percentiles are exact
    (nearest rank: the smallest length ``L`` with at least ``p%`` of the non-null
    rows no longer than ``L``), from a histogram merged across batches.

    Examples
    --------
    >>> batch = pa.record_batch({"ids": pa.array([[1, 2, 3], [2, 4, 6, 7], [], [3, 6]])})
    >>> [s] = inspect_batches([batch.slice(1)], batch.schema)
    >>> s.rows, s.empty_rows, s.total_values, s.quantile(50), s.value_min, s.value_max
    (3, 1, 6, 2, 2, 7)
    """
    names = [f.name for f in schema if _is_jagged_type(f.type)]
    levels: dict[str, LevelStats] = {}

    def counter() -> ValueCounter:
        return ValueCounter(distinct_limit, top)

    for name in names:
        _plan_column(name, schema.field(name).type, levels, counter)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        for name in names:
            _scan_column(name, batch.column(name), levels)
            _count_values(name, batch.column(name), levels)
    return list(levels.values())


@dataclass
class LevelStats:
    """Running statistics of one jagged level (mergeable across batches).

    Attributes
    ----------
    name
        Column name, with ``.values`` per nested level (``categories.values``).
    type
        Arrow type of the level, without child field names (``list<int64>``).
    kind
        ``"list"`` (also large_list / list_view) or ``"map"`` (rows are maps,
        values are their entries and ``value_min``/``value_max`` their keys).
    rows, null_rows, empty_rows, total_values
        Counts; ``empty_rows`` and ``total_values`` are over non-null rows.
    numeric
        Whether the value range is tracked: the leaves are numbers and every batch's
        leaves could be read (nulls inside ``fixed_size_list`` leaves cannot be).
    """

    name: str
    type: str
    kind: str
    rows: int = 0
    null_rows: int = 0
    empty_rows: int = 0
    total_values: int = 0
    numeric: bool = False
    counter: ValueCounter | None = field(default=None, repr=False)
    _lo: Any = field(default=None, init=False, repr=False)
    _hi: Any = field(default=None, init=False, repr=False)
    _dense: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64),
                               init=False, repr=False)
    _sparse: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def add_lengths(self, lengths: np.ndarray) -> None:
        """Count the lengths of some non-null rows into the histogram.

        Parameters
        ----------
        lengths
            Non-negative integer lengths.
        """
        if len(lengths) == 0:
            return
        self.empty_rows += int(np.count_nonzero(lengths == 0))
        self.total_values += int(lengths.sum(dtype=np.int64))
        long = lengths >= _DENSE_LENGTH_LIMIT
        if long.any():
            keys, counts = np.unique(lengths[long], return_counts=True)
            for k, c in zip(keys.tolist(), counts.tolist(), strict=True):
                self._sparse[k] = self._sparse.get(k, 0) + c
            lengths = lengths[~long]
        counts = np.bincount(lengths)
        if len(counts) > len(self._dense):
            counts[:len(self._dense)] += self._dense
            self._dense = counts.astype(np.int64, copy=False)
        else:
            self._dense[:len(counts)] += counts

    def add_values(self, values: np.ndarray) -> None:
        """Fold some (non-null) leaf values into the running min / max.

        Parameters
        ----------
        values
            Numeric array, any shape; NaN is skipped (as ``pyarrow.compute.min_max``).
        """
        if values.size == 0:
            return
        if values.dtype.kind == "f":
            lo, hi = np.fmin.reduce(values, axis=None), np.fmax.reduce(values, axis=None)
            if np.isnan(lo):  # all NaN
                return
        else:
            lo, hi = values.min(), values.max()
        self._lo = lo if self._lo is None else min(self._lo, lo)
        self._hi = hi if self._hi is None else max(self._hi, hi)

    def forget_values(self) -> None:
        """Stop tracking the value range (some leaves could not be read)."""
        self.numeric = False
        self._lo = self._hi = None

    @property
    def value_min(self) -> int | float | None:
        """Smallest leaf value seen (a Python number), or None."""
        return _python_scalar(self._lo)

    @property
    def value_max(self) -> int | float | None:
        """Largest leaf value seen (a Python number), or None."""
        return _python_scalar(self._hi)

    def length_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(lengths, rows)``: each length of a non-null row, and how many have it.

        Returns
        -------
        tuple of numpy.ndarray
            Ascending int64 lengths that occur, and their int64 row counts.

        Examples
        --------
        >>> batch = pa.record_batch({"ids": pa.array([[1, 2], [3], [4, 5], None])})
        >>> [s] = inspect_batches([batch], batch.schema)
        >>> s.length_histogram()
        (array([1, 2]), array([1, 2]))
        """
        present = np.flatnonzero(self._dense)
        keys = np.concatenate([present, np.array(sorted(self._sparse), dtype=np.int64)])
        counts = np.concatenate([self._dense[present],
                                 np.array([self._sparse[k] for k in sorted(self._sparse)],
                                          dtype=np.int64)])
        return keys, counts

    @property
    def non_null_rows(self) -> int:
        """Rows that are not null (the rows the lengths describe)."""
        return self.rows - self.null_rows

    def quantile(self, percent: int) -> int | None:
        """Exact nearest-rank percentile of the lengths of the non-null rows.

        Parameters
        ----------
        percent
            0 to 100; 0 gives the minimum, 100 the maximum.

        Returns
        -------
        int or None
            The smallest length ``L`` such that at least ``percent`` % of the non-null
            rows have a length ``<= L``; None when there is no non-null row.
        """
        n = self.non_null_rows
        if n == 0:
            return None
        keys, counts = self.length_histogram()
        rank = max(1, (percent * n + 99) // 100)  # ceil(percent * n / 100) in integers
        return int(keys[np.searchsorted(np.cumsum(counts), rank, side="left")])

    def to_dict(self) -> dict[str, Any]:
        """Return the statistics as a JSON-ready dict.

        Returns
        -------
        dict
            ``name, type, kind, rows, null_rows, empty_rows, total_values``,
            ``length: {min, p50, p90, p99, max, mean}`` (None without non-null rows)
            and ``values: {of, min, max}`` (``of`` is ``"keys"`` for map entries,
            ``"leaves"`` otherwise; non-finite floats are strings ``"inf"``...).
        """
        n = self.non_null_rows
        length = {"min": self.quantile(0),
                  **{f"p{p}": self.quantile(p) for p in PERCENTILES},
                  "max": self.quantile(100),
                  "mean": self.total_values / n if n else None}
        counted = ({"distinct": None, "top": None} if self.counter is None
                   else self.counter.to_dict())
        return {
            "name": self.name, "type": self.type, "kind": self.kind,
            "rows": self.rows, "null_rows": self.null_rows, "empty_rows": self.empty_rows,
            "total_values": self.total_values, "length": length,
            "values": {"of": "keys" if self.kind == "map" else "leaves",
                       "min": _json_scalar(self.value_min),
                       "max": _json_scalar(self.value_max),
                       **counted},
        }


def _is_jagged_type(t: pa.DataType) -> bool:
    return isinstance(t, (pa.ListType, pa.LargeListType, pa.ListViewType,
                          pa.LargeListViewType, pa.MapType))


def _type_name(t: pa.DataType) -> str:
    """Arrow type text without child field names: ``map<int32, list<int32>>``."""
    if isinstance(t, pa.MapType):
        return f"map<{_type_name(t.key_type)}, {_type_name(t.item_type)}>"
    for cls, word in ((pa.LargeListType, "large_list"), (pa.ListType, "list"),
                      (pa.LargeListViewType, "large_list_view"), (pa.ListViewType, "list_view")):
        if isinstance(t, cls):
            return f"{word}<{_type_name(t.value_type)}>"
    if isinstance(t, pa.FixedSizeListType):
        return f"fixed_size_list<{_type_name(t.value_type)}>[{t.list_size}]"
    return str(t)


def _numeric_leaf(t: pa.DataType) -> bool:
    """Whether Jagged.from_arrow can read the leaves of ``t`` as numbers."""
    while (_is_jagged_type(t) and not isinstance(t, pa.MapType)) \
            or isinstance(t, pa.FixedSizeListType):
        t = t.value_type
    return _is_number(t)


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t))


def _open_parquet(path: str | os.PathLike[str]) -> pq.ParquetFile:
    """Open a Parquet file, with one-line errors that name it."""
    import pyarrow.parquet as pq

    text = os.fspath(path)
    if os.path.isdir(text):
        msg = f"{text}: is a directory, not a Parquet file"
        raise IsADirectoryError(msg)
    if not os.path.exists(text):
        msg = f"{text}: no such file"
        raise FileNotFoundError(msg)
    try:
        pf = pq.ParquetFile(text)
        pf.schema_arrow  # noqa: B018  (reads and checks the schema now)
    except (pa.ArrowException, OSError) as exc:
        msg = f"{text}: not a readable Parquet file ({exc})"
        raise ArrowSparseValueError(msg) from exc
    return pf


def _select_columns(path: str, schema: pa.Schema, columns: Sequence[str] | None, *,
                    arg: str) -> list[str]:
    """Return the columns to inspect: ``columns`` (checked) or every list-like column."""
    if columns is None:
        selected = [f.name for f in schema if _is_jagged_type(f.type)]
        if not selected:
            found = ", ".join(f"{f.name} ({_type_name(f.type)})" for f in schema) or "none"
            msg = f"{path}: no list, large_list or map columns (columns: {found})"
            raise ArrowSparseValueError(msg)
        return selected
    for name in columns:
        if name not in schema.names:
            msg = f"{arg}: no column {name!r} in {path} (columns: {', '.join(schema.names)})"
            raise ArrowSparseValueError(msg)
        t = schema.field(name).type
        if not _is_jagged_type(t):
            msg = f"{arg}: column {name!r} is {_type_name(t)}, not a list, large_list or map"
            raise ArrowSparseTypeError(msg)
    return list(dict.fromkeys(columns))


# A selection of rows of one level: rows start:stop, optionally only where keep is True
# (rows below a null parent row are not kept).
_Rows = tuple[int, int, "np.ndarray | None"]


def _scan_column(name: str, arr: pa.Array, levels: dict[str, LevelStats]) -> None:
    if isinstance(arr.type, pa.MapType):
        _scan_map(name, arr, (0, len(arr), None), levels)
    else:
        _scan_list(name, arr, (0, len(arr), None), levels)


def _plan_column(name: str, t: pa.DataType, levels: dict[str, LevelStats],
                 counter: Callable[[], ValueCounter]) -> None:
    """Create the (empty) statistics of every level of a column of type ``t``, in order.

    The levels are those the scan below meets: a map's entries then its value lists;
    a list and each nested list level under it (a map inside a list is not entered).
    The levels of one nested list share one counter of their leaves; a map level
    counts its keys.
    """
    if isinstance(t, pa.MapType):
        levels[name] = LevelStats(name, _type_name(t), "map", numeric=_is_number(t.key_type),
                                  counter=counter())
        if _is_jagged_type(t.item_type):
            _plan_column(f"{name}.values", t.item_type, levels, counter)
        return
    numeric = _numeric_leaf(t)
    leaves = counter()
    while True:
        levels[name] = LevelStats(name, _type_name(t), "list", numeric=numeric, counter=leaves)
        t = t.value_type
        if not _is_jagged_type(t) or isinstance(t, pa.MapType):
            if isinstance(t, pa.MapType):
                leaves.forget()  # maps under a list are not entered
            return
        name = f"{name}.values"


def _count_values(name: str, arr: pa.Array, levels: dict[str, LevelStats]) -> None:
    """Count the values under the non-null rows of ``arr`` (leaves, or a map's keys)."""
    stats = levels[name]
    if stats.counter is None or not stats.counter.usable:
        return
    if isinstance(arr.type, pa.MapType):
        entries = pc.list_flatten(pa.Array.from_buffers(  # skips null maps' entries
            pa.list_(arr.values.type), len(arr),
            arr.buffers()[:2], null_count=arr.null_count, offset=arr.offset,
            children=[arr.values]))
        stats.counter.add(entries.field(0))
        items = entries.field(1)
        if _is_jagged_type(items.type):
            _count_values(f"{name}.values", items, levels)
        return
    if isinstance(arr.type, (pa.ListViewType, pa.LargeListViewType)):
        large = isinstance(arr.type, pa.LargeListViewType)
        t = arr.type.value_type
        arr = arr.cast(pa.large_list(t) if large else pa.list_(t))
    leaves = pc.list_flatten(arr, recursive=True)  # skips the ranges under null rows
    stats.counter.add(leaves)


def _scan_list(name: str, arr: pa.Array, rows: _Rows, levels: dict[str, LevelStats]) -> None:
    """Scan a list column (or map value lists): every nested level down to the leaves."""
    numeric = levels[name].numeric
    j, readable = _jagged(arr, numeric)
    chain = []
    while True:
        stats = levels[name]
        chain.append(stats)
        rows = _count_rows(stats, j, rows)
        inner = j.values
        if not isinstance(inner, Jagged):
            break
        j, name = inner, f"{name}.values"
    if not readable:
        for stats in chain:
            stats.forget_values()
    elif numeric:
        assert isinstance(j.values, np.ndarray)
        leaves = _selected(j.values, rows, j.values_validity)
        for stats in chain:  # every level of a nested list reports its leaves' range
            stats.add_values(leaves)


def _scan_map(name: str, arr: pa.Array, rows: _Rows, levels: dict[str, LevelStats]) -> None:
    """Scan a map column: entries per row (values = keys), then the value lists."""
    entries = arr.values  # struct<key, value>; .field() honours its slice offset
    keys, items = entries.field(0), entries.field(1)
    key_numeric = _is_number(keys.type)
    as_list = pa.Array.from_buffers(  # the map's validity and offsets over its keys: no copy
        pa.list_(keys.type if key_numeric else pa.int8()), len(arr), arr.buffers()[:2],
        null_count=arr.null_count, offset=arr.offset,
        children=[keys if key_numeric else _zeros(len(keys))])
    stats = levels[name]
    j = Jagged.from_arrow(as_list)
    entry_rows = _count_rows(stats, j, rows)
    if key_numeric:
        assert isinstance(j.values, np.ndarray)
        stats.add_values(_selected(j.values, entry_rows, j.values_validity))
    if _is_jagged_type(items.type):
        if isinstance(items.type, pa.MapType):
            _scan_map(f"{name}.values", items, entry_rows, levels)
        else:
            _scan_list(f"{name}.values", items, entry_rows, levels)


def _count_rows(stats: LevelStats, j: Jagged, rows: _Rows) -> _Rows:
    """Count the selected rows of ``j`` into ``stats``; return the selection of its values."""
    start, stop, keep = rows
    sub = j[start:stop]  # a view: offsets[start:stop + 1]
    lengths = sub.lengths
    valid = sub.validity
    stats.rows += len(lengths) if keep is None else int(np.count_nonzero(keep))
    if valid is not None:
        stats.null_rows += int(np.count_nonzero(~valid if keep is None else keep & ~valid))
    ok = keep if valid is None else (valid if keep is None else keep & valid)
    stats.add_lengths(lengths if ok is None else lengths[ok])
    child_keep = None if ok is None else np.repeat(ok, lengths)
    return int(sub.offsets[0]), int(sub.offsets[-1]), child_keep


def _selected(values: np.ndarray, rows: _Rows, values_validity: np.ndarray | None) -> np.ndarray:
    """Return the leaf values of the selected rows that are not null."""
    start, stop, keep = rows
    mask = keep
    if values_validity is not None:
        valid = values_validity[start:stop]
        mask = valid if mask is None else mask & valid
    out = values[start:stop]
    return out if mask is None else out[mask]


def _jagged(arr: pa.Array, numeric: bool) -> tuple[Jagged, bool]:
    """``Jagged.from_arrow`` of a list array, and whether its numeric leaves were read.

    Non-numeric leaves, and numeric ones the library cannot read (nulls inside
    ``fixed_size_list`` elements), are replaced by zeros: the lengths still count.
    """
    if numeric:
        try:
            return Jagged.from_arrow(arr), True
        except ArrowSparseValueError:
            return Jagged.from_arrow(_shape_only(arr)), False
    return Jagged.from_arrow(_shape_only(arr)), True


def _shape_only(arr: pa.Array) -> pa.Array:
    """Rebuild the list levels (validity and offsets, no copy) over int8 zero leaves."""
    if isinstance(arr.type, (pa.ListViewType, pa.LargeListViewType)):
        large = isinstance(arr.type, pa.LargeListViewType)
        t = arr.type.value_type
        arr = arr.cast(pa.large_list(t) if large else pa.list_(t))
    child = arr.values
    if isinstance(child.type, (pa.ListType, pa.LargeListType, pa.ListViewType,
                               pa.LargeListViewType)):
        child = _shape_only(child)
    else:
        child = _zeros(len(child))
    list_type = pa.large_list(child.type) if isinstance(arr.type, pa.LargeListType) \
        else pa.list_(child.type)
    return pa.Array.from_buffers(list_type, len(arr), arr.buffers()[:2],
                                 null_count=arr.null_count, offset=arr.offset, children=[child])


def _zeros(n: int) -> pa.Array:
    # from_buffers, not pa.array: that one imports pandas (a fifth of a second).
    return pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(np.zeros(n, np.int8))])


def _python_scalar(x: Any) -> int | float | None:
    """Convert a numpy scalar to a Python number (floats: shortest text in their dtype)."""
    if x is None:
        return None
    if isinstance(x, np.floating):
        return float(str(x))  # float32 0.99 -> 0.99, not 0.9900000095367432
    return int(x)


def _json_scalar(x: int | float | None) -> int | float | str | None:
    """JSON has no inf or NaN: write those as the strings "inf", "-inf", "nan"."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


# ====================================================== inspect: the table
