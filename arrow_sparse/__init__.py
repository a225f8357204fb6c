"""arrow_sparse: jagged, nested and sparse ML features on Apache Arrow.

A flat namespace, like ``pyarrow.compute``: every public name of the operation families
(:mod:`~arrow_sparse.convert`, :mod:`~arrow_sparse.segment`,
:mod:`~arrow_sparse.elementwise`, :mod:`~arrow_sparse.transforms`) is re-exported here,
with the data types and the conversions to pandas, Polars and PyTorch; the embedding
tables, masked reductions, IO and errors are namespaces (``asp.embedding.sgd``). Importing
it loads numpy and pyarrow only; kernels compile on first use, or ahead of time with
:func:`~arrow_sparse.kernel_cache.warmup` (``asp.warmup()``, ``arrow-sparse warmup``).
"""

from . import convert, elementwise, embedding, errors, io, masked, segment, transforms
from ._version import __version__
from .convert import *  # noqa: F403  (the families' __all__ lists are the public names)
from .elementwise import *  # noqa: F403
from .interop.pandas_convert import from_pandas, to_pandas
from .interop.polars import from_polars, to_polars
from .interop.torch import from_torch, to_torch
from .jagged import Jagged
from .kernel_cache import warmup
from .keyed import KeyedJagged
from .pipeline import Pipeline
from .segment import *  # noqa: F403
from .sparse import SparseCOO, SparseCSC, SparseCSF, SparseCSR
from .transforms import *  # noqa: F403

__all__ = [
    "Jagged",
    "KeyedJagged",
    "Pipeline",
    "SparseCOO",
    "SparseCSC",
    "SparseCSF",
    "SparseCSR",
    "__version__",
    "embedding",
    "errors",
    "io",
    "masked",
    "from_pandas",
    "from_polars",
    "from_torch",
    "to_pandas",
    "to_polars",
    "to_torch",
    "warmup",
    *convert.__all__,
    *elementwise.__all__,
    *segment.__all__,
    *transforms.__all__,
]
