"""CPU kernels of the masked reductions (``arrow_sparse.masked``).

Every kernel works on *entries*: the stored elements of the input, each with the id
of the output cell it reduces into (``cell``) and, where needed, its position inside
the reduced slice (``pos``). ``inm`` says whether an entry is masked in. The kernels
scatter into one slot per output cell, so entries may come in any order: a CSR
matrix reduced along its columns is one pass over ``indices`` (scatter by column
index), along its rows one pass in ``indptr`` order (each row's entries are
contiguous), and a COO tensor groups by the raveled remaining coordinates.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

__all__ = [
    "masked_count",
    "masked_sum",
    "masked_prod",
    "masked_max",
    "masked_min",
    "masked_sum_abs_pow",
    "masked_count_nonzero",
    "masked_sum_sq_dev",
    "masked_sum_exp",
    "masked_first_best",
    "first_gap",
]


@kernel
def masked_count(cell, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] += 1`` for every masked-in entry of cell ``c``."""
    for i in range(len(cell)):
        if inm[i]:
            out[cell[i]] += 1


@kernel
def masked_sum(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] += v`` over masked-in entries."""
    for i in range(len(cell)):
        if inm[i]:
            out[cell[i]] += vals[i]


@kernel
def masked_prod(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] *= v`` over masked-in entries (``out`` starts at 1)."""
    for i in range(len(cell)):
        if inm[i]:
            out[cell[i]] *= vals[i]


@kernel
def masked_max(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """Take the running maximum over masked-in entries; a NaN sticks, as in ``numpy.max``."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            v = vals[i]
            if v > out[c] or v != v:
                if out[c] == out[c]:
                    out[c] = v


@kernel
def masked_min(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """Take the running minimum over masked-in entries; a NaN sticks, as in ``numpy.min``."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            v = vals[i]
            if v < out[c] or v != v:
                if out[c] == out[c]:
                    out[c] = v


@kernel
def masked_sum_abs_pow(cell, vals, inm, p, out):  # type: ignore[no-untyped-def]
    """``out[c] += |v| ** p`` over masked-in entries (float64 ``out``)."""
    for i in range(len(cell)):
        if inm[i]:
            a = abs(np.float64(vals[i]))
            if p == 2.0:
                out[cell[i]] += a * a
            elif p == 1.0:
                out[cell[i]] += a
            elif a == 0.0 and p < 0.0:
                out[cell[i]] = np.inf
            else:
                out[cell[i]] += a ** p


@kernel
def masked_count_nonzero(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] += 1`` for every masked-in non-zero entry."""
    for i in range(len(cell)):
        if inm[i] and vals[i] != 0:
            out[cell[i]] += 1


@kernel
def masked_sum_sq_dev(cell, vals, inm, mean, out):  # type: ignore[no-untyped-def]
    """``out[c] += (v - mean[c]) ** 2`` over masked-in entries."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            d = np.float64(vals[i]) - mean[c]
            out[c] += d * d


@kernel
def masked_sum_exp(cell, vals, inm, shift, out):  # type: ignore[no-untyped-def]
    """``out[c] += exp(v - shift[c])`` over masked-in entries."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            out[c] += np.exp(np.float64(vals[i]) - shift[c])


@kernel
def masked_first_best(cell, pos, vals, inm, identity, best, out):  # type: ignore[no-untyped-def]
    """``out[c] = min(out[c], pos)`` over entries whose effective value equals ``best[c]``.

    The effective value of a masked-out entry is ``identity``.
    """
    for i in range(len(cell)):
        c = cell[i]
        v = vals[i] if inm[i] else identity
        if v == best[c] and pos[i] < out[c]:
            out[c] = pos[i]


@kernel
def first_gap(keys, slice_size, out):  # type: ignore[no-untyped-def]
    """Smallest position of each cell that is absent from ``keys``.

    ``keys = cell * slice_size + pos`` sorted and unique; ``out`` starts at
    ``slice_size`` (meaning: no gap) and is set per cell that has keys. Cells
    without keys have their gap at 0, which the caller sets beforehand.
    """
    n = len(keys)
    i = 0
    while i < n:
        c = keys[i] // slice_size
        expected = 0
        while i < n and keys[i] // slice_size == c:
            if keys[i] - c * slice_size == expected:
                expected += 1
            i += 1
        out[c] = expected
