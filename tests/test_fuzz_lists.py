"""A fuzzer of malformed Arrow list arrays against every function that takes lists (issue 14).

Hypothesis draws list arrays built with ``pa.Array.from_buffers`` from raw buffers,
in classes (:data:`CLASSES`): offsets that go backwards or negative, offsets past the
values, ``offsets[0] > 0``, short validity bitmaps, int32 offsets near 2**31,
large_list offsets beyond 2**31, child arrays of the wrong length, list views whose
ranges leave the child, malformed inner levels of nested lists and malformed string
children; and well-formed arrays of the same shapes. pyarrow refuses some of them
itself (it checks buffer sizes and the last offset); the others reach the library.

Each batch of examples runs in a child process (so a crash fails the test, naming
the array and the function instead of killing the run). There every function of
:data:`tests.test_arrow.TAKES_LISTS` is called on every array, and must

* on an array that pyarrow's full validation rejects: raise an ``ArrowSparseError``;
* on a valid array: return what it returns for the same rows rebuilt from Python
  objects (clean buffers, ``offsets[0] == 0``), or raise the same ``ArrowSparseError``
  class for both.

The ``ci`` profile runs a few batches (about 30 s); ``HYPOTHESIS_PROFILE=thorough``
many more. ``FUZZ_REPORT=path.json`` writes the per-class counts (tried, handled,
crashes, wrong results) of a run.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.hypothesis

#: The classes of arrays drawn, as reported.
CLASSES = ("valid", "offsets[0] > 0", "backwards", "negative", "past the values",
           "short validity", "int32 near 2**31", "large_list beyond 2**31",
           "wrong child length", "list view", "nested", "string child")

BATCH = 24  # arrays per child process

#: (function, verdict, class) tolerated for now, each with why. value_counts and
#: fit_vocabulary (transforms/vocabulary.py) check only the inner rows that the outer
#: rows reach: a nested list whose malformed inner offsets lie outside them (outer rows
#: empty or null) is counted without an error. Nothing reads the malformed range, so
#: there is no crash and no wrong count, but pyarrow's full validation rejects the
#: array; checking every level there (``_arrow.check_nested``) closes the gap.
KNOWN_GAPS = {("value_counts", "no error", "nested"), ("fit_vocabulary", "no error", "nested")}
INT32_MAX = 2**31 - 1


# ================================================================ drawing the arrays
@st.composite
def _valid_offsets(draw: Any, n: int, start: int = 0) -> list[int]:
    lengths = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return [start, *np.cumsum([start, *lengths])[1:].tolist()]


@st.composite
def _validity(draw: Any, n: int) -> list[int] | None:
    if draw(st.booleans()):
        return None
    return draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))


def _interior(draw: Any, offsets: list[int]) -> int:
    return draw(st.integers(1, len(offsets) - 2)) if len(offsets) > 2 else 0


@st.composite
def array_spec(draw: Any) -> dict[str, Any]:
    """One array as plain data (JSON): the child process builds it from buffers."""
    cls = draw(st.sampled_from(CLASSES))
    n = draw(st.integers(0 if cls == "valid" else 2, 6))
    large = draw(st.booleans())
    spec: dict[str, Any] = {"cls": cls, "kind": "large_list" if large else "list",
                            "child": draw(st.sampled_from(["int64", "int64", "float64"])),
                            "n": n, "offset": 0, "validity": draw(_validity(n))}
    offsets = draw(_valid_offsets(n))
    slack = draw(st.integers(0, 3))
    if cls == "valid":
        spec["offset"] = draw(st.integers(0, 2)) if n > 2 else 0
        spec["n"] = n - spec["offset"]
        if spec["validity"] is not None:
            spec["validity"] = spec["validity"][:]  # covers offset + n rows
    elif cls == "offsets[0] > 0":
        offsets = draw(_valid_offsets(n, start=draw(st.integers(1, 5))))
    elif cls == "backwards":
        i = _interior(draw, offsets)
        offsets[i] = offsets[i + 1] + draw(st.integers(1, 5))
    elif cls == "negative":
        i = _interior(draw, offsets)
        offsets[i] = draw(st.sampled_from([-1, -3, -(2**31) if not large else -(2**40)]))
    elif cls == "past the values":
        i = draw(st.integers(1, len(offsets) - 1))
        offsets[i] = offsets[-1] + slack + draw(st.integers(1, 10))
    elif cls == "short validity":
        spec["validity"] = [1] * n
        spec["short_bitmap"] = draw(st.integers(1, 2))  # bytes missing
    elif cls == "int32 near 2**31":
        spec["kind"] = "list"
        i = _interior(draw, offsets)
        offsets[i] = draw(st.sampled_from([INT32_MAX, INT32_MAX - 3, -(2**31), -(2**31) + 5]))
        if draw(st.booleans()):  # or the last one, which pyarrow checks
            offsets[-1] = INT32_MAX
    elif cls == "large_list beyond 2**31":
        spec["kind"] = "large_list"
        i = draw(st.integers(1, len(offsets) - 1))
        offsets[i] = draw(st.sampled_from([2**31, 2**31 + 7, 2**40, 2**62]))
    elif cls == "wrong child length":
        slack = -draw(st.integers(1, 3)) if draw(st.booleans()) else draw(st.integers(1, 5))
    elif cls == "list view":
        spec["kind"] = "large_list_view" if large else "list_view"
        child_len = offsets[-1] + slack
        spec["starts"] = draw(st.lists(st.integers(-2, child_len + 2), min_size=n,
                                       max_size=n))
        spec["sizes"] = draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n))
    elif cls == "nested":
        inner = draw(array_spec())
        while inner["cls"] in ("nested", "list view", "short validity"):
            inner = draw(array_spec())
        inner_rows = inner["n"]
        outer = draw(_valid_offsets(n))
        scale = max(outer[-1], 1)
        spec["offsets"] = [o * inner_rows // scale for o in outer]
        spec["inner"] = inner
        spec["child_len"] = inner_rows
        return spec
    elif cls == "string child":
        spec["child"] = "string"
        spec["string_offsets"] = draw(st.lists(st.integers(-2, 12), min_size=offsets[-1] + 1,
                                               max_size=offsets[-1] + 1))
    spec["offsets"] = offsets
    # at most 64 values: a larger last offset is "past the values" (pyarrow refuses it)
    spec["child_len"] = min(64, max(0, offsets[-1] + slack))
    return spec


# ============================================================= in the child process
def build(spec: dict[str, Any]) -> pa.Array:  # pragma: no cover - runs in the child
    """The array of ``spec``; pyarrow's own refusal (ArrowInvalid...) propagates."""
    if spec["child"] == "string":
        offs = spec["string_offsets"]
        data = b"abcdefghijkl"
        child = pa.Array.from_buffers(pa.string(), len(offs) - 1, [
            None, pa.py_buffer(np.array(offs, np.int32)), pa.py_buffer(data)])
    elif "inner" in spec:
        child = build(spec["inner"])
    else:
        dtype = np.int64 if spec["child"] == "int64" else np.float64
        values = (np.arange(spec["child_len"]) * 7 % 13).astype(dtype)
        child = pa.array(values)
    kind = spec["kind"]
    large = kind.startswith("large")
    width = np.int64 if large else np.int32
    rows = spec["n"] + spec["offset"]
    validity = None
    if spec["validity"] is not None:
        bits = spec["validity"] + [1] * max(0, rows - len(spec["validity"]))
        packed = np.packbits(np.array(bits, np.uint8), bitorder="little").tobytes()
        if spec.get("short_bitmap"):
            packed = packed[:max(0, len(packed) - spec["short_bitmap"])]
        validity = pa.py_buffer(packed)
    if kind.endswith("view"):
        vtype = (pa.large_list_view if large else pa.list_view)(child.type)
        return pa.Array.from_buffers(vtype, spec["n"], [
            validity, pa.py_buffer(np.array(spec["starts"], width)),
            pa.py_buffer(np.array(spec["sizes"], width))], children=[child])
    ltype = (pa.large_list if large else pa.list_)(child.type)
    offsets = np.array(spec["offsets"], dtype=np.int64)
    if not large:
        offsets = offsets.astype(np.int32)  # int32 offsets as drawn (they fit or wrap)
    return pa.Array.from_buffers(ltype, spec["n"], [validity, pa.py_buffer(offsets)],
                                 children=[child], offset=spec["offset"])


def normal(x: Any) -> Any:  # pragma: no cover - runs in the child
    """A comparable, JSON-able form of a result (NaN as the string "nan")."""
    import arrow_sparse as asp

    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        return ["arrow", str(x.type), normal(x.to_pylist())]
    if isinstance(x, np.ndarray):
        return ["numpy", x.dtype.str, list(x.shape), normal(x.tolist())]
    if isinstance(x, np.generic):
        return normal(x.item())
    if isinstance(x, asp.Jagged):
        return ["jagged", normal(x.to_list())]
    if isinstance(x, asp.Vocabulary):
        return ["vocabulary", normal(x.to_arrow().to_pylist())]
    if isinstance(x, asp.LengthStats):
        return ["length_stats", normal(x.to_dict())]
    if isinstance(x, dict):
        return {str(k): normal(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [normal(item) for item in x]
    if isinstance(x, float):
        return "nan" if math.isnan(x) else x
    if x is None or isinstance(x, (bool, int, str)):
        return x
    return repr(x)


def outcome(call: Any, array: pa.Array) -> dict[str, Any]:  # pragma: no cover - in the child
    from arrow_sparse.errors import ArrowSparseError

    try:
        return {"result": normal(call(array))}
    except ArrowSparseError as exc:
        return {"error": type(exc).__name__, "asp": True, "message": str(exc)[:200]}
    except Exception as exc:  # noqa: BLE001 - any other exception is a finding
        return {"error": type(exc).__name__, "asp": False, "message": str(exc)[:200]}


def verdict(valid: bool, got: dict[str, Any], ref: dict[str, Any] | None) -> str:
    """``handled``, or what went wrong: ``no error``, ``other exception``, ``wrong result``."""
    if not got.get("asp", True):
        return "other exception"
    if not valid:
        return "handled" if "error" in got else "no error"
    assert ref is not None
    if not ref.get("asp", True):
        return "handled"  # the reference itself fails outside the library: not this array
    if "error" in got or "error" in ref:
        return "handled" if got.get("error") == ref.get("error") else "wrong result"
    return "handled" if got["result"] == ref["result"] else "wrong result"


def child(specs: list[dict[str, Any]]) -> None:  # pragma: no cover - runs in the child
    from tests.test_arrow import TAKES_LISTS

    for i, spec in enumerate(specs):
        print(json.dumps({"start": [i, "build"]}), flush=True)
        try:
            array = build(spec)
        except (pa.ArrowException, ValueError) as exc:
            print(json.dumps({"i": i, "func": "build", "verdict": "refused by pyarrow",
                              "detail": str(exc)[:120]}), flush=True)
            continue
        try:
            array.validate(full=True)
            valid = True
        except pa.ArrowException:
            valid = False
        reference = pa.array(array.to_pylist(), type=array.type) if valid else None
        for name, call in TAKES_LISTS.items():
            print(json.dumps({"start": [i, name]}), flush=True)
            got = outcome(call, array)
            ref = outcome(call, reference) if reference is not None else None
            print(json.dumps({"i": i, "func": name, "valid": valid,
                              "verdict": verdict(valid, got, ref),
                              "got": got, "ref": ref}), flush=True)


_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, resource.RLIM_INFINITY))
import tests.test_fuzz_lists as t
t.child(json.loads(sys.stdin.read()))
"""


def run_batch(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run ``specs`` in children (a new one after a crash); one record per array and call."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    records: list[dict[str, Any]] = []
    first = 0
    while first < len(specs):
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(specs[first:]),
                              capture_output=True, text=True, env=env, cwd=root, timeout=600,
                              check=False)
        started = None
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            if "start" in record:
                started = record["start"]
                continue
            record["i"] += first
            records.append(record)
            started = None
        if proc.returncode == 0 and started is None:
            break
        if started is None:
            raise AssertionError(f"the child failed outside a call: {proc.stderr[-2000:]}")
        i, name = started
        records.append({"i": first + i, "func": name, "verdict": "crash",
                        "detail": f"exit {proc.returncode}: {proc.stderr[-300:]}"})
        first += i + 1
    for record in records:
        record["cls"] = specs[record["i"]]["cls"]
    return records


# ================================================================ the test itself
_TALLY: Counter[tuple[str, str]] = Counter()


@settings(max_examples=max(2, settings().max_examples // 13), deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a shrink step is a process
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(array_spec(), min_size=BATCH, max_size=BATCH))
def test_every_list_function_survives_malformed_arrays_issue14(specs: list[dict[str, Any]]
                                                               ) -> None:
    records = run_batch(specs)
    for record in records:
        _TALLY[record["cls"], record["verdict"]] += 1
    if os.environ.get("FUZZ_REPORT"):
        table = {f"{c} | {v}": n for (c, v), n in sorted(_TALLY.items())}
        Path(os.environ["FUZZ_REPORT"]).write_text(json.dumps(table, indent=1))
    bad = [r for r in records if r["verdict"] not in ("handled", "refused by pyarrow")
           and (r["func"], r["verdict"], r["cls"]) not in KNOWN_GAPS]
    assert not bad, "\n".join(
        f"{r['verdict']}: {r['func']} on {json.dumps(specs[r['i']])}: "
        f"got {r.get('got', r.get('detail'))} reference {r.get('ref')}" for r in bad[:10])


def test_the_fuzzer_reaches_every_class_issue14() -> None:
    # Every class is drawn, and each builds arrays pyarrow accepts or refuses as intended.
    seen: Counter[str] = Counter()

    @settings(max_examples=300, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(array_spec())
    def draw(spec: dict[str, Any]) -> None:
        seen[spec["cls"]] += 1
        json.dumps(spec)

    draw()
    assert set(seen) == set(CLASSES)
