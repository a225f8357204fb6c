"""The ``hashed_cross`` step: one bucket id per combination of several columns' values.

Imported by :mod:`arrow_sparse.pipeline`, which registers the step in
:data:`~arrow_sparse.pipeline.steps.STEP_TYPES`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..transforms import hash_bucket
from .steps import (
    Step,
    _check_ids_or_strings,
    _check_int,
    _check_str,
    _column,
    _is_list,
    _place,
)

__all__ = ["HashedCross"]

#: Each column's value is first reduced to ``XXH3_64(value, seed) % _WORD`` (an int64).
_WORD = 2**63 - 1


class HashedCross(Step):
    """Hash the combination of two or more columns' values into ``num_buckets`` buckets.

    NVTabular's ``HashedCross``: a feature for each pair (or tuple) of values, such
    as ``(user_country, item_category)``, without fitting a vocabulary.

    Parameters
    ----------
    columns
        Two or more scalar columns of integers or strings (not lists).
    num_buckets
        Number of buckets, in ``[1, 2**63 - 1]``.
    output
        The column written (replaced if it exists, else appended).
    seed
        XXH3 seed, an integer in ``[0, 2**64)``.

    Notes
    -----
    The bucket of a row whose values are ``v_1, ..., v_k`` is::

        w_i = XXH3_64(bytes(v_i), seed) % (2**63 - 1)        # hash_bucket(v_i, 2**63 - 1, seed)
        bucket = XXH3_64(le64(w_1) + ... + le64(w_k), seed) % num_buckets

    where ``bytes(v)`` is the bytes :func:`~arrow_sparse.hash_bucket` hashes (an
    integer's 8 little-endian two's complement bytes, a string's UTF-8 bytes) and
    ``le64(w)`` the 8 little-endian bytes of ``w``. So the bucket depends on the
    values and their order in ``columns``, not on their Arrow types (int8 or int64,
    string or large_string), and is stable across runs, machines and releases. A row
    with a null in any of the columns gives null.

    Examples
    --------
    >>> t = pa.table({"country": ["fr", "us", None], "item": [7, 7, 7]})
    >>> step = HashedCross(["country", "item"], num_buckets=100, output="x")
    >>> step.transform(t)["x"].to_pylist()
    [96, 17, None]
    """

    type = "hashed_cross"
    _keys: ClassVar[tuple[str, ...]] = ("columns", "num_buckets", "output", "seed")

    def __init__(self, columns: list[str], num_buckets: int, output: str, seed: int = 0, *,
                 name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(columns, str) or not isinstance(columns, (list, tuple)) \
                or len(columns) < 2:
            msg = (f"{self.label}: 'columns' must be a list of two or more column names, "
                   f"got {columns!r}")
            raise ArrowSparseTypeError(msg)
        self.columns = [_check_str(self.label, "columns", c) for c in columns]
        if len(set(self.columns)) != len(self.columns):
            msg = f"{self.label}: 'columns' repeats a name: {self.columns}"
            raise ArrowSparseValueError(msg)
        self.num_buckets = _check_int(self.label, "num_buckets", num_buckets, 1, _WORD)
        self.output = _check_str(self.label, "output", output)
        self.seed = _check_int(self.label, "seed", seed, 0, 2**64 - 1)

    def input_columns(self) -> list[str]:  # noqa: D102
        return list(self.columns)

    def output_columns(self) -> list[str]:  # noqa: D102
        return [self.output]

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        out = super().to_dict()
        if self.seed == 0:
            del out["seed"]
        return out

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        for c in self.columns:
            field = self._need(schema, c)
            if _is_list(field.type):
                msg = (f"{self.label}: column {c!r} must hold scalar integers or strings, "
                       f"got {field.type}; hashed_cross crosses one value per row")
                raise ArrowSparseTypeError(msg)
            _check_ids_or_strings(self.label, field, "cross")
        new = pa.field(self.output, pa.int64())
        idx = schema.get_field_index(self.output)
        return schema.set(idx, new) if idx >= 0 else schema.append(new)

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        self.output_schema(table.schema)
        n = table.num_rows
        words = np.empty((n, len(self.columns)), dtype="<i8")
        missing = np.zeros(n, dtype=bool)
        for j, c in enumerate(self.columns):
            col = _column(table, c).combine_chunks()
            hashed = hash_bucket(col, _WORD, self.seed)
            if hashed.null_count:
                missing |= np.asarray(hashed.is_null())
                hashed = pc.fill_null(hashed, 0)
            words[:, j] = hashed.to_numpy()
        width = 8 * len(self.columns)
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int64)
        keys = pa.Array.from_buffers(pa.large_binary(), n, [
            None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(words))])
        result = hash_bucket(keys, self.num_buckets, self.seed)
        if missing.any():
            result = pc.if_else(pa.array(missing), pa.scalar(None, pa.int64()), result)
        return _place(table, self.output, self.columns[0], pa.chunked_array([result]))
