"""CPU kernels of the sorted segment reductions, with the LLVM IR they use.

Private to :mod:`.segment`, whose public functions choose and call them (the
conventions are in its docstring). ``row_sum`` / ``row_max`` / ``row_min`` reduce one
1-D float row in 64-byte vectors, ``sum_range_into`` adds a range of 2-D float rows
into float64 accumulators held in registers: loops that Numba's own code generation
does not produce (its loop vectorizer keeps accumulators in memory and needs a scalar
tail; Numba runs no SLP vectorizer).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ._segment_ir import (
    NVEC,
    fadd,
    float_table,
    inline,
    masked_load,
    reduce_lanes,
    splat,
    take_max,
    take_min,
)

#: Rows per scratch chunk of the 2-D kernels is ``rows / _CHUNKS`` (at least 1).
_CHUNKS = 256


@inline
def _chunk_bounds(c, nchunks, num_rows):  # pragma: no cover
    return c * num_rows // nchunks, (c + 1) * num_rows // nchunks


# ------------------------------------------------------------- 1-D row reductions
def _is_float_vector(values) -> bool:  # pragma: no cover
    return (isinstance(values, types.Array) and values.ndim == 1 and values.layout == "C"
            and values.dtype in (types.float32, types.float64))


def _emit_row(context, builder, values_t, values, start, stop, nvec, init,
              op: str, checked: bool = True):  # pragma: no cover
    """IR of the 1-D float reduction of ``values[start:stop]`` (``op``: sum, max or min).

    The row is read in 64-byte vectors of ``L = 64 // itemsize`` values: value ``k`` of
    the row goes to lane ``k % L`` and each lane is reduced in order (sums in float64
    from 0.0; max/min from ``init``), then the lanes are combined in a fixed tree,
    upper half onto lower half. The order is fixed, so the result does not depend on
    the machine.

    The first ``nvec`` vectors are read whatever the row's length (lanes past its end
    are discarded by a select), so rows of up to ``nvec * L`` values take no
    data-dependent branch: with random row lengths a loop whose trip count follows
    the length mispredicts about once a row, which costs more than the few wasted
    lanes. A vector is a plain load, which may read up to ``L - 1`` values past the row
    but never past the array (there a masked load, which does not fault): masked loads
    that miss the cache are several times slower than plain ones on some CPUs.
    ``checked=False``: the caller knows every vector lies inside the array (plain loads
    only, no test).

    Max/min run on integer keys (:func:`_float_keys`) whose signed order is IEEE 754's
    ``maximum``/``minimum`` order: ``-0.0 < +0.0``, and a NaN (any payload) becomes the
    largest key for max, the smallest for min, so it propagates. One integer
    compare-and-select per vector on the accumulator, and the lanes combine in any
    order to the same bits (the row's result, a NaN being returned as the quiet NaN of
    all-ones payload, signed for min).
    """
    if op != "sum":
        return _emit_row_extreme(context, builder, values_t, values, start, stop, nvec,
                                 init, op == "max", checked)
    intp = context.get_value_type(types.intp)
    vec = ir.VectorType(context.get_value_type(values_t.dtype),
                        64 // context.get_abi_sizeof(context.get_value_type(values_t.dtype)))
    acc_t = ir.VectorType(ir.DoubleType(), vec.count)
    fill = ir.Constant(acc_t, None)  # +0.0: adds nothing
    slot = cgutils.alloca_once(builder, acc_t)  # promoted to a register
    builder.store(fill, slot)

    def add_vector(i, lanes_in=None):
        x, mask = _row_vector(builder, values, vec, stop, i, checked, lanes_in)
        if vec.element != acc_t.element:
            x = builder.fpext(x, acc_t)
        # the select comes after the conversion so that it is not folded back into
        # a masked load; for float64 it may be, which costs speed only
        builder.store(builder.fadd(builder.load(slot), builder.select(mask, x, fill)), slot)

    _for_row_vectors(builder, intp, start, stop, nvec, vec.count, add_vector)
    return reduce_lanes(builder, builder.load(slot), fadd)


def _emit_row_extreme(context, builder, values_t, values, start, stop, nvec, init,
                      is_max: bool, checked: bool = True):  # pragma: no cover
    """IR of the 1-D float max (min) of ``values[start:stop]`` and ``init`` (see _emit_row)."""
    intp = context.get_value_type(types.intp)
    elt = context.get_value_type(values_t.dtype)
    size = context.get_abi_sizeof(elt)
    vec = ir.VectorType(elt, 64 // size)
    key_t = ir.VectorType(ir.IntType(8 * size), vec.count)
    top = (1 << (8 * size - 1)) - 1
    nan_key = ir.Constant(key_t, [top if is_max else -top - 1] * vec.count)
    pred = ">" if is_max else "<"
    slot = cgutils.alloca_once(builder, key_t)  # promoted to a register
    builder.store(_float_keys(builder, builder.bitcast(splat(builder, init, vec.count), key_t)),
                  slot)

    def add_vector(i, lanes_in=None):
        x, mask = _row_vector(builder, values, vec, stop, i, checked, lanes_in)
        key = builder.select(builder.fcmp_unordered("uno", x, x), nan_key,
                             _float_keys(builder, builder.bitcast(x, key_t)))
        acc = builder.load(slot)
        # lanes past the row's end keep their key
        take = builder.and_(mask, builder.icmp_signed(pred, key, acc))
        builder.store(builder.select(take, key, acc), slot)

    _for_row_vectors(builder, intp, start, stop, nvec, vec.count, add_vector)

    def combine(builder, x, m):
        return builder.select(builder.icmp_signed(pred, x, m), x, m)

    key = reduce_lanes(builder, builder.load(slot), combine)
    return builder.bitcast(_float_keys(builder, key), elt)


def _row_vector(builder, values, vec, stop, i, checked=True, mask=None):  # pragma: no cover
    """Load the 64-byte vector of ``values`` at ``i``; return it and its lanes before ``stop``.

    A plain load inside the array; at its end a masked load (lanes past it read 0).
    ``checked=False``: the vector is known to lie inside the array (a plain load).
    ``mask``: the lanes before ``stop`` when the caller has them.
    """
    lanes = vec.count
    size = 64 // lanes
    i32 = ir.IntType(32)
    step = ir.Constant(i.type, lanes)
    if mask is None:
        # lanes of the row: lane < stop - i, compared in int32 (one vector compare):
        # stop - i is clamped to <= L, and is >= -nvec * L past the row's end
        left = builder.sub(stop, i)
        left = builder.select(builder.icmp_signed("<", left, step), left, step)
        lane_ids = ir.Constant(ir.VectorType(i32, lanes), list(range(lanes)))
        mask = builder.icmp_signed("<", lane_ids,
                                   splat(builder, builder.trunc(left, i32), lanes))
    at = builder.bitcast(builder.gep(values.data, [i]), vec.as_pointer())
    if not checked:
        return builder.load(at, align=size), mask
    total = builder.extract_value(values.shape, 0)
    inside = builder.icmp_signed("<=", builder.add(i, step), total)
    with builder.if_else(inside, likely=True) as (plain, masked):
        with plain:
            x_plain = builder.load(at, align=size)
            from_plain = builder.block
        with masked:
            load = masked_load(builder, vec, ir.VectorType(ir.IntType(1), lanes))
            x_masked = builder.call(load, [at, ir.Constant(i32, size), mask,
                                           ir.Constant(vec, None)])
            from_masked = builder.block
    x = builder.phi(vec)
    x.add_incoming(x_plain, from_plain)
    x.add_incoming(x_masked, from_masked)
    return x, mask


#: Head vectors a row may read whatever its length (``segment._head_vectors``: 1 to 4).
MAX_HEAD = 4


def _for_row_vectors(builder, intp, start, stop, nvec, lanes, body):  # pragma: no cover
    """Emit ``body(i, mask)`` for each vector of the row (``mask``: its lanes in the row).

    ``nvec`` vectors whatever the row's length (see :func:`_emit_row`), unrolled: the
    row's length is broadcast once and each head vector's lanes are one compare with
    its constant lane positions; each is emitted under ``k < nvec``, a test that goes
    the same way for every row. Then the rest of the row in a loop (``body(i)``, the
    lanes computed there).
    """
    step = ir.Constant(intp, lanes)
    i32 = ir.IntType(32)
    cap = ir.Constant(intp, MAX_HEAD * lanes)
    left = builder.sub(stop, start)
    left = builder.select(builder.icmp_signed("<", left, cap), left, cap)
    limit = splat(builder, builder.trunc(left, i32), lanes)
    for k in range(MAX_HEAD):
        with builder.if_then(builder.icmp_signed("<", ir.Constant(intp, k), nvec),
                             likely=True):
            ids = ir.Constant(ir.VectorType(i32, lanes), list(range(k * lanes,
                                                                    (k + 1) * lanes)))
            body(builder.add(start, ir.Constant(intp, k * lanes)),
                 builder.icmp_signed("<", ids, limit))
    head_end = builder.add(start, builder.mul(nvec, step))
    with cgutils.for_range_slice(builder, head_end, stop, step, intp=intp) as (i, _):
        body(i)


def _float_keys(builder, bits):  # pragma: no cover
    """Signed integer keys, in IEEE ``maximum`` order, of floats given as their bits.

    Non-negative floats keep their bits; negative ones flip their magnitude bits, so
    ``-0.0`` is ``-1``, below ``+0.0``'s ``0``. An involution: applied to a key it gives
    the bits back. ``bits`` is an integer or a vector of them.
    """
    t = bits.type
    vector = isinstance(t, ir.VectorType)
    width = (t.element if vector else t).width

    def const(value):
        return ir.Constant(t, [value] * t.count if vector else value)

    sign = builder.ashr(bits, const(width - 1))
    return builder.xor(bits, builder.lshr(sign, const(1)))


def _row_reduce_codegen(op: str):  # pragma: no cover
    """Code generator of ``_vector_sum`` / ``_vector_max`` / ``_vector_min``."""

    def codegen(context, builder, signature, args):
        values_t = signature.args[0]
        values = context.make_array(values_t)(context, builder, args[0])
        start, stop, nvec = (context.cast(builder, a, t, types.intp)
                             for a, t in zip(args[1:4], signature.args[1:4], strict=True))
        init = None if op == "sum" else context.cast(builder, args[4], signature.args[4],
                                                     values_t.dtype)
        return _emit_row(context, builder, values_t, values, start, stop, nvec, init, op)

    return codegen


def _block_codegen(op: str):  # pragma: no cover
    """Code generator of ``sum_block`` / ``max_block`` / ``min_block``.

    The whole row loop in IR (no negative-index wraparound, no spilled flags): row
    ``r`` of ``[first, last)`` is ``_emit_row`` of ``values[offsets[r]:offsets[r+1]]``,
    divided by its length when ``mean`` (sums), converted to ``out``'s dtype, and
    ``empty`` when it has fewer than ``min_count`` values.
    """

    def codegen(context, builder, signature, args):
        (values_t, offsets_t, first_t, last_t, nvec_t, init_t, mean_t, mc_t, empty_t,
         out_t) = signature.args
        values = context.make_array(values_t)(context, builder, args[0])
        offsets = context.make_array(offsets_t)(context, builder, args[1])
        out = context.make_array(out_t)(context, builder, args[9])
        intp_t = types.intp
        intp = context.get_value_type(intp_t)
        first = context.cast(builder, args[2], first_t, intp_t)
        last = context.cast(builder, args[3], last_t, intp_t)
        nvec = context.cast(builder, args[4], nvec_t, intp_t)
        init = None if op == "sum" else context.cast(builder, args[5], init_t,
                                                     values_t.dtype)
        mean = context.cast(builder, args[6], mean_t, types.boolean)
        min_count = context.cast(builder, args[7], mc_t, intp_t)
        empty = context.cast(builder, args[8], empty_t, out_t.dtype)
        res_t = types.float64 if op == "sum" else values_t.dtype
        one = ir.Constant(intp, 1)

        def rows(lo, hi, checked, divide):
            with cgutils.for_range_slice(builder, lo, hi, one, intp=intp) as (r, _):
                start = builder.load(builder.gep(offsets.data, [r]))
                stop = builder.load(builder.gep(offsets.data, [builder.add(r, one)]))
                if start.type.width < intp.width:
                    start, stop = builder.sext(start, intp), builder.sext(stop, intp)
                res = _emit_row(context, builder, values_t, values, start, stop, nvec, init, op,
                                checked)
                n = builder.sub(stop, start)
                if divide:
                    divisor = builder.sitofp(
                        builder.select(builder.icmp_signed("<", n, one), one, n),
                        ir.DoubleType())
                    res = builder.fdiv(res, divisor)
                value = context.cast(builder, res, res_t, out_t.dtype)
                value = builder.select(builder.icmp_signed("<", n, min_count), empty, value)
                builder.store(value, builder.gep(out.data, [r]))

        # rows [first, safe) read only inside the array: every vector a row reads starts
        # before its stop or among its first nvec, so it ends by stop + nvec * L
        lanes = 64 // context.get_abi_sizeof(context.get_value_type(values_t.dtype))
        reach = builder.mul(nvec, ir.Constant(intp, lanes))
        size = builder.extract_value(values.shape, 0)
        safe_slot = cgutils.alloca_once_value(builder, last)
        cond = builder.append_basic_block("safe.cond")
        body = builder.append_basic_block("safe.body")
        done = builder.append_basic_block("safe.done")
        builder.branch(cond)
        builder.position_at_end(cond)
        safe = builder.load(safe_slot)
        end = builder.load(builder.gep(offsets.data, [safe]))
        if end.type.width < intp.width:
            end = builder.sext(end, intp)
        past = builder.icmp_signed(">", builder.add(end, reach), size)
        builder.cbranch(builder.and_(builder.icmp_signed(">", safe, first), past), body, done)
        builder.position_at_end(body)
        builder.store(builder.sub(safe, one), safe_slot)
        builder.branch(cond)
        builder.position_at_end(done)
        safe = builder.load(safe_slot)
        if op == "sum":  # the loop-invariant mean chooses a loop: no branch per row
            with builder.if_else(mean) as (then, otherwise):
                with then:
                    rows(first, safe, False, True)
                    rows(safe, last, True, True)
                with otherwise:
                    rows(first, safe, False, False)
                    rows(safe, last, True, False)
        else:
            rows(first, safe, False, False)
            rows(safe, last, True, False)
        return context.get_dummy_value()

    return codegen


def _block_typing(values, offsets, out) -> bool:  # pragma: no cover
    return (_is_float_vector(values) and isinstance(offsets, types.Array)
            and offsets.dtype in (types.int32, types.int64)
            and isinstance(out, types.Array) and out.ndim == 1 and out.layout == "C")


@intrinsic
def sum_block(typingctx, values, offsets, first, last, nvec, zero, mean, min_count, empty,
              out):  # pragma: no cover
    """Sum (``mean``: mean) of rows ``first:last`` of 1-D float values into ``out``."""
    if not _block_typing(values, offsets, out):
        return None
    return (types.void(values, offsets, first, last, nvec, zero, mean, min_count, empty, out),
            _block_codegen("sum"))


@intrinsic
def max_block(typingctx, values, offsets, first, last, nvec, init, mean, min_count, empty,
              out):  # pragma: no cover
    """NaN-propagating max of rows ``first:last`` of 1-D float values into ``out``."""
    if not _block_typing(values, offsets, out):
        return None
    return (types.void(values, offsets, first, last, nvec, init, mean, min_count, empty, out),
            _block_codegen("max"))


@intrinsic
def min_block(typingctx, values, offsets, first, last, nvec, init, mean, min_count, empty,
              out):  # pragma: no cover
    """NaN-propagating min of rows ``first:last`` of 1-D float values into ``out``."""
    if not _block_typing(values, offsets, out):
        return None
    return (types.void(values, offsets, first, last, nvec, init, mean, min_count, empty, out),
            _block_codegen("min"))


@intrinsic
def _vector_sum(typingctx, values, start, stop, nvec):  # pragma: no cover
    """float64 sum of ``values[start:stop]`` (1-D float32/float64), vectorised."""
    if not _is_float_vector(values):
        return None
    return types.float64(values, start, stop, nvec), _row_reduce_codegen("sum")


@intrinsic
def _vector_max(typingctx, values, start, stop, nvec, init):  # pragma: no cover
    """NaN-propagating max of ``values[start:stop]`` and ``init``, vectorised."""
    if not _is_float_vector(values):
        return None
    return values.dtype(values, start, stop, nvec, init), _row_reduce_codegen("max")


@intrinsic
def _vector_min(typingctx, values, start, stop, nvec, init):  # pragma: no cover
    """NaN-propagating min of ``values[start:stop]`` and ``init``, vectorised."""
    if not _is_float_vector(values):
        return None
    return values.dtype(values, start, stop, nvec, init), _row_reduce_codegen("min")


def row_sum(values, start, stop, zero, nvec):  # pragma: no cover
    """Sum of ``values[start:stop]`` from ``zero`` (its dtype accumulates; see above)."""
    raise NotImplementedError  # compiled only, through the overload below


def row_max(values, start, stop, init, nvec):  # pragma: no cover
    """NaN-propagating max of ``values[start:stop]`` and ``init``."""
    raise NotImplementedError


def row_min(values, start, stop, init, nvec):  # pragma: no cover
    """NaN-propagating min of ``values[start:stop]`` and ``init``."""
    raise NotImplementedError


@overload(row_sum, inline="always")
def _row_sum_impl(values, start, stop, zero, nvec):  # pragma: no cover
    if _is_float_vector(values):
        def vectorised(values, start, stop, zero, nvec):
            return _vector_sum(values, start, stop, nvec)
        return vectorised

    def scalar(values, start, stop, zero, nvec):
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


@overload(row_max, inline="always")
def _row_max_impl(values, start, stop, init, nvec):  # pragma: no cover
    if _is_float_vector(values):
        def vectorised(values, start, stop, init, nvec):
            return _vector_max(values, start, stop, nvec, init)
        return vectorised

    def scalar(values, start, stop, init, nvec):
        row = values[start:stop]
        m = init
        for i in range(row.shape[0]):
            x = row[i]
            m = x if x > m else m
        return m
    return scalar


@overload(row_min, inline="always")
def _row_min_impl(values, start, stop, init, nvec):  # pragma: no cover
    if _is_float_vector(values):
        def vectorised(values, start, stop, init, nvec):
            return _vector_min(values, start, stop, nvec, init)
        return vectorised

    def scalar(values, start, stop, init, nvec):
        row = values[start:stop]
        m = init
        for i in range(row.shape[0]):
            x = row[i]
            m = x if x < m else m
        return m
    return scalar


# ------------------------------------------------------------ 2-D row-range sums
def _sum_range_codegen(nvec):  # pragma: no cover
    """Code generator of ``sum_range_into`` / ``sum_range_vector_into`` (``nvec`` vectors)."""

    def codegen(context, builder, signature, args):
        data_t, first_t, last_t, col_t, acc_t = signature.args
        table = context.make_array(data_t)(context, builder, args[0])
        accs = context.make_array(acc_t)(context, builder, args[4])
        intp = context.get_value_type(types.intp)
        first = context.cast(builder, args[1], first_t, types.intp)
        last = context.cast(builder, args[2], last_t, types.intp)
        col = context.cast(builder, args[3], col_t, types.intp)
        elt = context.get_value_type(data_t.dtype)
        size = context.get_abi_sizeof(elt)
        lanes = 64 // size
        vec = ir.VectorType(elt, lanes)
        vec64 = ir.VectorType(ir.DoubleType(), lanes)
        totals, acc_at = [], []
        for b in range(nvec):
            at = builder.gep(accs.data, [builder.add(col, ir.Constant(intp, lanes * b))])
            at = builder.bitcast(at, vec64.as_pointer())
            total = cgutils.alloca_once(builder, vec64)  # promoted to a register
            builder.store(builder.load(at, align=8), total)
            totals.append(total)
            acc_at.append(at)
        base = builder.bitcast(table.data, ir.IntType(8).as_pointer())
        stride = builder.extract_value(table.strides, 0)
        col_bytes = builder.mul(col, ir.Constant(intp, size))
        with cgutils.for_range_slice(builder, first, last, ir.Constant(intp, 1),
                                     intp=intp) as (i, _):
            start = builder.add(builder.mul(i, stride), col_bytes)
            for b, total in enumerate(totals):
                at = builder.gep(base, [builder.add(start, ir.Constant(intp, 64 * b))])
                value = builder.load(builder.bitcast(at, vec.as_pointer()), align=size)
                if size == 4:
                    value = builder.fpext(value, vec64)
                builder.store(builder.fadd(builder.load(total), value), total)
        for total, at in zip(totals, acc_at, strict=True):
            builder.store(builder.load(total), at, align=8)
        return context.get_dummy_value()

    return codegen


def _sum_range_typing(data, acc) -> bool:  # pragma: no cover
    return float_table(data) and isinstance(acc, types.Array) and acc.dtype == types.float64


@intrinsic
def sum_range_into(typingctx, data, first, last, col, acc):  # pragma: no cover
    """``acc[col:col+G] += data[i, col:col+G]`` for ``i`` in ``range(first, last)``, in order.

    ``data`` is a C-contiguous float32/float64 array, ``acc`` float64 and
    ``G = NVEC * 64 // data.itemsize`` (64 float32 or 32 float64 columns). Each value
    is added in float64, row after row, into accumulators kept in registers; ``acc``
    is read and written once (Numba's loop vectorizer keeps accumulators in memory).
    """
    if not _sum_range_typing(data, acc):
        return None
    return types.void(data, first, last, col, acc), _sum_range_codegen(NVEC)


@intrinsic
def sum_range_vector_into(typingctx, data, first, last, col, acc):  # pragma: no cover
    """As ``sum_range_into`` for one 64-byte vector: 16 float32 or 8 float64 columns."""
    if not _sum_range_typing(data, acc):
        return None
    return types.void(data, first, last, col, acc), _sum_range_codegen(1)


# ------------------------------------------------------------------- sorted: sum family
def sum_1d(values, offsets, valid, vmask, weights, woffsets, mean, zero, min_count,
           empty, out, counts, bounds, nvec, lo, hi):  # pragma: no cover
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for b in range(lo, hi):
        for r in range(bounds[b], bounds[b + 1]):
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
                    acc = row_sum(values, start, stop, zero, nvec)
                    n = stop - start
            if want_counts:
                counts[r] = n
            # selects, not branches: whether a row is empty is as random as its length
            # (and a separate mean keeps an integer sum's accumulator an integer)
            if mean:
                out[r] = empty if n < min_count else acc / max(n, 1)
            else:
                out[r] = empty if n < min_count else acc


def sum_1d_float(values, offsets, mean, min_count, empty, out, bounds, nvec, lo,
                 hi):  # pragma: no cover
    # sum_1d for float values, no null rows or values, no weights, no counts: each
    # block's row loop runs in IR (sum_block).
    for b in range(lo, hi):
        sum_block(values, offsets, bounds[b], bounds[b + 1], nvec, 0.0, mean, min_count,
                  empty, out)


def extreme_1d_float(values, offsets, is_max, init, min_count, empty, out, bounds, nvec,
                     lo, hi):  # pragma: no cover
    # extreme_1d for float values without null rows or values, counts: in IR by block.
    for b in range(lo, hi):
        if is_max:
            max_block(values, offsets, bounds[b], bounds[b + 1], nvec, init, False,
                      min_count, empty, out)
        else:
            min_block(values, offsets, bounds[b], bounds[b + 1], nvec, init, False,
                      min_count, empty, out)


def sum_2d(values, offsets, valid, vmask, weights, woffsets, mean, zero, min_count,
           empty, out, counts, bounds, nvec, lo, hi):  # pragma: no cover
    # nvec: unused (the 1-D twin's head vectors), so both share one call
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for b in range(lo, hi):
        acc = np.full(width, zero)
        for r in range(bounds[b], bounds[b + 1]):
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


def sum_2d_float(values, offsets, valid, mean, min_count, empty, out, bounds, line,
                 group, lo, hi):  # pragma: no cover
    # _sum_2d for float values without nulls or weights: each group of columns is
    # accumulated in float64 registers over the row's values (sum_range_into), in
    # order, so the result equals _sum_2d's.
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    for b in range(lo, hi):
        acc = np.zeros(width)
        for r in range(bounds[b], bounds[b + 1]):
            for d in range(width):
                acc[d] = 0.0
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                n = stop - start
                col = 0
                while col + group <= width:
                    sum_range_into(values, start, stop, col, acc)
                    col += group
                while col + line <= width:
                    sum_range_vector_into(values, start, stop, col, acc)
                    col += line
                if col < width:
                    for i in range(start, stop):
                        for d in range(col, width):
                            acc[d] += values[i, d]
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
def extreme_1d(values, offsets, valid, vmask, is_max, init, min_count, empty, out,
               counts, bounds, nvec, lo, hi):  # pragma: no cover
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for b in range(lo, hi):
        for r in range(bounds[b], bounds[b + 1]):
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
                            m = take_max(x, m) if is_max else take_min(x, m)
                else:
                    n = stop - start
                    if is_max:
                        m = row_max(values, start, stop, init, nvec)
                    else:
                        m = row_min(values, start, stop, init, nvec)
            if want_counts:
                counts[r] = n
            out[r] = empty if n < min_count else m


def extreme_2d(values, offsets, valid, vmask, is_max, init, min_count, empty, out,
               counts, lo, hi):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in range(lo, hi):
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
                            acc[d] = take_max(values[i, d], acc[d])
                    else:
                        for d in range(width):
                            acc[d] = take_min(values[i, d], acc[d])
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ------------------------------------------------------------ sorted: argmax/argmin, 2-D
def arg_extreme_2d(values, offsets, valid, vmask, is_max, min_count, empty, out,
                   counts, lo, hi):  # pragma: no cover
    # out[r, d]: position within row r of its first max (min) in column d; the first
    # NaN wins, as numpy.argmax does.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in range(lo, hi):
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
def prod_2d(values, offsets, valid, vmask, one, min_count, empty, out,
            counts, lo, hi):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in range(lo, hi):
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
def logsumexp_2d(values, offsets, valid, vmask, zero, min_count, empty, out,
                 counts, lo, hi):  # pragma: no cover
    # Stable: m = max(x), result = m + log(sum(exp(x - m))), in float64. A column whose
    # max is +-inf gives that infinity, a NaN gives NaN.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in range(lo, hi):
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
                        mx[d] = take_max(zero + values[i, d], mx[d])
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
