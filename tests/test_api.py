"""Registry-wide checks over the public namespace.

Every public name has a doctested Examples section; every compute function rejects a
wrong kind of object with the library's TypeError; importing the package loads no
optional dependency and compiles nothing; and no input, however malformed, can crash
the interpreter.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseTypeError

from .test_elementwise import SAMPLE_CALLS as ELEMENTWISE_CALLS

# One valid call per public function: (args, kwargs). The first argument is the one
# replaced by garbage in test_object_argument_raises_type_error.
CAFFE2 = pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
CAFFE2_VALUES = np.array([1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 7.0, 3.0, 6.0])
OFFSETS = np.array([0, 3, 7, 9])
TABLE = np.arange(16.0).reshape(8, 2)

# One valid call per public function: (args, kwargs). The first argument is the one
# replaced by garbage in test_object_argument_raises_type_error.
SAMPLE_CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "lengths_to_offsets": (([3, 4, 2],), {}),
    "offsets_to_lengths": (([0, 3, 7, 9],), {}),
    "lengths_to_segment_ids": (([3, 4, 2],), {}),
    "offsets_to_segment_ids": (([0, 3, 7, 9],), {}),
    "segment_ids_to_lengths": (([0, 0, 1],), {}),
    "segment_ids_to_offsets": (([0, 0, 1],), {}),
    "jagged_to_padded_dense": ((np.arange(3), [[0, 1, 3]], [2]), {}),
    "dense_to_jagged": ((np.zeros((2, 2)), [[0, 1, 3]]), {}),
    **{name: ((CAFFE2,), {}) for name in (
        "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
        "segment_logsumexp", "segment_argmax", "segment_argmin")},
    "segment_weighted_sum": ((CAFFE2_VALUES, np.ones(9)), {"offsets": OFFSETS}),
    **{name: ((CAFFE2_VALUES, [0, 1, 0, 1, 2, 2, 0, 1, 2]), {}) for name in (
        "unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max",
        "unsorted_segment_min")},
    "unsorted_segment_weighted_sum": ((CAFFE2_VALUES, np.ones(9), [0, 1, 0, 1, 2, 2, 0, 1, 2]),
                                      {}),
    **{name: ((TABLE, [1, 2, 3, 2, 4, 6, 7, 3, 6]), {"offsets": OFFSETS}) for name in (
        "sparse_segment_sum", "sparse_segment_mean", "sparse_segment_max")},
    "sparse_segment_weighted_sum": ((TABLE, [1, 2, 3, 2, 4, 6, 7, 3, 6]),
                                    {"offsets": OFFSETS, "weights": np.ones(9)}),
    "embedding_bag": ((TABLE, [1, 2, 3, 2, 4, 6, 7, 3, 6]), {"offsets": OFFSETS}),
    "gather": ((TABLE, [1, 2]), {}),
    "scatter_assign": ((TABLE.copy(), [1], np.zeros((1, 2))), {}),
    "scatter_weighted_sum": ((TABLE.copy(), 1.0, [1], np.zeros((1, 2)), 1.0), {}),
    "hash_bucket": ((CAFFE2, 10), {}),
    "bucketize": ((CAFFE2, [2, 5]), {}),
    "value_counts": ((CAFFE2,), {}),
    "length_stats": ((CAFFE2,), {}),
    "pad_or_truncate": ((CAFFE2, 2), {}),
    "drop_nulls": ((CAFFE2,), {}),
    "fill_null": ((CAFFE2, 0), {}),
    "fit_vocabulary": ((CAFFE2,), {}),
    "to_pandas": ((asp.Jagged.from_list([[1]]),), {}),
    "to_polars": ((asp.Jagged.from_list([[1]]),), {}),
    "to_torch": ((asp.Jagged.from_list([[1]]),), {}),
}
SAMPLE_CALLS.update(ELEMENTWISE_CALLS)
# Arguments that need an optional library: (module to import, builder).
NEEDS = {
    "to_pandas": "pandas", "from_pandas": "pandas", "to_polars": "polars",
    "from_polars": "polars", "to_torch": "torch", "from_torch": "torch",
}


def _late_sample_calls() -> None:
    """Sample calls whose arguments are objects of optional libraries."""
    import importlib.util

    if importlib.util.find_spec("pandas"):
        import pandas as pd

        SAMPLE_CALLS["from_pandas"] = ((pd.Series(CAFFE2, dtype=pd.ArrowDtype(CAFFE2.type)),), {})
    if importlib.util.find_spec("polars"):
        import polars as pl

        SAMPLE_CALLS["from_polars"] = ((pl.from_arrow(CAFFE2),), {})
    if importlib.util.find_spec("torch"):
        import torch

        SAMPLE_CALLS["from_torch"] = ((torch.tensor([1, 2]), torch.tensor([0, 1, 2])), {})
    vocabulary = asp.fit_vocabulary(CAFFE2)
    SAMPLE_CALLS["categorify"] = ((CAFFE2, vocabulary), {})


_late_sample_calls()

CLASSES = {"Jagged", "KeyedJagged", "SparseCOO", "SparseCSR", "SparseCSC", "SparseCSF",
           "LengthStats", "Vocabulary", "Pipeline"}
MODULES = {"embedding", "errors", "io", "masked"}


def public_functions() -> list[str]:
    return sorted(name for name in asp.__all__
                  if name not in CLASSES | MODULES and not name.startswith("__"))


def test_every_public_function_has_a_sample_call() -> None:
    missing = set(public_functions()) - set(SAMPLE_CALLS) - set(NEEDS)
    assert not missing, f"add sample calls for {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(set(SAMPLE_CALLS) | set(NEEDS)))
def test_object_argument_raises_type_error(name: str) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    func: Callable[..., Any] = getattr(asp, name)
    args, kwargs = SAMPLE_CALLS[name]
    func(*args, **kwargs)
    with pytest.raises(ArrowSparseTypeError, match=f"^{name}: "):
        func(object(), *args[1:], **kwargs)


def public_objects() -> list[tuple[str, Any]]:
    objects = []
    for name in asp.__all__:
        obj = getattr(asp, name)
        if name in MODULES or name.startswith("__"):
            continue
        objects.append((name, obj))
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                target = member.__func__ if isinstance(member, (classmethod, staticmethod)) \
                    else member.fget if isinstance(member, property) else member
                if callable(target) and getattr(target, "__doc__", None) is not None:
                    objects.append((f"{name}.{attr}", target))
    return objects


@pytest.mark.parametrize("name,obj", public_objects(),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_public_names_are_documented(name: str, obj: Any) -> None:
    doc = inspect.getdoc(obj) or ""
    assert doc.strip(), f"{name} has no docstring"
    top_level = "." not in name
    if top_level or inspect.isfunction(obj) and "Parameters" in doc:
        assert "Examples" in doc, f"{name} has no Examples section"


def run_python(code: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def test_import_loads_no_optional_dependency_and_compiles_nothing() -> None:
    result = run_python("""
        import sys, time
        start = time.perf_counter()
        import arrow_sparse
        elapsed = time.perf_counter() - start
        heavy = sorted({m.split('.')[0] for m in sys.modules} &
                       {'numba', 'llvmlite', 'pandas', 'polars', 'torch', 'cupy', 'scipy',
                        'matplotlib', 'ray'})
        print(heavy, elapsed)
    """)
    assert result.returncode == 0, result.stderr
    heavy, _elapsed = result.stdout.rsplit("]", 1)
    assert heavy == "[", f"import arrow_sparse loaded {heavy}]"


GARBAGE = """
import inspect, random, sys, warnings
import numpy as np, pyarrow as pa
import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError

warnings.simplefilter("ignore")
j = asp.Jagged.from_list([[1, 2], None, [3]])
POOL = [
    object(), None, "abc", b"x", 0, 1, -1, 3, 2**70, 1.5, float("nan"), True, [], [[]],
    [1, -2], [[1], [2, 3]], [0, 3, 1], np.array([5, 2, 1]), np.array([-1, 0]),
    np.array([0, 3, 1]), np.array([0, 2**40]), np.zeros((2, 3)), np.array([np.nan]),
    np.array([1e300]), np.empty(0), np.empty((0, 2)), np.array(["a"]), np.array([2**62]),
    np.array([0, 1, 3], dtype=np.int32), np.arange(9).reshape(3, 3),
    np.array([[0, 1], [1, 0]], dtype=np.int64), np.ones(4, dtype=bool),
    np.array([0, 2**63], dtype=np.uint64), pa.array([1, 2]), pa.array([[1], [2, 3], None]),
    pa.array([[1.5], [2.5]]).slice(1), pa.array([["a"]]), pa.chunked_array([pa.array([[1]])]),
    pa.array([0, None]), j, j[1:], {"a": 1}, (1, 2), range(3),
]
rng = random.Random(0)
targets = []
for name in asp.__all__:
    obj = getattr(asp, name)
    if name.startswith("__") or inspect.ismodule(obj):
        continue
    targets.append((name, obj))
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_"):
                continue
            if isinstance(member, classmethod):
                targets.append((f"{name}.{attr}", getattr(obj, attr)))
            elif inspect.isfunction(member):
                targets.append((f"{name}.{attr}", getattr(j, attr) if name == "Jagged" else None))
calls = 0
unexpected = []
for name, func in targets:
    if func is None:
        continue
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        continue
    for _ in range(300):
        args, kwargs = [], {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.default is not p.empty and rng.random() < 0.5:
                continue
            value = rng.choice(POOL)
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        calls += 1
        try:
            func(*args, **kwargs)
        except ArrowSparseError:
            pass
        except (MemoryError, ModuleNotFoundError):
            pass
        except Exception as exc:
            unexpected.append(f"{name}{tuple(map(type, args))}: {type(exc).__name__}: {exc}")
print("calls", calls)
for line in unexpected[:20]:
    print("UNEXPECTED", line)
"""


def test_garbage_never_crashes_the_interpreter() -> None:
    result = run_python(GARBAGE)
    assert result.returncode == 0, \
        f"interpreter died ({result.returncode}): {result.stderr[-2000:]}"
    assert "calls" in result.stdout
    unexpected = [line for line in result.stdout.splitlines() if line.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected)
