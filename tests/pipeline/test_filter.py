"""Tests of ``arrow_sparse.pipeline._filter``: the filter expressions a Filter step refuses."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from arrow_sparse import Pipeline
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.pipeline import _filter
from arrow_sparse.pipeline.steps import (
    Filter,
)


@pytest.mark.parametrize(("expr", "match"), [
    ("label >", "expected a number"),
    ("label = 1", "cannot parse"),
    ("__import__('os')", "expected a comparison"),
    ("", "non-empty string"),
])
def test_filter_bad_expr(expr: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Filter(expr=expr)


# ------------------------------------------- issue 14: sizes, depth and messages
def _depth(text: str) -> int:
    """Deepest nesting of parentheses in an expression's text."""
    depth = deepest = 0
    for c in text:
        depth += (c == "(") - (c == ")")
        deepest = max(deepest, depth)
    return deepest


def test_filter_reads_a_repeated_column_once_issue14() -> None:
    # Before: the column was selected once per use, and the evaluation refused the
    # repeated name ("Multiple matches for FieldRef.Name(label)").
    step = Filter(expr="label > 0 and label < 5 and (label != 3 or label is null)")
    assert step.input_columns() == ["label"]
    t = pa.table({"label": [0, 1, 3, 4, 7, None]})
    assert step.transform(t)["label"].to_pylist() == [1, 4]


def test_filter_long_chains_are_balanced_trees_issue14() -> None:
    terms = [f"label != {i}" for i in range(_filter.MAX_TERMS)]
    for joiner in (" and ", " or "):
        expr, cols = _filter.parse(joiner.join(terms))
        assert cols == ["label"]
        assert _depth(str(expr)) <= 12  # log2(1000) + 2, not 1000
    step = Filter(expr=" and ".join(terms))
    t = pa.table({"label": [5, 1000, 2000, None]})
    assert step.transform(t)["label"].to_pylist() == [1000, 2000]
    step = Filter(expr=" or ".join(terms[:3]))
    assert step.transform(pa.table({"label": [0, 1, None]}))["label"].to_pylist() == [0, 1]


def test_filter_largest_accepted_expression_runs_in_a_fresh_process_issue14() -> None:
    # A crash of pyarrow's evaluation would kill the process: run it in its own.
    code = textwrap.dedent("""
        import pyarrow as pa
        from arrow_sparse.pipeline import _filter
        from arrow_sparse.pipeline.steps import Filter
        inner = " and ".join(f"a != {i}" for i in range(_filter.MAX_TERMS - 1))
        depth = _filter.MAX_DEPTH
        expr = "not " * (depth // 2) + "(" * (depth - depth // 2) + inner \\
            + ")" * (depth - depth // 2) + " or a is null"
        out = Filter(expr=expr).transform(pa.table({"a": [1, 2000, None]}))
        print(out["a"].to_pylist())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[2000, None]"


@pytest.mark.parametrize(("expr", "match"), [
    (" and ".join(["label > 0"] * 20_000), r"is 279,995 characters long; at most 100,000"),
    (" and ".join(["a>0"] * (_filter.MAX_TERMS + 1)), r"has more than 1,000 comparisons"),
    ("(" * 5000 + "a > 0" + ")" * 5000, r"nests deeper than 100 levels"),
    ("not " * 5000 + "a > 0", r"nests deeper than 100 levels"),
    ("(" * 101 + "a > 0" + ")" * 101, r"nests deeper than 100 levels"),
    ("a > " + "1" * 5000, r"has a number longer than 100 characters"),
    ("a in [1, " + "9" * 30 + "]", r"has an integer outside the int64 range"),
    ("a > 9223372036854775808", r"has an integer outside the int64 range"),
    ("a > 0 and (" + "b " * 5000, r"expected a comparison"),
    ("a > 0 and " + "x" * 5000, r"expected a comparison"),
    ("a > 0 ~" + "x" * 5000, r"cannot parse expr at position 6"),
])
def test_filter_limits_are_short_spec_errors_naming_the_step_issue14(expr: str,
                                                                    match: str) -> None:
    with pytest.raises(ValueError, match=r"^step 'keep' \(filter\): .*" + match) as info:
        Filter(expr=expr, name="keep")
    assert isinstance(info.value, ArrowSparseError)
    assert len(str(info.value)) < 250, str(info.value)


def test_filter_at_the_limits_is_accepted_issue14() -> None:
    t = pa.table({"a": [1, -5]})
    assert Filter(expr="(" * 100 + "a > 0" + ")" * 100).transform(t).num_rows == 1
    assert Filter(expr="not " * 100 + "a > 0").transform(t).num_rows == 1
    assert Filter(expr="a > -9223372036854775808 and a < 9223372036854775807"
                  ).transform(t).num_rows == 2
    assert Filter(expr="a > 0." + "0" * 97).transform(t).num_rows == 1


def test_filter_errors_in_a_spec_name_its_place_issue14() -> None:
    spec = {"steps": [{"type": "select", "columns": ["a"]},
                      {"type": "filter", "expr": "not " * 200 + "a > 0"}]}
    with pytest.raises(ValueError, match=r"^spec.toml: steps\[1\] \(filter\): expr nests "):
        Pipeline.from_dict(spec, source="spec.toml")


def test_filter_evaluation_errors_are_short_issue14() -> None:
    step = Filter(expr=" and ".join(f"a != 'x{i}'" for i in range(500)))
    with pytest.raises(TypeError, match=r"^step filter: cannot evaluate 'a != 'x0' and") as info:
        step.transform(pa.table({"a": [1, 2]}))
    assert len(str(info.value)) < 400


def test_filter_structured_values_outside_int64_are_spec_errors_issue14() -> None:
    with pytest.raises(ValueError, match=r"^filter: value 1000000000000000000000000000000 "
                                         "cannot be compared"):
        Filter(column="a", op=">", value=10**30)
    with pytest.raises(ValueError, match="needs a list of values of one type"):
        Filter(column="a", op="in", value=[1, "x"])
