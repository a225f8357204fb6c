"""Segment reductions: sorted, unsorted and fused (gather + reduce); gather and scatter.

Caffe2's sparse-operations family on Arrow data. A *segment* is a row of a jagged
batch; the examples use Caffe2's batch of three examples ``[1, 2, 3] [2, 4, 6, 7]
[3, 6]``. Sorted reductions (``segment_*``) accept the batch as

- a :class:`~arrow_sparse.Jagged` (-> numpy; null rows reduce as empty rows),
- an Arrow ``list``/``large_list`` array (-> Arrow; null rows stay null) or a
  ChunkedArray of them (-> ChunkedArray, chunk by chunk),
- raw values (numpy, a sequence, or a flat Arrow array) plus exactly one of
  ``offsets=``, ``lengths=`` or sorted ``segment_ids=`` (numpy in -> numpy out,
  Arrow in -> Arrow out).

Values may be N-D: the first axis is the jagged one and the others are kept
(``[N, 64] -> [rows, 64]``; Arrow ``fixed_size_list`` values and results). Null
values inside a list are skipped. See ``docs/segment-reductions.md`` for the tables of
null/empty semantics and accumulator dtypes.

Every function also runs on the GPU: CuPy arrays (or a :class:`~arrow_sparse.Jagged` on
the device) in, CuPy arrays out, through the CUDA kernels of ``kernels/cuda/segment.cu``.
A device Jagged reduces like a host one (null rows as empty rows); nothing is Arrow on
the device. Host and device inputs together raise a TypeError. Bad structure or
indices in device inputs are found by device checks and raised by the next check (or
at once where a function reads a device value anyway); each docstring's Notes say what
it reads back.
"""

from . import fused, sorted, sparse_unsorted, unsorted
from . import gather as _gather  # the module: its function gather takes the name below
from .fused import *  # noqa: F403  (each module's __all__ lists its public names)
from .gather import *  # noqa: F403
from .sorted import *  # noqa: F403
from .sparse_unsorted import *  # noqa: F403
from .unsorted import *  # noqa: F403

__all__ = [
    *fused.__all__,
    *_gather.__all__,
    *sorted.__all__,
    *sparse_unsorted.__all__,
    *unsorted.__all__,
]
