"""Checks and builders behind ``KeyedJagged``'s constructors (private).

Everything here works on plain parts (keys, key-major values, lengths, weights, row
validity, batch size) and returns them as a :class:`Built`, which
``KeyedJagged._new`` wraps; ``keyed.py`` holds the class itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow
from .. import _validate as v
from .._backend import get_kernel, is_cupy_array, module_of
from ..errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged

_REPR_KEYS = 10


class Built(NamedTuple):
    """The checked parts of a KeyedJagged, in ``KeyedJagged._new``'s argument order."""

    keys: tuple[Hashable, ...]
    values: np.ndarray
    lengths: np.ndarray
    weights: np.ndarray | None
    validity: np.ndarray | None
    batch_size: int


class _Part(NamedTuple):
    """One key's rows, normalised: null rows are empty, values exactly the rows' values."""

    lengths: np.ndarray          # int32 or int64, one per row, 0 for null rows
    values: np.ndarray           # 1-D, ``lengths.sum()`` long
    validity: np.ndarray | None  # bool per row (False = null row), None when none is null


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _keys_text(keys: tuple[Hashable, ...]) -> str:
    shown = ", ".join(repr(k) for k in keys[:_REPR_KEYS])
    return f"[{shown}{', ...' if len(keys) > _REPR_KEYS else ''}]"


def _check_keys(func: str, arg: str, keys: Any, *, repeats: bool = False) -> tuple[Hashable, ...]:
    """Keys as a tuple of hashables (numpy scalars become Python scalars).

    They must be unique unless ``repeats``.
    """
    if isinstance(keys, np.ndarray):
        keys = keys.tolist()
    if isinstance(keys, (str, bytes)) or not isinstance(keys, (Sequence, range)):
        msg = f"{func}: {arg} must be a sequence of key names, got {type(keys).__name__}"
        raise ArrowSparseTypeError(msg)
    out = tuple(k.item() if isinstance(k, np.generic) else k for k in keys)
    seen: dict[Hashable, int] = {}
    for i, key in enumerate(out):  # a loop over keys
        try:
            if key in seen and not repeats:
                v.fail_value(func, arg, "must be unique", i, repr(key))
            seen[key] = i
        except TypeError:
            msg = v.message(func, arg, "must be hashable", i, repr(key))
            raise ArrowSparseTypeError(msg) from None
    return out


def _check_mapping(func: str, arg: str, data: Any) -> dict[Hashable, Any]:
    if not isinstance(data, Mapping):
        msg = f"{func}: {arg} must be a mapping of key -> rows, got {type(data).__name__}"
        raise ArrowSparseTypeError(msg)
    return dict(data)


def _as_1d_values(func: str, arg: str, x: Any) -> np.ndarray:
    arr = v.as_values_array(func, arg, x, device=True)
    if arr.ndim != 1:
        msg = f"{func}: {arg} must be 1-dimensional, got shape {arr.shape}"
        raise ArrowSparseValueError(msg)
    return arr


def _batch_size_of(func: str, arg: str, num_lengths: int, num_keys: int,
                   batch_size: int | None) -> int:
    if batch_size is not None:
        rows = v.check_count(func, "batch_size", batch_size)
        if num_lengths != num_keys * rows:
            msg = (f"{func}: {arg} describes {num_lengths} rows but num_keys * batch_size is "
                   f"{num_keys} * {rows} = {num_keys * rows}")
            raise ArrowSparseValueError(msg)
        return rows
    if num_keys == 0:
        if num_lengths:
            msg = f"{func}: {arg} describes {num_lengths} rows but there are no keys"
            raise ArrowSparseValueError(msg)
        return 0
    if num_lengths % num_keys:
        msg = (f"{func}: {arg} describes {num_lengths} rows, not a multiple of the "
               f"{num_keys} keys (lengths are key-major: num_keys * batch_size)")
        raise ArrowSparseValueError(msg)
    return num_lengths // num_keys


def _check_validity(func: str, validity: Any, lengths: np.ndarray) -> np.ndarray | None:
    """Check a key-major row mask; a null row must be empty.

    On the device that check is a device check (``check_null_rows``), raised by the
    caller's :func:`~arrow_sparse._backend.device_checks` or a later check.
    """
    mask = v.check_mask(func, "validity", validity, len(lengths), device=True)
    if mask is not None and is_cupy_array(mask):
        get_kernel("transforms", "check_null_rows", module_of(mask))(lengths, mask)
    elif mask is not None:
        bad = ~mask & (lengths != 0)
        if bad.any():
            pos = v.first_true(bad)
            v.fail_value(func, "validity", "marks a row with values as null (null rows are "
                         "empty)", pos, lengths[pos])
    return mask


def _take_ranges(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenate ``values[starts[i]:starts[i] + counts[i]]`` for every i (vectorised)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    out: np.ndarray
    if total == 0:
        out = values[:0].copy()
    else:
        out_starts = np.cumsum(counts) - counts
        shift = np.asarray(starts, dtype=np.int64) - out_starts
        out = values[np.arange(total, dtype=np.int64) + np.repeat(shift, counts)]
    return out


def _fail_nested(func: str, arg: str, what: Any) -> NoReturn:
    msg = (f"{func}: {arg} must hold lists of numbers (integers, floats or booleans), "
           f"got {what}")
    raise ArrowSparseTypeError(msg)


def _check_list_type(func: str, arg: str, t: pa.DataType) -> None:
    if not _arrow.is_list_type(t):
        hint = "; pass a map column itself, not a batch holding it" \
            if isinstance(t, pa.MapType) else ""
        msg = f"{func}: {arg} must be a list or large_list column, got {t}{hint}"
        raise ArrowSparseTypeError(msg)
    vt = t.value_type
    if not (pa.types.is_integer(vt) or pa.types.is_floating(vt) or pa.types.is_boolean(vt)):
        _fail_nested(func, arg, t)


def _part_of(func: str, arg: str, j: Jagged) -> _Part:
    """One Jagged as a part: null rows emptied, values gathered to exactly its rows."""
    if j.device != "cpu":
        msg = (f"{func}: {arg} is on {j.device}, but KeyedJagged is built on the host; "
               "build it from host data and move it with .to_device('cuda')")
        raise NotImplementedError(msg)
    values = j.values
    if isinstance(values, Jagged) or values.ndim != 1:
        _fail_nested(func, arg, "nested lists" if isinstance(values, Jagged)
                     else f"values of shape {values.shape}")
    offsets = j.offsets
    raw = np.diff(offsets)
    valid = j.validity
    lengths = raw if valid is None else np.where(valid, raw, 0).astype(raw.dtype, copy=False)
    start, stop = int(offsets[0]), int(offsets[-1])
    contiguous = valid is None or not (raw[~valid] > 0).any()
    vv = j.values_validity
    if contiguous:
        taken = values[start:stop]
        taken_vv = None if vv is None else vv[start:stop]
    else:
        taken = _take_ranges(values, offsets[:-1], lengths)
        taken_vv = None if vv is None else _take_ranges(vv, offsets[:-1], lengths)
    if taken_vv is not None and not taken_vv.all():
        pos = v.first_true(~taken_vv)
        v.fail_value(func, arg, "has null values inside its lists; fill them first "
                     "(pyarrow.compute.fill_null)", pos, None)
    if valid is not None and valid.all():
        valid = None
    return _Part(lengths, taken, valid)


def _join(parts: list[_Part]) -> _Part:
    """Concatenate the parts of one key (chunks) or of several keys (key-major)."""
    if len(parts) == 1:
        return parts[0]
    int32 = all(p.lengths.dtype == np.int32 for p in parts)
    lengths = np.concatenate([p.lengths for p in parts]).astype(
        np.int32 if int32 else np.int64, copy=False)
    values = np.concatenate([p.values for p in parts])
    validity = None
    if any(p.validity is not None for p in parts):
        validity = np.concatenate([np.ones(len(p.lengths), dtype=bool) if p.validity is None
                                   else p.validity for p in parts])
    return _Part(lengths, values, validity)


def _kind(dtype: np.dtype) -> str:
    return {"b": "boolean", "i": "integer", "u": "integer", "f": "float"}[dtype.kind]


def _common_dtype(func: str, arg: str, named: list[tuple[Hashable, np.dtype]]) -> np.dtype:
    """Return numpy's common dtype of the keys' values; integers, floats and bools may not mix."""
    if not named:
        return np.dtype(np.int64)
    first_key, first_dt = named[0]
    for key, dt in named:
        if _kind(dt) != _kind(first_dt):
            msg = (f"{func}: {arg} of every key must be all integers, all floats or all "
                   f"booleans; key {first_key!r} has {first_dt} but key {key!r} has {dt}")
            raise ArrowSparseTypeError(msg)
    common = np.result_type(*[dt for _, dt in named])
    if _kind(common) != _kind(first_dt):  # uint64 with int64 gives float64
        msg = (f"{func}: {arg} dtypes {', '.join(sorted({str(dt) for _, dt in named}))} "
               f"have no common {_kind(first_dt)} dtype; cast them first")
        raise ArrowSparseTypeError(msg)
    return common


def _dtypes(keys: tuple[Hashable, ...], parts: list[_Part]) -> list[tuple[Hashable, np.dtype]]:
    """Pair each key with its values dtype, leaving out keys with no values.

    An all-empty key (e.g. ``[[], []]`` read as float64) does not constrain the dtype;
    when no key has values, every key counts.
    """
    named = [(k, p.values.dtype) for k, p in zip(keys, parts, strict=True)]
    non_empty = [kd for kd, p in zip(named, parts, strict=True) if len(p.values)]
    return non_empty or named


def _as_jagged_chunks(func: str, arg: str, x: Any) -> list[Jagged]:
    if isinstance(x, Jagged):
        return [x]
    if isinstance(x, pa.ChunkedArray):
        _check_list_type(func, arg, x.type)
        return [Jagged.from_arrow(chunk) for chunk in x.chunks] or \
            [Jagged.from_arrow(pa.array([], type=x.type))]
    if isinstance(x, pa.Array):
        _check_list_type(func, arg, x.type)
        return [Jagged.from_arrow(x)]
    if isinstance(x, (list, tuple)):
        return [Jagged.from_list(list(x))]
    msg = (f"{func}: {arg} must be a Jagged, an Arrow list array or a list of rows, "
           f"got {type(x).__name__}")
    raise ArrowSparseTypeError(msg)


def _from_columns(func: str, columns: dict[Hashable, list[Jagged]],
                  weights: dict[Hashable, list[Jagged]], batch_size: int | None) -> Built:
    """Assemble a KeyedJagged from the chunks of each key (and of each key's weights)."""
    keys = _check_keys(func, "keys", list(columns))
    for i, key in enumerate(weights):
        if key not in columns:
            msg = v.message(func, "weights", "names a key that is not selected", i, repr(key))
            raise ArrowSparseKeyError(msg)
    parts: list[_Part] = []
    weight_parts: dict[Hashable, _Part] = {}
    rows = batch_size
    rows_of = "the batch has"
    for key, chunks in columns.items():  # a loop over keys (and their chunks)
        part = _join([_part_of(func, f"column {key!r}", j) for j in chunks])
        if rows is None:
            rows, rows_of = len(part.lengths), f"key {key!r} has"
        elif len(part.lengths) != rows:
            msg = f"{func}: key {key!r} has {len(part.lengths)} rows but {rows_of} {rows}"
            raise ArrowSparseValueError(msg)
        parts.append(part)
        if key in weights:
            wpart = _join([_part_of(func, f"weights of key {key!r}", j) for j in weights[key]])
            if len(wpart.lengths) != rows:
                msg = (f"{func}: weights of key {key!r} has {len(wpart.lengths)} rows "
                       f"but the values have {rows}")
                raise ArrowSparseValueError(msg)
            differ = wpart.lengths != part.lengths
            if differ.any():
                pos = v.first_true(differ)
                v.fail_value(func, f"weights of key {key!r}",
                             f"row lengths differ from the values' ({part.lengths[pos]})",
                             pos, wpart.lengths[pos])
            weight_parts[key] = wpart
    dtype = _common_dtype(func, "values", _dtypes(keys, parts))
    parts = [p if p.values.dtype == dtype else p._replace(values=p.values.astype(dtype))
             for p in parts]
    joined = _join(parts) if parts else _Part(np.zeros(0, np.int32), np.zeros(0, dtype), None)
    weights_values = None
    if weight_parts:
        wdtype = _common_dtype(func, "weights",
                               _dtypes(tuple(weight_parts), list(weight_parts.values())))
        weights_values = np.concatenate([
            weight_parts[k].values.astype(wdtype, copy=False) if k in weight_parts
            else np.ones(len(p.values), dtype=wdtype) for k, p in zip(keys, parts, strict=True)])
    return Built(keys, joined.values, joined.lengths, weights_values,
                            joined.validity, rows or 0)


def _map_parts(func: str, arg: str, arr: Any) -> tuple[pa.MapArray, np.ndarray, np.ndarray,
                                                        pa.Array, Jagged]:
    """Unpack a map array: (array, entries-per-row counts, valid entry positions, keys, items).

    Entries are relative to the first entry the map addresses; entries of null maps
    are left out of the valid positions. ``items`` is a Jagged view of the lists.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = _arrow.as_one_array(arr)
    if not isinstance(arr, pa.Array) or not isinstance(arr.type, pa.MapType):
        got = arr.type if isinstance(arr, pa.Array) else type(arr).__name__
        msg = f"{func}: {arg} must be a map<key, list<value>> array, got {got}"
        raise ArrowSparseTypeError(msg)
    _check_list_type(func, f"{arg} items", arr.type.item_type)
    struct = arr.values
    map_offsets = v.check_offsets(func, f"{arg} offsets", _arrow.offsets_view(arr), len(struct))
    raw = np.diff(map_offsets).astype(np.int64)
    valid = _arrow.validity_of(arr)
    counts = raw if valid is None else np.where(valid, raw, 0)
    first, num_entries = int(map_offsets[0]), int(map_offsets[-1] - map_offsets[0])
    entry_row = np.repeat(np.arange(len(arr), dtype=np.int64), raw)
    entries = np.arange(num_entries, dtype=np.int64) if valid is None else \
        np.flatnonzero(valid[entry_row])
    keys = struct.field(0).slice(first, num_entries)
    items = Jagged.from_arrow(struct.field(1).slice(first, num_entries))
    return arr, counts, entries, keys, items


def _item_lengths(items: Jagged) -> np.ndarray:
    raw = np.diff(items.offsets).astype(np.int64)
    return raw if items.validity is None else np.where(items.validity, raw, 0)


def _from_map(func: str, data: Any, keys: Any, weights: Any) -> Built:
    arr, counts, entries, key_arr, items = _map_parts(func, "batch_or_map_array", data)
    rows = len(arr)
    entry_row = np.repeat(np.arange(rows, dtype=np.int64), counts)  # row of each valid entry
    if keys is None:
        present = key_arr if len(entries) == len(key_arr) else key_arr.take(pa.array(entries))
        unique = pc.unique(present)
        key_set = unique.take(pc.sort_indices(unique))
    else:
        wanted = _check_keys(func, "keys", keys)
        try:
            key_set = pa.array(list(wanted), type=key_arr.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            msg = (f"{func}: keys must be map keys of type {key_arr.type}, "
                   f"got {_keys_text(wanted)}")
            raise ArrowSparseTypeError(msg) from None
    num_keys = len(key_set)
    key_pos = pc.fill_null(pc.index_in(key_arr, value_set=key_set), -1).to_numpy()
    key_pos = key_pos[entries].astype(np.int64)
    found = key_pos >= 0
    sel, row_of = entries[found], entry_row[found]
    segment = key_pos[found] * rows + row_of
    order = np.argsort(segment, kind="stable")
    ent, segment = sel[order], segment[order]
    item_len = _item_lengths(items)
    lengths_sorted = item_len[ent]
    # sum of list lengths per (key, row); float64 weights are exact below 2**53 values
    lengths = np.bincount(segment, weights=lengths_sorted, minlength=num_keys * rows)
    lengths = lengths.astype(np.int32 if items.offsets.dtype == np.int32 else np.int64)
    starts = items.offsets[:-1][ent]
    leaf = items.values
    if isinstance(leaf, Jagged) or leaf.ndim != 1:
        _fail_nested(func, "batch_or_map_array items", arr.type.item_type)
    values = _take_ranges(leaf, starts, lengths_sorted)
    if items.values_validity is not None:
        vv = _take_ranges(items.values_validity, starts, lengths_sorted)
        if not vv.all():
            pos = v.first_true(~vv)
            v.fail_value(func, "batch_or_map_array", "has null values inside its lists; fill "
                         "them first (pyarrow.compute.fill_null)", pos, None)
    validity = _map_validity(arr, items, ent, segment, num_keys, rows)
    wvalues = None
    if weights is not None:
        wvalues = _map_weights(func, weights, rows, counts, entries, key_arr, item_len,
                               ent, lengths_sorted)
    return Built(tuple(key_set.to_pylist()), values, lengths, wvalues, validity,
                            rows)


def _map_validity(arr: pa.MapArray, items: Jagged, ent: np.ndarray, segment: np.ndarray,
                  num_keys: int, rows: int) -> np.ndarray | None:
    """Null maps null every key of the row; a key whose entries are all null lists is null."""
    map_valid = _arrow.validity_of(arr)
    if map_valid is None and items.validity is None:
        return None
    validity: np.ndarray = np.ones(num_keys * rows, dtype=bool)
    if map_valid is not None:
        validity.reshape(num_keys, rows)[:, ~map_valid] = False  # a view: writes through
    if items.validity is not None:
        per_segment = np.bincount(segment, minlength=num_keys * rows)
        null_entries = np.bincount(segment[~items.validity[ent]], minlength=num_keys * rows)
        validity[(per_segment > 0) & (null_entries == per_segment)] = False
    return None if validity.all() else validity


def _map_weights(func: str, weights: Any, rows: int, counts: np.ndarray, entries: np.ndarray,
                 key_arr: pa.Array, item_len: np.ndarray, ent: np.ndarray,
                 lengths_sorted: np.ndarray) -> np.ndarray:
    """Gather a parallel weights map with the same order as the values."""
    if not isinstance(weights, (pa.Array, pa.ChunkedArray)):
        msg = (f"{func}: weights for a map must be a parallel map<key, list<float>> array, "
               f"got {type(weights).__name__}")
        raise ArrowSparseTypeError(msg)
    warr, wcounts, wentries, wkeys, witems = _map_parts(func, "weights", weights)
    if len(warr) != rows:
        msg = f"{func}: weights has {len(warr)} maps but batch_or_map_array has {rows}"
        raise ArrowSparseValueError(msg)
    differ = wcounts != counts
    if differ.any():
        pos = v.first_true(differ)
        v.fail_value(func, "weights", f"has a different number of entries than the values "
                     f"map ({counts[pos]})", pos, wcounts[pos])
    entry_row = np.repeat(np.arange(rows, dtype=np.int64), counts)
    if len(entries):
        same = pc.equal(key_arr.take(pa.array(entries)), wkeys.take(pa.array(wentries)))
        mismatch = ~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
        if mismatch.any():
            i = v.first_true(mismatch)
            v.fail_value(func, "weights", "keys differ from the values map's (by row; the "
                         f"values map has {key_arr[int(entries[i])].as_py()!r})",
                         int(entry_row[i]), repr(wkeys[int(wentries[i])].as_py()))
    wlen = _item_lengths(witems)
    differ = wlen[wentries] != item_len[entries]
    if differ.any():
        i = v.first_true(differ)
        v.fail_value(func, "weights", "list lengths differ from the values map's (by row; "
                     f"key {key_arr[int(entries[i])].as_py()!r} has {item_len[entries[i]]})",
                     int(entry_row[i]), wlen[wentries[i]])
    wleaf = witems.values
    if isinstance(wleaf, Jagged) or wleaf.ndim != 1:
        _fail_nested(func, "weights items", warr.type.item_type)
    if witems.values_validity is not None:
        vv = _take_ranges(witems.values_validity, witems.offsets[:-1][wentries], wlen[wentries])
        if not vv.all():
            pos = v.first_true(~vv)
            v.fail_value(func, "weights", "has null values inside its lists; fill them first "
                         "(pyarrow.compute.fill_null)", pos, None)
    # valid entries line up one to one: the k-th valid entry of each map
    wpos = np.empty(len(item_len), dtype=np.int64)
    wpos[entries] = wentries
    return _take_ranges(wleaf, witems.offsets[:-1][wpos[ent]], lengths_sorted)


def _from_batch(func: str, batch: pa.RecordBatch | pa.Table, keys: Any,
                weights: Any) -> Built:
    one_column = weights if isinstance(weights, str) else None
    if weights is None or one_column is not None:
        wmap: dict[Hashable, Any] = {}
    elif isinstance(weights, Mapping):
        wmap = dict(weights)
    else:
        msg = (f"{func}: weights for a batch must be a column name or a {{key: column name}} "
               f"mapping, got {type(weights).__name__}")
        raise ArrowSparseTypeError(msg)
    for key, col in wmap.items():
        if not isinstance(col, str):
            msg = f"{func}: weights[{key!r}] must be a column name, got {type(col).__name__}"
            raise ArrowSparseTypeError(msg)
    if keys is None:
        used = set(wmap.values()) | {one_column}
        fields = [f for f in batch.schema if f.name not in used]
        key_tuple = _check_keys(func, "column names",
                                [f.name for f in fields if _arrow.is_list_type(f.type)])
        if not key_tuple:
            hint = "; pass a map column itself, not a batch holding it" \
                if any(isinstance(f.type, pa.MapType) for f in fields) else ""
            msg = f"{func}: batch_or_map_array has no list or large_list column{hint}"
            raise ArrowSparseTypeError(msg)
    else:
        key_tuple = _check_keys(func, "keys", keys)
    if one_column is not None:
        if len(key_tuple) != 1:
            msg = (f"{func}: weights={one_column!r} names one column but {len(key_tuple)} keys "
                   f"are selected; pass weights={{key: column name}}")
            raise ArrowSparseValueError(msg)
        wmap = {key_tuple[0]: one_column}
    columns = {key: _column_chunks(func, batch, "keys", i, key)
               for i, key in enumerate(key_tuple)}
    wcols = {key: _column_chunks(func, batch, "weights", i, col)
             for i, (key, col) in enumerate(wmap.items())}
    return _from_columns(func, columns, wcols, batch.num_rows)


def _column_chunks(func: str, batch: pa.RecordBatch | pa.Table, arg: str, i: int,
                   name: Any) -> list[Jagged]:
    """Return the chunks of column ``name`` as Jagged views (zero-copy)."""
    found = batch.schema.get_all_field_indices(name) if isinstance(name, str) else []
    if not found:
        msg = v.message(func, arg, "names a column not in the batch", i, repr(name))
        raise ArrowSparseKeyError(msg)
    if len(found) > 1:
        v.fail_value(func, arg, f"names a column that appears {len(found)} times", i,
                     repr(name))
    column = batch.column(found[0])
    _check_list_type(func, f"column {name!r}", column.type)
    if isinstance(column, pa.ChunkedArray):
        chunks = column.chunks or [pa.array([], type=column.type)]
    else:
        chunks = [column]
    return [Jagged.from_arrow(chunk) for chunk in chunks]


def _to_map(func: str, keys: tuple[Hashable, ...], values: np.ndarray, lengths: np.ndarray,
            validity: np.ndarray | None, rows: int) -> pa.MapArray:
    """Build the ``map<key, list<value>>`` array of key-major ``values`` (see ``to_arrow``).

    Row ``r``'s entries are its keys in key order: a key whose row is non-empty, or null
    (a null list); a row null for every key is a null map. One gather of the values.
    """
    num_keys = len(keys)
    try:
        key_array = pa.array(list(keys))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        msg = f"{func}: the keys {_keys_text(keys)} do not make one Arrow type ({exc})"
        raise ArrowSparseTypeError(msg) from None
    by_row = lengths.reshape(num_keys, rows).T  # [row, key]
    valid = np.ones((rows, num_keys), dtype=bool) if validity is None else \
        validity.reshape(num_keys, rows).T
    null_map = ~valid.any(axis=1) if num_keys else np.zeros(rows, dtype=bool)
    keep = ((by_row > 0) & valid) | (~valid & ~null_map[:, None])
    row_of, key_of = np.nonzero(keep)  # row-major: rows in order, keys in key order
    entry_len = by_row[row_of, key_of]
    key_major = key_of.astype(np.int64) * rows + row_of
    starts = np.zeros(num_keys * rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    gathered = _take_ranges(values, starts[key_major], entry_len)
    list_offsets = np.zeros(len(row_of) + 1, dtype=np.int64)
    np.cumsum(entry_len, out=list_offsets[1:])
    entry_valid = valid[row_of, key_of]
    large = lengths.dtype == np.int64
    offsets_type = pa.int64() if large else pa.int32()
    items = (pa.LargeListArray if large else pa.ListArray).from_arrays(
        pa.array(list_offsets, offsets_type), pa.array(gathered),
        mask=None if entry_valid.all() else pa.array(~entry_valid))
    map_offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(keep.sum(axis=1), out=map_offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(map_offsets, pa.int32()), key_array.take(pa.array(key_of)), items,
        mask=pa.array(null_map) if null_map.any() else None)
