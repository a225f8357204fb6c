"""Keyed jagged features: :class:`KeyedJagged` (TorchRec's ``KeyedJaggedTensor``) and its reshaping.

:mod:`.keyed_jagged` holds the class (construction from Arrow record batches, map
columns and dicts; key-major buffers; accessors; Arrow export); :mod:`.reshape` the
operations that move keys and rows around (``permute``, ``split``, ``concat``,
``regroup``, ``block_bucketize``, ``to_padded_dict``), which are also methods of the
class. ``docs/keyed-arrow-mapping.md`` gives the Arrow mapping in full.
"""

from .keyed_jagged import BlockBuckets, KeyedJagged
from .reshape import (
    block_bucketize,
    concat,
    permute,
    regroup,
    regroup_as_dict,
    split,
    to_padded_dict,
)

__all__ = [
    "BlockBuckets",
    "KeyedJagged",
    "block_bucketize",
    "concat",
    "permute",
    "regroup",
    "regroup_as_dict",
    "split",
    "to_padded_dict",
]
