"""Pipeline steps: one small class per transform, each over named columns.

Every step has ``transform(table) -> table``, ``output_schema(input_schema)``,
``to_dict()`` / :func:`step_from_dict` (its TOML form), and stateful steps
(:class:`Categorify`) also ``fit_batch(table) -> state``, ``merge_states(a, b)`` and
``set_state(state)``: the partial states of batches merge into the state of their
concatenation, so fitting can stream and run in parallel.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._validate import memory_limit
from ..errors import (
    ArrowSparseError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from ..segment import embedding_bag, segment_max, segment_mean, segment_min, segment_sum
from ..transforms import Vocabulary, categorify, fit_vocabulary, hash_bucket, pad_or_truncate
from . import _filter

__all__ = [
    "STEP_TYPES",
    "Categorify",
    "EmbeddingBag",
    "Filter",
    "HashBucket",
    "MultiHot",
    "Normalize",
    "PadOrTruncate",
    "Reduce",
    "Rename",
    "Select",
    "Step",
    "Truncate",
    "step_from_dict",
]

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class Step:
    """Base class of pipeline steps.

    Parameters
    ----------
    name
        Unique name of the step in its pipeline (letters, digits, ``_``, ``-``);
        :class:`~arrow_sparse.Pipeline` names unnamed steps ``<type>_<position>``.
    """

    type: ClassVar[str] = ""
    stateful: ClassVar[bool] = False
    _keys: ClassVar[tuple[str, ...]] = ()
    _required: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
            msg = (f"{self.type}: step name must be letters, digits, '_' or '-', "
                   f"got {name!r}")
            raise ArrowSparseValueError(msg)
        self.name = name
        #: Directory against which relative paths of the step are resolved.
        self.base_dir: str | None = None

    # ------------------------------------------------------------ describe
    @property
    def label(self) -> str:
        """``"step 'NAME' (TYPE)"``, the prefix of this step's error messages."""
        return f"step {self.name!r} ({self.type})" if self.name else f"step {self.type}"

    def to_dict(self) -> dict[str, Any]:
        """Return the step's spec entry: ``type``, ``name`` and its keys (Nones left out)."""
        out: dict[str, Any] = {"type": self.type}
        if self.name is not None:
            out["name"] = self.name
        for key in self._keys:
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "type")
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.to_dict() == other.to_dict()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    # --------------------------------------------------------------- state
    @property
    def fitted(self) -> bool:
        """True when the step can transform (stateless steps always can)."""
        return True

    def fit_batch(self, table: pa.Table) -> Any:
        """Partial state of one batch (None for stateless steps)."""
        return None

    def merge_states(self, a: Any, b: Any) -> Any:
        """Merge two partial states (associative; the state of both batches)."""
        return None

    def set_state(self, state: Any) -> None:
        """Finish fitting from the merged partial state of every batch."""

    # ----------------------------------------------------------- transform
    def transform(self, table: pa.Table) -> pa.Table:
        """Apply the step to a table, returning a new table."""
        raise NotImplementedError

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """Return the schema of ``transform``'s output for input of ``schema``."""
        raise NotImplementedError

    @property
    def opaque(self) -> bool:
        """True when the step's columns are unknown (Python functions): it may read any."""
        return False

    def input_columns(self) -> list[str]:
        """Columns the step reads."""
        return []

    def output_columns(self) -> list[str]:
        """Columns the step writes (new or replaced)."""
        return []

    def _need(self, schema: pa.Schema, column: str) -> pa.Field:
        idx = schema.get_field_index(column)
        if idx < 0:
            names = ", ".join(schema.names)
            hint = _filter.did_you_mean(column, schema.names)
            msg = (f"{self.label}: no column {column!r}{hint} "
                   f"{'The' if hint else '; the'} columns are: {names}")
            raise ArrowSparseKeyError(msg.replace(" ; the", "; the"))
        return schema.field(idx)

    def _resolve(self, path: str) -> str:
        path = os.path.expanduser(path)
        if os.path.isabs(path) or self.base_dir is None:
            return path
        return os.path.join(self.base_dir, path)


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    col = table.column(name)
    if col.num_chunks == 0:  # an empty table: give the kernels one empty chunk
        col = pa.chunked_array([pa.array([], type=col.type)], type=col.type)
    return col


def _check_str(step: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        msg = f"{step}: {key!r} must be a non-empty string, got {value!r}"
        raise ArrowSparseTypeError(msg)
    return value


def _check_int(step: str, key: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        msg = f"{step}: {key!r} must be an integer, got {value!r}"
        raise ArrowSparseTypeError(msg)
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        msg = f"{step}: {key!r} must be {rng}, got {value}"
        raise ArrowSparseValueError(msg)
    return int(value)


#: The largest ``fixed_size_list`` size Arrow can describe (its size is an int32).
_FIXED_SIZE_MAX = 2**31 - 1


def _check_batch_size(label: str, key: str, rows: int, width: int, itemsize: int) -> None:
    """Refuse a fixed-width batch (``rows`` x ``width`` x ``itemsize``) larger than memory.

    The bound is :func:`arrow_sparse._validate.memory_limit`: the machine's physical
    memory, or the container's or ``ulimit -v`` limit when lower.
    """
    nbytes = rows * width * itemsize
    limit = memory_limit()
    if nbytes > limit:
        msg = (f"{label}: {key!r} = {width:,} makes a batch of {rows:,} rows x {width:,} x "
               f"{itemsize} bytes = {nbytes / 2**30:,.1f} GiB, more than this machine's "
               f"memory ({limit / 2**30:,.1f} GiB); lower {key!r} or the batch rows")
        raise ArrowSparseValueError(msg)


def _itemsize(t: pa.DataType) -> int:
    """Bytes per value of a list's values (8 for types without a fixed width)."""
    try:
        return max(1, t.bit_width // 8)
    except ValueError:
        return 8


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _leaf_type(t: pa.DataType) -> pa.DataType:
    """Return the scalar type under every list level of ``t``."""
    while _is_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        t = t.value_type
    return t


def _is_string_like(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_binary_view(t))


def _check_ids_or_strings(label: str, field: pa.Field, what: str) -> None:
    """Refuse a column whose values are not integers or strings (hash_bucket, categorify)."""
    leaf = _leaf_type(field.type)
    if pa.types.is_integer(leaf) or _is_string_like(leaf):
        return
    hint = ""
    if pa.types.is_floating(leaf) or pa.types.is_decimal(leaf):
        hint = "; bucket numbers first, or cast them to integers"
    elif pa.types.is_dictionary(leaf):
        hint = "; decode it first (pyarrow.compute.dictionary_decode)"
    msg = (f"{label}: column {field.name!r} must hold integers or strings (or lists of "
           f"them) to {what}, got {field.type}{hint}")
    raise ArrowSparseTypeError(msg)


class ColumnStep(Step):
    """A step computing one column from one column.

    ``output`` None (or equal to ``column``) replaces the column in place; another
    name replaces that column if it exists, else appends a new column at the end.
    """

    _keys: ClassVar[tuple[str, ...]] = ("column", "output")

    def __init__(self, column: str, output: str | None = None, *,
                 name: str | None = None) -> None:
        super().__init__(name)
        self.column = _check_str(self.label, "column", column)
        self.output = None if output is None else _check_str(self.label, "output", output)

    def input_columns(self) -> list[str]:  # noqa: D102
        return [self.column]

    def output_columns(self) -> list[str]:  # noqa: D102
        return [self.target]

    @property
    def target(self) -> str:
        """Name of the column the step writes."""
        return self.output or self.column

    def compute(self, column: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
        """Compute the new column from the input column."""
        raise NotImplementedError

    def output_type(self, field: pa.Field) -> pa.DataType:
        """Type of the new column for an input column ``field``."""
        raise NotImplementedError

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        self._need(table.schema, self.column)
        result = self.compute(_column(table, self.column))
        return _place(table, self.target, self.column, result)

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        field = self._need(schema, self.column)
        new = pa.field(self.target, self.output_type(field))
        idx = schema.get_field_index(self.target)
        if idx >= 0:
            return schema.set(idx, new)
        return schema.append(new)


def _place(table: pa.Table, target: str, column: str, result: Any) -> pa.Table:
    field = pa.field(target, result.type)
    idx = table.schema.get_field_index(target)
    if idx >= 0:
        return table.set_column(idx, field, result)
    return table.append_column(field, result)


class PadOrTruncate(ColumnStep):
    """Pad or truncate a list column to ``fixed_size_list[length]`` (``pad`` / ``truncate``).

    Parameters
    ----------
    column, output
        Input column and output column (default: replace the input).
    length
        The fixed row length.
    pad_value
        Value of padding positions (default 0).
    side
        ``"right"`` (keep the first ``length`` values) or ``"left"`` (keep the last).

    Examples
    --------
    >>> t = pa.table({"ids": pa.array([[1, 2, 3], [], None])})
    >>> PadOrTruncate("ids", length=2).transform(t)["ids"].to_pylist()
    [[1, 2], [0, 0], None]
    """

    type = "pad"
    _keys = ("column", "output", "length", "pad_value", "side")

    def __init__(self, column: str, length: int, pad_value: Any = 0, side: str = "right",
                 output: str | None = None, *, name: str | None = None) -> None:
        super().__init__(column, output, name=name)
        self.length = _check_int(self.label, "length", length, 0, _FIXED_SIZE_MAX)
        self.pad_value = pad_value
        if side not in ("left", "right"):
            msg = f"{self.label}: 'side' must be 'left' or 'right', got {side!r}"
            raise ArrowSparseValueError(msg)
        self.side = side

    def compute(self, column: pa.ChunkedArray) -> Any:  # noqa: D102
        value_type = getattr(column.type, "value_type", None)
        _check_batch_size(self.label, "length", len(column), self.length,
                          8 if value_type is None else _itemsize(value_type))
        return pad_or_truncate(column, self.length, self.pad_value, self.side)

    def output_type(self, field: pa.Field) -> pa.DataType:  # noqa: D102
        if not (pa.types.is_list(field.type) or pa.types.is_large_list(field.type)):
            msg = f"{self.label}: column {field.name!r} must be a list, got {field.type}"
            raise ArrowSparseTypeError(msg)
        # The transform's own checks of pad_value against the value type, on no rows.
        pad_or_truncate(pa.array([], type=field.type), self.length, self.pad_value, self.side)
        return pa.list_(field.type.value_field, self.length)


class Truncate(PadOrTruncate):
    """The ``truncate`` spelling of :class:`PadOrTruncate` (same behaviour)."""

    type = "truncate"


class HashBucket(ColumnStep):
    """Hash integers or strings into ``num_buckets`` buckets (:func:`~arrow_sparse.hash_bucket`).

    Examples
    --------
    >>> t = pa.table({"ids": pa.array([[1, 2], None])})
    >>> HashBucket("ids", num_buckets=4, output="b").transform(t).column_names
    ['ids', 'b']
    """

    type = "hash_bucket"
    _keys = ("column", "output", "num_buckets", "seed")

    def __init__(self, column: str, num_buckets: int, seed: int = 0,
                 output: str | None = None, *, name: str | None = None) -> None:
        super().__init__(column, output, name=name)
        self.num_buckets = _check_int(self.label, "num_buckets", num_buckets, 1, 2**63 - 1)
        self.seed = _check_int(self.label, "seed", seed, 0, 2**64 - 1)

    def compute(self, column: pa.ChunkedArray) -> Any:  # noqa: D102
        return hash_bucket(column, self.num_buckets, self.seed)

    def output_type(self, field: pa.Field) -> pa.DataType:  # noqa: D102
        _check_ids_or_strings(self.label, field, "hash")
        return _int64_leaf(field.type)


def _int64_leaf(t: pa.DataType) -> pa.DataType:
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _int64_leaf(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, _int64_leaf(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(pa.field(t.value_field.name, _int64_leaf(t.value_type)), t.list_size)
    return pa.int64()


class Categorify(ColumnStep):
    """Encode integers or strings as vocabulary ids; the vocabulary is fitted on the data.

    Parameters
    ----------
    column, output
        Input and output column.
    freq_threshold, max_size
        Pruning of the fitted vocabulary, as in :func:`~arrow_sparse.fit_vocabulary`.
    vocabulary
        A fitted :class:`~arrow_sparse.Vocabulary`, or None to fit one.

    Examples
    --------
    >>> t = pa.table({"ids": pa.array([[7, 7, 9], [], None])})
    >>> step = Categorify("ids")
    >>> step.set_state(step.fit_batch(t))
    >>> step.transform(t)["ids"].to_pylist()
    [[2, 2, 3], [], None]
    """

    type = "categorify"
    stateful = True
    _keys = ("column", "output", "freq_threshold", "max_size")

    def __init__(self, column: str, freq_threshold: int = 1, max_size: int | None = None,
                 output: str | None = None, *, vocabulary: Vocabulary | None = None,
                 name: str | None = None) -> None:
        super().__init__(column, output, name=name)
        self.freq_threshold = _check_int(self.label, "freq_threshold", freq_threshold, 0)
        self.max_size = (None if max_size is None
                         else _check_int(self.label, "max_size", max_size, 0))
        if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
            msg = f"{self.label}: vocabulary must be a Vocabulary, got {type(vocabulary)}"
            raise ArrowSparseTypeError(msg)
        self.vocabulary = vocabulary

    @property
    def fitted(self) -> bool:  # noqa: D102
        return self.vocabulary is not None

    def fit_batch(self, table: pa.Table) -> Vocabulary:  # noqa: D102
        self._need(table.schema, self.column)
        return fit_vocabulary(_column(table, self.column))

    def merge_states(self, a: Vocabulary, b: Vocabulary) -> Vocabulary:  # noqa: D102
        return a.merge(b)

    def set_state(self, state: Vocabulary) -> None:  # noqa: D102
        self.vocabulary = state.merge(freq_threshold=self.freq_threshold,
                                      max_size=self.max_size)

    def compute(self, column: pa.ChunkedArray) -> Any:  # noqa: D102
        if self.vocabulary is None:
            msg = f"{self.label}: not fitted; call Pipeline.fit first"
            raise ArrowSparseValueError(msg)
        return categorify(column, self.vocabulary)

    def output_type(self, field: pa.Field) -> pa.DataType:  # noqa: D102
        _check_ids_or_strings(self.label, field, "encode")
        if self.vocabulary is not None:
            leaf = _leaf_type(field.type)
            if (self.vocabulary.kind == "int64") != pa.types.is_integer(leaf):
                msg = (f"{self.label}: column {field.name!r} holds {field.type}, but the "
                       f"vocabulary holds {self.vocabulary.kind} values")
                raise ArrowSparseTypeError(msg)
        return _int64_leaf(field.type)


_REDUCERS = {"sum": segment_sum, "mean": segment_mean, "max": segment_max,
             "min": segment_min}


class Reduce(ColumnStep):
    """Reduce each row of a list column to a scalar: sum, mean, max, min or length.

    Null rows give null; empty rows give 0 (sum, length) or null (mean, max, min);
    null values are skipped. ``sum`` of integers is int64, ``mean`` of integers
    float64, the others keep the value type; ``length`` is int32 (int64 for
    ``large_list``).

    Examples
    --------
    >>> t = pa.table({"s": pa.array([[1.0, 3.0], [], None])})
    >>> Reduce("s", "mean", output="m").transform(t)["m"].to_pylist()
    [2.0, None, None]
    """

    type = "reduce"
    _keys = ("column", "op", "output")

    def __init__(self, column: str, op: str, output: str | None = None, *,
                 name: str | None = None) -> None:
        super().__init__(column, output, name=name)
        if op not in (*_REDUCERS, "length"):
            msg = (f"{self.label}: 'op' must be one of 'sum', 'mean', 'max', 'min', "
                   f"'length', got {op!r}")
            raise ArrowSparseValueError(msg)
        self.op = op

    def compute(self, column: pa.ChunkedArray) -> Any:  # noqa: D102
        if self.op == "length":
            return pc.list_value_length(column)
        return _REDUCERS[self.op](column)

    def output_type(self, field: pa.Field) -> pa.DataType:  # noqa: D102
        t = field.type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            msg = f"{self.label}: column {field.name!r} must be a list, got {t}"
            raise ArrowSparseTypeError(msg)
        if self.op == "length":
            return pa.int64() if pa.types.is_large_list(t) else pa.int32()
        v = t.value_type
        if not (pa.types.is_integer(v) or pa.types.is_floating(v)):
            msg = f"{self.label}: column {field.name!r} must hold numbers, got {t}"
            raise ArrowSparseTypeError(msg)
        if pa.types.is_integer(v) and self.op == "sum":
            return pa.int64()
        if pa.types.is_integer(v) and self.op == "mean":
            return pa.float64()
        return v


class EmbeddingBag(ColumnStep):
    """Pool each row's ids against an embedding table into ``fixed_size_list<float>[dim]``.

    Parameters
    ----------
    column, output
        Column of id lists and the output column.
    table
        Path of the table ``[num_embeddings, dim]``: a ``.npy`` file (memory-mapped),
        or an Arrow IPC (``.arrow``, ``.ipc``, ``.feather``) or Parquet file whose
        first ``fixed_size_list`` column (or ``table_column``) holds the rows.
        Relative paths are resolved against the spec file's directory.
    mode
        ``"sum"``, ``"mean"`` or ``"max"``.
    table_column
        Column of an IPC / Parquet table file to use.
    empty
        What an empty bag (a non-null row with no ids) gives: None (default) the
        kernel's rule, zeros for ``"sum"`` and null for ``"mean"`` and ``"max"``;
        ``"zeros"`` a row of zeros in every mode (as ``torch.nn.EmbeddingBag`` and
        TorchRec give, what trainers expect); ``"null"`` null in every mode. A null
        row (missing, not empty) stays null whatever ``empty`` says.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "emb.npy")
    >>> np.save(path, np.arange(6, dtype=np.float32).reshape(3, 2))
    >>> t = pa.table({"ids": pa.array([[0, 2], []])})
    >>> EmbeddingBag("ids", table=path, output="e").transform(t)["e"].to_pylist()
    [[4.0, 6.0], [0.0, 0.0]]
    >>> EmbeddingBag("ids", table=path, mode="mean").transform(t)["ids"].to_pylist()
    [[2.0, 3.0], None]
    >>> EmbeddingBag("ids", table=path, mode="mean", empty="zeros").transform(t)["ids"].to_pylist()
    [[2.0, 3.0], [0.0, 0.0]]
    """

    type = "embedding_bag"
    _keys = ("column", "output", "table", "mode", "table_column", "empty")

    def __init__(self, column: str, table: str, mode: str = "sum",
                 output: str | None = None, table_column: str | None = None,
                 empty: str | None = None, *, name: str | None = None) -> None:
        super().__init__(column, output, name=name)
        self.table = _check_str(self.label, "table", table)
        if mode not in ("sum", "mean", "max"):
            msg = f"{self.label}: 'mode' must be 'sum', 'mean' or 'max', got {mode!r}"
            raise ArrowSparseValueError(msg)
        self.mode = mode
        if empty not in (None, "zeros", "null"):
            msg = f"{self.label}: 'empty' must be 'zeros' or 'null', got {empty!r}"
            raise ArrowSparseValueError(msg)
        self.empty = empty
        self.table_column = table_column
        self._weights: np.ndarray | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (to Ray workers) without the loaded table: each process maps the file.
        state = self.__dict__.copy()
        state["_weights"] = None
        return state

    def weights(self) -> np.ndarray:
        """Return the embedding table as a 2-D numpy array (loaded once)."""
        if self._weights is None:
            self._weights = _load_table(self.label, self._resolve(self.table),
                                        self.table_column)
        return self._weights

    def compute(self, column: pa.ChunkedArray) -> Any:  # noqa: D102
        pooled = embedding_bag(self.weights(), column, mode=self.mode)
        if self.empty is None:
            return pooled
        chunks = [_set_empty_bags(ids, bags, self.empty)
                  for ids, bags in zip(column.chunks, pooled.chunks, strict=True)]
        return pa.chunked_array(chunks, pooled.type)

    def output_type(self, field: pa.Field) -> pa.DataType:  # noqa: D102
        if not (pa.types.is_list(field.type) or pa.types.is_large_list(field.type)) \
                or not pa.types.is_integer(field.type.value_type):
            msg = (f"{self.label}: column {field.name!r} must be a list of integer ids, got "
                   f"{field.type}; hash_bucket or categorify turns other values into ids")
            raise ArrowSparseTypeError(msg)
        w = self.weights()
        return pa.list_(pa.from_numpy_dtype(w.dtype), w.shape[1])


def _set_empty_bags(ids: pa.Array, bags: pa.FixedSizeListArray,
                    empty: str) -> pa.FixedSizeListArray:
    """``bags`` with the rows of empty id lists set to zeros or null (null rows stay null)."""
    lengths = pc.list_value_length(ids).to_numpy(zero_copy_only=False)
    is_empty = np.asarray(ids.is_valid()) & (np.nan_to_num(lengths) == 0)
    if not is_empty.any():
        return bags
    dim = bags.type.list_size
    start = bags.offset * dim
    flat = bags.values.slice(start, len(bags) * dim)
    if empty == "null":
        mask = np.asarray(bags.is_null()) | is_empty
        return pa.FixedSizeListArray.from_arrays(flat, dim, mask=pa.array(mask))
    values = flat.to_numpy(zero_copy_only=False).reshape(len(bags), dim).copy()
    values[is_empty] = 0
    mask = np.asarray(bags.is_null()) & ~is_empty
    return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel(), bags.type.value_type),
                                             dim, mask=pa.array(mask) if mask.any() else None)


def _load_table(label: str, path: str, column: str | None) -> np.ndarray:
    if not os.path.isfile(path):
        msg = f"{label}: embedding table file not found: {path}"
        raise ArrowSparseValueError(msg)
    lower = path.lower()
    if lower.endswith(".npy"):
        arr = np.load(path, mmap_mode="r")
    else:
        if lower.endswith(".parquet") or lower.endswith(".pq"):
            import pyarrow.parquet as pq
            tab = pq.read_table(path)
        else:
            # An IPC file, memory-mapped: the table's buffers keep the mapping alive.
            tab = pa.ipc.open_file(pa.memory_map(path)).read_all()
        names = [f.name for f in tab.schema if pa.types.is_fixed_size_list(f.type)]
        if column is None and not names:
            msg = f"{label}: {path} has no fixed_size_list column to use as the table"
            raise ArrowSparseValueError(msg)
        col = tab.column(column or names[0]).combine_chunks()
        arr = col.flatten().to_numpy(zero_copy_only=False).reshape(len(col), col.type.list_size)
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.floating):
        msg = f"{label}: table {path} must be a 2-D float array, got {arr.dtype}{arr.shape}"
        raise ArrowSparseValueError(msg)
    return arr


class MultiHot(Step):
    """Rows of ids as multi-hot rows: canonical CSR ids (+ counts), or dense ``[num_columns]``.

    A batch of id lists is a CSR matrix ``[rows, num_columns]`` (offsets = indptr, ids
    = column indices; :meth:`Jagged.to_csr <arrow_sparse.Jagged.to_csr>`). This step
    makes it canonical: each row's ids sorted and repeated ids merged, their number
    of occurrences in ``counts_output`` (float32, same offsets) if named. With
    ``dense = true`` each row becomes ``fixed_size_list<float32>[num_columns]`` of
    the counts instead (for small vocabularies: a batch takes rows x num_columns x 4
    bytes). Null rows stay null; every id must be in ``[0, num_columns)``.

    Parameters
    ----------
    column, output
        Column of integer id lists, and the output column (default: replace it).
    num_columns
        The vocabulary size (after ``categorify`` or ``hash_bucket``).
    counts_output
        Column for the counts (not with ``dense``).
    dense
        Write dense rows instead of ids.

    Examples
    --------
    >>> t = pa.table({"ids": pa.array([[3, 1, 3], [], None])})
    >>> out = MultiHot("ids", num_columns=4, counts_output="n").transform(t)
    >>> out["ids"].to_pylist(), out["n"].to_pylist()
    ([[1, 3], [], None], [[1.0, 2.0], [], None])
    >>> MultiHot("ids", num_columns=4, dense=True).transform(t)["ids"].to_pylist()
    [[0.0, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], None]
    """

    type = "multi_hot"
    _keys = ("column", "output", "num_columns", "counts_output", "dense")

    def __init__(self, column: str, num_columns: int, output: str | None = None,
                 counts_output: str | None = None, dense: bool = False, *,
                 name: str | None = None) -> None:
        super().__init__(name)
        self.column = _check_str(self.label, "column", column)
        self.output = None if output is None else _check_str(self.label, "output", output)
        if not isinstance(dense, bool):
            msg = f"{self.label}: 'dense' must be true or false, got {dense!r}"
            raise ArrowSparseTypeError(msg)
        self.num_columns = _check_int(self.label, "num_columns", num_columns, 1,
                                      _FIXED_SIZE_MAX if dense else 2**63 - 1)
        self.dense = dense
        self.counts_output = None if counts_output is None else \
            _check_str(self.label, "counts_output", counts_output)
        if dense and counts_output is not None:
            msg = f"{self.label}: 'counts_output' is for id rows; dense rows hold the counts"
            raise ArrowSparseValueError(msg)
        if self.counts_output is not None and self.counts_output == (output or column):
            msg = f"{self.label}: 'counts_output' must differ from the ids column"
            raise ArrowSparseValueError(msg)

    def input_columns(self) -> list[str]:  # noqa: D102
        return [self.column]

    def output_columns(self) -> list[str]:  # noqa: D102
        outs = [self.output or self.column]
        return outs if self.counts_output is None else [*outs, self.counts_output]

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        out = super().to_dict()
        if not self.dense:
            del out["dense"]
        return out

    def _types(self, field: pa.Field) -> tuple[pa.DataType, pa.DataType]:
        t = field.type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)) \
                or not pa.types.is_integer(t.value_type):
            msg = f"{self.label}: column {field.name!r} must be a list of integers, got {t}"
            raise ArrowSparseTypeError(msg)
        if self.dense:
            return pa.list_(pa.float32(), self.num_columns), pa.null()
        make = pa.large_list if pa.types.is_large_list(t) else pa.list_
        return make(pa.int64()), make(pa.float32())

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        ids_type, counts_type = self._types(self._need(schema, self.column))
        for name, t in ((self.output or self.column, ids_type),
                        (self.counts_output, counts_type)):
            if name is None:
                continue
            idx = schema.get_field_index(name)
            new = pa.field(name, t)
            schema = schema.set(idx, new) if idx >= 0 else schema.append(new)
        return schema

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        ids_type, counts_type = self._types(self._need(table.schema, self.column))
        if self.dense:
            _check_batch_size(self.label, "num_columns", table.num_rows, self.num_columns, 4)
        ids, counts = [], []
        for chunk in _column(table, self.column).chunks:
            i, c = self._chunk(chunk, ids_type, counts_type)
            ids.append(i)
            counts.append(c)
        table = _place(table, self.output or self.column, self.column,
                       pa.chunked_array(ids, ids_type))
        if self.counts_output is not None:
            table = _place(table, self.counts_output, self.column,
                           pa.chunked_array(counts, counts_type))
        return table

    def _chunk(self, chunk: pa.Array, ids_type: pa.DataType,
               counts_type: pa.DataType) -> tuple[pa.Array, pa.Array | None]:
        from ..jagged import Jagged

        csr = Jagged.from_arrow(chunk).to_csr(self.num_columns).canonical()
        mask = chunk.is_null() if chunk.null_count else None
        if self.dense:
            dense = csr.to_dense().astype(np.float32, copy=False).ravel()
            return pa.FixedSizeListArray.from_arrays(pa.array(dense), self.num_columns,
                                                     mask=mask), None
        width = np.int64 if pa.types.is_large_list(ids_type) else np.int32
        offsets = pa.array(np.asarray(csr.indptr, dtype=width))
        make = pa.LargeListArray if width is np.int64 else pa.ListArray
        ids = make.from_arrays(offsets, pa.array(np.asarray(csr.indices, dtype=np.int64)),
                               type=ids_type, mask=mask)
        counts = make.from_arrays(offsets, pa.array(np.asarray(csr.values, dtype=np.float32)),
                                  type=counts_type, mask=mask)
        return ids, counts


class Normalize(ColumnStep):
    """Standardize (``(x - mean) / std``) or min-max scale numbers, statistics fitted on the data.

    Works on a numeric column or a list of numbers (every value of every row scaled
    alike; the list structure kept). The fitted state is the count, mean, sum of
    squared deviations, min and max of the non-null, non-NaN values; states of batches
    merge exactly as the statistics of their concatenation (Chan's parallel update),
    so fitting streams and distributes. ``std`` is the population deviation; a zero
    deviation or range divides by 1. Nulls stay null; integers give float64, floats
    keep their type.

    Parameters
    ----------
    column, output
        Input and output column.
    method
        ``"standard"`` (default) or ``"minmax"`` (to ``[0, 1]`` over the fitted range).
    stats
        Fitted statistics ``{count, mean, m2, min, max}`` (written by ``save``), or
        None to fit them.

    Examples
    --------
    >>> t = pa.table({"x": [1.0, 2.0, None, 3.0]})
    >>> step = Normalize("x")
    >>> step.set_state(step.fit_batch(t))
    >>> [round(v, 4) if v is not None else v for v in step.transform(t)["x"].to_pylist()]
    [-1.2247, 0.0, None, 1.2247]
    >>> Normalize("x", method="minmax", stats=step.stats).transform(t)["x"].to_pylist()
    [0.0, 0.5, None, 1.0]
    """

    type = "normalize"
    stateful = True
    _keys = ("column", "output", "method", "stats")
    _fields = ("count", "mean", "m2", "min", "max")

    def __init__(self, column: str, method: str = "standard", output: str | None = None,
                 stats: Mapping[str, Any] | None = None, *, name: str | None = None) -> None:
        super().__init__(column, output, name=name)
        if method not in ("standard", "minmax"):
            msg = f"{self.label}: 'method' must be 'standard' or 'minmax', got {method!r}"
            raise ArrowSparseValueError(msg)
        self.method = method
        self.stats: dict[str, Any] | None = None
        if stats is not None:
            if not isinstance(stats, Mapping) or set(stats) != set(self._fields):
                msg = (f"{self.label}: 'stats' must be a table with keys "
                       f"{', '.join(self._fields)}, got {stats!r}")
                raise ArrowSparseValueError(msg)
            self.stats = {k: stats[k] for k in self._fields}

    @property
    def fitted(self) -> bool:  # noqa: D102
        return self.stats is not None

    def _numeric(self, field: pa.Field) -> pa.DataType:
        t = field.type
        v = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
        if not (pa.types.is_integer(v) or pa.types.is_floating(v)):
            msg = (f"{self.label}: column {field.name!r} must hold numbers or lists of "
                   f"numbers, got {t}")
            raise ArrowSparseTypeError(msg)
        return v

    def fit_batch(self, table: pa.Table) -> tuple[int, float, float, float, float]:  # noqa: D102
        field = self._need(table.schema, self.column)
        self._numeric(field)
        col = _column(table, self.column)
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            col = pc.list_flatten(col)
        x = pc.drop_null(col).to_numpy().astype(np.float64, copy=False)
        x = x[~np.isnan(x)]
        if not len(x):
            return (0, 0.0, 0.0, np.inf, -np.inf)
        mean = float(x.mean())
        return (len(x), mean, float(((x - mean) ** 2).sum()), float(x.min()), float(x.max()))

    def merge_states(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:  # noqa: D102
        na, ma, qa, lo_a, hi_a = a
        nb, mb, qb, lo_b, hi_b = b
        n = na + nb
        if n == 0:
            return a
        delta = mb - ma
        return (n, ma + delta * nb / n, qa + qb + delta * delta * na * nb / n,
                min(lo_a, lo_b), max(hi_a, hi_b))

    def set_state(self, state: tuple[Any, ...]) -> None:  # noqa: D102
        if state[0] == 0:
            msg = f"{self.label}: no non-null value of {self.column!r} to fit on"
            raise ArrowSparseValueError(msg)
        self.stats = dict(zip(self._fields, (int(state[0]), *map(float, state[1:])),
                              strict=True))

    def _scale(self) -> tuple[float, float]:
        if self.stats is None:
            msg = f"{self.label}: not fitted; call Pipeline.fit first"
            raise ArrowSparseValueError(msg)
        s = self.stats
        if self.method == "standard":
            std = float(np.sqrt(s["m2"] / s["count"]))
            return s["mean"], std or 1.0
        return s["min"], (s["max"] - s["min"]) or 1.0

    def compute(self, column: pa.ChunkedArray) -> Any:  # noqa: D102
        shift, scale = self._scale()
        out_type = self.output_type(pa.field(self.column, column.type))
        chunks = []
        for chunk in column.chunks:
            is_list = pa.types.is_list(chunk.type) or pa.types.is_large_list(chunk.type)
            values = chunk.values if is_list else chunk
            leaf = out_type.value_type if is_list else out_type
            scaled = pc.divide(pc.subtract(values.cast(leaf), pa.scalar(shift, leaf)),
                               pa.scalar(scale, leaf))
            if is_list:
                mask = chunk.is_null() if chunk.null_count else None
                scaled = type(chunk).from_arrays(chunk.offsets, scaled, type=out_type,
                                                 mask=mask)
            chunks.append(scaled)
        return pa.chunked_array(chunks, out_type)

    def output_type(self, field: pa.Field) -> pa.DataType:  # noqa: D102
        v = self._numeric(field)
        leaf = v if pa.types.is_floating(v) else pa.float64()
        t = field.type
        if pa.types.is_list(t):
            return pa.list_(leaf)
        if pa.types.is_large_list(t):
            return pa.large_list(leaf)
        return leaf


class Filter(Step):
    """Keep the rows where a condition is true (SQL's rule: false and null rows drop).

    Either ``expr``, a string such as ``"label >= 0 and len(item_ids) > 3"`` (parsed
    safely, no ``eval``; grammar and null rules in :mod:`arrow_sparse.pipeline._filter`
    and docs/pipeline.md), or ``column``, ``op`` (``==``, ``!=``, ``<``, ``<=``, ``>``,
    ``>=``, ``in``, ``not in``, ``is null``, ``is not null``) and ``value``.
    Comparisons, ``in`` and ``not`` follow SQL's three-valued logic: ``label not in
    [0]`` drops a null label, as ``label != 0`` does.

    The condition's types are checked against the input schema by
    :meth:`output_schema`, before any data is read.

    Examples
    --------
    >>> t = pa.table({"label": [1, 0, None], "ids": [[1, 2], [], [3]]})
    >>> Filter(expr="label >= 1").transform(t)["label"].to_pylist()
    [1]
    >>> Filter(expr="label not in [0]").transform(t)["label"].to_pylist()
    [1]
    >>> Filter(expr="len(ids) > 0 and (label is null or label > 0)").transform(t).num_rows
    2
    >>> Filter(column="label", op="is null").transform(t).num_rows
    1
    """

    type = "filter"
    _keys = ("expr", "column", "op", "value")

    def __init__(self, expr: str | None = None, *, column: str | None = None,
                 op: str | None = None, value: Any = None, name: str | None = None) -> None:
        super().__init__(name)
        if (expr is None) == (column is None):
            msg = f"{self.label}: give either 'expr' or 'column' with 'op' and 'value'"
            raise ArrowSparseValueError(msg)
        self.expr, self.column, self.op, self.value = expr, column, op, value
        if expr is not None:
            self._predicate = _filter.parse(expr, self.label)
        else:
            if op is None:
                msg = f"{self.label}: 'column' needs 'op' (and 'value')"
                raise ArrowSparseValueError(msg)
            self._predicate = _filter.comparison(_check_str(self.label, "column", column),
                                                 op, value, self.label)
        self._compiled: tuple[pa.Schema, pc.Expression] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Compiled expressions may call functions registered in this process only.
        state = self.__dict__.copy()
        state["_compiled"] = None
        return state

    def input_columns(self) -> list[str]:  # noqa: D102
        return list(self._predicate.columns)

    def expression(self, schema: pa.Schema) -> pc.Expression:
        """Return the condition as a ``pyarrow.compute.Expression`` over ``schema``.

        Raises
        ------
        KeyError
            A column ``schema`` lacks (with the closest name).
        TypeError
            Operands of kinds that do not go together.

        Examples
        --------
        >>> Filter(expr="a > 1").expression(pa.schema({"a": pa.int64()}))
        <pyarrow.compute.Expression (a > 1)>
        """
        cached = self._compiled
        if cached is not None and cached[0].equals(schema):
            return cached[1]
        expression = self._predicate.compile(schema, self.label)
        self._compiled = (schema, expression)
        return expression

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        expression = self.expression(table.schema)
        try:
            keep = pc.fill_null(_filter.evaluate(expression, table, self.input_columns()),
                                False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            shown = _filter.excerpt(self._predicate.text)
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            cls = ArrowSparseValueError if isinstance(exc, pa.ArrowInvalid) \
                else ArrowSparseTypeError
            msg = f"{self.label}: cannot evaluate {shown}: {detail[:200]}"
            raise cls(msg) from exc
        kept = pc.sum(keep).as_py() or 0
        if kept == table.num_rows:  # nothing to drop: no copy of the list columns
            return table
        return table.filter(keep)

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        self.expression(schema)
        return schema


class Select(Step):
    """Keep only ``columns``, in that order.

    Examples
    --------
    >>> Select(["b", "a"]).transform(pa.table({"a": [1], "b": [2], "c": [3]})).column_names
    ['b', 'a']
    """

    type = "select"
    _keys = ("columns",)

    def __init__(self, columns: list[str], *, name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(columns, str) or not columns:
            msg = f"{self.label}: 'columns' must be a non-empty list of names, got {columns!r}"
            raise ArrowSparseTypeError(msg)
        self.columns = [_check_str(self.label, "columns", c) for c in columns]
        if len(set(self.columns)) != len(self.columns):
            msg = f"{self.label}: 'columns' repeats a name: {self.columns}"
            raise ArrowSparseValueError(msg)

    def input_columns(self) -> list[str]:  # noqa: D102
        return list(self.columns)

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        self.output_schema(table.schema)
        return table.select(self.columns)

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        fields = [self._need(schema, c) for c in self.columns]
        return pa.schema(fields, metadata=schema.metadata)


class Rename(Step):
    """Rename columns: ``columns = {old = "new", ...}``.

    Examples
    --------
    >>> Rename({"a": "x"}).transform(pa.table({"a": [1], "b": [2]})).column_names
    ['x', 'b']
    """

    type = "rename"
    _keys = ("columns",)

    def __init__(self, columns: Mapping[str, str], *, name: str | None = None) -> None:
        super().__init__(name)
        if not isinstance(columns, Mapping) or not columns:
            msg = f"{self.label}: 'columns' must be a non-empty table {{old = \"new\"}}"
            raise ArrowSparseTypeError(msg)
        self.columns = {_check_str(self.label, "columns", k): _check_str(self.label, "columns", v)
                        for k, v in columns.items()}

    def input_columns(self) -> list[str]:  # noqa: D102
        return list(self.columns)

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        schema = self.output_schema(table.schema)
        return table.rename_columns(schema.names)

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        for c in self.columns:
            self._need(schema, c)
        names = [self.columns.get(n, n) for n in schema.names]
        if len(set(names)) != len(names):
            msg = f"{self.label}: renaming gives repeated column names: {names}"
            raise ArrowSparseValueError(msg)
        return pa.schema([f.with_name(n) for f, n in zip(schema, names, strict=True)],
                         metadata=schema.metadata)


STEP_TYPES: dict[str, type[Step]] = {
    cls.type: cls for cls in (PadOrTruncate, Truncate, HashBucket, Categorify, Normalize,
                              Reduce, EmbeddingBag, MultiHot, Filter, Select, Rename)
}


def step_from_dict(spec: Mapping[str, Any], where: str = "step", *,
                   allow_python_steps: bool = False) -> Step:
    """Build a step from its spec entry (``type`` plus the step's keys).

    Parameters
    ----------
    spec
        The entry, e.g. ``{"type": "hash_bucket", "column": "ids", "num_buckets": 8}``.
    where
        Name of the entry in error messages.
    allow_python_steps
        Accept ``type = "python"`` entries, which run (and may import) Python code
        (:mod:`arrow_sparse.pipeline.python_steps`); refused by default.

    Returns
    -------
    Step

    Raises
    ------
    ValueError
        No or an unknown ``type``, unknown or missing keys, bad values.

    Examples
    --------
    >>> step_from_dict({"type": "reduce", "column": "s", "op": "sum"})
    Reduce(column='s', op='sum')
    """
    if not isinstance(spec, Mapping):
        msg = f"{where}: expected a table of keys, got {spec!r}"
        raise ArrowSparseTypeError(msg)
    kind = spec.get("type")
    if kind not in STEP_TYPES:
        choices = ", ".join(sorted(STEP_TYPES))
        hint = _filter.did_you_mean(kind, STEP_TYPES) if isinstance(kind, str) else ""
        msg = f"{where}: unknown or missing 'type' {kind!r}{hint or ';'} expected one of {choices}"
        raise ArrowSparseValueError(msg)
    cls = STEP_TYPES[kind]
    if getattr(cls, "runs_python", False) and not allow_python_steps:
        shown = spec.get("function")
        msg = (f"{where} ({kind}): the spec names the Python step {shown!r}; a spec runs "
               "Python code only when the run allows it: pass allow_python_steps=True "
               "(arrow-sparse run --allow-python-steps)")
        raise ArrowSparseValueError(msg)
    allowed = set(cls._keys) | {"type", "name"}
    if cls is Categorify:
        allowed.add("vocabulary")
    unknown = sorted(set(spec) - allowed, key=str)
    if unknown:
        hint = "".join(_filter.did_you_mean(k, sorted(allowed - set(spec))) for k in unknown)
        msg = (f"{where} ({kind}): unknown key(s) {', '.join(map(repr, unknown))}"
               f"{hint or ';'} allowed: {', '.join(sorted(allowed))}")
        raise ArrowSparseValueError(msg)
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    try:
        return cls(**kwargs)
    except ArrowSparseError as exc:
        raise _in_spec(exc, where, kind, spec.get("name")) from exc
    except TypeError as exc:
        msg = f"{where} ({kind}): {exc}"
        raise ArrowSparseValueError(msg) from exc


def _in_spec(exc: ArrowSparseError, where: str, kind: str, name: Any) -> ArrowSparseError:
    """``exc`` with its step named by its place in the spec (``"s.toml: steps[2] (pad)"``)."""
    text = str(exc)
    for head in (f"step {name!r} ({kind}): ", f"step {kind}: ", f"{kind}: "):
        if text.startswith(head):
            text = text[len(head):]
            break
    label = f"{where} {name!r} ({kind})" if isinstance(name, str) else f"{where} ({kind})"
    return type(exc)(f"{label}: {text}")
