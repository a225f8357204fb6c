"""The one Arrow layout a pipeline works in, whatever program wrote its input.

The same logical column reaches a pipeline in different physical types depending on
its writer: Polars stores ``large_list`` and ``large_string`` (64-bit offsets),
DuckDB, pandas and pyarrow ``list`` and ``string`` (32-bit offsets). A step's output
type follows its input's (``reduce length`` of a ``list`` is int32, of a
``large_list`` int64), so without a rule one spec would write different schemas for
the same data. The rule: every batch entering a pipeline, and the schema
:meth:`Pipeline.output_schema` starts from, is given 64-bit offsets first (a cast of
the offsets alone; the values buffers are shared, not copied), so the output schema
depends on the spec and the input's logical types only. 64-bit offsets because they
never overflow (a batch of strings can hold more than 2 GiB) and are what Polars and
PyTorch use; ``fixed_size_list``, ``map`` and dictionary columns are left as they are.
Every input column is taken as nullable (writers set ``not null`` differently).

The input's pandas metadata (``b"pandas"`` in the schema metadata) describes the
input's columns and index, not the output's: it is dropped from the output.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["canonical_schema", "canonical_table", "canonical_type", "output_metadata"]

_PANDAS_KEY = b"pandas"


def canonical_type(t: pa.DataType) -> pa.DataType:
    """Return ``t`` with 64-bit offsets at every level (``t`` itself when it has them).

    Examples
    --------
    >>> canonical_type(pa.list_(pa.string()))
    LargeListType(large_list<item: large_string>)
    >>> canonical_type(pa.int32())
    DataType(int32)
    """
    if pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_binary(t):
        return pa.large_binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        value = canonical_type(t.value_type)
        if pa.types.is_large_list(t) and value.equals(t.value_type):
            return t
        return pa.large_list(t.value_field.with_type(value))
    if pa.types.is_fixed_size_list(t):
        value = canonical_type(t.value_type)
        return t if value.equals(t.value_type) else pa.list_(
            t.value_field.with_type(value), t.list_size)
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        new = [f.with_type(canonical_type(f.type)) for f in fields]
        if all(a.type.equals(b.type) for a, b in zip(new, fields, strict=True)):
            return t
        return pa.struct(new)
    return t


def output_metadata(metadata: dict[bytes, bytes] | None) -> dict[bytes, bytes] | None:
    """Return schema metadata without the input's pandas metadata (None when nothing is left).

    Examples
    --------
    >>> output_metadata({b"pandas": b"{}", b"origin": b"clicks"})
    {b'origin': b'clicks'}
    """
    if not metadata:
        return None
    kept = {k: v for k, v in metadata.items() if k != _PANDAS_KEY}
    return kept or None


def canonical_schema(schema: pa.Schema) -> pa.Schema:
    """Return ``schema`` with :func:`canonical_type` applied to every field, each nullable.

    Writers mark columns ``not null`` differently (DuckDB marks a column it copied
    from a file without nulls, Polars never does), so the flag is dropped too.

    Examples
    --------
    >>> canonical_schema(pa.schema({"ids": pa.list_(pa.int64()), "y": pa.int8()}))
    ids: large_list<item: int64>
      child 0, item: int64
    y: int8
    """
    types = [canonical_type(f.type) for f in schema]
    if all(new.equals(f.type) and f.nullable for new, f in zip(types, schema, strict=True)):
        return schema
    return pa.schema([f.with_type(t).with_nullable(True)
                      for f, t in zip(schema, types, strict=True)], schema.metadata)


def canonical_table(table: pa.Table) -> pa.Table:
    """Return ``table`` in the canonical layout (the same object when it already is).

    Examples
    --------
    >>> t = canonical_table(pa.table({"s": ["a", None]}))
    >>> t.schema.field("s").type, t.column("s").to_pylist()
    (DataType(large_string), ['a', None])
    """
    schema = table.schema
    canonical = canonical_schema(schema)
    return table if canonical is schema else table.cast(canonical)
