"""LLVM IR utilities shared by the segment kernels (``_segment_sorted``, ``_segment_gather``).

Those modules emit LLVM IR through ``numba.extending.intrinsic`` where Numba's own code
generation falls short, each next to the kernels that use it; the small code-generation
helpers they share are here. Numba's on-disk cache keys a kernel by its own source
file only: after editing this module, delete the kernels' ``__pycache__`` entries.
"""

from __future__ import annotations

import llvmlite
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: Small helpers are inlined into the kernels at Numba's IR level: a call to another
#: compiled function is not inlined by LLVM and costs a call plus reference counting
#: of every array argument, per row.
inline = numba.njit(inline="always", nogil=True)

_TYPED_POINTERS = getattr(llvmlite, "ir_layer_typed_pointers_enabled", True)

#: 64-byte vectors per wide call of the row-group intrinsics: 64 float32 columns.
NVEC = 4


def intrinsic_name(base: str, vec: ir.VectorType) -> str:  # pragma: no cover
    """Mangled name of an LLVM intrinsic overloaded on a vector and a pointer to it."""
    elt = "f32" if isinstance(vec.element, ir.FloatType) else "f64"
    vname = f"v{vec.count}{elt}"
    return f"{base}.{vname}.p0{vname}" if _TYPED_POINTERS else f"{base}.{vname}.p0"


def splat(builder, value, count):  # pragma: no cover
    vec = ir.VectorType(value.type, count)
    one = builder.insert_element(ir.Constant(vec, ir.Undefined), value,
                                 ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32), count),
                                                        [0] * count))


def reduce_lanes(builder, vec, combine):  # pragma: no cover
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


def fadd(builder, x, y):  # pragma: no cover
    return builder.fadd(x, y)


def _ieee_extreme(builder, name: str, x, m):  # pragma: no cover
    """``llvm.maximum`` / ``llvm.minimum`` of two floats or float vectors."""
    t = x.type
    if isinstance(t, ir.VectorType):
        elt = "f32" if isinstance(t.element, ir.FloatType) else "f64"
        suffix = f"v{t.count}{elt}"
    else:
        suffix = "f32" if isinstance(t, ir.FloatType) else "f64"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(t, [t, t]),
                                        f"llvm.{name}.{suffix}")
    return builder.call(fn, [x, m])


def _take_codegen(name: str):  # pragma: no cover
    def codegen(context, builder, signature, args):
        xt, mt = signature.args
        x = context.cast(builder, args[0], xt, mt)
        m = args[1]
        if isinstance(mt, types.Float):
            return _ieee_extreme(builder, name, x, m)
        pred = ">" if name == "maximum" else "<"
        cmp = builder.icmp_signed if mt.signed else builder.icmp_unsigned
        return builder.select(cmp(pred, x, m), x, m)
    return codegen


def _take_typing(x, m) -> bool:  # pragma: no cover
    return isinstance(m, (types.Float, types.Integer)) and isinstance(
        x, (types.Float, types.Integer)) and (isinstance(m, types.Float)
                                              or not isinstance(x, types.Float))


@intrinsic
def take_max(typingctx, x, m):  # pragma: no cover
    """Return ``max(x, m)`` in ``m``'s type: the max update of every segment kernel.

    Floats: IEEE 754-2019 ``maximum`` (NaN propagates; ``max(-0.0, +0.0) = +0.0``), so
    the result is the same whatever order the values are combined in. Integers: plain
    compare and select.
    """
    if not _take_typing(x, m):
        return None
    return m(x, m), _take_codegen("maximum")


@intrinsic
def take_min(typingctx, x, m):  # pragma: no cover
    """As :func:`take_max`, with IEEE ``minimum`` (``min(-0.0, +0.0) = -0.0``)."""
    if not _take_typing(x, m):
        return None
    return m(x, m), _take_codegen("minimum")


def masked_load(builder, vec, mask_t):  # pragma: no cover
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vec, [vec.as_pointer(), ir.IntType(32), mask_t, vec]),
        intrinsic_name("llvm.masked.load", vec))


def prefetch_fn(builder):  # pragma: no cover
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8" if _TYPED_POINTERS else "llvm.prefetch.p0")


def float_table(data) -> bool:  # pragma: no cover
    return (isinstance(data, types.Array) and data.ndim == 2 and data.layout == "C"
            and data.dtype in (types.float32, types.float64))
