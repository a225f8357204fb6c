"""Tests of ``arrow_sparse.pipeline._filter``: the filter expressions a Filter step refuses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrow_sparse import Pipeline
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.pipeline import _filter
from arrow_sparse.pipeline.steps import (
    Filter,
)


@pytest.mark.parametrize(("expr", "match"), [
    ("label >", "expected a number"),
    ("label = 1", "cannot parse"),
    ("__import__('os')", "calls an unknown function '__import__'"),
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
        pred = _filter.parse(joiner.join(terms))
        assert pred.columns == ["label"]
        expr = pred.compile(pa.schema({"label": pa.int64()}))
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
    # The types are checked before evaluating (issue 15): a short message, no pyarrow text.
    with pytest.raises(TypeError, match=r"^step filter: cannot compare column 'a' \(int64\) "
                                        r"with a string 'x0' \(at position 0: 'a != ") as info:
        step.transform(pa.table({"a": [1, 2]}))
    assert len(str(info.value)) < 400
    step = Filter(expr=" and ".join(f"a * 4611686018427387904 != {i}" for i in range(500)))
    with pytest.raises(ValueError, match=r"^step filter: cannot evaluate 'a \* 46.*overflow"
                       ) as info:
        step.transform(pa.table({"a": [1, 2]}))
    assert len(str(info.value)) < 400


def test_filter_structured_values_outside_int64_are_spec_errors_issue14() -> None:
    with pytest.raises(ValueError, match=r"^step filter: value 1000000000000000000000000000000 "
                                         "cannot be compared"):
        Filter(column="a", op=">", value=10**30)
    with pytest.raises(ValueError, match="needs a list of values of one type"):
        Filter(column="a", op="in", value=[1, "x"])


# ------------------------------ issue 15: SQL's three-valued logic, a wider grammar
def _kept(expr: str, table: pa.Table) -> pa.Table:
    return Filter(expr=expr).transform(table)


def _nullable_labels(rows: int = 2_000, seed: int = 15) -> pa.Table:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, rows)
    null = rng.random(rows) < 0.09
    return pa.table({"label": pa.array(label, pa.int64(), mask=null),
                     "row": pa.array(np.arange(rows))})


def test_filter_not_in_drops_null_labels_as_sql_does_issue15() -> None:
    # Before: 'label not in [0]' kept the null labels too (isin gave false, ~ made it true).
    t = _nullable_labels()
    nulls = t["label"].null_count
    assert nulls > 100
    expected = int(pc.sum(pc.fill_null(pc.not_equal(t["label"], 0), False)).as_py())
    df = pl.from_arrow(t)
    assert df.filter(~pl.col("label").is_in([0])).height == expected
    con = duckdb.connect()
    con.register("t", t)
    assert con.execute("SELECT count(*) FROM t WHERE label NOT IN (0)").fetchone()[0] == expected
    assert con.execute("SELECT count(*) FROM t WHERE NOT (label IN (0))").fetchone()[0] \
        == expected
    for expr in ("label not in [0]", "not (label in [0])", "label != 0", "not label == 0"):
        out = _kept(expr, t)
        assert out.num_rows == expected, expr
        assert out["label"].null_count == 0
    # a null in the list: a miss is null, so 'not in' keeps nothing
    assert _kept("label not in [0, null]", t).num_rows == 0
    assert _kept("label in [0, null]", t).num_rows == t.num_rows - nulls - expected
    # the structured form follows the same rule
    step = Filter(column="label", op="not in", value=[0])
    assert step.transform(t).num_rows == expected


def _sample_table() -> pa.Table:
    return pa.table({
        "a": pa.array([0, 1, None, 2, -3, 5, None, 4, 1, -1], pa.int64()),
        "b": pa.array([1, 1, 2, None, -3, 0, None, 7, 2, 1], pa.int32()),
        "x": pa.array([0.5, None, 1.5, 2.0, -1.0, 2.5, 3.0, None, 0.0, 1.0], pa.float64()),
        "s": pa.array(["a", "b", None, "", "ab", "b", "c", None, "a", "bc"]),
        "ids": pa.array([[1, 2], [], None, [3, None], [5, 5, 5, 5], [1], None, [2, 4, 6],
                         [None], [0]], pa.list_(pa.int64())),
        "tags": pa.array([["x"], ["y", None], None, [], ["x", "z"], ["z"], ["x"], None, [],
                          ["y"]], pa.list_(pa.string())),
    })


# (our expression, DuckDB SQL, Polars SQL or None where Polars SQL spells it otherwise)
_SQL_CASES = [
    ("a != 0", "a <> 0", "a <> 0"),
    ("a not in [0, 1]", "a NOT IN (0, 1)", "a NOT IN (0, 1)"),
    ("a in (1, null)", "a IN (1, NULL)", "a IN (1, NULL)"),
    ("a not in [1, null]", "a NOT IN (1, NULL)", "a NOT IN (1, NULL)"),
    ("not (a in [0])", "NOT (a IN (0))", "NOT (a IN (0))"),
    ("a between 0 and 2", "a BETWEEN 0 AND 2", "a BETWEEN 0 AND 2"),
    ("a not between b and 4", "a NOT BETWEEN b AND 4", "a NOT BETWEEN b AND 4"),
    ("a > b", "a > b", "a > b"),
    ("a < x", "a < x", "a < x"),
    ("a + b * 2 >= x - 1", "a + b * 2 >= x - 1", "a + b * 2 >= x - 1"),
    ("-a < b", "-a < b", "-a < b"),
    ("a / 2 > 0.4", "a / 2 > 0.4", "a / 2 > 0.4"),
    ("a is null or b is not null", "a IS NULL OR b IS NOT NULL",
     "a IS NULL OR b IS NOT NULL"),
    ("a > 0 or b > 0 and not x < 1", "a > 0 OR b > 0 AND NOT x < 1",
     "a > 0 OR b > 0 AND NOT x < 1"),
    ("not (a > 0 or b > 0)", "NOT (a > 0 OR b > 0)", "NOT (a > 0 OR b > 0)"),
    ("(a > 0 or x > 1) and s != 'b'", "(a > 0 OR x > 1) AND s <> 'b'",
     "(a > 0 OR x > 1) AND s <> 'b'"),
    ("s in ['a', 'b'] or s is null", "s IN ('a', 'b') OR s IS NULL",
     "s IN ('a', 'b') OR s IS NULL"),
    ("s >= 'b'", "s >= 'b'", "s >= 'b'"),
    ("len(ids) > 1", "len(ids) > 1", "array_length(ids) > 1"),
    ("len(ids) == 0 or ids is null", "len(ids) = 0 OR ids IS NULL",
     "array_length(ids) = 0 OR ids IS NULL"),
    ("len(s) >= 2", "length(s) >= 2", "length(s) >= 2"),
    ("contains(tags, 'x')", "list_contains(tags, 'x')", "array_contains(tags, 'x')"),
    ("not contains(tags, 'x')", "NOT list_contains(tags, 'x')",
     "NOT array_contains(tags, 'x')"),
    ("contains(ids, 5) or contains(ids, a)", "list_contains(ids, 5) OR list_contains(ids, a)",
     None),
    ("true", "true", "true"),
    ("a > 0 and false", "a > 0 AND false", "a > 0 AND false"),
]


@pytest.mark.parametrize(("expr", "sql", "polars_sql"), _SQL_CASES)
def test_filter_matches_duckdb_and_polars_sql_issue15(expr: str, sql: str,
                                                      polars_sql: str | None) -> None:
    t = _sample_table().append_column("row", pa.array(range(10)))
    got = _kept(expr, t)["row"].to_pylist()
    con = duckdb.connect()
    con.register("t", t)
    rows = [r for (r,) in con.execute(f"SELECT row FROM t WHERE {sql} ORDER BY row").fetchall()]
    assert got == rows, (expr, got, rows)
    if polars_sql is not None:
        ctx = pl.SQLContext(t=pl.from_arrow(t))
        out = ctx.execute(f"SELECT row FROM t WHERE {polars_sql} ORDER BY row").collect()
        assert got == out["row"].to_list(), (expr, got)


def test_filter_in_long_lists_agree_with_short_ones_issue15() -> None:
    # Up to 16 values compile to equalities, longer lists to one is_in lookup.
    t = _sample_table()
    many = ", ".join(str(v) for v in range(100, 140))
    for body in ("a in [1, 2, {}]", "a not in [1, 2, {}]", "a in [1, 2, null, {}]",
                 "a not in [1, 2, null, {}]", "x in [1.5, 2, {}]", "x not in [1.5, 2, {}]"):
        short = _kept(body.replace(", {}", ""), t)
        assert _kept(body.format(many), t).equals(short), body


# ---------------------------------------- Hypothesis: random expressions vs an oracle
def _and3(p: Any, q: Any) -> Any:
    if p is False or q is False:
        return False
    return None if p is None or q is None else True


def _or3(p: Any, q: Any) -> Any:
    if p is True or q is True:
        return True
    return None if p is None or q is None else False


_OPS = {"==": lambda p, q: p == q, "!=": lambda p, q: p != q, "<": lambda p, q: p < q,
        "<=": lambda p, q: p <= q, ">": lambda p, q: p > q, ">=": lambda p, q: p >= q}
_SQL_OPS = {"==": "=", "!=": "<>"}


@st.composite
def _numbers(draw: st.DrawFn, depth: int = 0) -> tuple[str, str, Any]:
    """A numeric value: (text, DuckDB SQL, row -> value or None)."""
    options = ["col", "int", "float", "len"] + (["arith", "neg"] if depth < 2 else [])
    kind = draw(st.sampled_from(options))
    if kind == "col":
        name = draw(st.sampled_from(["a", "b", "x"]))
        return name, name, lambda r, n=name: r[n]
    if kind == "int":
        v = draw(st.integers(-4, 6))
        return str(v), str(v), lambda r, v=v: v
    if kind == "float":
        v = draw(st.sampled_from([-1.5, 0.0, 0.5, 2.25]))
        return repr(v), repr(v), lambda r, v=v: v
    if kind == "len":
        name = draw(st.sampled_from(["ids", "tags", "s"]))
        sql = f"length({name})" if name == "s" else f"len({name})"
        return f"len({name})", sql, lambda r, n=name: None if r[n] is None else len(r[n])
    if kind == "neg":
        text, sql, f = draw(_numbers(depth + 1))
        return f"-({text})", f"-({sql})", lambda r, f=f: None if f(r) is None else -f(r)
    op = draw(st.sampled_from(["+", "-", "*"]))
    lt, ls, lf = draw(_numbers(depth + 1))
    rt, rs, rf = draw(_numbers(depth + 1))
    fn = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q}[op]

    def value(r: dict[str, Any], lf: Any = lf, rf: Any = rf, fn: Any = fn) -> Any:
        p, q = lf(r), rf(r)
        return None if p is None or q is None else fn(p, q)

    return f"({lt} {op} {rt})", f"({ls} {op} {rs})", value


@st.composite
def _strings(draw: st.DrawFn) -> tuple[str, str, Any]:
    if draw(st.booleans()):
        return "s", "s", lambda r: r["s"]
    v = draw(st.sampled_from(["", "a", "b", "bc"]))
    return f"'{v}'", f"'{v}'", lambda r, v=v: v


@st.composite
def _conditions(draw: st.DrawFn, depth: int = 0) -> tuple[str, str, Any]:
    """A condition: (text, DuckDB SQL, row -> True / False / None)."""
    leaves = ["cmp", "scmp", "in", "between", "isnull", "contains", "bool"]
    kind = draw(st.sampled_from(leaves + (["not", "and", "or"] * 2 if depth < 3 else [])))
    if kind in ("cmp", "scmp"):
        op = draw(st.sampled_from(list(_OPS)))
        side = _numbers() if kind == "cmp" else _strings()
        (lt, ls, lf), (rt, rs, rf) = draw(side), draw(side)

        def cmp(r: dict[str, Any], lf: Any = lf, rf: Any = rf, op: str = op) -> Any:
            p, q = lf(r), rf(r)
            return None if p is None or q is None else _OPS[op](p, q)

        return f"{lt} {op} {rt}", f"{ls} {_SQL_OPS.get(op, op)} {rs}", cmp
    if kind == "in":
        xt, xs, xf = draw(_numbers())
        values = draw(st.lists(st.one_of(st.none(), st.integers(-3, 5),
                                         st.sampled_from([0.5, 2.0])), min_size=1, max_size=20))
        negate = draw(st.booleans())
        items = ", ".join("null" if v is None else repr(v) for v in values)

        def isin(r: dict[str, Any], xf: Any = xf, values: Any = values,
                 negate: bool = negate) -> Any:
            x = xf(r)
            if x is None:
                return None
            hit = True if x in [v for v in values if v is not None] else (
                None if None in values else False)
            return hit if not negate or hit is None else not hit

        word = "not in" if negate else "in"
        return (f"{xt} {word} [{items}]", f"{xs} {word.upper()} ({items.replace('null', 'NULL')})",
                isin)
    if kind == "between":
        (xt, xs, xf), (lt, ls, lf), (ht, hs, hf) = draw(_numbers()), draw(_numbers()), \
            draw(_numbers())

        def between(r: dict[str, Any], xf: Any = xf, lf: Any = lf, hf: Any = hf) -> Any:
            x, lo, hi = xf(r), lf(r), hf(r)
            return _and3(None if x is None or lo is None else x >= lo,
                         None if x is None or hi is None else x <= hi)

        return f"{xt} between {lt} and {ht}", f"{xs} BETWEEN {ls} AND {hs}", between
    if kind == "isnull":
        name = draw(st.sampled_from(["a", "b", "x", "s", "ids", "tags"]))
        negate = draw(st.booleans())
        word = "is not null" if negate else "is null"
        return (f"{name} {word}", f"{name} {word.upper()}",
                lambda r, n=name, neg=negate: (r[n] is None) != neg)
    if kind == "contains":
        if draw(st.booleans()):
            col, (vt, vs, vf) = "ids", draw(st.one_of(
                st.integers(0, 6).map(lambda v: (str(v), str(v), lambda r, v=v: v)),
                st.just(("a", "a", lambda r: r["a"]))))
        else:
            col, (vt, vs, vf) = "tags", draw(_strings().filter(lambda s: s[0] != "s"))

        def contains(r: dict[str, Any], col: str = col, vf: Any = vf) -> Any:
            items, v = r[col], vf(r)
            if items is None or v is None:
                return None
            return v in [e for e in items if e is not None]

        return f"contains({col}, {vt})", f"list_contains({col}, {vs})", contains
    if kind == "bool":
        v = draw(st.booleans())
        return str(v).lower(), str(v).lower(), lambda r, v=v: v
    if kind == "not":
        t, s, f = draw(_conditions(depth + 1))
        return (f"not ({t})", f"NOT ({s})",
                lambda r, f=f: None if f(r) is None else not f(r))
    (lt, ls, lf), (rt, rs, rf) = draw(_conditions(depth + 1)), draw(_conditions(depth + 1))
    join = _and3 if kind == "and" else _or3
    return (f"({lt}) {kind} ({rt})", f"({ls}) {kind.upper()} ({rs})",
            lambda r, lf=lf, rf=rf, join=join: join(lf(r), rf(r)))


@pytest.mark.hypothesis
@given(cond=_conditions())
def test_filter_random_expressions_match_a_three_valued_oracle_issue15(
        cond: tuple[str, str, Any]) -> None:
    text, _, oracle = cond
    t = _sample_table()
    rows = t.to_pylist()
    pred = _filter.parse(text)
    got = _filter.evaluate(pred.compile(t.schema), t, pred.columns).to_pylist()
    assert got == [oracle(r) for r in rows], text
    kept = Filter(expr=text).transform(t).to_pylist()
    assert kept == [r for r in rows if oracle(r) is True], text


@pytest.mark.hypothesis
@settings(max_examples=40)
@given(cond=_conditions())
def test_filter_random_expressions_match_duckdb_issue15(cond: tuple[str, str, Any]) -> None:
    text, sql, _ = cond
    t = _sample_table().append_column("row", pa.array(range(10)))
    con = duckdb.connect()
    con.register("t", t)
    want = [r for (r,) in con.execute(f"SELECT row FROM t WHERE {sql} ORDER BY row").fetchall()]
    assert Filter(expr=text).transform(t)["row"].to_pylist() == want, (text, sql)


def _written_by(writer: str, t: pa.Table, path: Any) -> None:
    if writer == "polars":
        pl.from_arrow(t).write_parquet(path)  # large_list, large_string
    elif writer == "duckdb":
        con = duckdb.connect()
        con.register("t", t)
        con.execute(f"COPY t TO '{path}' (FORMAT parquet)")  # list<element: ...>
    else:
        import pandas as pd

        t.to_pandas(types_mapper=pd.ArrowDtype).to_parquet(path)


@pytest.mark.parametrize("writer", ["polars", "duckdb", "pandas"])
def test_filter_on_inputs_written_by_other_libraries_issue15(writer: str, tmp_path: Any) -> None:
    from arrow_sparse.pipeline import Pipeline, run

    t = _sample_table().append_column("row", pa.array(range(10)))
    src = tmp_path / "in.parquet"
    _written_by(writer, t, src)
    expr = ("a not in [0, 1] and (len(ids) >= 1 or contains(tags, 'x')) "
            "or s between 'b' and 'c' and x is not null")
    out = tmp_path / "out.parquet"
    run(Pipeline([{"type": "filter", "expr": expr}]), str(src), str(out))
    got = sorted(r["row"] for r in pq.read_table(out).select(["row"]).to_pylist())
    con = duckdb.connect()
    sql = ("SELECT row FROM read_parquet(?) WHERE a NOT IN (0, 1) AND (len(ids) >= 1 OR "
           "list_contains(tags, 'x')) OR s BETWEEN 'b' AND 'c' AND x IS NOT NULL ORDER BY row")
    assert got == [r for (r,) in con.execute(sql, [str(src)]).fetchall()]
    assert got  # the data keep some rows
