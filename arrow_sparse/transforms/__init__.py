"""Feature-pipeline transforms on list columns: NVTabular's vocabulary without cuDF or Dask.

Hash bucketing, bucketizing, row length statistics, padding/truncation to fixed
length and null handling, on Arrow ``list``/``large_list`` arrays (and ChunkedArrays,
chunk by chunk), on :class:`~arrow_sparse.Jagged` batches and, for the element-wise
ones, on flat numpy or Arrow arrays. Hashing and bucketizing live in :mod:`.hashing`,
the vocabulary (:func:`value_counts`, :func:`fit_vocabulary`, :func:`categorify`,
:class:`Vocabulary`) in :mod:`.vocabulary`, padding and nulls in :mod:`.nulls`, length
statistics in :mod:`.stats`; every public name is importable from here.
docs/feature-transforms.md explains the rules; the examples use Caffe2's batch
``[1, 2, 3] [2, 4, 6, 7] [3, 6]``.

Element-wise transforms (:func:`hash_bucket`, :func:`categorify`, :func:`bucketize`)
only replace the leaf values: the result shares the input's offsets and row validity
buffers (no copy), whatever the nesting depth.
"""

from .hashing import bucketize, hash_bucket
from .nulls import drop_nulls, fill_null, pad_or_truncate
from .stats import LengthStats, length_stats
from .vocabulary import (
    FIRST_ID,
    MISSING_ID,
    PADDING_ID,
    Vocabulary,
    categorify,
    fit_vocabulary,
    value_counts,
)

__all__ = [
    "FIRST_ID",
    "MISSING_ID",
    "PADDING_ID",
    "LengthStats",
    "Vocabulary",
    "bucketize",
    "categorify",
    "drop_nulls",
    "fill_null",
    "fit_vocabulary",
    "hash_bucket",
    "length_stats",
    "pad_or_truncate",
    "value_counts",
]
