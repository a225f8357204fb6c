"""Declarative feature pipelines: named steps over columns, a TOML spec, and runners.

>>> from arrow_sparse.pipeline import Pipeline, run
>>> pipe = Pipeline([{"type": "hash_bucket", "column": "ids", "num_buckets": 8}])
>>> pipe.transform_table(pa.table({"ids": pa.array([[1], None])}))["ids"].null_count
1
"""

from .core import Pipeline
from .cross import HashedCross
from .join import JoinExternal
from .python_steps import PythonStep, register_step, registered_steps
from .runner import DEFAULT_BATCH_ROWS, RunSummary, run
from .steps import (
    STEP_TYPES,
    Categorify,
    EmbeddingBag,
    Filter,
    HashBucket,
    MultiHot,
    Normalize,
    PadOrTruncate,
    Reduce,
    Rename,
    Select,
    Step,
    Truncate,
    step_from_dict,
)

STEP_TYPES[HashedCross.type] = HashedCross
STEP_TYPES[JoinExternal.type] = JoinExternal
STEP_TYPES[PythonStep.type] = PythonStep

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "STEP_TYPES",
    "Categorify",
    "EmbeddingBag",
    "Filter",
    "HashBucket",
    "HashedCross",
    "JoinExternal",
    "MultiHot",
    "Normalize",
    "PadOrTruncate",
    "Pipeline",
    "PythonStep",
    "Reduce",
    "Rename",
    "RunSummary",
    "Select",
    "Step",
    "Truncate",
    "register_step",
    "registered_steps",
    "run",
    "step_from_dict",
]
