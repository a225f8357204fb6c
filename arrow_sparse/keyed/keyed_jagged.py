"""``KeyedJagged``: several named jagged features of one batch.

TorchRec's ``KeyedJaggedTensor`` and Caffe2's ``LIST<MAP<INT, LIST<INT>>>``: ``num_keys``
features over the same ``batch_size`` rows, stored *key-major* as one values array, the
values of key 0 for every row first, then those of key 1, and so on. ``lengths`` has
``num_keys * batch_size`` entries in the same order. ``docs/keyed-arrow-mapping.md``
gives the mapping to and from Arrow in full.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _validate as v
from .._backend import (
    array_module,
    device_checks,
    device_of,
    fetch,
    module_of,
    read_back,
    transfer,
    transfer_target,
)
from .._docs import TO_DEVICE, fill_doc
from ..errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import ComputedMethods, Jagged
from ._build import (
    _REPR_KEYS,
    _as_1d_values,
    _as_jagged_chunks,
    _batch_size_of,
    _check_keys,
    _check_mapping,
    _check_validity,
    _from_batch,
    _from_columns,
    _from_map,
    _keys_text,
    _to_map,
)

__all__ = ["BlockBuckets", "KeyedJagged"]

_REPR_ROWS = 6
_INT32_MAX = int(np.iinfo(np.int32).max)


class BlockBuckets(NamedTuple):
    """What :meth:`KeyedJagged.block_bucketize` returns.

    Attributes
    ----------
    buckets
        One KeyedJagged per bucket (shard), ``my_size`` of them, each with every key
        and the full batch size: bucket ``p``'s row ``r`` of a key holds the values
        of that row that went to bucket ``p``, in their order. Concatenated, their
        ``lengths`` are FBGEMM's ``new_lengths`` and their ``values`` its
        ``new_indices`` (and their ``weights`` its ``new_weights``).
    unbucketize_permute
        With ``sequence=True``: int64, one entry per input value, its position in the
        concatenation of the buckets' values (FBGEMM's ``unbucketize_permute``); else
        None.
    positions
        With ``bucketize_pos=True``: per bucket, int64 aligned with its values, each
        value's position in its original row (FBGEMM's ``bucketize_pos`` output);
        else None.
    """

    buckets: list[KeyedJagged]
    unbucketize_permute: np.ndarray | None
    positions: list[np.ndarray] | None


#: KeyedJagged's reshaping methods, computed by :mod:`arrow_sparse.keyed.reshape`, and its
#: TorchRec conversions, computed by :mod:`arrow_sparse.interop.torch`.
COMPUTED = ComputedMethods("KeyedJagged", ("block_bucketize", "concat", "from_torchrec",
                                          "permute", "regroup", "regroup_as_dict", "split",
                                          "to_padded_dict", "to_torchrec"))


class KeyedJagged:
    """Several named jagged features over the same batch rows, stored key-major.

    Key ``k``'s row ``r`` is ``values[offsets[k * batch_size + r]:offsets[k * batch_size
    + r + 1]]``: the values of the first key for every row come first, then those of the
    second key, and so on (TorchRec's ``KeyedJaggedTensor`` layout).

    Parameters
    ----------
    keys
        Key names (feature names), unique and hashable: strings, or the integer keys
        of a Caffe2 ``MAP<INT, LIST<INT>>``. (Only :meth:`permute` and
        :meth:`regroup` repeat a key, each copy holding the same rows.)
    values
        1-D numeric values of every key, key-major.
    lengths
        Non-negative lengths, ``num_keys * batch_size`` of them, key-major, summing to
        ``len(values)``. int32 and int64 are kept; other integer dtypes become int64.
        Give exactly one of ``lengths`` and ``offsets``.
    weights
        Optional per-value weights, one per value (``len(values)`` long), e.g. the
        scores of a bag of ids.
    offsets
        Instead of ``lengths``: ``num_keys * batch_size + 1`` non-decreasing offsets
        into ``values`` (they may start above zero and end before the last value, as
        a sliced Arrow array does; ``values`` and ``weights`` are then sliced, no copy).
    validity
        Optional bool mask, ``num_keys * batch_size`` long, key-major (False = the
        row of that key was null). A null row must have length 0.
    batch_size
        Number of rows; needed only when there are no keys (default 0 then),
        otherwise ``len(lengths) // num_keys`` and checked against it.

    Raises
    ------
    ValueError
        Repeated keys, negative lengths, lengths not summing to the number of values,
        a number of lengths that is not ``num_keys * batch_size``, weights or validity
        of the wrong length, or a null row with values.
    TypeError
        Non-numeric values, non-integer lengths, unhashable keys.

    See Also
    --------
    KeyedJagged.from_arrow : From a RecordBatch of list columns or a map column.
    KeyedJagged.from_dict : From ``{key: Jagged or rows}``.
    Jagged : One feature.

    Notes
    -----
    The constructor copies neither ``values`` nor ``lengths``; it computes the int64
    ``offsets``. Null rows are empty rows (``lengths`` 0); ``validity`` remembers them,
    and ``kj[key]`` and :meth:`to_arrow` give them back as nulls.

    CuPy arrays (all on one device) make a KeyedJagged on the device, as
    :meth:`to_device` does; its methods then run there (:meth:`to_arrow` excepted) and
    give CuPy arrays. The constructor checks the data-dependent invariants (lengths,
    offsets, null rows empty) with device checks, raised by the next check; with
    ``offsets`` it reads the first and last back (one synchronisation) to slice the
    values. An all-True ``validity`` is kept on the device (checking reads it back).

    Examples
    --------
    Caffe2's ``LIST<MAP<INT, LIST<INT>>>`` example: two examples, ``{1: [10, 11], 3:
    [101]}`` and ``{1: [11], 2: [50], 3: [102, 103]}``, as a map column:

    >>> m = pa.array([[(1, [10, 11]), (3, [101])],
    ...               [(1, [11]), (2, [50]), (3, [102, 103])]],
    ...              type=pa.map_(pa.int64(), pa.list_(pa.int64())))
    >>> kj = asp.KeyedJagged.from_arrow(m)
    >>> kj
    KeyedJagged(num_keys=3, batch_size=2, dtype=int64, lengths=int32, weights=None)
      1: [[10, 11], [11]]
      2: [[], [50]]
      3: [[101], [102, 103]]

    The per-example values ``[10, 11, 101, 11, 50, 102, 103]`` become key-major:

    >>> kj.values
    array([ 10,  11,  11,  50, 101, 102, 103])
    >>> kj.lengths
    array([2, 1, 0, 1, 1, 2], dtype=int32)
    >>> kj[3]
    Jagged([[101], [102, 103]], dtype=int64, offsets=int32)

    The same batch built directly:

    >>> asp.KeyedJagged([1, 2, 3], np.array([10, 11, 11, 50, 101, 102, 103]),
    ...                 [2, 1, 0, 1, 1, 2]).offset_per_key()
    array([0, 3, 4, 7])
    """

    __slots__ = ("_batch_size", "_index", "_keys", "_lengths", "_offsets", "_validity",
                 "_values", "_weights")

    __iter__ = None  # rows or keys would both surprise: use keys() or to_dict()

    def __init__(self, keys: Sequence[Hashable] | np.ndarray, values: Any, lengths: Any = None,
                 weights: Any = None, *, offsets: Any = None, validity: Any = None,
                 batch_size: int | None = None) -> None:
        func = "KeyedJagged"
        xp = array_module(func, values=values, lengths=lengths, weights=weights,
                          offsets=offsets, validity=validity)
        key_tuple = _check_keys(func, "keys", keys)
        vals = _as_1d_values(func, "values", values)
        wts = None if weights is None else _as_1d_values(func, "weights", weights)
        if wts is not None and len(wts) != len(vals):
            msg = f"{func}: weights has {len(wts)} entries but there are {len(vals)} values"
            raise ArrowSparseValueError(msg)
        if v.check_exactly_one(func, lengths=lengths, offsets=offsets) == "offsets":
            offs = v.check_offsets(func, "offsets", offsets, len(vals), device=True)
            lens = xp.diff(offs)
            start, stop = fetch(func, offs[0], offs[-1])
            vals = vals[start:stop]
            wts = None if wts is None else wts[start:stop]
            arg = "offsets"
        elif xp is np:
            lens = v.check_lengths(func, "lengths", lengths, len(vals))
            arg = "lengths"
        else:
            lens = v.lengths_offsets(func, "lengths", lengths, num_values=len(vals),
                                     device=True)[0]
            arg = "lengths"
        if lens.dtype not in v.OFFSET_DTYPES:
            lens = lens.astype(np.int64)
        num_rows = _batch_size_of(func, arg, len(lens), len(key_tuple), batch_size)
        valid = _check_validity(func, validity, lens)
        self._init(key_tuple, vals, lens, wts, valid, num_rows)
        device_checks(func, xp)

    def _init(self, keys: tuple[Hashable, ...], values: np.ndarray, lengths: np.ndarray,
              weights: np.ndarray | None, validity: np.ndarray | None,
              batch_size: int, offsets: np.ndarray | None = None) -> None:
        self._keys = keys
        self._index: dict[Hashable, int] = {}
        for i, key in enumerate(keys):  # a repeated key (from permute) maps to its first
            self._index.setdefault(key, i)
        self._values = values
        self._lengths = lengths
        self._weights = weights
        xp = module_of(values)
        # On the device an all-valid mask is kept: checking would read it back.
        self._validity = None if validity is None or (xp is np and validity.all()) \
            else validity
        self._batch_size = batch_size
        if offsets is None:
            offsets = xp.zeros(len(lengths) + 1, dtype=np.int64)
            xp.cumsum(lengths, dtype=np.int64, out=offsets[1:])
        self._offsets = offsets

    @classmethod
    def _new(cls, keys: tuple[Hashable, ...], values: np.ndarray, lengths: np.ndarray,
             weights: np.ndarray | None, validity: np.ndarray | None,
             batch_size: int, offsets: np.ndarray | None = None) -> KeyedJagged:
        """Build from parts already checked (no validation).

        ``offsets``: the running sum of ``lengths`` (int64, from 0) when the caller has
        it; computed otherwise.
        """
        kj = cls.__new__(cls)
        kj._init(keys, values, lengths, weights, validity, batch_size, offsets)
        return kj

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_arrow(cls, batch_or_map_array: Any, keys: Sequence[Hashable] | None = None,
                   weights: Any = None) -> KeyedJagged:
        """Build from a RecordBatch/Table of list columns or a ``map<key, list<value>>`` array.

        Parameters
        ----------
        batch_or_map_array
            A ``pyarrow.RecordBatch`` or ``pyarrow.Table`` whose columns are
            ``list``/``large_list`` (or list view) arrays of numbers, one feature per
            column (a Table's chunks are handled); or a ``map<key, list<value>>``
            ``MapArray`` / ``ChunkedArray`` (Caffe2's ``LIST<MAP<KEY, LIST<VALUE>>>``),
            one example per map.
        keys
            Which features, in which order. For a batch: column names (default every
            list, large_list or list view column that is not a weights column, in
            schema order; other columns, such as ids, labels or map columns, are
            skipped). For a map: map keys
            (default every distinct key found in a non-null map, sorted); a key found
            in no row gives all-empty rows, and entries of other keys are dropped.
        weights
            Optional per-value weights. For a batch: a ``{key: column name}`` mapping of
            ``list<float>`` columns aligned with the key's column (keys left out get
            weight 1), or one column name when exactly one key is selected. For a map:
            a parallel map array with the same keys and list lengths in every row.

        Returns
        -------
        KeyedJagged
            With ``lengths`` int32 when every source list has int32 offsets (``list``,
            ``map``), else int64.

        Raises
        ------
        TypeError
            Input that is not a batch or a map array, a batch with no list column, a
            column that is not a list of numbers, columns whose values mix integers,
            floats and booleans, map keys of the wrong type.
        IndexError
            A key that is not a column of the batch.
        ValueError
            Repeated keys, a column name used twice, null values inside a list,
            weights whose row lengths, entries or keys differ from the values'.

        See Also
        --------
        KeyedJagged.to_arrow : Back to a RecordBatch of list columns.
        Jagged.from_arrow : One list column.

        Notes
        -----
        A null row (or a null map, or a key whose only entries in a row are null lists)
        becomes an empty row and is marked False in :attr:`validity`. A key missing from
        a map is an empty, valid row. Repeated keys in one map are concatenated in
        entry order. Values and weights are gathered into the key-major buffer: one
        copy, except for a batch with a single selected key without non-empty null
        rows, whose values are a view of the column's buffer (zero-copy).

        Examples
        --------
        A RecordBatch of two id columns, one row null:

        >>> batch = pa.record_batch({"a": pa.array([[1, 2, 3], None, [3, 6]]),
        ...                          "b": pa.array([[7], [8, 9], []])})
        >>> kj = asp.KeyedJagged.from_arrow(batch, keys=["b", "a"])
        >>> kj
        KeyedJagged(num_keys=2, batch_size=3, dtype=int64, lengths=int32, weights=None)
          'b': [[7], [8, 9], []]
          'a': [[1, 2, 3], None, [3, 6]]
        >>> kj.lengths
        array([1, 2, 0, 3, 0, 2], dtype=int32)

        Ids with a column of scores:

        >>> batch = pa.record_batch({"ids": pa.array([[1, 2], [3]]),
        ...                          "w": pa.array([[0.5, 1.0], [2.0]], pa.list_(pa.float32()))})
        >>> kj = asp.KeyedJagged.from_arrow(batch, weights="w")
        >>> kj.keys(), kj.weights
        (['ids'], array([0.5, 1. , 2. ], dtype=float32))
        """
        func = "KeyedJagged.from_arrow"
        data = batch_or_map_array
        if isinstance(data, (pa.RecordBatch, pa.Table)):
            return cls._new(*_from_batch(func, data, keys, weights))
        if isinstance(data, (pa.Array, pa.ChunkedArray)) and isinstance(data.type, pa.MapType):
            return cls._new(*_from_map(func, data, keys, weights))
        got = data.type if isinstance(data, (pa.Array, pa.ChunkedArray)) else \
            type(data).__name__
        msg = (f"{func}: batch_or_map_array must be a RecordBatch or Table of list columns, "
               f"or a map<key, list<value>> array, got {got}")
        raise ArrowSparseTypeError(msg)

    @classmethod
    def from_jagged_dict(cls, jagged: Mapping[Hashable, Jagged],
                         weights: Mapping[Hashable, Jagged] | None = None) -> KeyedJagged:
        """Build from ``{key: Jagged}`` (TorchRec's ``from_jt_dict``), keys in dict order.

        Parameters
        ----------
        jagged
            One :class:`Jagged` of 1-D numeric values per key, all with the same number
            of rows.
        weights
            Optional ``{key: Jagged}`` of weights with the same row lengths as the
            key's values; keys left out get weight 1.

        Returns
        -------
        KeyedJagged
            Values gathered key-major (a copy; a single key without non-empty null rows
            keeps a view). ``lengths`` are int32 when every Jagged has int32 offsets.

        Raises
        ------
        TypeError
            A value that is not a Jagged of 1-D numbers, values mixing integers,
            floats and booleans.
        ValueError
            Different numbers of rows, null values inside rows, weights whose row
            lengths differ from the values'.
        IndexError
            A weights key that is not a key.

        See Also
        --------
        KeyedJagged.to_dict : The inverse.
        KeyedJagged.from_dict : Also takes Arrow arrays and Python lists.

        Examples
        --------
        >>> a = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
        >>> b = asp.Jagged.from_list([[5], [], [8, 9]])
        >>> kj = asp.KeyedJagged.from_jagged_dict({"a": a, "b": b})
        >>> kj.lengths
        array([3, 4, 2, 1, 0, 2], dtype=int32)
        >>> kj.length_per_key()
        array([9, 3])
        """
        func = "KeyedJagged.from_jagged_dict"
        columns = _check_mapping(func, "jagged", jagged)
        for key, value in columns.items():
            if not isinstance(value, Jagged):
                msg = (f"{func}: jagged[{key!r}] must be a Jagged, got {type(value).__name__}; "
                       "use from_dict for Arrow arrays and lists")
                raise ArrowSparseTypeError(msg)
        wmap = {} if weights is None else _check_mapping(func, "weights", weights)
        for key, value in wmap.items():
            if not isinstance(value, Jagged):
                msg = f"{func}: weights[{key!r}] must be a Jagged, got {type(value).__name__}"
                raise ArrowSparseTypeError(msg)
        return cls._new(*_from_columns(func, {k: [j] for k, j in columns.items()},
                                       {k: [j] for k, j in wmap.items()}, None))

    @classmethod
    def from_dict(cls, data: Mapping[Hashable, Any],
                  weights: Mapping[Hashable, Any] | None = None) -> KeyedJagged:
        """Build from ``{key: rows}``, keys in dict order.

        Parameters
        ----------
        data
            Per key: a :class:`Jagged`, an Arrow ``list``/``large_list`` array or
            ChunkedArray, or a Python list of rows (``None`` = null row). Every key
            has the same number of rows.
        weights
            Optional ``{key: rows}`` of weights in the same forms, with the same row
            lengths as the key's values; keys left out get weight 1.

        Returns
        -------
        KeyedJagged
            Values gathered key-major (a copy).

        Raises
        ------
        TypeError
            Rows that are not lists of numbers, values mixing integers, floats and
            booleans.
        ValueError
            Different numbers of rows, null values inside rows, weights whose row
            lengths differ from the values'.
        IndexError
            A weights key that is not a key.

        See Also
        --------
        KeyedJagged.from_jagged_dict : The same for Jagged values only.

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]},
        ...                                weights={"b": [[0.5], [1.0, 2.0]]})
        >>> kj
        KeyedJagged(num_keys=2, batch_size=2, dtype=int64, lengths=int32, weights=float64)
          'a': [[1, 2], None]
          'b': [[3], [4, 5]]
        >>> kj.weights
        array([1. , 1. , 0.5, 1. , 2. ])
        """
        func = "KeyedJagged.from_dict"
        columns = _check_mapping(func, "data", data)
        wmap = {} if weights is None else _check_mapping(func, "weights", weights)
        chunks = {k: _as_jagged_chunks(func, f"data[{k!r}]", x) for k, x in columns.items()}
        wchunks = {k: _as_jagged_chunks(func, f"weights[{k!r}]", x) for k, x in wmap.items()}
        return cls._new(*_from_columns(func, chunks, wchunks, None))

    # ------------------------------------------------------------------- properties
    def keys(self) -> list[Hashable]:
        """Key names, in layout order (TorchRec's ``keys()``).

        Returns
        -------
        list
            A new list; changing it does not change this KeyedJagged.

        Examples
        --------
        >>> asp.KeyedJagged.from_dict({"a": [[1]], "b": [[2]]}).keys()
        ['a', 'b']
        """
        return list(self._keys)

    @property
    def num_keys(self) -> int:
        """Number of keys."""
        return len(self._keys)

    @property
    def batch_size(self) -> int:
        """Number of rows of every key (TorchRec's ``stride``)."""
        return self._batch_size

    @property
    def values(self) -> np.ndarray:
        """Values of every key, key-major, exactly ``offsets[-1]`` long.

        Examples
        --------
        >>> asp.KeyedJagged.from_dict({"a": [[1], [2, 3]], "b": [[4], []]}).values
        array([1, 2, 3, 4])
        """
        return self._values

    @property
    def lengths(self) -> np.ndarray:
        """Row lengths, key-major (``num_keys * batch_size``; null rows have length 0).

        Examples
        --------
        >>> asp.KeyedJagged.from_dict({"a": [[1], [2, 3]], "b": [[4], []]}).lengths
        array([1, 2, 1, 0], dtype=int32)
        """
        return self._lengths

    @property
    def offsets(self) -> np.ndarray:
        """int64 offsets over every key and row (``num_keys * batch_size + 1``, from 0).

        Examples
        --------
        >>> asp.KeyedJagged.from_dict({"a": [[1], [2, 3]], "b": [[4], []]}).offsets
        array([0, 1, 3, 4, 4])
        """
        return self._offsets

    @property
    def weights(self) -> np.ndarray | None:
        """Per-value weights aligned with :attr:`values`, or None."""
        return self._weights

    @property
    def validity(self) -> np.ndarray | None:
        """Bool mask of rows, key-major (False = the row was null), or None if none was.

        On the device it may be an all-True mask (checking would read it back).
        """
        return self._validity

    @property
    def dtype(self) -> np.dtype:
        """The values' dtype."""
        return self._values.dtype

    @property
    def xp(self) -> ModuleType:
        """Array module of the buffers: numpy, or cupy when they are on the device."""
        return module_of(self._values)

    @property
    def device(self) -> str:
        """Where the buffers are: ``"cpu"``, or ``"cuda:N"`` for CUDA device N.

        Examples
        --------
        >>> asp.KeyedJagged.from_dict({"a": [[1]]}).device
        'cpu'
        """
        return device_of(self._values)

    @fill_doc(
        TO_DEVICE, a_kind="a KeyedJagged", cls="KeyedJagged", copy="a copy",
        see_also="Jagged.to_device : The same for one feature.",
        notes="""\
Arrow data lives in host memory: ``KeyedJagged.from_arrow(batch).to_device("cuda")``
is the explicit transfer. On the device, every method runs there except
:meth:`to_arrow` (and the constructors from Arrow or Jagged columns, which
build on the host); docs/keyed-arrow-mapping.md lists their synchronisations.""",
        build='asp.KeyedJagged.from_dict({"a": [[1, 2], [3]]})')
    def to_device(self, device: str) -> KeyedJagged:
        """Copy the buffers (values, lengths, offsets, weights, validity) to ``device``."""
        func = "KeyedJagged.to_device"
        target = transfer_target(func, device, self.device)
        if target is None:
            return self

        def move(x: Any) -> Any:
            return transfer(func, x, target)

        kj = type(self).__new__(type(self))
        kj._keys, kj._index, kj._batch_size = self._keys, self._index, self._batch_size
        kj._values, kj._lengths, kj._offsets = (move(self._values), move(self._lengths),
                                                move(self._offsets))
        kj._weights, kj._validity = move(self._weights), move(self._validity)
        return kj

    def length_per_key(self) -> np.ndarray:
        """Count the values of each key (TorchRec's ``length_per_key``).

        Returns
        -------
        numpy.ndarray
            int64, ``num_keys`` long.

        See Also
        --------
        KeyedJagged.offset_per_key : Its running sum.

        Examples
        --------
        >>> kj = asp.KeyedJagged(["a", "b"], np.arange(5), [1, 2, 0, 2])
        >>> kj.length_per_key()
        array([3, 2])
        """
        return self.xp.diff(self.offset_per_key())

    def offset_per_key(self) -> np.ndarray:
        """Where each key's values start in :attr:`values`, then the total.

        Returns
        -------
        numpy.ndarray
            int64, ``num_keys + 1`` long, from 0 to ``len(values)``.

        See Also
        --------
        KeyedJagged.length_per_key : The per-key counts.

        Examples
        --------
        >>> kj = asp.KeyedJagged(["a", "b"], np.arange(5), [1, 2, 0, 2])
        >>> kj.offset_per_key()
        array([0, 3, 5])
        """
        return self._key_offsets().copy()

    def _key_offsets(self) -> np.ndarray:
        """:meth:`offset_per_key` as a view of :attr:`offsets` where possible."""
        rows = self._batch_size
        if rows == 0:
            return self.xp.zeros(self.num_keys + 1, dtype=np.int64)  # type: ignore[no-any-return]
        return self._offsets[::rows]

    def __len__(self) -> int:
        return self._batch_size

    def __contains__(self, key: Any) -> bool:
        try:
            return key in self._index
        except TypeError:
            return False

    def _position(self, func: str, key: Any) -> int:
        try:
            return self._index[key]
        except KeyError:
            msg = f"{func}: {key!r} is not a key; keys are {_keys_text(self._keys)}"
            raise ArrowSparseKeyError(msg) from None
        except TypeError:
            msg = f"{func}: keys are hashable names, got {type(key).__name__}"
            raise ArrowSparseTypeError(msg) from None

    def __getitem__(self, key: Hashable) -> Jagged:
        """Rows of one key as a :class:`Jagged` (values are a view, nothing copied).

        Offsets are rebuilt from zero (int32 when :attr:`lengths` are int32); null
        rows come back as null rows. On the device nothing is read back: the Jagged's
        values are the whole values buffer and its offsets a slice of :attr:`offsets`.
        """
        return self._jagged(self._position("KeyedJagged[]", key), self._values)

    def weights_of(self, key: Hashable) -> Jagged:
        """Weights of one key as a :class:`Jagged` with the rows of ``kj[key]``.

        Parameters
        ----------
        key
            A key name.

        Returns
        -------
        Jagged
            A view of :attr:`weights`.

        Raises
        ------
        ValueError
            This KeyedJagged has no weights.
        IndexError
            ``key`` is not a key.

        Examples
        --------
        >>> kj = asp.KeyedJagged(["a"], np.array([7, 8]), [2], weights=np.array([0.5, 2.0]))
        >>> kj.weights_of("a")
        Jagged([[0.5, 2.0]], dtype=float64, offsets=int64)
        """
        func = "KeyedJagged.weights_of"
        pos = self._position(func, key)
        if self._weights is None:
            msg = f"{func}: this KeyedJagged has no weights"
            raise ArrowSparseValueError(msg)
        return self._jagged(pos, self._weights)

    def _jagged(self, pos: int, buffer: np.ndarray) -> Jagged:
        """Key ``pos``'s rows over ``buffer`` (values or weights), without copying values.

        On the host the values are sliced and the offsets rebuilt from zero. On the
        device nothing is read back: the values are the whole buffer and the offsets a
        slice of :attr:`offsets` (from the key's first value; int32 when the lengths
        are int32 and the buffer is short enough).
        """
        rows = self._batch_size
        offsets = self._offsets[pos * rows:(pos + 1) * rows + 1]
        validity = None if self._validity is None else self._validity[pos * rows:(pos + 1) * rows]
        int32 = self._lengths.dtype == np.int32
        if self.xp is not np:
            if int32 and len(buffer) <= _INT32_MAX:
                offsets = offsets.astype(np.int32)
            return Jagged._trusted(buffer, offsets, validity)
        start, stop = int(offsets[0]), int(offsets[-1])
        dtype = np.int32 if int32 and stop - start <= _INT32_MAX else np.int64
        return Jagged(buffer[start:stop], (offsets - start).astype(dtype), validity,
                      validate=False)

    # ------------------------------------------------------------------- exporters
    def to_dict(self) -> dict[Hashable, Jagged]:
        """``{key: Jagged}`` in key order; each Jagged's values are a view (``kj[key]``).

        Returns
        -------
        dict
            One :class:`Jagged` per key.

        See Also
        --------
        KeyedJagged.from_jagged_dict : The inverse.

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2, 3]], "b": [[4], []]})
        >>> kj.to_dict()
        {'a': Jagged([[1], [2, 3]], dtype=int64, offsets=int32),
         'b': Jagged([[4], []], dtype=int64, offsets=int32)}
        """
        return {key: self._jagged(pos, self._values) for pos, key in enumerate(self._keys)}

    def to_arrow(self, weights_suffix: str = "_weights", *, layout: str = "columns",
                 column: str = "features") -> pa.RecordBatch:
        """Return the features as a RecordBatch: one list column per key, or one map column.

        Parameters
        ----------
        weights_suffix
            When there are weights, they follow as columns named ``str(key) +
            weights_suffix`` (``layout="columns"``) or as a parallel map column named
            ``column + weights_suffix`` (``layout="map"``).
        layout
            ``"columns"``: one list column per key. ``"map"``: one
            ``map<key, list<value>>`` column, one map per row (Caffe2's
            ``LIST<MAP<KEY, LIST<VALUE>>>``), the layout :meth:`from_arrow` reads back.
        column
            The map column's name (``layout="map"`` only).

        Returns
        -------
        pyarrow.RecordBatch
            ``batch_size`` rows. With ``"columns"``: column ``str(key)`` is ``list<T>``
            (int32 offsets) when :attr:`lengths` are int32, else ``large_list<T>``. Null
            rows are null again. Values and weights buffers are views of :attr:`values`
            and :attr:`weights` (no copy, except booleans, which Arrow packs into bits);
            offsets are rebuilt from zero per key. With no keys the batch has no
            columns but still ``batch_size`` rows. With ``"map"``: row ``r``'s map holds,
            in key order, an entry for every key whose row is non-empty, and a null list
            for a key whose row is null; a row that is null for every key is a null
            map. Keys take the Arrow type pyarrow infers from them (``int64`` for
            ints, ``string`` for strings). Values are gathered row by row (one copy).

        Raises
        ------
        ValueError
            Two keys, or a key and a weights column, with the same column name.
        NotImplementedError
            On the device: Arrow arrays live in host memory; call
            ``kj.to_device("cpu").to_arrow()``.

        See Also
        --------
        KeyedJagged.from_arrow : The inverse
            (``weights={key: str(key) + weights_suffix}``).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1], None], "b": [[3], [4, 5]]})
        >>> kj.to_arrow().to_pydict()
        {'a': [[1], None], 'b': [[3], [4, 5]]}

        Caffe2's map of id lists, and back:

        >>> maps = pa.array([[(1, [1, 2]), (2, [3])], [(2, [4, 6, 7])]],
        ...                 pa.map_(pa.int64(), pa.list_(pa.int64())))
        >>> kj = asp.KeyedJagged.from_arrow(maps)
        >>> kj.to_arrow(layout="map").column("features").to_pylist()
        [[(1, [1, 2]), (2, [3])], [(2, [4, 6, 7])]]
        """
        func = "KeyedJagged.to_arrow"
        if self.device != "cpu":
            msg = (f"{func}: the KeyedJagged is on {self.device} and Arrow arrays live in host "
                   "memory; copy it first: kj.to_device('cpu').to_arrow()")
            raise NotImplementedError(msg)
        if not isinstance(weights_suffix, str):
            msg = f"{func}: weights_suffix must be a str, got {type(weights_suffix).__name__}"
            raise ArrowSparseTypeError(msg)
        if not isinstance(layout, str) or layout not in ("columns", "map"):
            msg = f"{func}: layout must be 'columns' or 'map', got {layout!r}"
            raise ArrowSparseValueError(msg)
        if layout == "map":
            if not isinstance(column, str):
                msg = f"{func}: column must be a str, got {type(column).__name__}"
                raise ArrowSparseTypeError(msg)
            arrays = {column: _to_map(func, self._keys, self._values, self._lengths,
                                      self._validity, self._batch_size)}
            if self._weights is not None:
                arrays[column + weights_suffix] = _to_map(
                    func, self._keys, self._weights, self._lengths, self._validity,
                    self._batch_size)
            return pa.RecordBatch.from_pydict(arrays)
        if not self._keys:
            return pa.RecordBatch.from_struct_array(
                pa.array([{}] * self._batch_size, pa.struct([])))
        names = [k if isinstance(k, str) else str(k) for k in self._keys]
        arrays = [self._jagged(pos, self._values).to_arrow() for pos in range(self.num_keys)]
        if self._weights is not None:
            names += [name + weights_suffix for name in names]
            arrays += [self._jagged(pos, self._weights).to_arrow()
                       for pos in range(self.num_keys)]
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                v.fail_value(func, "column names", "must be unique", i, repr(name))
            seen[name] = i
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def validate(self) -> KeyedJagged:
        """Check every invariant in full (O(size)); return self.

        Checks that the keys are hashable, that ``lengths`` are non-negative, sum to
        ``len(values)`` and number ``num_keys * batch_size``, that ``offsets`` are
        their running sum, the lengths of ``weights`` and ``validity`` (null rows
        empty), and that a repeated key (see :meth:`permute`) holds the same rows,
        weights and validity each time.

        Returns
        -------
        KeyedJagged
            ``self``, so calls chain.

        Raises
        ------
        ValueError
            The first broken invariant.

        Notes
        -----
        On the device the checks run there and are raised at once: it synchronises
        a few times (offsets, then the error word), and once more per repeated key.

        Examples
        --------
        >>> asp.KeyedJagged.from_dict({"a": [[1], [2, 3]]}).validate().batch_size
        2
        """
        func = "KeyedJagged.validate"
        xp = self.xp
        _check_keys(func, "keys", self._keys, repeats=True)
        if xp is np:
            lens = v.check_lengths(func, "lengths", self._lengths, len(self._values))
        else:
            lens = v.lengths_offsets(func, "lengths", self._lengths,
                                     num_values=len(self._values), device=True)[0]
        if len(lens) != self.num_keys * self._batch_size:
            msg = (f"{func}: lengths has {len(lens)} entries but num_keys * batch_size is "
                   f"{self.num_keys * self._batch_size}")
            raise ArrowSparseValueError(msg)
        expected = xp.zeros(len(lens) + 1, dtype=np.int64)
        xp.cumsum(lens, out=expected[1:])
        bad, pos = 1, 0
        if len(self._offsets) == len(expected):
            wrong = self._offsets != expected
            bad, pos = fetch(func, wrong.any(), wrong.argmax())  # the lengths' checks first
        if bad:
            value = fetch(func, self._offsets[pos])[0] if len(self._offsets) else None
            v.fail_value(func, "offsets", "differ from the running sum of lengths", pos, value)
        if self._weights is not None and len(self._weights) != len(self._values):
            msg = (f"{func}: weights has {len(self._weights)} entries but there are "
                   f"{len(self._values)} values")
            raise ArrowSparseValueError(msg)
        _check_validity(func, self._validity, lens)
        device_checks(func, xp, wait=True)
        bounds: list[int] = []
        for pos, key in enumerate(self._keys):  # a loop over keys
            first = self._index[key]
            if first != pos:
                bounds = bounds or read_back(func, self._key_offsets()).tolist()
                if not self._same_rows(func, first, pos, bounds):
                    v.fail_value(func, "keys", "repeat a key with different rows", pos,
                                 repr(key))
        return self

    def _same_rows(self, func: str, a: int, b: int, bounds: list[int]) -> bool:
        """Whether keys ``a`` and ``b`` hold the same rows, weights and validity.

        ``bounds`` is :meth:`offset_per_key` on the host.
        """
        (sa, ea), (sb, eb) = bounds[a:a + 2], bounds[b:b + 2]
        if ea - sa != eb - sb:
            return False
        rows = self._batch_size
        ra, rb = slice(a * rows, (a + 1) * rows), slice(b * rows, (b + 1) * rows)
        pairs = [(self._lengths[ra], self._lengths[rb]), (self._values[sa:ea], self._values[sb:eb])]
        if self._weights is not None:
            pairs.append((self._weights[sa:ea], self._weights[sb:eb]))
        if self._validity is not None:
            pairs.append((self._validity[ra], self._validity[rb]))
        return all(fetch(func, *[(x == y).all() for x, y in pairs]))

    # ------------------------------------------- reshaping (arrow_sparse.keyed.reshape)
    def permute(self, keys_or_indices: Any) -> KeyedJagged:
        """Reorder, select or repeat keys (TorchRec's ``permute``).

        See Also
        --------
        arrow_sparse.keyed.permute : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3], []]})
        >>> kj.permute(["b", "a"]).keys()
        ['b', 'a']
        """
        return COMPUTED["permute"](self, keys_or_indices)

    def split(self, sizes: Sequence[int]) -> list[KeyedJagged]:
        """Split into consecutive groups of keys (TorchRec's ``split``).

        See Also
        --------
        arrow_sparse.keyed.split : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3], []]})
        >>> [part.keys() for part in kj.split([1, 1])]
        [['a'], ['b']]
        """
        return COMPUTED["split"](self, sizes)

    @classmethod
    def concat(cls, kjs: Sequence[KeyedJagged]) -> KeyedJagged:
        """Join the keys of several KeyedJagged of one batch (TorchRec's ``concat``).

        See Also
        --------
        arrow_sparse.keyed.concat : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> a = asp.KeyedJagged.from_dict({"a": [[1], [2]]})
        >>> asp.KeyedJagged.concat([a, asp.KeyedJagged.from_dict({"b": [[3], []]})]).keys()
        ['a', 'b']
        """
        return COMPUTED["concat"](kjs)

    @classmethod
    def regroup(cls, keyed: KeyedJagged | Sequence[KeyedJagged],
                groups: Sequence[Sequence[Hashable]]) -> list[KeyedJagged]:
        """Gather keys of one or several KeyedJagged into groups, one KeyedJagged each.

        See Also
        --------
        arrow_sparse.keyed.regroup : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3], []]})
        >>> [g.keys() for g in asp.KeyedJagged.regroup(kj, [["b"], ["a", "b"]])]
        [['b'], ['a', 'b']]
        """
        return COMPUTED["regroup"](keyed, groups)

    @classmethod
    def regroup_as_dict(cls, keyed: KeyedJagged | Sequence[KeyedJagged],
                        groups: Sequence[Sequence[Hashable]],
                        names: Sequence[Hashable]) -> dict[Hashable, KeyedJagged]:
        """:meth:`regroup` with a name per group (TorchRec's ``regroup_as_dict``).

        See Also
        --------
        arrow_sparse.keyed.regroup_as_dict : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3], []]})
        >>> list(asp.KeyedJagged.regroup_as_dict(kj, [["b"], ["a"]], ["x", "y"]))
        ['x', 'y']
        """
        return COMPUTED["regroup_as_dict"](keyed, groups, names)

    def block_bucketize(self, block_sizes: Any, my_size: int, *,
                        sequence: bool = False, bucketize_pos: bool = False,
                        keep_orig_idx: bool = False) -> BlockBuckets:
        """Split integer ids into ``my_size`` shards by id range (row-wise sharding).

        See Also
        --------
        arrow_sparse.keyed.block_bucketize : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"ids": [[1, 5], [7]]})
        >>> [b["ids"].to_list() for b in kj.block_bucketize([4], 2).buckets]
        [[[1], []], [[1], [3]]]
        """
        return COMPUTED["block_bucketize"](self, block_sizes, my_size, sequence=sequence,
                                           bucketize_pos=bucketize_pos,
                                           keep_orig_idx=keep_orig_idx)

    def to_padded_dict(self, max_lengths: Any = None,
                       pad_value: Any = 0) -> dict[Hashable, np.ndarray]:
        """Pad every key's rows to a dense ``[batch_size, L]`` array.

        See Also
        --------
        arrow_sparse.keyed.to_padded_dict : The function this calls (parameters, results, errors).

        Examples
        --------
        >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2], [3]]})
        >>> kj.to_padded_dict()["a"]
        array([[1, 2],
               [3, 0]])
        """
        return COMPUTED["to_padded_dict"](self, max_lengths, pad_value)

    def to_torchrec(self) -> Any:
        """Convert to TorchRec's ``KeyedJaggedTensor`` (or its arguments without TorchRec).

        See Also
        --------
        arrow_sparse.interop.torch.to_torchrec : The function this calls (results, copies,
            and the Examples, which need torch).
        """
        return COMPUTED["to_torchrec"](self)

    @classmethod
    def from_torchrec(cls, kjt: Any) -> KeyedJagged:
        """Build from TorchRec's ``KeyedJaggedTensor`` (or any object with its accessors).

        See Also
        --------
        arrow_sparse.interop.torch.from_torchrec : The function this calls (inputs, copies,
            and the Examples, which need torch).
        """
        return COMPUTED["from_torchrec"](kjt)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        weights = "None" if self._weights is None else str(self._weights.dtype)
        where = "" if self.device == "cpu" else f", device={self.device!r}"
        lines = [f"KeyedJagged(num_keys={self.num_keys}, batch_size={self._batch_size}, "
                 f"dtype={self.dtype}, lengths={self._lengths.dtype}, weights={weights}{where})"]
        shown = self._keys if self.num_keys <= _REPR_KEYS else self._keys[:_REPR_KEYS - 2]
        for pos, key in enumerate(shown):
            lines.append(f"  {key!r}: {_rows_text(self._jagged(pos, self._values))}")
        if len(shown) < self.num_keys:
            lines.append(f"  ... ({self.num_keys - len(shown)} more keys)")
        return "\n".join(lines)


# --------------------------------------------------------------------- helpers
def _rows_text(j: Jagged) -> str:
    rows = len(j)
    if rows <= _REPR_ROWS:
        return repr(j.to_list())
    head = j[:_REPR_ROWS - 2].to_list()
    tail = j[rows - 2:].to_list()
    return f"[{', '.join(repr(r) for r in head)}, ..., {', '.join(repr(r) for r in tail)}]"


