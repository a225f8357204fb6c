"""Masked reductions on the device batch of ``tests/test_cuda_dispatch.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import arrow_sparse as asp
from arrow_sparse import masked
from tests.sparse._helpers import batch_csr


def _bool_csr(b: dict[str, Any]) -> asp.SparseCSR:
    csr = batch_csr(b)
    return asp.SparseCSR(csr.indptr, csr.indices, csr.values > 0, csr.shape)


#: Masked reductions on a device batch and the synchronisations they document (no dense
#: masks here: the stand-in CuPy of the dispatch tests has no ``broadcast_to``).
MASKED_SYNCS: dict[str, tuple[Callable[[dict[str, Any]], Any], int]] = {
    "masked.sum": (lambda b: masked.sum(b["dense"], 1), 0),
    "masked.mean": (lambda b: masked.mean(b["dense"]), 0),
    "masked.argmax": (lambda b: masked.argmax(b["dense"], 1), 0),
    "masked.sum csr": (lambda b: masked.sum(batch_csr(b), 1, dense=True), 2),
    "masked.sum csr sparse result": (lambda b: masked.sum(batch_csr(b), 1, keepdim=True), 3),
    "masked.var csr": (lambda b: masked.var(batch_csr(b), 0, dense=True), 2),
    "masked.argmax csr": (lambda b: masked.argmax(batch_csr(b), 1), 3),
    "masked.amax csr mask": (lambda b: masked.amax(b["dense"], 0, mask=_bool_csr(b)), 3),
    "masked.mean jagged": (lambda b: masked.mean(b["jagged"], 1), 1),
    "masked.prod jagged mask": (lambda b: masked.prod(b["jagged"], 1, mask=asp.Jagged(
        b["values"] > 0, b["offsets"])), 3),
}


#: Their launches where more than 25 (none grows with the batch).
MASKED_LAUNCHES = {"masked.sum csr": 43, "masked.sum csr sparse result": 79,
                   "masked.var csr": 57, "masked.argmax csr": 83,
                   "masked.amax csr mask": 58, "masked.mean jagged": 30,
                   "masked.prod jagged mask": 76}
