"""arrow_sparse: jagged, nested and sparse ML features on Apache Arrow.

A flat namespace, like ``pyarrow.compute``: every public name is re-exported here.
Importing it loads numpy and pyarrow only; kernels compile on first use.
"""

from __future__ import annotations

from . import errors, io
from .convert import (
    dense_to_jagged,
    jagged_to_padded_dense,
    lengths_to_offsets,
    lengths_to_segment_ids,
    offsets_to_lengths,
    offsets_to_segment_ids,
    segment_ids_to_lengths,
    segment_ids_to_offsets,
)
from .jagged import Jagged
from .keyed import KeyedJagged
from .sparse import SparseCSR

__version__ = "0.1.0"

__all__ = [
    "Jagged",
    "KeyedJagged",
    "SparseCSR",
    "__version__",
    "dense_to_jagged",
    "errors",
    "io",
    "jagged_to_padded_dense",
    "lengths_to_offsets",
    "lengths_to_segment_ids",
    "offsets_to_lengths",
    "offsets_to_segment_ids",
    "segment_ids_to_lengths",
    "segment_ids_to_offsets",
]
