"""One valid call of every public function of ``arrow_sparse.elementwise``.

``tests/test_api.py`` replaces the first argument with garbage (and so does
``test_family.py``); each entry is ``(args, kwargs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._helpers import CAFFE2_OFFSETS, CAFFE2_VALUES, caffe2

SAMPLE_CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "expand_into_jagged": ((np.arange(3), CAFFE2_OFFSETS), {}),
    "index_select": ((caffe2(), [0]), {}),
    "jagged_dense_bmm": ((np.ones((9, 2)), CAFFE2_OFFSETS, np.ones((3, 2, 2))), {}),
    "jagged_dense_elementwise_add": ((CAFFE2_VALUES, [CAFFE2_OFFSETS], np.ones((3, 4))), {}),
    "jagged_dense_elementwise_add_jagged_output":
        ((CAFFE2_VALUES, [CAFFE2_OFFSETS], np.ones((3, 4))), {}),
    "jagged_dense_elementwise_mul": ((CAFFE2_VALUES, [CAFFE2_OFFSETS], np.ones((3, 4))), {}),
    "jagged_index_select": ((CAFFE2_VALUES, [3, 4, 2], [0]), {}),
    "jagged_jagged_bmm": ((np.ones((9, 2)), np.ones((9, 2)), CAFFE2_OFFSETS), {}),
    "jagged_softmax": ((np.ones(9), CAFFE2_OFFSETS), {}),
    "jagged_unique": ((caffe2(),), {}),
    "list_slice": ((caffe2(), 1), {}),
    "map_values": ((caffe2(), np.negative), {}),
    "repeat": ((np.arange(3), caffe2()), {}),
    "segment_cumsum": ((CAFFE2_VALUES,), {"lengths": [3, 4, 2]}),
    "segment_softmax": ((np.ones(9),), {"offsets": CAFFE2_OFFSETS}),
    "truncate": ((caffe2(), 2), {}),
}
