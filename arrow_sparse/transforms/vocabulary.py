"""Vocabularies: value counts, fitting, categorify, and the Parquet round trip.

NVTabular's ``Categorify`` without cuDF or Dask: :func:`fit_vocabulary` counts the
distinct integers or strings of a column (or of batches) into a :class:`Vocabulary`,
which :func:`categorify` uses to encode values as ids and :meth:`Vocabulary.save`
keeps as a Parquet file. docs/feature-transforms.md gives the id convention and how it
relates to NVTabular's. Every name here is also importable from
``arrow_sparse.transforms`` and ``arrow_sparse``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow, _files
from .. import _validate as v
from .._backend import (
    array_module,
    device_checks,
    device_of,
    get_kernel,
    is_cupy_array,
    module_of,
    read_back,
    transfer,
)
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ._leaf import (
    _arrow_leaf,
    _ElementOp,
    _Leaf,
    _map_elements,
    _not_a_column,
    _numpy_leaf,
)

__all__ = ["Vocabulary", "categorify", "fit_vocabulary", "value_counts"]

#: Id of padding (never produced by :func:`categorify`; the default ``pad_value``).
PADDING_ID = 0
#: Id of null elements and of values not in the vocabulary.
MISSING_ID = 1
#: Id of the most frequent vocabulary entry; the others follow in order.
FIRST_ID = 2

_VOCABULARY_KEY = b"arrow_sparse.vocabulary"
_COLUMN_TYPES = (pa.Array, pa.ChunkedArray, Jagged, np.ndarray)



class _CategorifyOp(_ElementOp):
    keep_nulls = False

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary

    def check(self, func: str, leaf: _Leaf) -> None:
        kind = self.vocabulary.kind
        if (kind == "int64") != (leaf.kind == "int") or leaf.kind in ("float", "bool"):
            msg = (f"{func}: values of {leaf.desc} do not match a vocabulary of {kind} "
                   "values; vocabularies hold integers or strings")
            raise ArrowSparseTypeError(msg)

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        table, strings = self.vocabulary._lookup_table(device_of(out))
        if leaf.kind == "int":
            get_kernel("transforms", "lookup_ints", module_of(out))(
                leaf.values, leaf.validity(), start, stop, table, MISSING_ID, out)
        else:
            get_kernel("transforms", "lookup_strings")(
                leaf.offsets, leaf.data, leaf.validity(), start, stop, strings, table, MISSING_ID,
                out)




def categorify(values: Any, vocabulary: Vocabulary) -> Any:
    """Encode integers or strings as vocabulary ids (0 padding, 1 null or unknown, >= 2 known).

    Parameters
    ----------
    values
        Arrow list array (any nesting) or ChunkedArray of integers or strings, a flat
        Arrow array, a :class:`Jagged` or a numpy array of integers.
    vocabulary
        A :class:`Vocabulary` of the same kind (integers or strings), e.g. from
        :func:`fit_vocabulary`.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray, Jagged or numpy.ndarray
        The input's kind with int64 ids. Offsets and row validity are the input's
        (zero-copy); null rows stay null. Elements are never null: a null element gets
        id 1.

    Raises
    ------
    TypeError
        ``vocabulary`` is not a :class:`Vocabulary`, or its kind does not match the
        values (integers against strings, or floats).

    See Also
    --------
    fit_vocabulary : Build the vocabulary.
    hash_bucket : Ids without a vocabulary.

    Notes
    -----
    Id 0 is reserved for padding (the default ``pad_value`` of :func:`pad_or_truncate`)
    and never produced; id 1 is given to null elements and to values not in the
    vocabulary (out-of-vocabulary); vocabulary entry ``k`` (in :attr:`Vocabulary.values`
    order: descending count, ties by ascending value) gets id ``k + 2``. An embedding
    table for the ids needs :attr:`Vocabulary.num_ids` rows. NVTabular's ``Categorify``
    reserves 0 for padding too, but its current releases give null 1 and
    out-of-vocabulary values 2 and start the vocabulary at 3; here one id covers both
    (docs/feature-transforms.md compares the two).

    On the device (a CuPy array, or a Jagged of integers on the device): CuPy results.
    An integer vocabulary is copied to each device it is used on and its lookup table
    built there once, then kept: the first call on a device synchronises once, later
    ones not at all.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> vocab = asp.fit_vocabulary(arr, freq_threshold=2)
    >>> vocab.values, vocab.counts
    (array([2, 3, 6]), array([2, 2, 2]))
    >>> asp.categorify(arr, vocab).to_pylist()
    [[1, 2, 3], [2, 1, 4, 1], None, [3, 4]]
    >>> words = pa.array([["b", "a", None], ["b", "z"]])
    >>> asp.categorify(words, asp.fit_vocabulary(pa.array(["a", "b", "b"]))).to_pylist()
    [[2, 3, 1], [2, 1]]
    """
    func = "categorify"
    if not isinstance(vocabulary, Vocabulary):
        msg = f"{func}: vocabulary must be a Vocabulary, got {type(vocabulary).__name__}"
        raise ArrowSparseTypeError(msg)
    return _map_elements(func, values, _CategorifyOp(vocabulary))



# ----------------------------------------------------------------------- counting
class _Counts:
    """Distinct values and their counts of one batch (unordered)."""

    __slots__ = ("kind", "keys", "counts", "arrow_type", "dtype")

    def __init__(self, kind: str, keys: Any, counts: np.ndarray, arrow_type: Any,
                 dtype: Any) -> None:
        self.kind = kind              # "int", "float", "bool" or "bytes"
        self.keys = keys              # numpy (numbers) or pa.Array (bytes)
        self.counts = counts
        self.arrow_type = arrow_type  # leaf Arrow type (Arrow input) or None
        self.dtype = dtype            # leaf numpy dtype (numbers) or None


def _one_level(func: str, x: Any) -> tuple[np.ndarray, np.ndarray | None, _Leaf, Any]:
    """Offsets, row validity and leaf of any column (nested lists are flattened).

    Device data (a Jagged, a CuPy array) gives device arrays; the rows of a nested
    Jagged are then those of its leaf level, null where a null row above covers them.
    """
    xp = array_module(func, values=x)
    if xp is not np and not isinstance(x, Jagged):
        arr = v.as_values_array(func, "values", x, min_ndim=0, device=True).reshape(-1)
        offsets = xp.zeros(2, dtype=np.int64)
        offsets[1] = len(arr)
        return offsets, None, _numpy_leaf(arr, None), None
    if isinstance(x, Jagged):
        if isinstance(x.values, Jagged):
            return _one_level(func, x.to_arrow() if xp is np else _leaf_rows(x))
        if x.values.ndim != 1:
            msg = f"{func}: rows must hold scalars, got values of shape {x.values.shape}"
            raise ArrowSparseTypeError(msg)
        return x.offsets, x.validity, _numpy_leaf(x.values, x.values_validity), None
    if isinstance(x, pa.Array):
        while _arrow.is_list_type(x.type) and _arrow.is_list_type(x.type.value_type):
            x = _arrow.list_level(func, "values", x).array.flatten()
        if _arrow.is_list_type(x.type):
            level = _arrow.list_level(func, "values", x)
            leaf, child = _arrow_leaf(func, level.child)
            return level.offsets, level.validity, leaf, child.type
        if pa.types.is_nested(x.type):
            msg = f"{func}: values of Arrow type {x.type} are not supported"
            raise ArrowSparseTypeError(msg)
        leaf, x = _arrow_leaf(func, x)
        return np.array([0, len(x)], dtype=np.int64), None, leaf, x.type
    if isinstance(x, np.ndarray) and x.dtype.kind in "OSU":
        msg = (f"{func}: values must be numeric numpy arrays; pass strings as an Arrow "
               f"array (pa.array(...)), got dtype {x.dtype}")
        raise ArrowSparseTypeError(msg)
    if not isinstance(x, (np.ndarray, list, tuple, range)):
        raise _not_a_column(func, "values", x, "an Arrow array, a Jagged or a numpy array")
    arr = v.as_values_array(func, "values", x, min_ndim=0).reshape(-1)
    return np.array([0, len(arr)], dtype=np.int64), None, _numpy_leaf(arr, None), None


def _leaf_rows(j: Jagged) -> Jagged:
    """Return the leaf level of a nested device Jagged; rows a null row above covers are null.

    Each level below the top reads back the number of its rows kept (a compaction).
    """
    xp = j.xp
    row_valid = j.validity
    while isinstance(j.values, Jagged):
        inner = j.values
        _, kept = get_kernel("transforms", "compact", xp)(j.offsets, row_valid, None)
        row_valid = xp.zeros(len(inner), dtype=bool)
        row_valid[kept] = True
        if inner.validity is not None:
            row_valid = xp.logical_and(row_valid, inner.validity)
        j = inner
    return Jagged._trusted(j.values, j.offsets, row_valid, j.values_validity)


def _count_batch(func: str, x: Any) -> _Counts:
    x = _arrow.as_arrow(x)
    if isinstance(x, pa.ChunkedArray):
        if x.num_chunks == 0:
            return _count_batch(func, pa.array([], type=x.type))
        return _merge_counts(func, [_count_batch(func, c) for c in x.chunks])
    offsets, validity, leaf, arrow_type = _one_level(func, x)
    xp = module_of(offsets)
    if leaf.kind == "bytes":
        positions, counts = get_kernel("transforms", "count_strings")(
            leaf.offsets, leaf.data, leaf.validity(), offsets, validity)
        assert leaf._source is not None
        keys = _strings_at(leaf._source.type, leaf.offsets, leaf.data, positions)
        return _Counts("bytes", keys, counts, arrow_type, None)
    values = leaf.values
    if leaf.kind == "int":
        keys, counts = get_kernel("transforms", "count_ints", xp)(
            values, leaf.validity(), offsets, validity)
        return _Counts("int", keys, counts, arrow_type, values.dtype)
    # floats and booleans: gather the counted elements, then count by sorting (NaNs
    # count as one value, numpy's and CuPy's default).
    _, positions = get_kernel("transforms", "compact", xp)(offsets, validity, leaf.validity())
    keys, counts = xp.unique(values[positions], return_counts=True)
    return _Counts(leaf.kind, keys, counts.astype(np.int64), arrow_type, values.dtype)


def _merge_counts(func: str, parts: list[_Counts]) -> _Counts:
    """Sum the counts of equal values over batches."""
    if len(parts) == 1:
        return parts[0]
    kinds = {p.kind for p in parts}
    if len(kinds) > 1:
        msg = f"{func}: batches mix value kinds ({', '.join(sorted(kinds))})"
        raise ArrowSparseTypeError(msg)
    first = parts[0]
    parts = [p for p in parts if len(p.counts)] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    counts = np.concatenate([p.counts for p in parts])
    if first.kind == "bytes":
        strings = {pa.types.is_string(p.keys.type) or pa.types.is_large_string(p.keys.type)
                   for p in parts}
        if len(strings) > 1:
            msg = f"{func}: batches mix string and binary values"
            raise ArrowSparseTypeError(msg)
        large = pa.large_string() if strings.pop() else pa.large_binary()
        keys = pa.concat_arrays([p.keys.cast(large) for p in parts])
        table = pa.table({"value": keys, "count": counts}).group_by(
            "value", use_threads=False).aggregate([("count", "sum")])
        return _Counts("bytes", table.column("value").combine_chunks(),
                       table.column("count_sum").to_numpy().astype(np.int64),
                       first.arrow_type, None)
    dtypes = [p.dtype for p in parts]
    dtype = np.result_type(*dtypes)
    keys = np.concatenate([p.keys.astype(dtype) for p in parts])
    if first.kind == "float":  # one NaN group: NaNs sort last
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        new = np.ones(len(keys), dtype=bool)
        same = (sorted_keys[1:] == sorted_keys[:-1]) | (
            np.isnan(sorted_keys[1:]) & np.isnan(sorted_keys[:-1]))
        new[1:] = ~same
    else:
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        new = np.ones(len(keys), dtype=bool)
        new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.flatnonzero(new)
    summed = np.add.reduceat(counts[order], starts) if len(keys) else counts
    return _Counts(first.kind, sorted_keys[starts], summed.astype(np.int64), first.arrow_type,
                   dtype)


def _strings_at(arrow_type: Any, offsets: np.ndarray, data: np.ndarray,
                positions: np.ndarray) -> pa.Array:
    """Return the strings at ``positions`` of a string array's buffers as a new large array.

    ``large_string`` for text (``arrow_type`` a string type), else ``large_binary``.
    """
    new_offsets, new_data = get_kernel("transforms", "gather_strings")(offsets, data, positions)
    text = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or \
        pa.types.is_string_view(arrow_type)
    return pa.Array.from_buffers(pa.large_string() if text else pa.large_binary(),
                                 len(positions),
                                 [None, pa.py_buffer(new_offsets), pa.py_buffer(new_data)])


def _ordered(keys: Any, counts: np.ndarray) -> tuple[Any, np.ndarray]:
    """Sort by descending count, ties by ascending value (bytes: lexicographic).

    Strings come back as a large array (``large_string`` or ``large_binary``).
    """
    if isinstance(keys, pa.Array):
        if pa.types.is_string_view(keys.type) or pa.types.is_binary_view(keys.type):
            keys = keys.cast(pa.large_string() if pa.types.is_string_view(keys.type)
                             else pa.large_binary())
        offsets, data = _arrow.binary_buffers("value_counts", "values", keys)
        counts = np.asarray(counts, dtype=np.int64)
        order = get_kernel("transforms", "order_strings")(offsets, data, counts)
        return _strings_at(keys.type, offsets, data, order), counts[order]
    xp = module_of(keys)
    # counting sorted most already; the device's counts are sorted as int64 (unique)
    unsorted = keys.dtype == np.uint64 if xp is not np else not (keys[1:] > keys[:-1]).all()
    if len(keys) > 1 and unsorted:
        by_value = xp.argsort(keys)  # the keys are distinct: any sort is stable enough
        keys, counts = keys[by_value], counts[by_value]
    order = get_kernel("transforms", "order_by_count", xp)(counts)
    return keys[order], counts[order]


def value_counts(values: Any) -> Any:
    """Count each distinct value over all rows, most frequent first.

    Parameters
    ----------
    values
        Arrow list array (any nesting) or ChunkedArray (all chunks together) of
        numbers or strings, a flat Arrow array, a :class:`Jagged` or a numpy array.

    Returns
    -------
    pyarrow.StructArray or tuple of numpy.ndarray
        Arrow input: a StructArray with fields ``values`` (the input's value type) and
        ``counts`` (int64), as ``pyarrow.compute.value_counts`` gives. Jagged or numpy
        input: ``(values, counts)`` arrays, as ``numpy.unique(..., return_counts=True)``.
        Ordered by descending count, ties by ascending value (strings: by bytes).

    Raises
    ------
    TypeError
        Unsupported value types.

    See Also
    --------
    fit_vocabulary : Keep the counts as a vocabulary.

    Notes
    -----
    Null rows and null elements are not counted. Floats count NaN as one value.

    On the device (a CuPy array, or a Jagged of numbers on the device): CuPy arrays
    back; two synchronisations (the counted elements, then the distinct values, size
    the results), one more per level of a nested Jagged.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.value_counts(arr).to_pylist()[:3]
    [{'values': 2, 'counts': 2}, {'values': 3, 'counts': 2}, {'values': 6, 'counts': 2}]
    >>> asp.value_counts(asp.Jagged.from_arrow(arr))
    (array([2, 3, 6, 1, 4, 7]), array([2, 2, 2, 1, 1, 1]))
    """
    func = "value_counts"
    back = _arrow.like_series(values)  # a Polars / pandas Series comes back as one
    values = _arrow.as_arrow(values)
    counted = _count_batch(func, values)
    keys = counted.keys
    if not isinstance(keys, pa.Array) and keys.dtype != counted.dtype:
        keys = keys.astype(counted.dtype)  # uint64: order by the unsigned value
    keys, counts = _ordered(keys, counted.counts)
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        device_checks(func, module_of(counts))
        return keys, counts
    if isinstance(keys, pa.Array):
        target = counted.arrow_type
        if _arrow.is_binary_type(target) and keys.type != target:
            keys = keys.cast(target)
    else:
        keys = pa.array(keys, type=counted.arrow_type)
    return back(pa.StructArray.from_arrays([keys, pa.array(counts, type=pa.int64())],
                                           names=["values", "counts"]), rows=False)


# --------------------------------------------------------------------- vocabulary
class Vocabulary:
    """Distinct integers or strings with their counts; entry ``k`` encodes as id ``k + 2``.

    Entries are kept in id order: descending count, ties by ascending value (strings
    by their bytes). Id 0 is padding and id 1 null or out-of-vocabulary (see
    :func:`categorify`). Built by :func:`fit_vocabulary`; combined with
    :meth:`merge`; stored with :meth:`save` / :meth:`load`.

    Parameters
    ----------
    values
        Distinct integers (numpy, Arrow or a sequence; stored as int64) or strings
        (an Arrow ``string``/``large_string`` or ``binary``/``large_binary`` array;
        stored large). No nulls.
    counts
        Non-negative counts, one per value. The entries are sorted into id order.

    Raises
    ------
    TypeError
        Values that are neither integers nor strings; non-integer counts.
    ValueError
        Repeated values, nulls, negative counts or a length mismatch.

    Examples
    --------
    >>> vocab = asp.Vocabulary(pa.array(["b", "a", "c"]), [1, 5, 1])
    >>> vocab
    Vocabulary(kind=string, size=3, values=['a', 'b', 'c'], counts=[5, 1, 1])
    >>> vocab.ids
    array([2, 3, 4])
    """

    __slots__ = ("_values", "_counts", "_kind", "_tables")

    def __init__(self, values: Any, counts: Any) -> None:
        func = "Vocabulary"
        keys: Any
        if isinstance(values, pa.ChunkedArray):
            values = _arrow.as_one_array(values)
        if isinstance(values, pa.Array) and not pa.types.is_integer(values.type):
            t = values.type
            if not (_arrow.is_binary_type(t) or pa.types.is_string_view(t)
                    or pa.types.is_binary_view(t)):
                msg = f"{func}: values must be integers or strings, got Arrow type {t}"
                raise ArrowSparseTypeError(msg)
            if values.null_count:
                pos = v.first_true(values.is_null().to_numpy(zero_copy_only=False))
                v.fail_value(func, "values", "must not contain nulls", pos, None)
            is_str = pa.types.is_string(t) or pa.types.is_large_string(t) or \
                pa.types.is_string_view(t)
            keys = values.cast(pa.large_string() if is_str else pa.large_binary())
            kind = "string" if is_str else "binary"
        else:
            keys = v.as_index_array(func, "values", values).astype(np.int64, copy=False)
            kind = "int64"
        cnt = v.check_lengths(func, "counts", counts).astype(np.int64, copy=False)
        if len(cnt) != len(keys):
            msg = f"{func}: counts has {len(cnt)} entries but there are {len(keys)} values"
            raise ArrowSparseValueError(msg)
        _check_unique(func, keys)
        self._values, self._counts = _ordered(keys, cnt)
        self._kind = kind
        self._tables: dict[str, Any] = {}

    @property
    def values(self) -> Any:
        """Entries in id order: int64 numpy array, or Arrow large_string/large_binary."""
        return self._values

    @property
    def counts(self) -> np.ndarray:
        """Count of each entry (int64), non-increasing."""
        return self._counts

    @property
    def ids(self) -> np.ndarray:
        """Id of each entry: ``2, 3, ...`` (int64)."""
        return np.arange(FIRST_ID, FIRST_ID + len(self), dtype=np.int64)

    @property
    def kind(self) -> str:
        """``"int64"``, ``"string"`` or ``"binary"``."""
        return self._kind

    @property
    def num_ids(self) -> int:
        """Number of ids :func:`categorify` can produce, reserved ones included (``len + 2``)."""
        return len(self) + FIRST_ID

    def __len__(self) -> int:
        return len(self._counts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        if self._kind != other._kind or not np.array_equal(self._counts, other._counts):
            return False
        if isinstance(self._values, pa.Array):
            return bool(self._values.equals(other._values))
        return bool(np.array_equal(self._values, other._values))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = 6
        vals = self._values[:shown]
        vals = vals.to_pylist() if isinstance(vals, pa.Array) else vals.tolist()
        cnts = self._counts[:shown].tolist()
        more = ", ..." if len(self) > shown else ""
        vtext = repr(vals)[:-1] + more + "]"
        ctext = repr(cnts)[:-1] + more + "]"
        return f"Vocabulary(kind={self._kind}, size={len(self)}, values={vtext}, counts={ctext})"

    def merge(self, *others: Vocabulary, freq_threshold: int = 1,
              max_size: int | None = None) -> Vocabulary:
        """Combine vocabularies by adding the counts of equal values, then prune.

        Parameters
        ----------
        *others
            Vocabularies of the same kind.
        freq_threshold
            Keep entries whose summed count is at least this.
        max_size
            Keep at most this many entries (the most frequent; ties by value).

        Returns
        -------
        Vocabulary
            A new vocabulary; ``Vocabulary.merge(a, b)`` and ``a.merge(b)`` are the same.

        Raises
        ------
        TypeError
            A non-Vocabulary or one of another kind.

        Notes
        -----
        Merging is exact when the inputs were not pruned (fitted with the defaults
        ``freq_threshold=1, max_size=None``): prune once, at the merge.

        Examples
        --------
        >>> a = asp.fit_vocabulary(np.array([1, 1, 2]))
        >>> b = asp.fit_vocabulary(np.array([2, 2, 3]))
        >>> a.merge(b)
        Vocabulary(kind=int64, size=3, values=[2, 1, 3], counts=[3, 2, 1])
        >>> a.merge(b, freq_threshold=2).values
        array([2, 1])
        """
        func = "Vocabulary.merge"
        for i, other in enumerate(others):
            if not isinstance(other, Vocabulary):
                msg = f"{func}: others[{i}] must be a Vocabulary, got {type(other).__name__}"
                raise ArrowSparseTypeError(msg)
            if other.kind != self.kind:
                msg = f"{func}: cannot merge a {other.kind} vocabulary into a {self.kind} one"
                raise ArrowSparseTypeError(msg)
        threshold, size = _check_prune(func, freq_threshold, max_size)
        kind = "int" if self.kind == "int64" else "bytes"
        parts = [_Counts(kind, voc._values, voc._counts, None, np.dtype(np.int64))
                 for voc in (self, *others)]
        merged = _merge_counts(func, parts)
        return _pruned(merged.keys, merged.counts, threshold, size)

    def to_arrow(self) -> pa.Table:
        """Return the vocabulary as an Arrow table: columns ``value``, ``count``, ``id``.

        Examples
        --------
        >>> asp.fit_vocabulary(np.array([5, 5, 7])).to_arrow().to_pydict()
        {'value': [5, 7], 'count': [2, 1], 'id': [2, 3]}
        """
        values = self._values if isinstance(self._values, pa.Array) else pa.array(self._values)
        meta = {"format_version": 1, "kind": self._kind, "padding_id": PADDING_ID,
                "missing_id": MISSING_ID, "first_id": FIRST_ID}
        return pa.table({"value": values, "count": pa.array(self._counts, type=pa.int64()),
                         "id": pa.array(self.ids)},
                        metadata={_VOCABULARY_KEY: json.dumps(meta).encode()})

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the vocabulary to a Parquet file (columns ``value``, ``count``, ``id``).

        Parameters
        ----------
        path
            File path.

        Raises
        ------
        TypeError
            ``path`` is not a str or path.

        See Also
        --------
        Vocabulary.load : Read it back (equal to the saved one).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> vocab = asp.fit_vocabulary(pa.array([["a", "b"], ["b"]]))
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.parquet"
        >>> vocab.save(path)
        >>> asp.Vocabulary.load(path) == vocab
        True
        """
        import pyarrow.parquet as pq

        # Page checksums let load tell a damaged file from a vocabulary.
        pq.write_table(self.to_arrow(), _check_path("Vocabulary.save", path),
                       write_page_checksum=True)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`.

        Parameters
        ----------
        path
            File path.

        Returns
        -------
        Vocabulary
            Equal to the saved one (same values, counts and ids).

        Raises
        ------
        TypeError
            ``path`` is not a str or path.
        OSError
            No such file, a directory, no permission
            (:class:`~arrow_sparse.errors.ArrowSparseIOError`).
        ValueError
            A file that is not Parquet, or a corrupt or truncated one (the message
            names the file); a file that is not a vocabulary (missing columns,
            repeated values, ids not in order).

        Notes
        -----
        :meth:`save` writes page checksums and they are verified here, so a damaged
        page raises instead of giving other values.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.parquet"
        >>> asp.fit_vocabulary(np.array([3, 3, 1])).save(path)
        >>> asp.Vocabulary.load(path)
        Vocabulary(kind=int64, size=2, values=[3, 1], counts=[2, 1])
        """
        func = "Vocabulary.load"
        table = _files.read_parquet(func, _files.check_path(func, "path", path))
        missing = [c for c in ("value", "count") if c not in table.column_names]
        if missing:
            msg = f"{func}: {os.fspath(path)!r} is not a vocabulary: no column {missing[0]!r}"
            raise ArrowSparseValueError(msg)
        voc = cls(table.column("value").combine_chunks(),
                  table.column("count").combine_chunks())
        if "id" in table.column_names:
            ids = table.column("id").to_numpy()
            saved = table.column("value").combine_chunks()
            same = saved.cast(voc._values.type).equals(voc._values) \
                if isinstance(voc._values, pa.Array) else np.array_equal(saved, voc._values)
            if not same or not np.array_equal(ids, voc.ids):
                msg = f"{func}: {os.fspath(path)!r} has ids out of the vocabulary order"
                raise ArrowSparseValueError(msg)
        return voc

    def _lookup_table(self, device: str = "cpu") -> tuple[Any, Any]:
        """Return the hash table :func:`categorify` probes on ``device`` (``"cuda:N"``).

        Built once per device, then cached. For strings (host only), also the
        vocabulary's offsets and data buffer. On a CUDA device the values are copied
        there and the table is built there; reading back the id of INT64_MIN is that
        build's one synchronisation.
        """
        table = self._tables.get(device)
        if table is not None:
            return table  # type: ignore[no-any-return]
        if isinstance(self._values, pa.Array):
            leaf = _arrow_leaf("categorify", self._values)[0]
            strings = (leaf.offsets, leaf.data)
            table = (get_kernel("transforms", "build_string_table")(*strings), strings)
        elif device == "cpu":
            table = (get_kernel("transforms", "build_int_table")(self._values), None)
        else:
            keys = transfer("categorify", self._values, device)
            xp = module_of(keys)
            with xp.cuda.Device(keys.device.id):
                table = (get_kernel("transforms", "build_int_table", xp)(keys), None)
        self._tables[device] = table
        return table  # type: ignore[no-any-return]


def _check_unique(func: str, keys: Any) -> None:
    """Raise at the first value equal to an earlier one."""
    if len(keys) < 2:
        return
    if isinstance(keys, pa.Array):
        order = pc.sort_indices(keys).to_numpy()
        sorted_keys = keys.take(pa.array(order))
        same = pc.equal(sorted_keys[1:], sorted_keys[:-1]).to_numpy(zero_copy_only=False)
    else:
        order = np.argsort(keys, kind="stable")
        same = keys[order][1:] == keys[order][:-1]
    if same.any():
        pos = int(order[1:][same].min())
        value = keys[pos].as_py() if isinstance(keys, pa.Array) else keys[pos]
        v.fail_value(func, "values", "must be unique", pos, value)


def _check_path(func: str, path: Any) -> str:
    if not isinstance(path, (str, os.PathLike)):
        msg = f"{func}: path must be a str or os.PathLike, got {type(path).__name__}"
        raise ArrowSparseTypeError(msg)
    return str(os.fspath(path))


def _check_prune(func: str, freq_threshold: Any, max_size: Any) -> tuple[int, int | None]:
    threshold = v.check_count(func, "freq_threshold", freq_threshold)
    size = None if max_size is None else v.check_count(func, "max_size", max_size)
    return threshold, size


def _pruned(keys: Any, counts: np.ndarray, threshold: int, size: int | None) -> Vocabulary:
    keep = counts >= threshold
    if not keep.all():
        keys = keys.filter(pa.array(keep)) if isinstance(keys, pa.Array) else keys[keep]
        counts = counts[keep]
    voc = Vocabulary.__new__(Vocabulary)
    keys, counts = _ordered(keys, counts)
    if size is not None:
        keys, counts = keys[:size], counts[:size]
    voc._values = keys
    voc._counts = counts
    voc._kind = "int64" if not isinstance(keys, pa.Array) else \
        "string" if pa.types.is_large_string(keys.type) else "binary"
    voc._tables = {}
    return voc


def fit_vocabulary(column_or_batches: Any, freq_threshold: int = 1,
                   max_size: int | None = None) -> Vocabulary:
    """Count the distinct integers or strings of a column (or of batches) into a Vocabulary.

    Parameters
    ----------
    column_or_batches
        A column (Arrow list array of any nesting, ChunkedArray or flat array of
        integers or strings; a :class:`Jagged`; a numpy array of integers), or a list
        or iterator of such columns (e.g. one per Parquet batch), counted one at a time.
    freq_threshold
        Keep values seen at least this many times (NVTabular's ``freq_threshold``);
        the others encode as id 1.
    max_size
        Keep at most this many entries, the most frequent (ties by ascending value),
        so ids stay below ``max_size + 2``. Default: no limit (0 keeps none; unlike
        NVTabular's ``max_size``, which bounds the whole id range and where 0 means no
        limit).

    Returns
    -------
    Vocabulary
        Entries ordered by descending count, ties by ascending value; entry ``k`` has
        id ``k + 2``.

    Raises
    ------
    TypeError
        Float or boolean values, batches of different kinds, or not a column.
    ValueError
        Negative ``freq_threshold`` or ``max_size``, or no batches.

    See Also
    --------
    categorify : Encode with the vocabulary.
    Vocabulary.merge : Combine vocabularies fitted separately.

    Notes
    -----
    Null rows and null elements are not counted. Integers of any dtype are counted as
    int64 (a dense array when they span a small range, a hash table, or a sort when
    most values are distinct); uint64 values above ``2**63 - 1`` wrap to negative int64.

    Batches on the device (CuPy arrays, Jaggeds of integers on the device) are counted
    there, as :func:`value_counts` does, and their distinct values and counts copied to
    the host, where the vocabulary lives: three synchronisations per batch.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.fit_vocabulary(arr)
    Vocabulary(kind=int64, size=6, values=[2, 3, 6, 1, 4, 7], counts=[2, 2, 2, 1, 1, 1])
    >>> asp.fit_vocabulary([arr.slice(0, 2), arr.slice(2)], max_size=2).values
    array([2, 3])
    """
    func = "fit_vocabulary"
    threshold, size = _check_prune(func, freq_threshold, max_size)
    x = _arrow.as_arrow(column_or_batches)  # a Polars / pandas Series is read as Arrow
    if isinstance(x, (list, tuple)):
        x = [_arrow.as_arrow(b) for b in x]
    batches: Any
    if isinstance(x, _COLUMN_TYPES) or is_cupy_array(x):
        batches = [x]
    elif isinstance(x, (list, tuple)) and x and all(isinstance(b, _COLUMN_TYPES)
                                                    or is_cupy_array(b) for b in x):
        batches = x
    elif isinstance(x, (list, tuple, range)):
        batches = [x]
    elif isinstance(x, Iterator):
        batches = x
    else:
        raise _not_a_column(func, "column_or_batches", x,
                            "a column (Arrow array, Jagged, numpy array) or a list of them")
    parts: list[_Counts] = []
    for batch in batches:
        counted = _count_batch(func, batch)
        if counted.kind not in ("int", "bytes"):
            desc = counted.arrow_type if counted.arrow_type is not None else counted.dtype
            msg = (f"{func}: values of type {desc} cannot form a vocabulary; vocabularies "
                   "hold integers or strings (bucketize floats first)")
            raise ArrowSparseTypeError(msg)
        if counted.kind == "bytes":
            is_str = pa.types.is_string(counted.keys.type) or \
                pa.types.is_large_string(counted.keys.type)
            counted.keys = counted.keys.cast(pa.large_string() if is_str else pa.large_binary())
        else:
            keys = counted.keys.astype(np.int64, copy=False)
            if is_cupy_array(keys):  # the vocabulary lives in host memory
                keys, counted.counts = read_back(func, module_of(keys).stack(
                    [keys, counted.counts]))
            counted.keys = keys
            counted.dtype = np.dtype(np.int64)
        parts.append(counted)  # each batch's distinct values; merged once, at the end
    if not parts:
        msg = f"{func}: column_or_batches holds no batches"
        raise ArrowSparseValueError(msg)
    total = _merge_counts(func, parts)
    return _pruned(total.keys, total.counts, threshold, size)
