"""Jagged arithmetic: elementwise ops, per-row softmax and cumsum, slicing and gathers.

Most functions take their jagged input in one of three forms and answer in the same form:

* a :class:`Jagged` -> a :class:`Jagged`;
* an Arrow ``list``/``large_list`` array -> an Arrow list array (a ChunkedArray chunk by
  chunk for row-local functions);
* a values array plus ``offsets=`` (numpy or Arrow) -> values of the same kind (and new
  offsets when the rows change length).

The ``jagged_*`` functions named after FBGEMM operators keep FBGEMM's argument order
``(values, offsets, ...)``; pass a Jagged or an Arrow list array as ``values`` with
``offsets=None`` to use the other forms. The examples use Caffe2's batch
``[1, 2, 3] [2, 4, 6, 7] [3, 6]``; ``docs/jagged-arithmetic.md`` has the concepts.

Every function also runs on CuPy arrays (and a :class:`Jagged` on the device) through
the CUDA kernels and answers with CuPy arrays (a Jagged on the device, values, or
``(values, offsets)``): see docs/gpu.md ("Dispatch"). Each docstring's Notes say what
it synchronises.
"""

from .dense import (
    jagged_dense_bmm,
    jagged_dense_elementwise_add,
    jagged_dense_elementwise_add_jagged_output,
    jagged_dense_elementwise_mul,
    jagged_jagged_bmm,
)
from .rows import (
    expand_into_jagged,
    index_select,
    jagged_index_select,
    jagged_unique,
    list_slice,
    repeat,
    truncate,
)
from .softmax import (
    jagged_softmax,
    segment_cumsum,
    segment_softmax,
)
from .ufunc import map_values

__all__ = [
    "expand_into_jagged",
    "index_select",
    "jagged_dense_bmm",
    "jagged_dense_elementwise_add",
    "jagged_dense_elementwise_add_jagged_output",
    "jagged_dense_elementwise_mul",
    "jagged_index_select",
    "jagged_jagged_bmm",
    "jagged_softmax",
    "jagged_unique",
    "list_slice",
    "map_values",
    "repeat",
    "segment_cumsum",
    "segment_softmax",
    "truncate",
]
