"""Reshaping and sharding of ``KeyedJagged``: permute, split, concat, regroup, bucketize, pad.

Key selection (``permute``, ``split``, ``concat``, ``regroup``) moves whole key ranges:
each result buffer is one ``concatenate`` of per-key slices, or a view when the keys
picked are consecutive keys of one input. ``block_bucketize`` runs the transforms
family's kernels over the values; ``to_padded_dict`` pads each key with the conversion
kernels. On the device (CuPy buffers) the same code runs with CuPy; the key bounds
(:meth:`~KeyedJagged.offset_per_key`) of the inputs are read back once per call, the one
synchronisation of key selection.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, read_back
from .._offsets import fill_value, pad_levels
from ..errors import (
    ArrowSparseIndexError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from ._build import _common_dtype, _is_int
from .keyed_jagged import COMPUTED, BlockBuckets, KeyedJagged

__all__ = ["block_bucketize", "concat", "permute", "regroup", "regroup_as_dict", "split",
           "to_padded_dict"]

_Pick = tuple[int, int]  # (input number, key position in that input)




@COMPUTED.register("permute")
def permute(kj: KeyedJagged, keys_or_indices: Any) -> KeyedJagged:
    """Reorder, select or repeat keys (TorchRec's ``permute``).

    Parameters
    ----------
    keys_or_indices
        A sequence of key names or key positions. Integers are positions unless
        the keys themselves are integers (a map's keys): then they are key names
        (write ``[kj.keys()[i] for i in positions]``). A key may be given more
        than once, as TorchRec's ``permute`` allows: the result then holds the
        key's rows once per mention (``result[key]`` is the first).

    Returns
    -------
    KeyedJagged
        With the keys in the given order. Values, weights, lengths and validity
        are gathered (one copy), except when the selection is a run of
        consecutive keys in their order: then they are views. On the device: one
        synchronisation (where each key's values start).

    Raises
    ------
    IndexError
        A name that is not a key (``KeyError`` too), or a position outside
        ``[0, num_keys)``.
    TypeError
        A string or another non-sequence instead of a sequence.

    See Also
    --------
    KeyedJagged.split : Split into groups of consecutive keys.
    KeyedJagged.regroup : Several selections at once, across several inputs.

    Examples
    --------
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3], []], "c": [[4, 5], [6]]})
    >>> kj.permute(["c", "a"]).values
    array([4, 5, 6, 1, 2])
    >>> kj.permute([2, 0]).keys()
    ['c', 'a']
    >>> kj.permute(["a", "c", "a"]).lengths
    array([1, 1, 2, 1, 1, 1], dtype=int32)
    """
    func = "KeyedJagged.permute"
    order = _resolve_keys(func, "keys_or_indices", kj, keys_or_indices)
    return _gather(func, [kj], [(0, k) for k in order], kj.batch_size)


@COMPUTED.register("split")
def split(kj: KeyedJagged, sizes: Sequence[int]) -> list[KeyedJagged]:
    """Split into consecutive groups of keys (TorchRec's ``split``).

    Parameters
    ----------
    sizes
        Number of keys in each part; non-negative, summing to ``num_keys``.

    Returns
    -------
    list of KeyedJagged
        ``len(sizes)`` parts with the same batch size; their values, weights,
        lengths and validity are views of this one's (nothing copied). On the
        device: one synchronisation (where each key's values start).

    Raises
    ------
    ValueError
        Sizes not summing to ``num_keys``, or negative.
    TypeError
        A size that is not an integer.

    See Also
    --------
    KeyedJagged.permute : Reorder keys first to split by any grouping.
    KeyedJagged.concat : The inverse.

    Examples
    --------
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3], []], "c": [[4, 5], [6]]})
    >>> [part.keys() for part in kj.split([1, 2])]
    [['a'], ['b', 'c']]
    >>> kj.split([1, 2])[1].values
    array([3, 4, 5, 6])
    """
    func = "KeyedJagged.split"
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, range, np.ndarray)):
        msg = f"{func}: sizes must be a sequence of integers, got {type(sizes).__name__}"
        raise ArrowSparseTypeError(msg)
    counts = [v.check_count(func, f"sizes[{i}]", s) for i, s in enumerate(sizes)]
    if sum(counts) != kj.num_keys:
        msg = f"{func}: sizes sum to {sum(counts)} but there are {kj.num_keys} keys"
        raise ArrowSparseValueError(msg)
    starts = np.cumsum([0, *counts])
    bounds = _key_bounds(func, [kj])  # read once for every part
    return [_gather(func, [kj], [(0, k) for k in range(int(a), int(b))], kj.batch_size,
                    bounds)
            for a, b in zip(starts[:-1], starts[1:], strict=True)]  # a loop over parts


@COMPUTED.register("concat")
def concat(kjs: Sequence[KeyedJagged]) -> KeyedJagged:
    """Join the keys of several KeyedJagged of one batch (TorchRec's ``concat``).

    Parameters
    ----------
    kjs
        KeyedJagged with the same batch size, all with weights or all without,
        and no key in more than one of them.

    Returns
    -------
    KeyedJagged
        The keys of ``kjs[0]``, then those of ``kjs[1]``, and so on. Values are
        cast to the inputs' common dtype (integers, floats and booleans may not
        mix); lengths are int32 when every input's are. Buffers are copied once,
        except for a single input, whose buffers are shared. On the device (all
        inputs on one device): one synchronisation.

    Raises
    ------
    ValueError
        An empty sequence, different batch sizes, weighted and unweighted inputs
        mixed (TorchRec refuses them too), or a key found in two inputs.
    TypeError
        An item that is not a KeyedJagged, or values of different kinds.

    See Also
    --------
    KeyedJagged.split : The inverse.
    KeyedJagged.regroup : Pick keys from several inputs into groups.

    Examples
    --------
    >>> ab = asp.KeyedJagged.from_dict({"a": [[1, 2, 3], [2, 4, 6, 7]], "b": [[3, 6], []]})
    >>> c = asp.KeyedJagged.from_dict({"c": [[9], None]})
    >>> asp.KeyedJagged.concat([ab, c])
    KeyedJagged(num_keys=3, batch_size=2, dtype=int64, lengths=int32, weights=None)
      'a': [[1, 2, 3], [2, 4, 6, 7]]
      'b': [[3, 6], []]
      'c': [[9], None]
    """
    func = "KeyedJagged.concat"
    inputs = _check_inputs(func, "kjs", kjs)
    owner: dict[Hashable, int] = {}
    for s, kj in enumerate(inputs):  # a loop over inputs and their keys
        for key in dict.fromkeys(kj.keys()):
            if owner.setdefault(key, s) != s:
                msg = (f"{func}: key {key!r} of kjs[{s}] is also a key of "
                       f"kjs[{owner[key]}]; keys must not repeat across inputs")
                raise ArrowSparseValueError(msg)
    picks = [(s, k) for s, kj in enumerate(inputs) for k in range(kj.num_keys)]
    return _gather(func, inputs, picks, inputs[0].batch_size)


@COMPUTED.register("regroup")
def regroup(keyed: KeyedJagged | Sequence[KeyedJagged],
            groups: Sequence[Sequence[Hashable]]) -> list[KeyedJagged]:
    """Gather keys of one or several KeyedJagged into groups, one KeyedJagged each.

    TorchRec's ``KeyedTensor.regroup(keyed_tensors, groups)`` on jagged features:
    each group is a list of key names, looked up across every input, and becomes
    one KeyedJagged holding those keys in that order. A key may appear in several
    groups, or twice in one (as TorchRec's ``permute_multi_embedding`` allows).

    Parameters
    ----------
    keyed
        A KeyedJagged, or a sequence of them with the same batch size, all with
        weights or all without, and no key in more than one of them.
    groups
        A sequence of groups; each group a sequence of key names (an empty
        group gives a KeyedJagged with no keys).

    Returns
    -------
    list of KeyedJagged
        One per group, with the batch size of the inputs. A group that is a run
        of consecutive keys of one input shares its buffers (views); the others
        are gathered (one copy each), values cast to the group's common dtype.
        On the device (all inputs on one device): one synchronisation.

    Raises
    ------
    IndexError
        A name that is not a key of any input (``KeyError`` too).
    ValueError
        Inputs with different batch sizes, weighted and unweighted inputs mixed,
        or a key found in two inputs.
    TypeError
        ``keyed`` or ``groups`` of the wrong type, or a group whose values mix
        integers, floats and booleans.

    See Also
    --------
    KeyedJagged.regroup_as_dict : The same, as a ``{name: KeyedJagged}`` dict.
    KeyedJagged.permute : One group from one input.

    Notes
    -----
    ``KeyedTensor.regroup`` concatenates *pooled* embeddings, one dense tensor per
    group; a KeyedJagged holds the ids before any pooling, so each group stays a
    KeyedJagged. Pool it afterwards (``segment_sum``, ``embedding_bag``) where a
    dense tensor per group is wanted.

    Examples
    --------
    >>> user = asp.KeyedJagged.from_dict({"age": [[3], [5]], "city": [[7], [8, 9]]})
    >>> item = asp.KeyedJagged.from_dict({"tags": [[1, 2], []]})
    >>> groups = asp.KeyedJagged.regroup([user, item], [["tags", "city"], ["age"]])
    >>> [g.keys() for g in groups]
    [['tags', 'city'], ['age']]
    >>> groups[0].values
    array([1, 2, 7, 8, 9])
    """
    func = "KeyedJagged.regroup"
    inputs = [keyed] if isinstance(keyed, KeyedJagged) else _check_inputs(func, "keyed", keyed)
    where: dict[Hashable, _Pick] = {}
    for s, kj in enumerate(inputs):  # a loop over inputs and their keys
        for k, key in enumerate(kj.keys()):
            found = where.setdefault(key, (s, k))
            if found[0] != s:
                msg = (f"{func}: key {key!r} of keyed[{s}] is also a key of "
                       f"keyed[{found[0]}]; keys must not repeat across inputs")
                raise ArrowSparseValueError(msg)
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence):
        msg = f"{func}: groups must be a sequence of key lists, got {type(groups).__name__}"
        raise ArrowSparseTypeError(msg)
    out = []
    bounds = _key_bounds(func, inputs)  # read once for every group
    for g, group in enumerate(groups):  # a loop over groups and their keys
        arg = f"groups[{g}]"
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
            msg = (f"{func}: {arg} must be a sequence of key names, "
                   f"got {type(group).__name__}")
            raise ArrowSparseTypeError(msg)
        picks = []
        for i, key in enumerate(group):
            try:
                picks.append(where[key])
            except (KeyError, TypeError):
                msg = v.message(func, arg, "names a key of no input", i, repr(key))
                raise ArrowSparseKeyError(msg) from None
        out.append(_gather(func, inputs, picks, inputs[0].batch_size, bounds))
    return out


@COMPUTED.register("regroup_as_dict")
def regroup_as_dict(keyed: KeyedJagged | Sequence[KeyedJagged],
                    groups: Sequence[Sequence[Hashable]],
                    names: Sequence[Hashable]) -> dict[Hashable, KeyedJagged]:
    """:meth:`regroup` with a name per group (TorchRec's ``regroup_as_dict``).

    Parameters
    ----------
    keyed
        A KeyedJagged or a sequence of them, as for :meth:`regroup`.
    groups
        A sequence of groups of key names, as for :meth:`regroup`.
    names
        One unique, hashable name per group.

    Returns
    -------
    dict
        ``{names[i]: KeyedJagged of groups[i]}`` in group order.

    Raises
    ------
    ValueError
        A number of names different from the number of groups, a repeated name,
        or what :meth:`regroup` raises.
    TypeError
        ``names`` not a sequence of hashables, or what :meth:`regroup` raises.
    IndexError
        What :meth:`regroup` raises.

    See Also
    --------
    KeyedJagged.regroup : The groups as a list.

    Examples
    --------
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1]], "b": [[2]], "c": [[3]]})
    >>> parts = asp.KeyedJagged.regroup_as_dict(kj, [["c"], ["a", "b"]], ["x", "y"])
    >>> {name: part.keys() for name, part in parts.items()}
    {'x': ['c'], 'y': ['a', 'b']}
    """
    func = "KeyedJagged.regroup_as_dict"
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        msg = f"{func}: names must be a sequence of group names, got {type(names).__name__}"
        raise ArrowSparseTypeError(msg)
    if isinstance(groups, Sequence) and len(names) != len(groups):
        msg = f"{func}: names has {len(names)} entries but there are {len(groups)} groups"
        raise ArrowSparseValueError(msg)
    seen: set[Hashable] = set()
    for i, name in enumerate(names):
        try:
            if name in seen:
                v.fail_value(func, "names", "must be unique", i, repr(name))
            seen.add(name)
        except TypeError:
            msg = v.message(func, "names", "must be hashable", i, repr(name))
            raise ArrowSparseTypeError(msg) from None
    return dict(zip(names, regroup(keyed, groups), strict=True))


@COMPUTED.register("block_bucketize")
def block_bucketize(kj: KeyedJagged, block_sizes: Any, my_size: int, *,
                    sequence: bool = False, bucketize_pos: bool = False,
                    keep_orig_idx: bool = False) -> BlockBuckets:
    """Split integer ids into ``my_size`` shards by id range (row-wise sharding).

    FBGEMM's ``block_bucketize_sparse_features``: with ``b = block_sizes[key]``,
    an id ``x`` below ``b * my_size`` goes to bucket ``x // b`` as the local id
    ``x % b``; a larger id goes to bucket ``x % my_size`` as ``x // my_size``.
    Ids are read as unsigned integers of their own width, so a negative id
    lands where FBGEMM puts it. Each bucket keeps every key and every row.

    Parameters
    ----------
    block_sizes
        Rows of the embedding table each shard holds, per key: one integer for
        every key, a sequence of ``num_keys`` integers, or a ``{key: size}``
        mapping naming every key. Each at least 1.
    my_size
        Number of buckets (shards), at least 1.
    sequence
        Also return ``unbucketize_permute``, which puts the bucketed ids back
        in input order (for sequence embeddings).
    bucketize_pos
        Also return each id's position in its original row.
    keep_orig_idx
        Keep the original ids instead of the local ones (the bucket still
        follows the rule above).

    Returns
    -------
    BlockBuckets
        ``(buckets, unbucketize_permute, positions)``: ``my_size`` KeyedJagged
        with this one's keys, batch size, row validity, values dtype and lengths
        dtype; weights follow their ids. See :class:`BlockBuckets`.

    Raises
    ------
    TypeError
        Values that are not integers, block sizes or ``my_size`` that are not
        integers, flags that are not booleans.
    ValueError
        A block size or ``my_size`` below 1, or a number of block sizes other
        than ``num_keys``.
    IndexError
        A ``block_sizes`` mapping that names a key this KeyedJagged lacks, or
        leaves one out (``KeyError`` too).

    See Also
    --------
    KeyedJagged.concat : Put buckets of several batches side by side.

    Notes
    -----
    Two passes over the values, parallel over rows: count per (bucket, row), then
    scatter. The buckets' buffers are views of one new buffer per output. On the
    device: two synchronisations (the number of values, then where each bucket
    starts).

    Examples
    --------
    FBGEMM's test vector: one key, five rows, tables of 4 rows on 3 shards:

    >>> kj = asp.KeyedJagged(["ids"], np.array([0, 5, 9, 3, 10, 11, 1, 7]), [2, 1, 3, 0, 2])
    >>> out = kj.block_bucketize(4, 3, sequence=True)
    >>> [b.lengths.tolist() for b in out.buckets]
    [[1, 0, 1, 0, 1], [1, 0, 0, 0, 1], [0, 1, 2, 0, 0]]
    >>> [b.values.tolist() for b in out.buckets]
    [[0, 3, 1], [1, 3], [1, 2, 3]]
    >>> out.unbucketize_permute
    array([0, 3, 5, 1, 6, 7, 2, 4])
    """
    func = "KeyedJagged.block_bucketize"
    values = kj.values
    if values.dtype.kind not in "iu":
        msg = (f"{func}: values of dtype {values.dtype} cannot be bucketized by id; "
               "block_bucketize takes integer ids (hash_bucket or categorify them first)")
        raise ArrowSparseTypeError(msg)
    shards = v.check_count(func, "my_size", my_size)
    if shards < 1:
        msg = f"{func}: my_size must be at least 1, got {shards}"
        raise ArrowSparseValueError(msg)
    flags = [v.check_bool(func, name, x) for name, x in
             (("sequence", sequence), ("bucketize_pos", bucketize_pos),
              ("keep_orig_idx", keep_orig_idx))]
    sizes = _per_key(func, "block_sizes", kj, block_sizes, minimum=1)
    v.check_nbytes(func, f"the offsets of my_size={shards:,} shards",
                   (shards, max(len(kj.lengths), 1)), 8)
    bits = 8 * values.dtype.itemsize
    span = [size * shards for size in sizes]
    xp = kj.xp
    # per-key parameters, made on the host and copied to the values' device
    block = xp.asarray(np.array(sizes, dtype=np.uint64))
    all_block = xp.asarray(np.array([s > (1 << bits) - 1 for s in span], dtype=bool))
    threshold = xp.asarray(np.array([min(s, (1 << 64) - 1) for s in span], dtype=np.uint64))
    unsigned = values.view(values.dtype.newbyteorder("=").str.replace("i", "u"))
    new_offsets, out, out_weights, positions, permute = get_kernel(
        "transforms", "block_bucketize", xp)(
        unsigned, kj.offsets, max(kj.batch_size, 1), block, threshold, all_block,
        shards, flags[2], kj.weights, flags[1], flags[0])
    out = out.view(values.dtype)
    rows = len(kj.lengths)
    lengths = xp.diff(new_offsets).astype(kj.lengths.dtype, copy=False)
    # where each bucket starts: one read of my_size + 1 offsets on the device
    starts = read_back(func, new_offsets[::rows]).tolist() if rows else [0] * (shards + 1)
    device_checks(func, xp)
    buckets, bucket_positions = [], []
    for p in range(shards):  # a loop over buckets
        start, stop = starts[p], starts[p + 1]
        buckets.append(type(kj)._new(
            tuple(kj.keys()), out[start:stop], lengths[p * rows:(p + 1) * rows],
            None if out_weights is None else out_weights[start:stop], kj.validity,
            kj.batch_size, new_offsets[p * rows:(p + 1) * rows + 1] - start))
        if positions is not None:
            bucket_positions.append(positions[start:stop])
    return BlockBuckets(buckets, permute, bucket_positions if flags[1] else None)


@COMPUTED.register("to_padded_dict")
def to_padded_dict(kj: KeyedJagged, max_lengths: Any = None,
                   pad_value: Any = 0) -> dict[Hashable, np.ndarray]:
    """Pad every key's rows to a dense ``[batch_size, L]`` array.

    Parameters
    ----------
    max_lengths
        Padded length ``L``, rows longer than it truncated (their first ``L``
        values kept): None for each key's longest row, one integer for every
        key, a sequence of ``num_keys`` integers, or a ``{key: length}``
        mapping (keys left out get their longest row).
    pad_value
        Fill value; it must fit the values dtype exactly. Null rows are all
        padding.

    Returns
    -------
    dict
        ``{key: numpy.ndarray}`` in key order, each ``[batch_size, L]`` with the
        values dtype (a new array; CuPy arrays on the device, where a key padded
        to its longest row costs one synchronisation for every such key together).

    Raises
    ------
    TypeError
        ``max_lengths`` of the wrong type.
    ValueError
        A negative length, a number of lengths other than ``num_keys``, or a
        ``pad_value`` the values dtype cannot hold exactly.
    IndexError
        A mapping that names a key this KeyedJagged lacks (``KeyError`` too).

    See Also
    --------
    Jagged.to_padded : One feature.
    pad_or_truncate : The same for an Arrow list column, as ``fixed_size_list``.

    Examples
    --------
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2, 3], [2, 4, 6, 7], None],
    ...                                 "b": [[3, 6], [], [5]]})
    >>> padded = kj.to_padded_dict({"a": 3}, pad_value=-1)
    >>> padded["a"]
    array([[ 1,  2,  3],
           [ 2,  4,  6],
           [-1, -1, -1]])
    >>> padded["b"]
    array([[ 3,  6],
           [-1, -1],
           [ 5, -1]])
    """
    func = "KeyedJagged.to_padded_dict"
    rows = kj.batch_size
    if max_lengths is None or isinstance(max_lengths, Mapping):
        given = {} if max_lengths is None else _per_key(func, "max_lengths", kj,
                                                          max_lengths, partial=True)
        longest = [0] * kj.num_keys
        if rows and len(given) < kj.num_keys:  # read on the device: one synchronisation
            longest = read_back(func, kj.lengths.reshape(kj.num_keys, rows).max(
                axis=1)).tolist()
        lengths = [given.get(k, longest[k]) for k in range(kj.num_keys)]
    else:
        lengths = _per_key(func, "max_lengths", kj, max_lengths)
    try:
        pad = fill_value(func, pad_value, kj.dtype, arg="pad_value")
    except ArrowSparseValueError:
        msg = f"{func}: pad_value {pad_value!r} does not fit the values dtype {kj.dtype}"
        raise ArrowSparseValueError(msg) from None
    out: dict[Hashable, np.ndarray] = {}
    for k, key in enumerate(kj.keys()):  # a loop over keys
        if key not in out:
            offsets = kj.offsets[k * rows:(k + 1) * rows + 1]
            out[key] = pad_levels(func, kj.values, [offsets], [None], [lengths[k]], pad)
    device_checks(func, kj.xp)
    return out




# --------------------------------------------------------------------- helpers
def _resolve_keys(func: str, arg: str, kj: KeyedJagged, given: Any) -> list[int]:
    """Key positions named by ``given`` (names, or positions when keys are not integers)."""
    if isinstance(given, np.ndarray):
        given = given.tolist()
    if isinstance(given, (str, bytes)) or not isinstance(given, (Sequence, range)):
        msg = (f"{func}: {arg} must be a sequence of keys or positions, "
               f"got {type(given).__name__}")
        raise ArrowSparseTypeError(msg)
    keys = kj.keys()
    int_keys = any(_is_int(k) for k in keys)
    order: list[int] = []
    for i, item in enumerate(given):  # a loop over keys, not rows
        if _is_int(item) and not int_keys:
            pos = int(item)
            if not 0 <= pos < len(keys):
                msg = v.message(func, arg, f"out of range [0, {len(keys)})", i, pos)
                raise ArrowSparseIndexError(msg)
        elif item in kj:
            pos = kj._position(func, item)
        else:
            msg = v.message(func, arg, "is not a key", i, repr(item))
            raise ArrowSparseKeyError(msg)
        order.append(pos)
    return order


def _per_key(func: str, arg: str, kj: KeyedJagged, given: Any, *, minimum: int = 0,
             partial: bool = False) -> Any:
    """Read one count per key from an int, a sequence or a ``{key: count}`` mapping.

    Returns a list by key position; with ``partial`` (mappings only) a dict of the
    positions given.
    """
    keys = kj.keys()

    def count(name: str, x: Any) -> int:
        n = v.check_count(func, name, x)
        if n < minimum:
            msg = f"{func}: {name} must be at least {minimum}, got {n}"
            raise ArrowSparseValueError(msg)
        return n

    if isinstance(given, Mapping):
        found: dict[int, int] = {}
        for key, x in given.items():  # a loop over keys
            if key not in kj:
                msg = f"{func}: {arg} names {key!r}, which is not a key"
                raise ArrowSparseKeyError(msg)
            n = count(f"{arg}[{key!r}]", x)
            found.update((k, n) for k, name in enumerate(keys) if name == key)
        if partial:
            return found
        missing = [key for k, key in enumerate(keys) if k not in found]
        if missing:
            msg = f"{func}: {arg} leaves out key {missing[0]!r}; give every key a size"
            raise ArrowSparseKeyError(msg)
        return [found[k] for k in range(len(keys))]
    if isinstance(given, (int, np.integer)) and not isinstance(given, (bool, np.bool_)):
        return [count(arg, given)] * len(keys)
    if isinstance(given, (Sequence, np.ndarray)) and not isinstance(given, (str, bytes)):
        if len(given) != len(keys):
            msg = f"{func}: {arg} has {len(given)} entries but there are {len(keys)} keys"
            raise ArrowSparseValueError(msg)
        return [count(f"{arg}[{k}]", x) for k, x in enumerate(given)]
    msg = (f"{func}: {arg} must be an integer, a sequence of one integer per key or a "
           f"{{key: integer}} mapping, got {type(given).__name__}")
    raise ArrowSparseTypeError(msg)


def _check_inputs(func: str, arg: str, kjs: Any) -> list[KeyedJagged]:
    """Check a sequence of KeyedJagged that share a batch: same size, all weighted or none."""
    if isinstance(kjs, (str, bytes)) or not isinstance(kjs, Sequence):
        msg = f"{func}: {arg} must be a sequence of KeyedJagged, got {type(kjs).__name__}"
        raise ArrowSparseTypeError(msg)
    inputs = list(kjs)
    if not inputs:
        msg = f"{func}: {arg} must hold at least one KeyedJagged"
        raise ArrowSparseValueError(msg)
    for i, kj in enumerate(inputs):  # a loop over inputs
        if not isinstance(kj, KeyedJagged):
            msg = v.message(func, arg, "must hold KeyedJagged", i, type(kj).__name__)
            raise ArrowSparseTypeError(msg)
        if kj.batch_size != inputs[0].batch_size:
            msg = (f"{func}: {arg}[{i}] has batch_size {kj.batch_size} but {arg}[0] has "
                   f"{inputs[0].batch_size}")
            raise ArrowSparseValueError(msg)
    with_keys = [i for i, kj in enumerate(inputs) if kj.num_keys]  # no keys: no values
    for i in with_keys:
        first = with_keys[0]
        if (inputs[i].weights is None) != (inputs[first].weights is None):
            has = "has" if inputs[i].weights is not None else "has no"
            other = "has" if inputs[first].weights is not None else "has no"
            msg = (f"{func}: {arg}[{i}] {has} weights but {arg}[{first}] {other} weights; "
                   "weighted and unweighted inputs do not mix")
            raise ArrowSparseValueError(msg)
    return inputs


def _cast(x: Any, dtype: Any) -> Any:
    """``x`` in ``dtype`` (unchecked cast); itself when it has it already."""
    return x if x.dtype == dtype else x.astype(dtype)


def _runs(picks: list[_Pick]) -> list[tuple[int, int, int]]:
    """Merge picks into runs ``(input, first key, number of keys)`` of consecutive keys."""
    runs: list[tuple[int, int, int]] = []
    for s, k in picks:  # a loop over keys
        if runs and runs[-1][0] == s and runs[-1][1] + runs[-1][2] == k:
            runs[-1] = (s, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((s, k, 1))
    return runs


def _key_bounds(func: str, inputs: list[KeyedJagged]) -> list[list[int]]:
    """Each input's :meth:`~KeyedJagged.offset_per_key` on the host.

    Inputs on the device are read back together: one synchronisation. Host and device
    inputs together raise (the inputs' values name them).
    """
    xp = array_module(func, *[kj.values for kj in inputs])
    per_key = [kj._key_offsets() for kj in inputs]
    if xp is np:
        return [p.tolist() for p in per_key]
    flat = read_back(func, per_key[0] if len(per_key) == 1 else xp.concatenate(per_key))
    flat = flat.tolist()
    ends = np.cumsum([len(p) for p in per_key]).tolist()
    return [flat[end - len(p):end] for p, end in zip(per_key, ends, strict=True)]


def _gather(func: str, inputs: list[KeyedJagged], picks: list[_Pick], rows: int,
            bounds: list[list[int]] | None = None) -> KeyedJagged:
    """Build a KeyedJagged of the picked keys; views when they are one run of one input.

    ``bounds``: the inputs' :func:`_key_bounds`, read here when not given (and needed).
    """
    cls = type(inputs[0])
    keys = tuple(inputs[s].keys()[k] for s, k in picks)
    runs = _runs(picks)
    if runs and bounds is None:
        bounds = _key_bounds(func, inputs)
    parts = []  # per run: input, first and last row, first and last value
    for s, k, n in runs:
        assert bounds is not None
        parts.append((inputs[s], k * rows, (k + n) * rows, bounds[s][k], bounds[s][k + n]))
    if len(parts) <= 1:
        kj, lo, hi, start, stop = parts[0] if parts else (inputs[0], 0, 0, 0, 0)
        offsets = kj.offsets[lo:hi + 1]
        return cls._new(keys, kj.values[start:stop], kj.lengths[lo:hi],
                        None if kj.weights is None else kj.weights[start:stop],
                        None if kj.validity is None else kj.validity[lo:hi], rows,
                        offsets - start if start else offsets)
    assert bounds is not None
    xp = inputs[0].xp
    named = [(inputs[s].keys()[k], inputs[s].dtype) for s, k in picks]
    non_empty = [nd for (s, k), nd in zip(picks, named, strict=True)
                 if bounds[s][k + 1] > bounds[s][k]]
    dtype = _common_dtype(func, "values", non_empty or named)
    # the common dtype holds every key's values; only keys without values may be of
    # another kind (an all-empty float column), hence the unchecked cast
    values = xp.concatenate([_cast(kj.values[a:b], dtype) for kj, _, _, a, b in parts])
    lengths = xp.concatenate([kj.lengths[lo:hi] for kj, lo, hi, _, _ in parts])
    if all(kj.lengths.dtype == np.int32 for kj, *_ in parts):
        lengths = _cast(lengths, np.int32)
    weights = None
    if parts[0][0].weights is not None:  # the inputs are all weighted or none is
        wdtype = np.result_type(*[kj.weights.dtype for kj, *_ in parts])  # type: ignore[union-attr]
        weights = xp.concatenate([_cast(kj.weights[a:b], wdtype)  # type: ignore[index]
                                  for kj, _, _, a, b in parts])
    validity = None
    if any(kj.validity is not None for kj, *_ in parts):
        validity = xp.concatenate([xp.ones(hi - lo, dtype=bool) if kj.validity is None
                                   else kj.validity[lo:hi] for kj, lo, hi, _, _ in parts])
    device_checks(func, xp)
    return cls._new(keys, values, lengths, weights, validity, rows)
