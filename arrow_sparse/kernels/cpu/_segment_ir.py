"""LLVM IR building blocks of the segment kernels (:mod:`.segment`, :mod:`._segment_gather`).

Where Numba's own code generation falls short, the segment kernels call these
``numba.extending.intrinsic`` functions, which emit LLVM IR directly:

- ``row_sum`` / ``row_max`` / ``row_min``: the reduction of one 1-D float row in 64-byte
  vectors, lanes combined in a fixed order (scalar loops for integers);
- ``sum_range_into`` / ``sum_range_vector_into``: a range of rows of a 2-D float
  array added into float64 accumulators that stay in registers;
- ``prefetch_row``, ``sum_rows_into`` / ``sum_row_vector_into`` and
  ``weighted_rows_into``: the gathered table rows of the fused kernels, prefetched
  ahead and summed (or weighted and summed) in registers.

Numba's on-disk cache keys a kernel by its own source file only: after editing this
module, clear the ``__pycache__`` entries of the kernels that use it.
"""

from __future__ import annotations

import llvmlite
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

#: Rows summed in the table's dtype before they are added into float64 (fused fast path).
BLOCK = 4

#: Vectors per wide ``sum_rows_into`` call: ``4 * 64`` bytes of a row.
NVEC = 4

#: Small helpers are inlined into the kernels at Numba's IR level: a call to another
#: compiled function is not inlined by LLVM and costs a call plus reference counting
#: of every array argument, per row.
inline = numba.njit(inline="always", nogil=True)

_TYPED_POINTERS = getattr(llvmlite, "ir_layer_typed_pointers_enabled", True)


# -------------------------------------------------------------------- IR helpers
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


def _prefetch_fn(builder):  # pragma: no cover
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8" if _TYPED_POINTERS else "llvm.prefetch.p0")


# ------------------------------------------------------------- 1-D row reductions
def _is_float_vector(values) -> bool:  # pragma: no cover
    return (isinstance(values, types.Array) and values.ndim == 1 and values.layout == "C"
            and values.dtype in (types.float32, types.float64))


def _row_reduce_codegen(op: str):  # pragma: no cover
    """Code generator of the 1-D float row reductions (``op``: sum, max or min).

    The row ``values[start:stop]`` is read in 64-byte vectors of ``L = 64 // itemsize``
    values: value ``k`` of the row goes to lane ``k % L`` and each lane is reduced in
    order (sums in float64 from 0.0; max/min from ``init``), then the lanes are combined
    in a fixed tree, upper half onto lower half. The order is fixed, so the result does
    not depend on the machine.

    The first ``nvec`` vectors are read whatever the row's length (lanes past its end
    are discarded by a select), so rows of up to ``nvec * L`` values take no
    data-dependent branch: with random row lengths a loop whose trip count follows
    the length mispredicts about once a row, which costs more than the few wasted
    lanes. A vector is a plain load, which may read up to ``L - 1`` values past the row
    but never past the array (there a masked load, which does not fault): masked loads
    that miss the cache are several times slower than plain ones on some CPUs.
    """
    combine = {"sum": _fadd, "max": _nan_max, "min": _nan_min}[op]

    def codegen(context, builder, signature, args):
        values_t = signature.args[0]
        values = context.make_array(values_t)(context, builder, args[0])
        intp = context.get_value_type(types.intp)
        start, stop, nvec = (context.cast(builder, a, t, types.intp)
                             for a, t in zip(args[1:4], signature.args[1:4], strict=True))
        elt = context.get_value_type(values_t.dtype)
        size = context.get_abi_sizeof(elt)
        lanes = 64 // size
        vec = ir.VectorType(elt, lanes)
        mask_t = ir.VectorType(ir.IntType(1), lanes)
        if op == "sum":
            acc_t = ir.VectorType(ir.DoubleType(), lanes)
            fill = ir.Constant(acc_t, None)  # +0.0: adds nothing
        else:
            acc_t = vec
            fill = _splat(builder, context.cast(builder, args[4], signature.args[4],
                                                values_t.dtype), lanes)
        load = _masked_load(builder, vec, mask_t)
        lane_ids = ir.Constant(ir.VectorType(intp, lanes), list(range(lanes)))
        total = builder.extract_value(values.shape, 0)
        step = ir.Constant(intp, lanes)
        slot = cgutils.alloca_once(builder, acc_t)  # promoted to a register
        builder.store(fill, slot)

        def add_vector(i):
            mask = builder.icmp_signed("<", lane_ids, _splat(builder, builder.sub(stop, i), lanes))
            at = builder.bitcast(builder.gep(values.data, [i]), vec.as_pointer())
            inside = builder.icmp_signed("<=", builder.add(i, step), total)
            with builder.if_else(inside, likely=True) as (plain, masked):
                with plain:
                    x_plain = builder.load(at, align=size)
                    from_plain = builder.block
                with masked:
                    x_masked = builder.call(load, [at, ir.Constant(ir.IntType(32), size),
                                                   mask, ir.Constant(vec, None)])
                    from_masked = builder.block
            x = builder.phi(vec)
            x.add_incoming(x_plain, from_plain)
            x.add_incoming(x_masked, from_masked)
            if op == "sum" and size == 4:
                x = builder.fpext(x, acc_t)
            # the select comes after the conversion so that it is not folded back into
            # a masked load; for float64 it may be, which costs speed only
            x = builder.select(mask, x, fill)
            builder.store(combine(builder, x, builder.load(slot)), slot)

        head_end = builder.add(start, builder.mul(nvec, step))
        with cgutils.for_range_slice(builder, start, head_end, step, intp=intp) as (i, _):
            add_vector(i)
        with cgutils.for_range_slice(builder, head_end, stop, step, intp=intp) as (i, _):
            add_vector(i)
        return _reduce_lanes(builder, builder.load(slot), combine)

    return codegen


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
def _float_table(data) -> bool:  # pragma: no cover
    return (isinstance(data, types.Array) and data.ndim == 2 and data.layout == "C"
            and data.dtype in (types.float32, types.float64))


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
    return _float_table(data) and isinstance(acc, types.Array) and acc.dtype == types.float64


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


# ---------------------------------------------------------- gathered table rows
@intrinsic
def prefetch_row(typingctx, data, indices, j):  # pragma: no cover
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
    """IR of ``prefetch_row``: hint the lines of ``table[ids[j]]`` if both exist."""
    intp = context.get_value_type(types.intp)
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = _prefetch_fn(builder)
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


def _sum_rows_codegen(nvec: int, weighted: bool):  # pragma: no cover
    """Code generator of the gathered-row sums (``nvec`` vectors; ``weighted``)."""

    def codegen(context, builder, signature, args):
        if weighted:
            data_t, idx_t, w_t, shift_t, first_t, last_t, col_t, acc_t, ahead_t = signature.args
            data_a, idx_a, w_a, shift_a, first_a, last_a, col_a, acc_a, ahead_a = args
            weights = context.make_array(w_t)(context, builder, w_a)
            shift = context.cast(builder, shift_a, shift_t, types.intp)
        else:
            data_t, idx_t, first_t, last_t, col_t, acc_t, ahead_t = signature.args
            data_a, idx_a, first_a, last_a, col_a, acc_a, ahead_a = args
        table = context.make_array(data_t)(context, builder, data_a)
        ids = context.make_array(idx_t)(context, builder, idx_a)
        accs = context.make_array(acc_t)(context, builder, acc_a)
        intp = context.get_value_type(types.intp)
        first = context.cast(builder, first_a, first_t, types.intp)
        last = context.cast(builder, last_a, last_t, types.intp)
        col = context.cast(builder, col_a, col_t, types.intp)
        ahead = context.cast(builder, ahead_a, ahead_t, types.intp)
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

        def row_vectors(i):
            with builder.if_then(builder.icmp_signed(">", ahead, ir.Constant(intp, 0))):
                _emit_prefetch_row(context, builder, data_t, table, ids, builder.add(i, ahead))
            row = builder.load(builder.gep(ids.data, [i]))
            row = builder.sext(row, intp) if row.type.width < intp.width else row
            start = builder.add(builder.mul(row, stride), col_bytes)
            for b in range(nvec):
                at = builder.gep(base, [builder.add(start, ir.Constant(intp, 64 * b))])
                yield b, builder.load(builder.bitcast(at, vec.as_pointer()), align=size)

        if weighted:  # every row in float64: w * x is exact for float32 w and x
            with cgutils.for_range_slice(builder, first, last, ir.Constant(intp, 1),
                                         intp=intp) as (i, _):
                w = builder.load(builder.gep(weights.data, [builder.add(i, shift)]))
                w = context.cast(builder, w, w_t.dtype, types.float64)
                wv = _splat(builder, w, lanes)
                for b, value in row_vectors(i):
                    if size == 4:
                        value = builder.fpext(value, vec64)
                    total = totals[b]
                    builder.store(builder.fadd(builder.load(total), builder.fmul(wv, value)),
                                  total)
        else:
            with cgutils.for_range_slice(builder, first, last, ir.Constant(intp, BLOCK),
                                         intp=intp) as (run, _):
                run_end = builder.add(run, ir.Constant(intp, BLOCK))
                run_end = builder.select(builder.icmp_signed("<", run_end, last), run_end, last)
                for slot in sums:
                    builder.store(ir.Constant(vec, None), slot)
                with cgutils.for_range_slice(builder, run, run_end, ir.Constant(intp, 1),
                                             intp=intp) as (i, _):
                    for b, value in row_vectors(i):
                        builder.store(builder.fadd(builder.load(sums[b]), value), sums[b])
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
    return (_float_table(data) and isinstance(acc, types.Array)
            and acc.dtype == types.float64)


@intrinsic
def sum_rows_into(typingctx, data, indices, first, last, col, acc, ahead):  # pragma: no cover
    """``acc[col:col+G] += sum(data[indices[i], col:col+G] for i in range(first, last))``.

    ``data`` is a C-contiguous float32/float64 table, ``acc`` float64, and
    ``G = NVEC * 64 // data.itemsize`` (64 float32 or 32 float64 columns). Runs of
    ``BLOCK`` rows (from ``first``) are summed in the table's dtype, each run's sum is
    added to float64 accumulators, all in registers, and ``acc`` is written once. With
    ``ahead > 0`` each step also prefetches the row ``ahead`` positions later.
    """
    if not _sum_rows_typing(data, acc):
        return None
    sig = types.void(data, indices, first, last, col, acc, ahead)
    return sig, _sum_rows_codegen(NVEC, False)


@intrinsic
def sum_row_vector_into(typingctx, data, indices, first, last, col, acc,
                        ahead):  # pragma: no cover
    """As ``sum_rows_into`` for one 64-byte vector: 16 float32 or 8 float64 columns."""
    if not _sum_rows_typing(data, acc):
        return None
    return types.void(data, indices, first, last, col, acc, ahead), _sum_rows_codegen(1, False)


@intrinsic
def weighted_rows_into(typingctx, data, indices, weights, shift, first, last, col, acc,
                       ahead):  # pragma: no cover
    """``acc[col:col+G] += sum(weights[i + shift] * data[indices[i], col:col+G])``.

    As ``sum_rows_into`` (``G`` columns, accumulators in registers, prefetching) but
    every row is scaled by its weight and added in float64 (no runs in the table's
    dtype). ``weights`` are float32 or float64.
    """
    if not (_sum_rows_typing(data, acc) and isinstance(weights, types.Array)
            and weights.dtype in (types.float32, types.float64)):
        return None
    sig = types.void(data, indices, weights, shift, first, last, col, acc, ahead)
    return sig, _sum_rows_codegen(NVEC, True)
