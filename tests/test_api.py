"""Registry-wide checks over the public namespace.

Every public name has a doctested Examples section; every compute function rejects a
wrong kind of object with the library's TypeError; and no input, however malformed,
can crash the interpreter or escape as anything but the library's errors (what
``import arrow_sparse`` loads is checked in test_import.py).
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError, ArrowSparseTypeError

from .elementwise._samples import SAMPLE_CALLS as ELEMENTWISE_CALLS

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
    **{name: ((TABLE, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1]), {}) for name in (
        "sparse_unsorted_segment_sum", "sparse_unsorted_segment_mean",
        "sparse_unsorted_segment_max")},
    "sparse_unsorted_segment_weighted_sum": ((TABLE, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1]),
                                             {"weights": np.ones(5)}),
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
    "warmup": (("common",), {"functions": ["length_stats"]}),
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
    return sorted(name for name in asp.__all__ if name not in CLASSES | MODULES
                  and not name.startswith("__") and callable(getattr(asp, name)))


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
        if name in MODULES or name.startswith("__") or not callable(obj):
            continue  # constants are documented by their module
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


# Garbage for every public callable, in a fresh interpreter (run in a scratch directory,
# emptied after each call: methods such as ``save`` write wherever garbage points them;
# test_file_readers_raise_library_errors covers reading such files). Jagged's
# ``validate`` flag gets False half of the time: it once skipped every check.
GARBAGE = """
import inspect, os, random, shutil, sys, warnings
try:  # a call that allocates without bound must fail with MemoryError, not exhaust the host
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
except (ImportError, ValueError):
    pass
import numpy as np, pyarrow as pa
import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError

warnings.simplefilter("ignore")
caffe2 = pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
j = asp.Jagged.from_list([[1, 2], None, [3]])
INSTANCES = {
    "Jagged": [j, j[1:], asp.Jagged.from_list([[[1], None], [[2, 3]]]),
               asp.Jagged.from_lengths(np.arange(6.0).reshape(3, 2), [2, 1]),
               asp.Jagged.from_arrow(pa.array([[1, None], [], None, [4]]).slice(1))],
    "KeyedJagged": [asp.KeyedJagged.from_arrow(pa.record_batch({"a": caffe2, "b": caffe2})),
                    asp.KeyedJagged.from_arrow(pa.record_batch(
                        {"a": caffe2, "w": pa.array([[1.0, 2.0, 3.0], [1.0] * 4, [0.5, 2.0]])}),
                        weights="w")],
    "SparseCOO": [asp.SparseCOO([[0, 1], [1, 0]], np.array([1.5, 2.0]), (2, 3))],
    "SparseCSR": [asp.SparseCSR([0, 1, 2], [1, 0], np.array([1.5, 2.0]), (2, 3))],
    "SparseCSC": [asp.SparseCSC([0, 1, 2, 2], [1, 0], np.array([1.5, 2.0]), (2, 3))],
    "SparseCSF": [asp.SparseCSF.from_dense(np.arange(8.0).reshape(2, 2, 2) % 3)],
    "LengthStats": [asp.length_stats(caffe2)],
    "Vocabulary": [asp.fit_vocabulary(caffe2)],
}
POOL = [
    object(), None, "abc", b"x", 0, 1, -1, 3, 2**70, 1.5, float("nan"), True, False, [], [[]],
    [1, -2], [[1], [2, 3]], [0, 3, 1], np.array([5, 2, 1]), np.array([-1, 0]),
    np.array([0, 3, 1]), np.array([0, 2**40]), np.zeros((2, 3)), np.array([np.nan]),
    np.array([1e300]), np.empty(0), np.empty((0, 2)), np.array(["a"]), np.array([2**62]),
    np.array([0, 1, 3], dtype=np.int32), np.arange(9).reshape(3, 3),
    np.array([[0, 1], [1, 0]], dtype=np.int64), np.ones(4, dtype=bool),
    np.array([0, 2**63], dtype=np.uint64), np.array([0, 10**9, 2 * 10**9]), np.arange(4.0),
    pa.array([1, 2]), pa.array([[1], [2, 3], None]), pa.array([[1.5], [2.5]]).slice(1),
    pa.array([["a"]]), pa.chunked_array([pa.array([[1]])]), pa.chunked_array([], pa.int64()),
    pa.array([0, None]), {"a": 1}, (1, 2), range(3),
    *[obj for objs in INSTANCES.values() for obj in objs],
]
rng = random.Random(0)


def getter(instance, attr):
    return lambda: getattr(instance, attr)


def public_members(cls):
    for attr in sorted(dir(cls)):
        if attr.startswith("_"):
            continue
        yield attr, inspect.getattr_static(cls, attr)


targets = []  # (name, callable or None, instance for property access)
for name in asp.__all__:
    obj = getattr(asp, name)
    if name.startswith("__") or inspect.ismodule(obj):
        continue
    targets.append((name, obj, 300))
    if not inspect.isclass(obj):
        continue
    for attr, member in public_members(obj):
        if isinstance(member, (classmethod, staticmethod)):
            targets.append((f"{name}.{attr}", getattr(obj, attr), 300))
        for k, instance in enumerate(INSTANCES.get(name, [])):
            if isinstance(member, property):
                targets.append((f"{name}[{k}].{attr}", getter(instance, attr), 1))
            elif inspect.isfunction(member):
                targets.append((f"{name}[{k}].{attr}", getattr(instance, attr), 60))
missing = set(name for name in asp.__all__ if inspect.isclass(getattr(asp, name))) - set(INSTANCES)
missing -= {"Pipeline"}  # built from a spec; its methods are fuzzed through the classmethods
calls = 0
unexpected = []
for name, func, repeat in targets:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        continue
    for _ in range(repeat):
        args, kwargs = [], {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.default is not p.empty and rng.random() < 0.5:
                continue
            value = rng.choice(POOL)
            if p.name == "validate" and name.startswith("Jagged") and rng.random() < 0.5:
                value = False
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        calls += 1
        try:
            result = func(*args, **kwargs)
            if isinstance(result, asp.Jagged):  # what it built must be usable
                result.to_list(), result.to_padded(), repr(result)
        except ArrowSparseError:
            pass
        except (MemoryError, ModuleNotFoundError):
            pass
        except Exception as exc:
            unexpected.append(f"{name}{tuple(map(type, args))}: {type(exc).__name__}: {exc}")
        for entry in os.listdir("."):  # each call starts in an empty directory
            shutil.rmtree(entry) if os.path.isdir(entry) else os.remove(entry)
print("calls", calls, "targets", len(targets))
print("MISSING", sorted(missing))
for line in unexpected[:20]:
    print("UNEXPECTED", line)
"""


def test_garbage_never_crashes_the_interpreter(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", GARBAGE], capture_output=True, text=True,
                            timeout=900, cwd=tmp_path)
    assert result.returncode == 0, \
        f"interpreter died ({result.returncode}): {result.stderr[-2000:]}"
    assert "calls" in result.stdout
    assert "MISSING []" in result.stdout, "add instances of the new classes to INSTANCES"
    unexpected = [line for line in result.stdout.splitlines() if line.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected)


@pytest.mark.parametrize("reader,case", [
    ("Pipeline.load", "missing path"), ("Pipeline.load", "binary file"),
    ("Pipeline.load", "directory"),
    *[(reader, case) for reader in ("Vocabulary.load", "io.read_ipc", "embedding.load_table")
      for case in ("missing path", "binary file", "directory")],
    ("io.read_parquet", "missing path"), ("io.read_parquet", "binary file"),
])
def test_file_readers_raise_library_errors(reader: str, case: str, tmp_path: Path) -> None:
    target: Any = asp
    for part in reader.split("."):
        target = getattr(target, part)
    path = tmp_path / "x"
    if case == "binary file":
        path.write_bytes(b"\x88\x00 not a table \xff")
    elif case == "directory":
        path.mkdir()
    with pytest.raises(ArrowSparseError):
        target(str(path))
