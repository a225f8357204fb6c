"""CPU kernels for ``KeyedJagged`` sharding: FBGEMM's block bucketizing.

Registered in the ``transforms`` kernel family (``kernels/cpu/transforms.py`` re-exports
the public names). Rows are the key-major rows of a ``KeyedJagged`` (``num_keys *
batch_size``), with int64 offsets from zero. Values are passed as an *unsigned* view
of their integer dtype, so a negative id is bucketed by its two's-complement bit
pattern, as FBGEMM's ``block_bucketize_sparse_features`` does.
"""

from __future__ import annotations

import numpy as np

from ._jit import parallel_kernel, run

_EMPTY_F64 = np.empty(0, dtype=np.float64)


def _bucket_counts(uvalues, offsets, batch_size, block, threshold, all_block, my_size,
                   counts, lo, hi):  # pragma: no cover
    # counts[p * rows + r] = how many values of row r (in [lo, hi)) go to bucket p.
    # Row r owns every counts[:, r] entry, so rows run in parallel without races.
    rows = offsets.shape[0] - 1
    for r in range(lo, hi):
        t = r // batch_size
        blk = block[t]
        thr = threshold[t]
        whole = all_block[t]
        for i in range(offsets[r], offsets[r + 1]):
            u = np.uint64(uvalues[i])
            if whole or u < thr:
                p = np.int64(u // blk)
            else:
                p = np.int64(u % my_size)
            counts[p * rows + r] += 1


def _bucket_scatter(uvalues, offsets, batch_size, block, threshold, all_block, my_size,
                    keep_original, cursor, out, weights, out_weights, positions,
                    permute, lo, hi):  # pragma: no cover
    # Writes each value (its new id), weight, in-row position and the inverse
    # permutation at cursor[p * rows + r], which starts at bucket p's row r offset.
    rows = offsets.shape[0] - 1
    weighted = weights.shape[0] != 0
    with_positions = positions.shape[0] != 0
    with_permute = permute.shape[0] != 0
    for r in range(lo, hi):
        t = r // batch_size
        blk = block[t]
        thr = threshold[t]
        whole = all_block[t]
        start = offsets[r]
        for i in range(start, offsets[r + 1]):
            u = np.uint64(uvalues[i])
            if whole or u < thr:
                p = np.int64(u // blk)
                new = u % blk
            else:
                p = np.int64(u % my_size)
                new = u // my_size
            slot = p * rows + r
            pos = cursor[slot]
            cursor[slot] = pos + 1
            out[pos] = u if keep_original else new
            if weighted:
                out_weights[pos] = weights[i]
            if with_positions:
                positions[pos] = i - start
            if with_permute:
                permute[i] = pos


_BUCKET_COUNTS = parallel_kernel(_bucket_counts)
_BUCKET_SCATTER = parallel_kernel(_bucket_scatter)


def block_bucketize(uvalues: np.ndarray, offsets: np.ndarray, batch_size: int,
                    block: np.ndarray, threshold: np.ndarray, all_block: np.ndarray,
                    my_size: int, keep_original: bool, weights: np.ndarray | None,
                    positions: bool, permute: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None,
                               np.ndarray | None]:
    """Split every row's values into ``my_size`` buckets (FBGEMM's block bucketizing).

    A value ``u`` of key ``t`` goes to bucket ``u // block[t]`` as ``u % block[t]``
    when ``u < threshold[t]`` (``block[t] * my_size``, or always when ``all_block[t]``),
    else to bucket ``u % my_size`` as ``u // my_size``; ``keep_original`` keeps ``u``.

    Returns ``(new_offsets, new_values, new_weights, positions, permute)``: int64
    offsets over the bucket-major rows (``my_size * rows + 1``), the new values in
    ``uvalues``' dtype, then the optional weights, in-row positions and, per input
    value, its position in the output.
    """
    rows = len(offsets) - 1
    total = int(offsets[-1])
    counts = np.zeros(my_size * rows, dtype=np.int64)
    run(_BUCKET_COUNTS, total, rows, uvalues, offsets, batch_size, block, threshold, all_block,
        np.uint64(my_size), counts)
    new_offsets = np.zeros(my_size * rows + 1, dtype=np.int64)
    np.cumsum(counts, out=new_offsets[1:])
    cursor = new_offsets[:-1].copy()
    out = np.empty(total, dtype=uvalues.dtype)
    out_weights = None if weights is None else np.empty(total, dtype=weights.dtype)
    pos = np.empty(total if positions else 0, dtype=np.int64)
    perm = np.empty(total if permute else 0, dtype=np.int64)
    run(_BUCKET_SCATTER, total, rows,
        uvalues, offsets, batch_size, block, threshold, all_block, np.uint64(my_size),
        keep_original, cursor, out, _EMPTY_F64 if weights is None else weights,
        _EMPTY_F64 if out_weights is None else out_weights, pos, perm)
    return (new_offsets, out, out_weights, pos if positions else None,
            perm if permute else None)
