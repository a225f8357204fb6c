"""Embedding tables: lookups, the sparse backward pass and fused sparse optimizer steps.

Tables are row-major numpy arrays ``table[num_embeddings, dim]`` (EmbeddingTables.jl's
column-major tables, transposed), or CuPy arrays: every function runs on the device
when its inputs are there (docs/gpu.md, "Dispatch"). The training loop is

1. ``y = lookup(table, ids)`` (gather, reducing gather, or pooled bags),
2. ``grad = lookup_backward(dy, ids, num_embeddings=len(table))``, a :class:`SparseGrad`
   whose rows are unique and sorted (duplicate ids summed, deterministically),
3. ``sgd(table, grad, lr)`` / ``adagrad`` / ``rowwise_adagrad`` / ``ftrl``: fused
   in-place updates of the touched rows only (``update`` for several tables at once),

or all three at once, :func:`train_step` (no gradient built, nothing read back on the
device).

Tables persist as Arrow IPC files (:func:`save_table`, :func:`load_table`,
memory-mapped, read-only or writable). Lookups live in :mod:`.lookups`, the backward
passes in :mod:`.grad`, the optimizers in :mod:`.optim`, the fused step in :mod:`.train`
and the storage in :mod:`.table_io`; every public name is importable from here. See
``docs/embedding.md`` for the formulas and a worked example, and
:mod:`arrow_sparse.interop.torch` for a PyTorch ``EmbeddingBag`` built on these functions.
"""

from ..segment import scatter_weighted_sum
from .grad import SparseGrad, lookup_backward, lookup_backward_weights
from .lookups import lookup, maplookup
from .optim import adagrad, ftrl, rowwise_adagrad, sgd, update
from .table_io import load_table, save_table
from .train import TrainStep, train_step

__all__ = [
    "SparseGrad",
    "TrainStep",
    "adagrad",
    "ftrl",
    "load_table",
    "lookup",
    "lookup_backward",
    "lookup_backward_weights",
    "maplookup",
    "rowwise_adagrad",
    "save_table",
    "scatter_weighted_sum",
    "sgd",
    "train_step",
    "update",
]
