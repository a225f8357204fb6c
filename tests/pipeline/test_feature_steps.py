"""Tests of the steps users bring from NVTabular / Merlin: ``embedding_bag``'s ``empty``
option (against torch), ``hashed_cross`` (against a plain-Python XXH3 oracle),
``join_external`` (against DuckDB) and user-defined Python steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from arrow_sparse.pipeline import (
    Pipeline,
    PythonStep,
    Step,
    _toml,
    register_step,
    run,
    step_from_dict,
)
from arrow_sparse.pipeline.steps import EmbeddingBag

from ._helpers import sliced

IDS = pa.array([[0, 2], [], None, [1, 1, 3], [], [None]], pa.large_list(pa.int64()))


@pytest.fixture
def emb_path(tmp_path: Path) -> str:
    path = tmp_path / "emb.npy"
    np.save(path, np.arange(8, dtype=np.float32).reshape(4, 2) - 3)
    return str(path)


def _torch_bags(weights: np.ndarray, rows: list, mode: str) -> list:
    """torch.nn.functional.embedding_bag of the non-null rows (empty bags give zeros)."""
    torch = pytest.importorskip("torch")
    flat = [i for r in rows if r is not None for i in r if i is not None]
    offsets, n = [], 0
    for r in rows:
        offsets.append(n)
        n += 0 if r is None else sum(i is not None for i in r)
    got = torch.nn.functional.embedding_bag(
        torch.tensor(flat, dtype=torch.int64), torch.from_numpy(np.array(weights)),
        torch.tensor(offsets, dtype=torch.int64), mode=mode).numpy()
    return [None if r is None else got[k].tolist() for k, r in enumerate(rows)]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_empty_zeros_is_torch(emb_path: str, mode: str) -> None:
    t = pa.table({"ids": IDS})
    rows = IDS.to_pylist()
    expected = _torch_bags(np.load(emb_path), rows, mode)
    # a row of only null ids is not empty: it pools nothing and is null in mean / max
    if mode != "sum":
        expected[5] = None
    step = EmbeddingBag("ids", table=emb_path, mode=mode, empty="zeros", output="e")
    assert step.transform(t)["e"].to_pylist() == expected
    got = pa.concat_tables([step.transform(p) for p in sliced(t)])["e"].to_pylist()
    assert got == expected
    null_step = EmbeddingBag("ids", table=emb_path, mode=mode, empty="null", output="e")
    got = null_step.transform(t)["e"].to_pylist()
    assert got == [None if rows[k] == [] else v for k, v in enumerate(expected)]
    default = EmbeddingBag("ids", table=emb_path, mode=mode, output="e").transform(t)
    assert default["e"].to_pylist() == (expected if mode == "sum" else got)


def test_embedding_bag_empty_spec_and_errors(emb_path: str) -> None:
    step = step_from_dict({"type": "embedding_bag", "column": "ids", "table": emb_path,
                           "empty": "zeros"})
    assert step.to_dict()["empty"] == "zeros"
    assert "empty" not in EmbeddingBag("ids", table=emb_path).to_dict()
    with pytest.raises(ValueError, match=r"steps\[0\] \(embedding_bag\): 'empty' must be "
                                         r"'zeros' or 'null', got 'zero'"):
        Pipeline([{"type": "embedding_bag", "column": "ids", "table": emb_path,
                   "empty": "zero"}])


# ------------------------------------------------------------------------ hashed_cross
def _cross_oracle(rows: list[tuple], num_buckets: int, seed: int) -> list:
    """The documented definition, in plain Python with the ``xxhash`` package."""
    xxhash = pytest.importorskip("xxhash")

    def value_bytes(v: object) -> bytes:
        if isinstance(v, str):
            return v.encode("utf-8")
        return int(v).to_bytes(8, "little", signed=True)

    out = []
    for values in rows:
        if any(v is None for v in values):
            out.append(None)
            continue
        words = b"".join(
            (xxhash.xxh3_64_intdigest(value_bytes(v), seed=seed) % (2**63 - 1))
            .to_bytes(8, "little") for v in values)
        out.append(xxhash.xxh3_64_intdigest(words, seed=seed) % num_buckets)
    return out


def _cross_table(n: int = 300) -> pa.Table:
    rng = np.random.default_rng(5)
    words = ["", "fr", "us", "été", "item_42"]
    country = [None if rng.random() < 0.1 else words[k] for k in rng.integers(0, 5, n)]
    small = [None if rng.random() < 0.1 else int(k) for k in rng.integers(-128, 128, n)]
    return pa.table({
        "country": pa.array(country, pa.string()),
        "small": pa.array(small, pa.int8()),
        "big": pa.array(rng.integers(-2**62, 2**62, n), pa.int64()),
        "tag": pa.array(country, pa.large_string()),
    })


@pytest.mark.parametrize(("columns", "num_buckets", "seed"), [
    (["country", "small"], 1000, 0),
    (["small", "country"], 1000, 0),
    (["country", "small", "big"], 2**63 - 1, 7),
    (["big", "small"], 1, 2**64 - 1),
])
def test_hashed_cross_is_the_documented_hash(columns: list, num_buckets: int,
                                              seed: int) -> None:
    t = _cross_table()
    expected = _cross_oracle(list(zip(*(t[c].to_pylist() for c in columns), strict=True)),
                             num_buckets, seed)
    pipe = Pipeline([{"type": "hashed_cross", "columns": columns, "num_buckets": num_buckets,
                      "seed": seed, "output": "x"}])
    assert pipe.transform_table(t)["x"].to_pylist() == expected
    got = pa.concat_tables([pipe.transform_table(p) for p in sliced(t)])["x"].to_pylist()
    assert got == expected
    assert pipe.output_schema(t.schema).field("x").type == pa.int64()
    again = Pipeline.from_dict(_toml.loads(_toml.dumps(pipe.to_dict())))
    assert again.transform_table(t)["x"].to_pylist() == expected


def test_hashed_cross_ignores_arrow_widths_and_replaces_output() -> None:
    t = _cross_table()
    a = Pipeline([{"type": "hashed_cross", "columns": ["country", "small"],
                   "num_buckets": 97, "output": "small"}]).transform_table(t)
    b = Pipeline([{"type": "hashed_cross", "columns": ["tag", "small"],
                   "num_buckets": 97, "output": "x"}]).transform_table(
        t.set_column(1, "small", t["small"].cast(pa.int64())))
    assert a.column_names == t.column_names  # 'small' replaced in place
    assert a["small"].to_pylist() == b["x"].to_pylist()


@pytest.mark.parametrize(("spec", "schema", "exc", "match"), [
    ({"columns": ["a"]}, {"a": pa.int64()}, TypeError, "two or more column names"),
    ({"columns": ["a", "a"]}, {"a": pa.int64()}, ValueError, "repeats a name"),
    ({"columns": ["a", "b"], "num_buckets": 0}, {"a": pa.int64()}, ValueError,
     r"'num_buckets' must be in \[1, 9223372036854775807\], got 0"),
    ({"columns": ["a", "bb"]}, {"a": pa.int64(), "b": pa.int64()}, KeyError,
     "no column 'bb'.*did you mean 'b'"),
    ({"columns": ["a", "b"]}, {"a": pa.int64(), "b": pa.float64()}, TypeError,
     "column 'b' must hold integers or strings.*got double"),
    ({"columns": ["a", "b"]}, {"a": pa.int64(), "b": pa.list_(pa.int64())}, TypeError,
     "column 'b' must hold scalar integers or strings, got large_list"),
])
def test_hashed_cross_spec_errors(spec: dict, schema: dict, exc: type, match: str) -> None:
    entry = {"type": "hashed_cross", "num_buckets": 10, "output": "x", "name": "hc", **spec}
    with pytest.raises(exc, match=match):
        Pipeline([entry]).output_schema(pa.schema(schema))


# ----------------------------------------------------------------------- join_external
def _join_inputs(tmp_path: Path) -> tuple[pa.Table, str]:
    rng = np.random.default_rng(11)
    n = 500
    item = [None if rng.random() < 0.05 else int(k) for k in rng.integers(0, 60, n)]
    shop = [None if rng.random() < 0.05 else s for s in rng.choice(["a", "b", "c"], n)]
    left = pa.table({"row": pa.array(np.arange(n), pa.int64()),
                     "item": pa.array(item, pa.int32()),
                     "shop": pa.array(shop, pa.large_string()),
                     "ids": pa.array([[k, k + 1] for k in range(n)],
                                     pa.large_list(pa.int64()))})
    keys = [(i, s) for i in range(50) for s in ("a", "b")] + [(None, "a"), (3, None)]
    right = pa.table({
        "item": pa.array([k[0] for k in keys], pa.int64()),
        "shop": pa.array([k[1] for k in keys], pa.string()),
        "price": pa.array(rng.random(len(keys))),
        "tags": pa.array([[f"t{k}"] * (k % 3) for k in range(len(keys))]),
    })
    path = tmp_path / "items.parquet"
    import pyarrow.parquet as pq
    pq.write_table(right, path)
    return left, str(path)


def _duckdb_left_join(left: pa.Table, path: str, on: list[str], cols: list[str]) -> list:
    duckdb = pytest.importorskip("duckdb")
    cond = " and ".join(f"l.{k} = r.{k}" for k in on)
    picked = ", ".join(f"r.{c}" for c in cols)
    con = duckdb.connect()
    con.register("l", left)
    got = con.sql(f"select l.*, {picked} from l left join read_parquet('{path}') r "
                  f"on {cond} order by l.row").to_arrow_table()
    return got.to_pylist()


@pytest.mark.parametrize(("on", "cols"), [
    (["item", "shop"], ["price", "tags"]),
    (["item", "shop"], ["tags"]),
])
def test_join_external_is_duckdbs_left_join(tmp_path: Path, on: list, cols: list) -> None:
    left, path = _join_inputs(tmp_path)
    expected = _duckdb_left_join(left, path, on, cols)
    entry = {"type": "join_external", "path": path, "on": on}
    if cols != ["price", "tags"]:
        entry["columns"] = cols
    pipe = Pipeline([entry])
    out = pipe.transform_table(left)
    assert out.to_pylist() == expected
    parts = pa.concat_tables([pipe.transform_table(p) for p in sliced(left)])
    assert parts.to_pylist() == expected
    assert pipe.output_schema(left.schema).equals(out.schema)


def test_join_external_one_integer_key_in_a_spec_run(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    left, path = _join_inputs(tmp_path)
    right = pq.read_table(path).filter(pa.compute.equal(pa.compute.field("shop"), "a"))
    (tmp_path / "ext").mkdir()
    pq.write_table(right.drop_columns(["shop"]), tmp_path / "ext" / "a.parquet")
    pq.write_table(left, tmp_path / "in.parquet")
    spec = tmp_path / "spec.toml"
    spec.write_text('[[steps]]\ntype = "join_external"\npath = "ext/a.parquet"\n'
                    'on = "item"\ncolumns = ["price"]\n', encoding="utf-8")
    run(str(spec), str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"))
    got = pq.read_table(tmp_path / "out.parquet")
    expected = _duckdb_left_join(left, str(tmp_path / "ext" / "a.parquet"), ["item"],
                                 ["price"])
    assert got.to_pylist() == expected


def test_join_external_errors(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    left, path = _join_inputs(tmp_path)
    schema = left.schema

    def check(entry: dict, exc: type, match: str, table: bool = False) -> None:
        pipe_entry = {"type": "join_external", "path": path, "name": "j", **entry}
        with pytest.raises(exc, match=match):
            pipe = Pipeline([pipe_entry])
            if table:
                pipe.transform_table(left)
            else:
                pipe.output_schema(schema)

    check({"on": "item", "how": "inner"}, ValueError, "'how' must be 'left', got 'inner'")
    check({"on": []}, TypeError, "'on' must be a column name or a list")
    check({"on": "item", "columns": ["item"]}, ValueError, "names the key 'item'")
    check({"on": "itm"}, KeyError, "external table .* has no column 'itm'.*did you mean "
                                   "'item'")
    check({"on": "item", "path": "nope.parquet"}, ValueError, "external table not found")
    check({"on": "row"}, KeyError, "no column 'row'")
    # keys of different kinds
    pq.write_table(pa.table({"item": ["1"], "v": [1]}), tmp_path / "s.parquet")
    check({"on": "item", "path": str(tmp_path / "s.parquet")}, TypeError,
          "key 'item' is int32 in the input but large_string in the external table")
    # a name the input already has
    pq.write_table(pa.table({"item": [1], "ids": [2]}), tmp_path / "d.parquet")
    check({"on": "item", "path": str(tmp_path / "d.parquet")}, ValueError,
          "the input already has a column 'ids'")
    # repeated keys (rows with a null key are ignored)
    pq.write_table(pa.table({"item": [1, None, 2, 1, None], "v": [1, 2, 3, 4, 5]}),
                   tmp_path / "r.parquet")
    check({"on": "item", "path": str(tmp_path / "r.parquet")}, ValueError,
          r"key \{'item': 1\} appears 2 times in the external table", table=True)


# -------------------------------------------------------------------- python steps
def _add_total(table: pa.Table, column: str = "ids", output: str = "total") -> pa.Table:
    """A user step: the sum of each row's ids (the reference: Python's sum)."""
    return table.append_column(output, pa.array(
        [None if r is None else sum(v for v in r if v is not None)
         for r in table[column].to_pylist()], pa.int64()))


class ShiftByMin(Step):
    """A stateful user step: x - min(x), the minimum fitted on the data."""

    type = "shift_by_min"
    stateful = True
    _keys = ("column",)

    def __init__(self, column: str, *, name: str | None = None) -> None:
        super().__init__(name)
        self.column = column
        self.low: int | None = None

    @property
    def fitted(self) -> bool:
        return self.low is not None

    def fit_batch(self, table: pa.Table) -> int | None:
        return pa.compute.min(table[self.column]).as_py()

    def merge_states(self, a: int | None, b: int | None) -> int | None:
        return b if a is None else a if b is None else min(a, b)

    def set_state(self, state: int | None) -> None:
        self.low = state

    def input_columns(self) -> list[str]:
        return [self.column]

    def output_columns(self) -> list[str]:
        return [self.column]

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        self._need(schema, self.column)
        return schema

    def transform(self, table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(self.column)
        return table.set_column(i, self.column,
                                pa.compute.subtract(table[self.column], self.low))


SPEC_TEXT = """
[[steps]]
type = "python"
function = "{function}"
options = {{ column = "ids", output = "total" }}

[[steps]]
type = "categorify"
column = "total"

[[steps]]
type = "python"
function = "shift_by_min"
options = {{ column = "y" }}

[[steps]]
type = "select"
columns = ["total", "y"]
"""


def _python_input(tmp_path: Path) -> tuple[pa.Table, str]:
    import pyarrow.parquet as pq

    t = pa.table({"ids": pa.array([[1, 2], [], None, [5], [2, 1], [None, 3]]),
                  "y": pa.array([10, 4, 7, None, 6, 9], pa.int64())})
    path = tmp_path / "in.parquet"
    pq.write_table(t, path)
    return t, str(path)


def _python_expected(t: pa.Table) -> list[dict]:
    totals = [None if r is None else sum(v for v in r if v is not None)
              for r in t["ids"].to_pylist()]
    # categorify: 0 padding, 1 null; then by descending count, ties by ascending value
    counts: dict[int, int] = {}
    for v in totals:
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    vocab = {v: 2 + k for k, v in enumerate(sorted(counts, key=lambda v: (-counts[v], v)))}
    low = min(v for v in t["y"].to_pylist() if v is not None)
    return [{"total": 1 if v is None else vocab[v], "y": None if y is None else y - low}
            for v, y in zip(totals, t["y"].to_pylist(), strict=True)]


def test_python_steps_need_the_opt_in(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from arrow_sparse.cli import main

    register_step("add_total", _add_total)
    register_step("shift_by_min", ShiftByMin)
    t, path = _python_input(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TEXT.format(function="add_total"), encoding="utf-8")
    refused = r"steps\[0\] \(python\): the spec names the Python step 'add_total'; a spec " \
              r"runs Python code only when the run allows it: pass allow_python_steps=True"
    with pytest.raises(ValueError, match=refused):
        Pipeline.load(spec)
    with pytest.raises(ValueError, match=refused):
        run(str(spec), path, str(tmp_path / "out.parquet"))
    with pytest.raises(ValueError, match=refused):
        Pipeline([{"type": "python", "function": "add_total"}])
    assert main(["run", str(spec), "--input", path, "--output",
                 str(tmp_path / "out.parquet")]) != 0
    assert "--allow-python-steps" in capsys.readouterr().err
    assert not (tmp_path / "out.parquet").exists()

    expected = _python_expected(t)
    run(str(spec), path, str(tmp_path / "a.parquet"), allow_python_steps=True)
    assert pq_rows(tmp_path / "a.parquet") == expected
    pipe = Pipeline.load(spec, allow_python_steps=True)
    assert pipe.output_schema(t.schema) == pa.schema({"total": pa.int64(), "y": pa.int64()})


def pq_rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def test_python_step_by_import_path_on_the_cli(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from arrow_sparse.cli import main

    register_step("shift_by_min", ShiftByMin)
    (tmp_path / "my_steps.py").write_text(
        "import pyarrow as pa\n\n"
        "def add_total(table, column, output):\n"
        "    totals = [None if r is None else sum(v for v in r if v is not None)\n"
        "              for r in table[column].to_pylist()]\n"
        "    return table.append_column(output, pa.array(totals, pa.int64()))\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    t, path = _python_input(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TEXT.format(function="my_steps:add_total"), encoding="utf-8")
    out = tmp_path / "out.parquet"
    assert main(["run", str(spec), "--input", path, "--output", str(out),
                 "--allow-python-steps", "--no-progress"]) == 0
    assert pq_rows(out) == _python_expected(t)
    capsys.readouterr()
    assert main(["schema", path, "--pipeline", str(spec), "--allow-python-steps"]) == 0
    assert capsys.readouterr().out.split() == ["total:", "int64", "y:", "int64"]


def test_opaque_python_steps_keep_columns_rows_and_filters_honest() -> None:
    # the function reads 'x' (named by no step) and rewrites 'label': the reader must
    # keep every column, the later filter must not be pushed below it, the fit must run it.
    def f(table: pa.Table) -> pa.Table:
        label = pa.compute.add(table["label"], table["x"])
        return table.set_column(table.schema.get_field_index("label"), "label", label)

    pipe = Pipeline([PythonStep(f), {"type": "filter", "expr": "label > 1"},
                     {"type": "categorify", "column": "label"},
                     {"type": "select", "columns": ["label"]}])
    schema = pa.schema({"label": pa.int64(), "x": pa.int64(), "z": pa.int64()})
    assert pipe.input_columns(schema) == ["label", "x", "z"]  # f may read any column
    assert pipe.pushdown_filter(schema) is None
    t = pa.table({"label": [0, 1, 2, 0], "x": [0, 1, 5, 9], "z": [0, 0, 0, 0]})
    pipe.fit([t.slice(0, 2), t.slice(2)])
    # labels after f: 0, 2, 7, 9; kept: 2, 7, 9 -> ids 2, 3, 4
    assert pipe.transform_table(t)["label"].to_pylist() == [2, 3, 4]


def test_python_step_errors() -> None:
    register_step("add_total", _add_total)
    with pytest.raises(KeyError, match=r"no Python step 'add_totl' is registered.*did you "
                                       r"mean 'add_total'"):
        Pipeline([{"type": "python", "function": "add_totl"}], allow_python_steps=True)
    with pytest.raises(KeyError, match=r"cannot import 'no_such_module_x:f'"):
        PythonStep("no_such_module_x:f")
    with pytest.raises(ValueError, match="register_step: name must be letters"):
        register_step("a b", _add_total)
    with pytest.raises(TypeError, match="must be a function table -> table or a Step"):
        register_step("bad", 3)
    with pytest.raises(TypeError, match="'options' must be a table of keyword arguments"):
        PythonStep(_add_total, options=[1])
    step = PythonStep(lambda table: 3, name="p")
    with pytest.raises(TypeError, match=r"step 'p' \(python\): .* must return a "
                                        r"pyarrow.Table, got int"):
        step.output_schema(pa.schema({"a": pa.int64()}))
    register_step("with_schema", _add_total,
                  output_schema=lambda s, **kw: s.append(pa.field("total", pa.int64())))
    step = PythonStep("with_schema")
    assert step.output_schema(pa.schema({"ids": pa.list_(pa.int64())})).names == \
        ["ids", "total"]
    assert step.to_dict() == {"type": "python", "function": "with_schema"}
    with pytest.raises(ValueError, match="cannot build 'shift_by_min'"):
        register_step("shift_by_min", ShiftByMin)
        PythonStep("shift_by_min", options={"col": "y"})


# ----------------------------------------------------------------------------- ray
@pytest.mark.ray
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")
def test_new_steps_on_ray_equal_local(ray_cluster: object, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from ._helpers import SAMPLE

    rows = 3000
    table = pq.read_table(SAMPLE, columns=["user_id", "item_ids", "label"]).slice(0, rows)
    table = table.append_column("row", pa.array(np.arange(rows), pa.int64()))
    (tmp_path / "in").mkdir()
    for i in range(3):
        pq.write_table(table.slice(i * 1000, 1000), tmp_path / "in" / f"part-{i}.parquet")
    users = np.unique(table["user_id"].to_numpy())[::2]
    pq.write_table(pa.table({"user_id": users, "segment": users % 7}), tmp_path / "u.parquet")
    np.save(tmp_path / "emb.npy", np.arange(32, dtype=np.float32).reshape(16, 2))

    def first_id(t: pa.Table) -> pa.Table:  # pickled by value to the workers
        import pyarrow.compute as pc

        return t.append_column("first", pc.list_element(
            pc.if_else(pc.greater(pc.list_value_length(t["item_ids"]), 0), t["item_ids"],
                       pa.scalar([-1], t.schema.field("item_ids").type)), 0))

    pipe = Pipeline([
        {"type": "join_external", "path": str(tmp_path / "u.parquet"), "on": "user_id"},
        {"type": "hashed_cross", "columns": ["user_id", "label"], "num_buckets": 64,
         "output": "ux"},
        {"type": "hash_bucket", "column": "item_ids", "num_buckets": 16, "output": "h"},
        {"type": "embedding_bag", "column": "h", "table": str(tmp_path / "emb.npy"),
         "mode": "mean", "empty": "zeros", "output": "e"},
        PythonStep(first_id),
    ])
    run(pipe, str(tmp_path / "in"), str(tmp_path / "local.parquet"))
    run(pipe, str(tmp_path / "in"), str(tmp_path / "ray.parquet"), engine="ray")
    local = pq.read_table(tmp_path / "local.parquet").sort_by("row")
    got = pq.read_table(tmp_path / "ray.parquet").sort_by("row")
    assert got.equals(local)
    assert local["segment"].null_count > 0 and local["e"].null_count == local["h"].null_count


def test_join_external_reads_a_polars_hive_directory(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    left, path = _join_inputs(tmp_path)
    hive = tmp_path / "hive"
    right = pl.from_arrow(pq.read_table(path).drop_columns(["tags"])).drop_nulls("shop")
    right.write_parquet(hive, partition_by=["shop"])
    out = Pipeline([{"type": "join_external", "path": str(hive), "on": ["item", "shop"]}]
                   ).transform_table(left)
    con = duckdb.connect()
    con.register("l", left)
    expected = con.sql(
        "select l.*, r.price from l left join read_parquet(?, hive_partitioning = true) r "
        "on l.item = r.item and l.shop = r.shop order by l.row",
        params=[str(hive / "**" / "*.parquet")]).to_arrow_table()
    assert out.to_pylist() == expected.to_pylist()


def test_saved_specs_keep_the_external_table_and_python_steps(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": [1, 2], "v": ["a", "b"]}), tmp_path / "e.parquet")
    register_step("add_total", _add_total)
    pipe = Pipeline([{"type": "join_external", "path": "e.parquet", "on": "k"},
                     {"type": "hashed_cross", "columns": ["k", "v"], "num_buckets": 9,
                      "output": "x"},
                     {"type": "python", "function": "add_total",
                      "options": {"column": "ids"}}],
                    base_dir=str(tmp_path), allow_python_steps=True)
    t = pa.table({"k": [2, 3, 1], "ids": [[1, 2], None, []]})
    expected = pipe.transform_table(t)
    assert expected.column_names == ["k", "ids", "v", "x", "total"]
    assert expected["v"].to_pylist() == ["b", None, "a"]
    (tmp_path / "deeper").mkdir()
    pipe.save(tmp_path / "deeper" / "spec.toml")
    text = (tmp_path / "deeper" / "spec.toml").read_text("utf-8")
    assert 'path = "../e.parquet"' in text and 'function = "add_total"' in text
    with pytest.raises(ValueError, match="allow_python_steps=True"):
        Pipeline.load(tmp_path / "deeper" / "spec.toml")
    again = Pipeline.load(tmp_path / "deeper" / "spec.toml", allow_python_steps=True)
    assert again.transform_table(t).equals(expected)
    empty = pipe.transform_table(t.slice(0, 0))
    assert empty.num_rows == 0 and empty.schema.equals(pipe.output_schema(t.schema))
