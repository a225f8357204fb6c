"""CPU kernels for segment reductions, fused gather + reduce, gather and scatter.

Conventions shared by every kernel here (the public module checks all of it first):

- ``values`` / ``data`` are C-contiguous, 1-D ``[N]`` or 2-D ``[N, D]`` (N-D values
  are viewed as 2-D by the caller). Only the sum and max/min families have 1-D
  variants; the others take 1-D values as ``[N, 1]``.
- ``offsets`` are int32 or int64, ``rows + 1`` long, and may start above zero.
- ``valid`` is a uint8 row mask and ``vmask`` a uint8 mask over the values' first
  axis (0 = null); an empty array means "no nulls". Null rows are reduced as empty
  rows (their offsets range is never read); null values are skipped.
- ``weights`` is empty (unweighted) or holds one weight per value: value ``i`` of row
  ``r`` uses ``weights[i - offsets[r] + woffsets[r]]``.
- ``zero`` is a scalar of the accumulator dtype (int64, uint64 or float64): every
  accumulator starts from it, so one Python-side choice fixes the accumulator.
- ``counts`` is empty or receives the number of non-null values of each row.
- A row with fewer than ``min_count`` non-null values is written as ``empty``.
- Max/min propagate NaN like numpy: ``x if (x > m or x != x) else m`` keeps a NaN once
  one is seen, and compiles to compare + blend without fast-math.

Every sorted and fused kernel is a :func:`~._jit.parallel_kernel` pair (prange over
rows, or over chunks of rows when a per-thread scratch row is needed);
:func:`~._jit.pick` runs the serial twin for small inputs. Scatter kernels are
serial: their output rows are written in input order, which defines duplicates.
"""

from __future__ import annotations

import llvmlite
import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ._jit import kernel, parallel_kernel, pick

#: Rows per scratch chunk of the 2-D kernels is ``rows / _CHUNKS`` (at least 1).
_CHUNKS = 256

#: ``gather_reduce`` modes.
MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2

#: How many indices ahead ``gather_reduce`` prefetches table rows.
_PREFETCH = 8

#: Rows summed in the table's dtype before they are added into float64 (fast path).
_BLOCK = 4


# ----------------------------------------------------------------------------- helpers
#: Small helpers are inlined into the kernels at Numba's IR level: a call to another
#: compiled function is not inlined by LLVM and costs a call plus reference counting
#: of every array argument, per row.
_inline = numba.njit(inline="always", nogil=True)

_TYPED_POINTERS = getattr(llvmlite, "ir_layer_typed_pointers_enabled", True)


def _intrinsic_name(base: str, vec: ir.VectorType) -> str:  # pragma: no cover
    """Mangled name of an LLVM intrinsic overloaded on a vector and a pointer to it."""
    elt = "f32" if isinstance(vec.element, ir.FloatType) else "f64"
    vname = f"v{vec.count}{elt}"
    return f"{base}.{vname}.p0{vname}" if _TYPED_POINTERS else f"{base}.{vname}.p0"


def _splat(builder, value, count):  # pragma: no cover
    vec = ir.VectorType(value.type, count)
    one = builder.insert_element(ir.Constant(vec, ir.Undefined), value,
                                 ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32), count),
                                                        [0] * count))


def _reduce_lanes(builder, vec, combine):  # pragma: no cover
    """Combine the lanes of ``vec`` in a fixed tree (upper half onto lower half)."""
    count = vec.type.count
    while count > 1:
        half = count // 2
        lo = builder.shuffle_vector(vec, vec, ir.Constant(ir.VectorType(ir.IntType(32), half),
                                                          list(range(half))))
        hi = builder.shuffle_vector(vec, vec, ir.Constant(ir.VectorType(ir.IntType(32), half),
                                                          list(range(half, count))))
        vec = combine(builder, lo, hi)
        count = half
    return builder.extract_element(vec, ir.Constant(ir.IntType(32), 0))


def _fadd(builder, x, y):  # pragma: no cover
    return builder.fadd(x, y)


def _nan_max(builder, x, m):  # pragma: no cover
    # x if (x > m or x != x) else m, lane-wise: NaN propagates.
    take = builder.or_(builder.fcmp_ordered(">", x, m), builder.fcmp_unordered("uno", x, x))
    return builder.select(take, x, m)


def _nan_min(builder, x, m):  # pragma: no cover
    take = builder.or_(builder.fcmp_ordered("<", x, m), builder.fcmp_unordered("uno", x, x))
    return builder.select(take, x, m)


def _masked_load(builder, vec, mask_t):  # pragma: no cover
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vec, [vec.as_pointer(), ir.IntType(32), mask_t, vec]),
        _intrinsic_name("llvm.masked.load", vec))


def _row_bounds(context, builder, signature, args):  # pragma: no cover
    values_t = signature.args[0]
    values = context.make_array(values_t)(context, builder, args[0])
    start = context.cast(builder, args[1], signature.args[1], types.intp)
    stop = context.cast(builder, args[2], signature.args[2], types.intp)
    elt = context.get_value_type(values_t.dtype)
    return values, start, stop, elt, context.get_abi_sizeof(elt)


def _masked_sum_codegen(context, builder, signature, args):  # pragma: no cover
    """float64 sum of ``values[start:stop]`` (1-D float) in 64-byte masked vector loads.

    ``L = 64 // itemsize`` float64 lanes (16 for float32, 8 for float64): the ``k``-th
    value of the row is added to lane ``k % L`` (each lane in order, from 0.0), then the
    lanes are combined in a fixed tree, upper half onto lower half
    (``lane[j] += lane[j + h]`` for ``h = L/2, L/4, ..., 1``). The order is fixed, so
    the result does not depend on the machine; a long row is not one chain of
    dependent adds. Masked-off lanes are never read (``llvm.masked.load``), so a row may
    end at the end of the buffer; they load 0.0, which adds nothing.
    """
    values, start, stop, elt, size = _row_bounds(context, builder, signature, args)
    intp = context.get_value_type(types.intp)
    lanes = 64 // size
    vec = ir.VectorType(elt, lanes)
    wide = ir.VectorType(ir.DoubleType(), lanes)
    mask_t = ir.VectorType(ir.IntType(1), lanes)
    load = _masked_load(builder, vec, mask_t)
    lane_ids = ir.Constant(ir.VectorType(intp, lanes), list(range(lanes)))
    slot = cgutils.alloca_once(builder, wide)  # promoted to a register
    builder.store(ir.Constant(wide, None), slot)
    with cgutils.for_range_slice(builder, start, stop, ir.Constant(intp, lanes),
                                 intp=intp) as (i, _):
        mask = builder.icmp_signed("<", lane_ids, _splat(builder, builder.sub(stop, i), lanes))
        at = builder.bitcast(builder.gep(values.data, [i]), vec.as_pointer())
        x = builder.call(load, [at, ir.Constant(ir.IntType(32), size), mask,
                                ir.Constant(vec, None)])
        if size == 4:
            x = builder.fpext(x, wide)
        builder.store(builder.fadd(builder.load(slot), x), slot)
    return _reduce_lanes(builder, builder.load(slot), _fadd)


def _masked_extreme_codegen(op: str):  # pragma: no cover
    """NaN-propagating max/min of ``values[start:stop]`` and ``init`` (1-D float).

    64-byte masked vector loads (masked-off lanes hold ``init``), lanes combined in a
    fixed tree. Max and min do not depend on the order, except which of two equal
    zeros or two NaNs is returned.
    """

    def codegen(context, builder, signature, args):
        values, start, stop, elt, size = _row_bounds(context, builder, signature, args)
        intp = context.get_value_type(types.intp)
        lanes = 64 // size
        vec = ir.VectorType(elt, lanes)
        mask_t = ir.VectorType(ir.IntType(1), lanes)
        combine = _nan_max if op == "max" else _nan_min
        init = _splat(builder, context.cast(builder, args[3], signature.args[3],
                                            signature.args[0].dtype), lanes)
        load = _masked_load(builder, vec, mask_t)
        lane_ids = ir.Constant(ir.VectorType(intp, lanes), list(range(lanes)))
        slot = cgutils.alloca_once(builder, vec)  # promoted to a register
        builder.store(init, slot)
        with cgutils.for_range_slice(builder, start, stop, ir.Constant(intp, lanes),
                                     intp=intp) as (i, _):
            mask = builder.icmp_signed("<", lane_ids,
                                       _splat(builder, builder.sub(stop, i), lanes))
            at = builder.bitcast(builder.gep(values.data, [i]), vec.as_pointer())
            x = builder.call(load, [at, ir.Constant(ir.IntType(32), size), mask, init])
            builder.store(combine(builder, x, builder.load(slot)), slot)
        return _reduce_lanes(builder, builder.load(slot), combine)

    return codegen


def _is_float_vector(values) -> bool:  # pragma: no cover
    return (isinstance(values, types.Array) and values.ndim == 1 and values.layout == "C"
            and values.dtype in (types.float32, types.float64))


@intrinsic
def _masked_sum(typingctx, values, start, stop):  # pragma: no cover
    """float64 sum of ``values[start:stop]`` (1-D float32/float64), vectorised."""
    if not _is_float_vector(values):
        return None
    return types.float64(values, start, stop), _masked_sum_codegen


@intrinsic
def _masked_max(typingctx, values, start, stop, init):  # pragma: no cover
    """NaN-propagating max of ``values[start:stop]`` and ``init``, vectorised."""
    if not _is_float_vector(values):
        return None
    return values.dtype(values, start, stop, init), _masked_extreme_codegen("max")


@intrinsic
def _masked_min(typingctx, values, start, stop, init):  # pragma: no cover
    """NaN-propagating min of ``values[start:stop]`` and ``init``, vectorised."""
    if not _is_float_vector(values):
        return None
    return values.dtype(values, start, stop, init), _masked_extreme_codegen("min")


def _row_sum(values, start, stop, zero):  # pragma: no cover
    """Sum of ``values[start:stop]`` starting from ``zero`` (its dtype accumulates)."""
    raise NotImplementedError  # compiled only, through the overload below


def _row_max(values, start, stop, init):  # pragma: no cover
    """NaN-propagating max of ``values[start:stop]`` and ``init``."""
    raise NotImplementedError


def _row_min(values, start, stop, init):  # pragma: no cover
    """NaN-propagating min of ``values[start:stop]`` and ``init``."""
    raise NotImplementedError


@overload(_row_sum, inline="always")
def _row_sum_impl(values, start, stop, zero):  # pragma: no cover
    if _is_float_vector(values):
        def vectorised(values, start, stop, zero):
            return _masked_sum(values, start, stop)
        return vectorised

    def scalar(values, start, stop, zero):
        # Integers: four interleaved partial sums (value k of the row goes to partial
        # k % 4, the n % 4 trailing ones to partial 0), so a long row is not one chain
        # of dependent adds. Indexing a slice from 0 lets LLVM drop the negative-index
        # wraparound.
        row = values[start:stop]
        n = row.shape[0]
        s0 = zero
        s1 = zero
        s2 = zero
        s3 = zero
        i = 0
        while i + 4 <= n:
            s0 += row[i]
            s1 += row[i + 1]
            s2 += row[i + 2]
            s3 += row[i + 3]
            i += 4
        while i < n:
            s0 += row[i]
            i += 1
        return (s0 + s1) + (s2 + s3)
    return scalar


@overload(_row_max, inline="always")
def _row_max_impl(values, start, stop, init):  # pragma: no cover
    if _is_float_vector(values):
        def vectorised(values, start, stop, init):
            return _masked_max(values, start, stop, init)
        return vectorised

    def scalar(values, start, stop, init):
        row = values[start:stop]
        m = init
        for i in range(row.shape[0]):
            x = row[i]
            m = x if x > m else m
        return m
    return scalar


@overload(_row_min, inline="always")
def _row_min_impl(values, start, stop, init):  # pragma: no cover
    if _is_float_vector(values):
        def vectorised(values, start, stop, init):
            return _masked_min(values, start, stop, init)
        return vectorised

    def scalar(values, start, stop, init):
        row = values[start:stop]
        m = init
        for i in range(row.shape[0]):
            x = row[i]
            m = x if x < m else m
        return m
    return scalar


@_inline
def _chunk_bounds(c, nchunks, num_rows):  # pragma: no cover
    return c * num_rows // nchunks, (c + 1) * num_rows // nchunks


# ------------------------------------------------------------------- sorted: sum family
def _sum_1d(values, offsets, valid, vmask, weights, woffsets, mean, zero, min_count,
            empty, out, counts):  # pragma: no cover
    num_rows = out.shape[0]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for r in prange(num_rows):
        acc = zero
        n = 0
        if all_valid or valid[r] != 0:
            start = offsets[r]
            stop = offsets[r + 1]
            if weighted:
                shift = woffsets[r] - start
                for i in range(start, stop):
                    if not masked or vmask[i] != 0:
                        acc += (zero + weights[i + shift]) * values[i]
                        n += 1
            elif masked:
                for i in range(start, stop):
                    if vmask[i] != 0:
                        acc += values[i]
                        n += 1
            else:
                acc = _row_sum(values, start, stop, zero)
                n = stop - start
        if want_counts:
            counts[r] = n
        if n < min_count:
            out[r] = empty
        elif mean:
            out[r] = acc / n
        else:
            out[r] = acc


def _sum_2d(values, offsets, valid, vmask, weights, woffsets, mean, zero, min_count,
            empty, out, counts):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, zero)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = zero
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                shift = woffsets[r] - start if weighted else 0
                for i in range(start, stop):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    if weighted:
                        w = zero + weights[i + shift]
                        for d in range(width):
                            acc[d] += w * values[i, d]
                    else:
                        for d in range(width):
                            acc[d] += values[i, d]
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            elif mean:
                for d in range(width):
                    out[r, d] = acc[d] / n
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ---------------------------------------------------------------- sorted: max/min family
def _extreme_1d(values, offsets, valid, vmask, is_max, init, min_count, empty, out,
                counts):  # pragma: no cover
    num_rows = out.shape[0]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for r in prange(num_rows):
        m = init
        n = 0
        if all_valid or valid[r] != 0:
            start = offsets[r]
            stop = offsets[r + 1]
            if masked:
                for i in range(start, stop):
                    if vmask[i] != 0:
                        x = values[i]
                        n += 1
                        if is_max:
                            m = x if (x > m or x != x) else m
                        else:
                            m = x if (x < m or x != x) else m
            else:
                n = stop - start
                if is_max:
                    m = _row_max(values, start, stop, init)
                else:
                    m = _row_min(values, start, stop, init)
        if want_counts:
            counts[r] = n
        out[r] = empty if n < min_count else m


def _extreme_2d(values, offsets, valid, vmask, is_max, init, min_count, empty, out,
                counts):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, init)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = init
            n = 0
            if all_valid or valid[r] != 0:
                for i in range(offsets[r], offsets[r + 1]):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    if is_max:
                        for d in range(width):
                            x = values[i, d]
                            m = acc[d]
                            acc[d] = x if (x > m or x != x) else m
                    else:
                        for d in range(width):
                            x = values[i, d]
                            m = acc[d]
                            acc[d] = x if (x < m or x != x) else m
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ------------------------------------------------------------ sorted: argmax/argmin, 2-D
def _arg_extreme_2d(values, offsets, valid, vmask, is_max, min_count, empty, out,
                    counts):  # pragma: no cover
    # out[r, d]: position within row r of its first max (min) in column d; the first
    # NaN wins, as numpy.argmax does.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        best = np.empty(width, values.dtype)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                for i in range(start, offsets[r + 1]):
                    if masked and vmask[i] == 0:
                        continue
                    pos = i - start
                    if n == 0:
                        for d in range(width):
                            best[d] = values[i, d]
                            out[r, d] = pos
                    else:
                        for d in range(width):
                            x = values[i, d]
                            m = best[d]
                            if m == m and (x != x or (x > m if is_max else x < m)):
                                best[d] = x
                                out[r, d] = pos
                    n += 1
            if want_counts:
                counts[r] = n
            if n < min_count or n == 0:
                for d in range(width):
                    out[r, d] = empty


# ------------------------------------------------------------------- sorted: prod, 2-D
def _prod_2d(values, offsets, valid, vmask, one, min_count, empty, out,
             counts):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, one)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = one
            n = 0
            if all_valid or valid[r] != 0:
                for i in range(offsets[r], offsets[r + 1]):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    for d in range(width):
                        acc[d] *= values[i, d]
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# -------------------------------------------------------------- sorted: logsumexp, 2-D
def _logsumexp_2d(values, offsets, valid, vmask, zero, min_count, empty, out,
                  counts):  # pragma: no cover
    # Stable: m = max(x), result = m + log(sum(exp(x - m))), in float64. A column whose
    # max is +-inf gives that infinity, a NaN gives NaN.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        mx = np.full(width, zero)
        acc = np.full(width, zero)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            n = 0
            for d in range(width):
                mx[d] = -np.inf
                acc[d] = zero
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                for i in range(start, stop):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    for d in range(width):
                        x = zero + values[i, d]
                        m = mx[d]
                        mx[d] = x if (x > m or x != x) else m
                for i in range(start, stop):
                    if masked and vmask[i] == 0:
                        continue
                    for d in range(width):
                        m = mx[d]
                        if np.isfinite(m):
                            acc[d] += np.exp((zero + values[i, d]) - m)
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    m = mx[d]
                    out[r, d] = m + np.log(acc[d]) if np.isfinite(m) else m


# ------------------------------------------------------------- fused gather + reduce
@intrinsic
def _prefetch_row(typingctx, data, indices, j):  # pragma: no cover
    """Prefetch every cache line of ``data[indices[j]]`` (if ``j`` and the row exist).

    A row need not start on a cache line (numpy aligns to 16 bytes), so the lines from
    its first to its last byte are all hinted. ``llvm.prefetch`` never faults.
    """
    if not (isinstance(data, types.Array) and data.ndim == 2 and data.layout == "C"):
        return None
    sig = types.void(data, indices, j)

    def codegen(context, builder, signature, args):
        table = context.make_array(signature.args[0])(context, builder, args[0])
        ids = context.make_array(signature.args[1])(context, builder, args[1])
        j = context.cast(builder, args[2], signature.args[2], types.intp)
        _emit_prefetch_row(context, builder, signature.args[0], table, ids, j)
        return context.get_dummy_value()

    return sig, codegen


def _emit_prefetch_row(context, builder, table_t, table, ids, j):  # pragma: no cover
    """IR of ``_prefetch_row``: hint the lines of ``table[ids[j]]`` if both exist."""
    intp = context.get_value_type(types.intp)
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8" if _TYPED_POINTERS else "llvm.prefetch.p0")
    num_ids = builder.extract_value(ids.shape, 0)
    with builder.if_then(builder.icmp_unsigned("<", j, num_ids), likely=True):
        row = builder.load(builder.gep(ids.data, [j]))
        row = builder.sext(row, intp) if row.type.width < intp.width else row
        num_rows = builder.extract_value(table.shape, 0)
        with builder.if_then(builder.icmp_unsigned("<", row, num_rows), likely=True):
            base = builder.gep(builder.bitcast(table.data, i8p),
                               [builder.mul(row, builder.extract_value(table.strides, 0))])
            size = ir.Constant(intp, context.get_abi_sizeof(context.get_value_type(table_t.dtype)))
            nbytes = builder.mul(builder.extract_value(table.shape, 1), size)
            with cgutils.for_range_slice(builder, ir.Constant(intp, 0), nbytes,
                                         ir.Constant(intp, 64), intp=intp) as (off, _):
                builder.call(fn, [builder.gep(base, [off]), i32(0), i32(3), i32(1)])
            last = builder.sub(nbytes, ir.Constant(intp, 1))
            with builder.if_then(builder.icmp_signed(">=", last, ir.Constant(intp, 0))):
                builder.call(fn, [builder.gep(base, [last]), i32(0), i32(3), i32(1)])


#: Vectors per wide ``_sum_rows_into`` call: ``4 * 64`` bytes of a row.
_NVEC = 4


def _sum_rows_codegen(nvec):  # pragma: no cover
    """Code generator of ``_sum_rows_into`` / ``_sum_row_vector_into`` (``nvec`` vectors)."""

    def codegen(context, builder, signature, args):
        data_t, idx_t, first_t, last_t, col_t, acc_t, ahead_t = signature.args
        table = context.make_array(data_t)(context, builder, args[0])
        ids = context.make_array(idx_t)(context, builder, args[1])
        accs = context.make_array(acc_t)(context, builder, args[5])
        intp = context.get_value_type(types.intp)
        first = context.cast(builder, args[2], first_t, types.intp)
        last = context.cast(builder, args[3], last_t, types.intp)
        col = context.cast(builder, args[4], col_t, types.intp)
        ahead = context.cast(builder, args[6], ahead_t, types.intp)
        elt = context.get_value_type(data_t.dtype)
        size = context.get_abi_sizeof(elt)
        lanes = 64 // size
        vec = ir.VectorType(elt, lanes)
        vec64 = ir.VectorType(ir.DoubleType(), lanes)
        # float64 accumulators for the whole call, and one run's sums in the table dtype;
        # all allocas are promoted to registers.
        totals, sums, acc_at = [], [], []
        for b in range(nvec):
            at = builder.gep(accs.data, [builder.add(col, ir.Constant(intp, lanes * b))])
            at = builder.bitcast(at, vec64.as_pointer())
            total = cgutils.alloca_once(builder, vec64)
            builder.store(builder.load(at, align=8), total)
            totals.append(total)
            sums.append(cgutils.alloca_once(builder, vec))
            acc_at.append(at)
        base = builder.bitcast(table.data, ir.IntType(8).as_pointer())
        stride = builder.extract_value(table.strides, 0)
        col_bytes = builder.mul(col, ir.Constant(intp, size))
        with cgutils.for_range_slice(builder, first, last, ir.Constant(intp, _BLOCK),
                                     intp=intp) as (run, _):
            run_end = builder.add(run, ir.Constant(intp, _BLOCK))
            run_end = builder.select(builder.icmp_signed("<", run_end, last), run_end, last)
            for slot in sums:
                builder.store(ir.Constant(vec, None), slot)
            with cgutils.for_range_slice(builder, run, run_end, ir.Constant(intp, 1),
                                         intp=intp) as (i, _):
                with builder.if_then(builder.icmp_signed(">", ahead, ir.Constant(intp, 0))):
                    _emit_prefetch_row(context, builder, data_t, table, ids,
                                       builder.add(i, ahead))
                row = builder.load(builder.gep(ids.data, [i]))
                row = builder.sext(row, intp) if row.type.width < intp.width else row
                start = builder.add(builder.mul(row, stride), col_bytes)
                for b, slot in enumerate(sums):
                    at = builder.gep(base, [builder.add(start, ir.Constant(intp, 64 * b))])
                    value = builder.load(builder.bitcast(at, vec.as_pointer()), align=size)
                    builder.store(builder.fadd(builder.load(slot), value), slot)
            for total, slot in zip(totals, sums, strict=True):
                run_sum = builder.load(slot)
                if size == 4:
                    run_sum = builder.fpext(run_sum, vec64)
                builder.store(builder.fadd(builder.load(total), run_sum), total)
        for total, at in zip(totals, acc_at, strict=True):
            builder.store(builder.load(total), at, align=8)
        return context.get_dummy_value()

    return codegen


def _sum_rows_typing(data, acc):  # pragma: no cover
    return (isinstance(data, types.Array) and data.ndim == 2 and data.layout == "C"
            and data.dtype in (types.float32, types.float64)
            and isinstance(acc, types.Array) and acc.dtype == types.float64)


@intrinsic
def _sum_rows_into(typingctx, data, indices, first, last, col, acc,
                   ahead):  # pragma: no cover
    """``acc[col:col+G] += sum(data[indices[i], col:col+G] for i in range(first, last))``.

    ``data`` is a C-contiguous float32/float64 table, ``acc`` float64, and
    ``G = _NVEC * 64 // data.itemsize`` (64 float32 or 32 float64 columns). Runs of
    ``_BLOCK`` rows (from ``first``) are summed in the table's dtype, each run's sum is
    added to float64 accumulators, all in registers, and ``acc`` is written once: the
    loop Numba's loop-vectorizer cannot write (it keeps accumulators in memory, and
    Numba does not run LLVM's SLP vectorizer). With ``ahead > 0`` each step also
    prefetches the row ``ahead`` positions later.
    """
    if not _sum_rows_typing(data, acc):
        return None
    sig = types.void(data, indices, first, last, col, acc, ahead)
    return sig, _sum_rows_codegen(_NVEC)


@intrinsic
def _sum_row_vector_into(typingctx, data, indices, first, last, col, acc,
                         ahead):  # pragma: no cover
    """As ``_sum_rows_into`` for one 64-byte vector: 16 float32 or 8 float64 columns."""
    if not _sum_rows_typing(data, acc):
        return None
    return types.void(data, indices, first, last, col, acc, ahead), _sum_rows_codegen(1)


def _gather_sum_fast(data, indices, offsets, valid, mean, min_count, empty, line, group,
                     out):  # pragma: no cover
    # gather_reduce for a float table, plain sum/mean (no null ids, no weights): runs
    # of _BLOCK ids are summed in registers in the table's dtype and accumulated in
    # float64 registers (_sum_rows_into); rows _PREFETCH ids ahead are prefetched.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.zeros(width)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = 0.0
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                n = stop - start
                col = 0
                ahead = _PREFETCH  # the first pass over the row's ids prefetches
                while col + group <= width:
                    _sum_rows_into(data, indices, start, stop, col, acc, ahead)
                    col += group
                    ahead = 0
                while col + line <= width:
                    _sum_row_vector_into(data, indices, start, stop, col, acc, ahead)
                    col += line
                    ahead = 0
                if col < width:  # the last columns, in float64 one row at a time
                    for j in range(start, stop):
                        row = indices[j]
                        for d in range(col, width):
                            acc[d] += data[row, d]
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            elif mean:
                for d in range(width):
                    out[r, d] = acc[d] / n
            else:
                for d in range(width):
                    out[r, d] = acc[d]


def _gather_reduce(data, indices, offsets, valid, vmask, weights, woffsets, mode, zero,
                   lowest, min_count, empty, out, counts):  # pragma: no cover
    # Row r reduces data[indices[i]] (times its weight) for i in offsets[r]:offsets[r+1]
    # without materialising the gathered rows: each is added into a scratch row. Table
    # rows are prefetched _PREFETCH ids ahead (random rows miss every cache level).
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    is_max = mode == MODE_MAX
    plain = not (masked or weighted or is_max)
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, zero)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            init = lowest if is_max else zero
            for d in range(width):
                acc[d] = init
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                head = start
                if plain:
                    # Four rows per pass: a quarter of the scratch-row traffic. Each pair
                    # of float32 values adds exactly in float64.
                    while head + 4 <= stop:
                        for k in range(4):
                            _prefetch_row(data, indices, head + _PREFETCH + k)
                        a = indices[head]
                        b = indices[head + 1]
                        e = indices[head + 2]
                        f = indices[head + 3]
                        for d in range(width):
                            acc[d] += (((zero + data[a, d]) + data[b, d])
                                       + ((zero + data[e, d]) + data[f, d]))
                        head += 4
                    n = stop - start
                shift = woffsets[r] - start if weighted else 0
                for i in range(head, stop):
                    _prefetch_row(data, indices, i + _PREFETCH)
                    if masked and vmask[i] == 0:
                        continue
                    if not plain:
                        n += 1
                    row = indices[i]
                    if weighted:
                        w = zero + weights[i + shift]
                        if is_max:
                            for d in range(width):
                                x = w * data[row, d]
                                m = acc[d]
                                acc[d] = x if (x > m or x != x) else m
                        else:
                            for d in range(width):
                                acc[d] += w * data[row, d]
                    elif is_max:
                        for d in range(width):
                            x = data[row, d]
                            m = acc[d]
                            acc[d] = x if (x > m or x != x) else m
                    else:
                        for d in range(width):
                            acc[d] += data[row, d]
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            elif mode == MODE_MEAN:
                for d in range(width):
                    out[r, d] = acc[d] / n
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ------------------------------------------------------------------ unsorted (scatter)
@kernel
def _scatter_add(values, ids, vmask, weights, zero, acc, counts):  # pragma: no cover
    # acc[S, D] starts at zero; values are added in input order.
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    width = acc.shape[1]
    for i in range(values.shape[0]):
        if masked and vmask[i] == 0:
            continue
        s = ids[i]
        counts[s] += 1
        if weighted:
            w = zero + weights[i]
            for d in range(width):
                acc[s, d] += w * values[i, d]
        else:
            for d in range(width):
                acc[s, d] += values[i, d]


@kernel
def _scatter_extreme(values, ids, vmask, is_max, out, counts):  # pragma: no cover
    # out[S, D] starts at the lowest (highest) value of its dtype.
    masked = vmask.shape[0] != 0
    width = out.shape[1]
    for i in range(values.shape[0]):
        if masked and vmask[i] == 0:
            continue
        s = ids[i]
        counts[s] += 1
        if is_max:
            for d in range(width):
                x = values[i, d]
                m = out[s, d]
                out[s, d] = x if (x > m or x != x) else m
        else:
            for d in range(width):
                x = values[i, d]
                m = out[s, d]
                out[s, d] = x if (x < m or x != x) else m


@kernel
def _scatter_assign(data, indices, slices):  # pragma: no cover
    # In index order, so the last write to a repeated index wins.
    width = data.shape[1]
    for i in range(indices.shape[0]):
        row = indices[i]
        for d in range(width):
            data[row, d] = slices[i, d]


@kernel
def _scatter_weighted_sum(data, w0, indices, slices, w1):  # pragma: no cover
    # Caffe2's ScatterWeightedSumOp, loop for loop: first every occurrence of an index
    # scales its row by w0 (a row listed k times is scaled k times; skipped when w0 is
    # 1, which changes nothing), then every slice adds w1 * slices[i] into its row, in
    # index order. Each step is computed in float64 and rounded to data's dtype.
    width = data.shape[1]
    if w0 != 1.0:
        for i in range(indices.shape[0]):
            row = indices[i]
            for d in range(width):
                data[row, d] = w0 * data[row, d]
    for i in range(indices.shape[0]):
        row = indices[i]
        for d in range(width):
            data[row, d] = data[row, d] + w1 * slices[i, d]


@kernel
def _ids_to_offsets(ids, offsets):  # pragma: no cover
    # ids are sorted and in [0, len(offsets) - 1): offsets[k] = first i with ids[i] >= k.
    num_segments = offsets.shape[0] - 1
    k = 0
    for i in range(ids.shape[0]):
        s = ids[i]
        while k <= s:
            offsets[k] = i
            k += 1
    while k <= num_segments:
        offsets[k] = ids.shape[0]
        k += 1


_SUM_1D = parallel_kernel(_sum_1d)
_SUM_2D = parallel_kernel(_sum_2d)
_EXTREME_1D = parallel_kernel(_extreme_1d)
_EXTREME_2D = parallel_kernel(_extreme_2d)
_ARG_EXTREME_2D = parallel_kernel(_arg_extreme_2d)
_PROD_2D = parallel_kernel(_prod_2d)
_LOGSUMEXP_2D = parallel_kernel(_logsumexp_2d)
_GATHER_REDUCE = parallel_kernel(_gather_reduce)
_GATHER_SUM_FAST = parallel_kernel(_gather_sum_fast)

_NONE_U8 = np.empty(0, dtype=np.uint8)
_NO_WEIGHTS = {np.dtype(t): np.empty(0, dtype=t) for t in (np.int64, np.uint64, np.float64)}


def _no_weights(zero: np.generic) -> np.ndarray:
    """Return the empty weights of an unweighted call, of the accumulator's dtype.

    A float64 placeholder would make Numba unify an int64 accumulator with the
    (never taken) weighted branch's float64, and round integer sums above 2**53.
    """
    return _NO_WEIGHTS[zero.dtype]


_NONE_I64 = np.empty(0, dtype=np.int64)


def _work(values: np.ndarray, num_rows: int) -> int:
    return values.size + num_rows


# --------------------------------------------------------------------- public kernels
def sorted_sum(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
               vmask: np.ndarray | None, weights: np.ndarray | None,
               woffsets: np.ndarray | None, mean: bool, zero: np.generic, min_count: int,
               empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> None:
    """Sum (``mean``: divided by the count) of each row into ``out`` (see module docstring)."""
    pair = _SUM_1D if values.ndim == 1 else _SUM_2D
    pick(pair, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask,
        _no_weights(zero) if weights is None else weights,
        offsets if woffsets is None else woffsets, mean, zero, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_extreme(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                   vmask: np.ndarray | None, is_max: bool, init: np.generic, min_count: int,
                   empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> None:
    """Max (``is_max``) or min of each row; ``init`` is the dtype's lowest (highest) value."""
    pair = _EXTREME_1D if values.ndim == 1 else _EXTREME_2D
    pick(pair, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, is_max, init, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_arg_extreme(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                       vmask: np.ndarray | None, is_max: bool, min_count: int, empty: int,
                       out: np.ndarray, counts: np.ndarray | None) -> None:
    """Position within the row of the first max (min) of each column; 2-D only."""
    pick(_ARG_EXTREME_2D, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, is_max, min_count, np.int64(empty), out,
        _NONE_I64 if counts is None else counts)


def sorted_prod(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                vmask: np.ndarray | None, one: np.generic, min_count: int, empty: np.generic,
                out: np.ndarray, counts: np.ndarray | None) -> None:
    """Product of each row; ``one`` fixes the accumulator dtype; 2-D only."""
    pick(_PROD_2D, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, one, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_logsumexp(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                     vmask: np.ndarray | None, min_count: int, empty: np.generic,
                     out: np.ndarray, counts: np.ndarray | None) -> None:
    """Numerically stable log-sum-exp of each row (float64 inside); 2-D only."""
    pick(_LOGSUMEXP_2D, 4 * _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, np.float64(0), min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def gather_reduce(data: np.ndarray, indices: np.ndarray, offsets: np.ndarray,
                  valid: np.ndarray | None, vmask: np.ndarray | None,
                  weights: np.ndarray | None, woffsets: np.ndarray | None, mode: int,
                  zero: np.generic, lowest: np.generic, min_count: int, empty: np.generic,
                  out: np.ndarray, counts: np.ndarray | None) -> None:
    """Reduce ``data[indices[i]]`` per row (``mode``: MODE_SUM, MODE_MEAN or MODE_MAX)."""
    work = (int(offsets[-1]) - int(offsets[0])) * data.shape[1] + len(out)
    line = max(1, 64 // data.itemsize)  # elements per 64-byte cache line
    if (mode != MODE_MAX and vmask is None and weights is None and counts is None
            and data.dtype.kind == "f" and data.shape[1] >= line
            and isinstance(zero, np.float64)):
        pick(_GATHER_SUM_FAST, work)(
            data, indices, offsets, _NONE_U8 if valid is None else valid, mode == MODE_MEAN,
            min_count, empty, line, _NVEC * line, out)
        return
    pick(_GATHER_REDUCE, work)(
        data, indices, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask,
        _no_weights(zero) if weights is None else weights,
        offsets if woffsets is None else woffsets, mode, zero, lowest, min_count, empty,
        out, _NONE_I64 if counts is None else counts)


def scatter_add(values: np.ndarray, ids: np.ndarray, vmask: np.ndarray | None,
                weights: np.ndarray | None, zero: np.generic, acc: np.ndarray,
                counts: np.ndarray) -> None:
    """``acc[ids[i]] += weights[i] * values[i]`` and count, in input order."""
    _scatter_add(values, ids, _NONE_U8 if vmask is None else vmask,
                 _no_weights(zero) if weights is None else weights, zero, acc, counts)


def scatter_extreme(values: np.ndarray, ids: np.ndarray, vmask: np.ndarray | None,
                    is_max: bool, out: np.ndarray, counts: np.ndarray) -> None:
    """``out[ids[i]] = max(out[ids[i]], values[i])`` (or min), NaN propagating."""
    _scatter_extreme(values, ids, _NONE_U8 if vmask is None else vmask, is_max, out, counts)


def scatter_assign(data: np.ndarray, indices: np.ndarray, slices: np.ndarray) -> None:
    """``data[indices[i]] = slices[i]`` in order (last write wins); 2-D views."""
    _scatter_assign(data, indices, slices)


def scatter_weighted_sum(data: np.ndarray, w0: float, indices: np.ndarray,
                         slices: np.ndarray, w1: float) -> None:
    """Scale each listed row by ``w0`` per occurrence, then add ``w1 * slices[i]``; 2-D views."""
    _scatter_weighted_sum(data, np.float64(w0), indices, slices, np.float64(w1))


def sorted_ids_to_offsets(ids: np.ndarray, num_segments: int) -> np.ndarray:
    """int64 offsets (``num_segments + 1``) of checked, sorted segment ids."""
    offsets = np.empty(num_segments + 1, dtype=np.int64)
    _ids_to_offsets(ids, offsets)
    return offsets
