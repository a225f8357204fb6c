"""The ``join_external`` step: columns looked up by key in another Parquet table.

Imported by :mod:`arrow_sparse.pipeline`, which registers the step in
:data:`~arrow_sparse.pipeline.steps.STEP_TYPES`.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow import numpy_dtype
from ..errors import (
    ArrowSparseError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from . import _filter
from ._layout import canonical_schema, canonical_table
from .steps import Step, _check_str, _is_string_like

__all__ = ["JoinExternal"]

_ROW = "__arrow_sparse_row__"
_RIGHT = "__arrow_sparse_external_row__"


def _key_kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "integer"
    if _is_string_like(t):
        return "string"
    return str(t)


class JoinExternal(Step):
    """Add columns of an external Parquet table, looked up by key (a left join).

    NVTabular's ``JoinExternal``, with Arrow's hash join (``pyarrow.Table.join``): each
    row gets the external row whose ``on`` columns equal its own, or nulls when there
    is none. Rows keep their order and number.

    Parameters
    ----------
    path
        The external Parquet file or directory (read as the pipeline's input is: hive
        partitions become columns, files of different writers one schema); a
        relative path is resolved against the spec file's directory.
    on
        Key column name, or a list of them, present in both tables. Integer keys
        match integer keys of any width, strings match strings (and binaries
        binaries).
    columns
        External columns to add (default: all but the keys). A name the input already
        has is an error (``rename`` one of them first).
    how
        ``"left"`` (the only kind: a lookup never changes the rows).

    Notes
    -----
    A null key matches nothing (SQL's rule), so its row gets nulls. Keys must be
    unique in the external table (rows with a null key are ignored): a repeated key
    is an error, since it would repeat input rows. The table is read once per
    process (on each Ray worker), in the pipeline's layout (64-bit offsets).

    Examples
    --------
    >>> import tempfile, os, pyarrow.parquet as pq
    >>> path = os.path.join(tempfile.mkdtemp(), "items.parquet")
    >>> pq.write_table(pa.table({"item": [7, 9], "price": [1.5, 2.0]}), path)
    >>> t = pa.table({"item": [9, 8, None, 7]})
    >>> JoinExternal(path, on="item").transform(t).to_pydict()
    {'item': [9, 8, None, 7], 'price': [2.0, None, None, 1.5]}
    """

    type = "join_external"
    _keys: ClassVar[tuple[str, ...]] = ("path", "on", "columns", "how")

    def __init__(self, path: str, on: str | list[str], columns: list[str] | None = None,
                 how: str = "left", *, name: str | None = None) -> None:
        super().__init__(name)
        self.path = _check_str(self.label, "path", path)
        keys = [on] if isinstance(on, str) else on
        if not isinstance(keys, (list, tuple)) or not keys:
            msg = f"{self.label}: 'on' must be a column name or a list of them, got {on!r}"
            raise ArrowSparseTypeError(msg)
        self.on = on if isinstance(on, str) else [_check_str(self.label, "on", k) for k in on]
        self._on = [_check_str(self.label, "on", k) for k in keys]
        if columns is not None:
            if isinstance(columns, str) or not isinstance(columns, (list, tuple)) \
                    or not columns:
                msg = (f"{self.label}: 'columns' must be a non-empty list of names, "
                       f"got {columns!r}")
                raise ArrowSparseTypeError(msg)
            columns = [_check_str(self.label, "columns", c) for c in columns]
            both = sorted(set(columns) & set(self._on))
            if both:
                msg = f"{self.label}: 'columns' names the key {both[0]!r}; keys are not added"
                raise ArrowSparseValueError(msg)
        self.columns = columns
        if how != "left":
            msg = f"{self.label}: 'how' must be 'left', got {how!r}"
            raise ArrowSparseValueError(msg)
        self.how = how
        self._table: pa.Table | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (to Ray workers) without the loaded table: each process reads the file.
        state = self.__dict__.copy()
        state["_table"] = None
        return state

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        out = super().to_dict()
        del out["how"]
        return out

    def input_columns(self) -> list[str]:  # noqa: D102
        return list(self._on)

    def output_columns(self) -> list[str]:  # noqa: D102
        if self.columns is not None:
            return list(self.columns)
        return [n for n in self._external_schema().names if n not in self._on]

    # --------------------------------------------------------------- the table
    def _external_path(self) -> str:
        path = self._resolve(self.path)
        if not os.path.exists(path):
            msg = f"{self.label}: external table not found: {path}"
            raise ArrowSparseValueError(msg)
        return path

    def _external_schema(self) -> pa.Schema:
        from ..io import read_parquet

        path = self._external_path()
        try:  # the footers only; directories as the runner reads its input (hive, unified)
            schema = read_parquet(path).schema
        except (ArrowSparseError, pa.ArrowInvalid, OSError) as exc:
            msg = f"{self.label}: cannot read the external table {path!r} ({exc})"
            raise ArrowSparseValueError(msg) from exc
        for name in [*self._on, *(self.columns or [])]:
            if schema.get_field_index(name) < 0:
                hint = _filter.did_you_mean(name, schema.names)
                msg = (f"{self.label}: the external table {self.path!r} has no column "
                       f"{name!r}{hint or ';'} its columns are: {', '.join(schema.names)}")
                raise ArrowSparseKeyError(msg.replace("? its", "? Its"))
        names = [*self._on, *(self.columns or [n for n in schema.names if n not in self._on])]
        return canonical_schema(pa.schema([schema.field(n) for n in names]))

    def external_table(self) -> pa.Table:
        """Return the external table's keys and columns (read once, keys unique)."""
        if self._table is None:
            from ..io import read_parquet

            schema = self._external_schema()
            batches = read_parquet(self._external_path(), columns=schema.names)
            table = canonical_table(pa.Table.from_batches(list(batches), batches.schema))
            keep = None
            for k in self._on:
                valid = pc.is_valid(table[k])
                keep = valid if keep is None else pc.and_(keep, valid)
            table = table.filter(keep)
            distinct = table.group_by(self._on).aggregate([]).num_rows
            if distinct != table.num_rows:
                counts = table.group_by(self._on).aggregate([([], "count_all")])
                first = counts.filter(pc.greater(counts["count_all"], 1)).slice(0, 1)
                key = {k: first[k][0].as_py() for k in self._on}
                msg = (f"{self.label}: key {key} appears {first['count_all'][0].as_py()} "
                       f"times in the external table {self.path!r}; keys must be unique "
                       "(a repeated key would repeat input rows)")
                raise ArrowSparseValueError(msg)
            self._table = table
        return self._table

    # ----------------------------------------------------------- the step
    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        external = self._external_schema()
        for k in self._on:
            left = self._need(schema, k)
            right = external.field(k)
            if _key_kind(left.type) != _key_kind(right.type) or \
                    _key_kind(left.type) not in ("integer", "string"):
                msg = (f"{self.label}: key {k!r} is {left.type} in the input but "
                       f"{right.type} in the external table; keys must both be integers "
                       "or both strings")
                raise ArrowSparseTypeError(msg)
        for field in external:
            if field.name in self._on:
                continue
            if schema.get_field_index(field.name) >= 0:
                msg = (f"{self.label}: the input already has a column {field.name!r}; "
                       "rename one of them first, or list the wanted 'columns'")
                raise ArrowSparseValueError(msg)
            schema = schema.append(field)
        return schema

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        self.output_schema(table.schema)
        right = self.external_table()
        for k in self._on:  # one key type on both sides (integers of any width)
            want = table.schema.field(k).type
            if not right.schema.field(k).type.equals(want):
                idx = right.schema.get_field_index(k)
                right = right.set_column(idx, k, _cast_key(self.label, right[k], want))
        # Join the keys alone, with row numbers on both sides, then take the external
        # rows: payload columns of any type (lists, structs) never enter the hash join.
        n = table.num_rows
        left = table.select(self._on).append_column(_ROW, pa.array(np.arange(n)))
        keys = right.select(self._on).append_column(
            _RIGHT, pa.array(np.arange(right.num_rows)))
        joined = left.join(keys, keys=self._on, join_type="left outer", use_threads=False)
        joined = joined.sort_by(_ROW)
        rows = joined[_RIGHT].combine_chunks() if n else pa.array([], pa.int64())
        out = table
        for name in right.column_names:
            if name not in self._on:
                out = out.append_column(right.schema.field(name), right[name].take(rows))
        return out

def _cast_key(label: str, key: pa.ChunkedArray, want: pa.DataType) -> pa.ChunkedArray:
    """External integer keys cast to the input's width; keys beyond it cannot match."""
    if not pa.types.is_integer(want):
        return key.cast(want)
    info = np.iinfo(numpy_dtype(want))
    fits = pc.and_(pc.greater_equal(key, info.min), pc.less_equal(key, info.max))
    return pc.if_else(fits, key, pa.scalar(None, key.type)).cast(want)
