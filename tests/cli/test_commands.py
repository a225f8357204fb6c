"""Tests of ``arrow_sparse.cli.commands``: the ``arrow-sparse`` command line (parsing,
usage errors, --debug, help, version, the text output of ``inspect``, the progress bar,
the console script) and its ``run`` and ``schema`` subcommands.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrow_sparse
from arrow_sparse import _progress, cli
from arrow_sparse.cli import commands, main

from ..test_progress import FakeTTY
from ._helpers import (
    SAMPLE,
    SPEC,
    oracle,
    run_error,
    same_value,
)


# ================================================================= inspect: text output
def test_inspect_table_output(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                              table: pa.Table) -> None:
    assert cli.main(["inspect", str(clicks_file)]) == 0
    out = capsys.readouterr().out
    header, *blocks = out.strip().split("\n\n")
    assert header.startswith(f"{clicks_file}: 1,500 rows, ")
    want = oracle(table)
    assert len(blocks) == len(want)
    for block, w in zip(blocks, want, strict=True):
        lines = block.splitlines()
        assert lines[0].split()[0] == w["name"]
        fields = {line[:19].strip(): line[19:].split() for line in lines[1:]}
        assert fields["rows"][0] == f"{w['rows']:,}"
        assert fields["null rows"][0] == f"{w['null_rows']:,}"
        assert fields["empty rows"][0] == f"{w['empty_rows']:,}"
        total = fields.get("total values", fields.get("total entries"))
        assert total == [f"{w['total_values']:,}"]
        assert fields["length"] == ["min", "p50", "p90", "p99", "max", "mean"]
        lens = [int(x) for x in fields[""][:5]]
        assert lens == [w["length"][k] for k in ("min", "p50", "p90", "p99", "max")]
        assert float(fields[""][5]) == pytest.approx(w["length"]["mean"], abs=0.005)
        key = "key min / max" if w["name"] == "cats" else "value min / max"
        lo, _, hi = fields[key]
        if w["values"]["min"] is None:
            assert (lo, hi) == ("-", "-")
        else:
            assert same_value(float(lo), w["values"]["min"], w["leaf"])
            assert same_value(float(hi), w["values"]["max"], w["leaf"])


# ====================================================================== errors and help
def test_debug_shows_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                               clicks_file: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    for argv, code, last in (
            (["--debug", "inspect", str(path)], 1, f"{path}: not a readable Parquet file"),
            (["inspect", str(path), "--debug"], 1, f"{path}: not a readable Parquet file"),
            (["--debug", "inspect", str(clicks_file), "--columns", "x"], 2, "--columns: no")):
        assert cli.main(argv) == code
        err = capsys.readouterr().err
        assert err.startswith("Traceback")
        assert err.splitlines()[-1].startswith(f"arrow-sparse: error: {last}")


@pytest.mark.parametrize("argv, text", [
    (["inspect", "f.parquet", "--batch-rows", "0"], "expected a positive integer, got '0'"),
    (["inspect", "f.parquet", "--batch-rows", "x"], "expected a positive integer, got 'x'"),
    (["inspect", "f.parquet", "--columns", ","], "expected comma-separated column names"),
    (["inspect", "f.parquet", "--bogus"], "unrecognized arguments: --bogus"),
    (["inspect"], "the following arguments are required: FILE"),
    ([], "the following arguments are required: COMMAND"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], text: str) -> None:
    line = run_error(capsys, argv, 2)
    assert text in line and "--help')" in line


def test_internal_error_hint(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        msg = "bug"
        raise RuntimeError(msg)

    monkeypatch.setattr(commands, "inspect_parquet", boom)
    line = run_error(capsys, ["inspect", str(clicks_file)], 1)
    assert "internal error: RuntimeError('bug') (run with --debug for the traceback)" in line


def test_keyboard_interrupt(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "inspect_parquet", interrupted)
    line = run_error(capsys, ["inspect", str(clicks_file)], 130)
    assert line == "arrow-sparse: error: interrupted"


@pytest.mark.parametrize(("argv", "example"), [
    (["--help"], "arrow-sparse run data/example_pipeline.toml"),
    (["inspect", "--help"], "arrow-sparse inspect data/sample_clicks.parquet --plot"),
    (["inspect", "-h"], "arrow-sparse inspect data/sample_clicks.parquet\n"),
    (["run", "--help"], "arrow-sparse run spec.toml --engine ray"),
    (["schema", "--help"], "arrow-sparse schema data/sample_clicks.parquet\n"),
])
def test_help_has_examples(capsys: pytest.CaptureFixture[str], argv: list[str],
                           example: str) -> None:
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: arrow-sparse")
    assert "examples:\n  arrow-sparse " in out
    assert example in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"arrow-sparse {arrow_sparse.__version__} (pyarrow {pa.__version__}")


# ======================================================================= console script
def test_console_script_on_sample() -> None:
    script = Path(sys.executable).with_name("arrow-sparse")
    if not script.exists():
        pytest.skip("the arrow-sparse console script is not installed beside this python")
    proc = subprocess.run([str(script), "inspect", str(SAMPLE)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # stderr is not a terminal: no progress bar
    want = {w["name"]: w for w in oracle(pq.read_table(SAMPLE))}["item_ids"]
    block = next(b for b in proc.stdout.split("\n\n") if b.startswith("item_ids  list<int64>"))
    lines = block.splitlines()
    assert lines[1].split() == ["rows", f"{want['rows']:,}"]
    assert lines[2].split()[:3] == ["null", "rows", f"{want['null_rows']:,}"]
    at = next(i for i, line in enumerate(lines) if line.startswith("  length"))
    assert [int(x) for x in lines[at + 1].split()[:5]] == \
        [want["length"][k] for k in ("min", "p50", "p90", "p99", "max")]
    assert f"value min / max  {want['values']['min']} / {want['values']['max']}" in block


# ============================================================================= progress
def test_cli_progress_bar_on_terminal(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_progress, "DEFAULT_DELAY", 0.0)
    for extra, shown in (([], True), (["--no-progress"], False)):
        tty = FakeTTY()
        monkeypatch.setattr(sys, "stderr", tty)
        assert cli.main(["inspect", str(clicks_file), "--batch-rows", "500", *extra]) == 0
        err = tty.getvalue()
        assert ("1,500 rows" in err and err.endswith("\r")) == shown, err
        assert (err == "") == (not shown)
        assert capsys.readouterr().out.startswith(str(clicks_file))


# ======================================================================= run and schema
def test_run_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f.parquet"
    assert main(["run", str(SPEC), "--output", str(out), "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_in"] == summary["rows_out"] == 100_000
    assert pq.read_metadata(out).num_rows == 100_000


def test_run_text_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(SPEC), "--input", str(SAMPLE), "--output",
                 str(tmp_path / "f.arrow"), "--batch-rows", "50000"]) == 0
    assert "100,000 rows in, 100,000 rows out" in capsys.readouterr().out


def test_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", str(SAMPLE)]) == 0
    assert "item_ids: list<element: int64>" in capsys.readouterr().out
    assert main(["schema", str(SAMPLE), "--pipeline", str(SPEC)]) == 0
    text = capsys.readouterr().out
    assert "item_buckets: fixed_size_list<element: int64>[50]" in text
    assert "categories" not in text


@pytest.mark.parametrize(("argv", "code", "match"), [
    (["run", "missing.toml"], 1, "pipeline spec not found"),
    (["run", str(SPEC), "--engine", "spark"], 2, "invalid choice: 'spark'"),
    (["run", str(SPEC), "--output", "x.csv"], 1, "output format"),
    (["schema", "missing.parquet"], 1, "missing.parquet"),
])
def test_run_and_schema_errors(argv: list[str], code: int, match: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("arrow-sparse: error:") and match in err
    assert err.count("\n") == 1


def test_run_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    assert "arrow-sparse run data/example_pipeline.toml" in capsys.readouterr().out


def test_run_flight_prints_the_address_and_counts_each_row_once(tmp_path: Path) -> None:
    # The server in another process, stopped with Ctrl-C (SIGINT) as a user would.
    import re
    import signal
    import subprocess
    import sys
    import threading

    import arrow_sparse as asp

    proc = subprocess.Popen(
        [sys.executable, "-m", "arrow_sparse", "run", str(SPEC), "--output",
         "flight://127.0.0.1:0", "--no-progress", "--batch-rows", "20000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    killer = threading.Timer(120, proc.kill)
    killer.start()
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"at (grpc://127\.0\.0\.1:(\d+)) \(tickets shard=0/1", line)
        assert found and found.group(2) != "0", line
        tables = [asp.io.flight_batches(found.group(1), f"shard={i}/2", timeout=60).read_all()
                  for i in range(2)]
        for _ in range(2):
            assert re.match(r"run: sent shard=\d/2: [\d,]+ rows", proc.stderr.readline())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        killer.cancel()
        proc.kill()
    assert proc.returncode == 0, err
    assert sum(t.num_rows for t in tables) == 100_000
    assert f"100,000 rows in, 100,000 rows out -> {found.group(1)} (2 streams)" in out


def test_engine_ray_without_ray_says_how_to_install(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # as if not installed
    assert main(["run", str(SPEC), "--engine", "ray", "--output",
                 str(tmp_path / "f.parquet"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("arrow-sparse: error: ray is required") and err.count("\n") == 1
    assert "pip install 'arrow-sparse[ray]'" in err
    assert not (tmp_path / "f.parquet").exists()


def test_run_save_pipeline_and_threads_flags(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    fitted = tmp_path / "new" / "fitted.toml"
    assert main(["run", str(SPEC), "--output", str(tmp_path / "f.arrows"), "--threads", "2",
                 "--save-pipeline", str(fitted), "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["threads"] == 2 and summary["engine"] == "local"
    assert (tmp_path / "new" / "fitted.item_vocab.vocab.parquet").exists()
    assert main(["run", str(SPEC), "--threads", "0"]) == 2
    assert "expected a positive integer" in capsys.readouterr().err


# ================================================= issue 14: run never replaces its input
def test_run_refuses_to_write_over_its_input_issue14(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.parquet"
    src.write_bytes(SAMPLE.read_bytes())
    spec = tmp_path / "spec.toml"
    spec.write_text('[[steps]]\ntype = "select"\ncolumns = ["user_id"]\n')
    (tmp_path / "link.parquet").symlink_to(src)
    for output in (src, tmp_path / "link.parquet", tmp_path / "." / "in.parquet"):
        line = run_error(capsys, ["run", str(spec), "--input", str(src), "--output",
                                  str(output), "--no-progress"], 1)
        assert line.startswith(f"arrow-sparse: error: run: output '{output}' is the input ")
        assert "choose a path outside the input" in line
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "p0.parquet").write_bytes(SAMPLE.read_bytes())
    line = run_error(capsys, ["run", str(spec), "--input", str(parts), "--output",
                              str(parts / "features.parquet"), "--no-progress"], 1)
    assert f"run: output '{parts / 'features.parquet'}' lies inside the input" in line
    # the command of the issue, as a user types it
    proc = subprocess.run([sys.executable, "-m", "arrow_sparse", "run", "spec.toml",
                           "--input", "in.parquet", "--output", "in.parquet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 1
    assert proc.stderr == ("arrow-sparse: error: run: output 'in.parquet' is the input "
                           "'in.parquet'; writing it would change the input while it is read; "
                           "choose a path outside the input\n")
    assert src.read_bytes() == SAMPLE.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "link.parquet",
                                                          "parts", "spec.toml"]


# ============================================== issue 14: SIGTERM and stale temporaries
#: ``arrow-sparse`` with one more step type, ``slow``: every batch after the first
#: sleeps, so the output's temporary file exists while the run waits.
_SLOW_CLI = """
import sys, threading, time
from arrow_sparse.cli import main
from arrow_sparse.pipeline import steps

class Slow(steps.Step):
    type = "slow"
    seen = 0
    lock = threading.Lock()

    def transform(self, table):
        with Slow.lock:
            Slow.seen += 1
            first = Slow.seen == 1
        if not first:
            time.sleep(float(sys.argv[1]))
        return table

    def output_schema(self, schema):
        return schema

steps.STEP_TYPES["slow"] = Slow
sys.exit(main(sys.argv[2:]))
"""


def _start_slow_run(tmp_path: Path, sleep: float, threads: int) -> tuple[Any, Path]:
    src = tmp_path / "in.parquet"
    if not src.exists():
        pq.write_table(pq.read_table(SAMPLE, columns=["user_id", "item_ids"]), src,
                       row_group_size=10_000)
    spec = tmp_path / "spec.toml"
    spec.write_text('[[steps]]\ntype = "slow"\n')
    out = tmp_path / "out" / "features.parquet"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_CLI, str(sleep), "run", str(spec),
                             "--input", str(src), "--output", str(out), "--batch-rows",
                             "10000", "--threads", str(threads), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out


def _temporaries(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*.tmp")) \
        if out.parent.exists() else []


def _wait_for_temporary(proc: Any, out: Path) -> None:
    deadline = time.monotonic() + 120
    while not _temporaries(out):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started writing"
        time.sleep(0.02)


@pytest.mark.parametrize("threads", [1, 2])
def test_sigterm_during_run_removes_the_temporary_and_exits_143_issue14(
        tmp_path: Path, threads: int) -> None:
    # One thread: the step sleeps on the main thread; two: on a pool thread, and the
    # main thread waits for it (the in-flight batches finish first, so a short sleep).
    proc, out = _start_slow_run(tmp_path, 120.0 if threads == 1 else 1.0, threads)
    try:
        _wait_for_temporary(proc, out)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr
    assert (stdout, stderr) == ("", "arrow-sparse: error: terminated\n")
    assert list(out.parent.iterdir()) == []  # no temporary, no partial output


def test_a_killed_runs_temporary_is_removed_by_the_next_run_issue14(tmp_path: Path) -> None:
    proc, out = _start_slow_run(tmp_path, 120.0, 1)
    try:
        _wait_for_temporary(proc, out)
        proc.send_signal(signal.SIGKILL)  # no clean-up possible: the temporary stays
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    left = _temporaries(out)
    assert len(left) == 1
    # what is not exactly a temporary of this output stays
    keep = [f".{out.name}.0123456789ab.tmp.keep", f".{out.name}.0123456789AB.tmp",
            f".{out.name}.0123456789a.tmp", ".other.parquet.0123456789ab.tmp",
            f"{out.name}.0123456789ab.tmp"]
    for name in keep:
        (out.parent / name).write_text("")
    (out.parent / f".{out.name}.fedcba987654.tmp").mkdir()  # a directory: not ours
    spec = tmp_path / "plain.toml"
    spec.write_text('[[steps]]\ntype = "select"\ncolumns = ["user_id"]\n')
    assert main(["run", str(spec), "--input", str(tmp_path / "in.parquet"), "--output",
                 str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        [*keep, f".{out.name}.fedcba987654.tmp", out.name])


def test_stale_temporaries_match_the_writers_own_names_issue14(tmp_path: Path) -> None:
    from arrow_sparse.io._common import atomic_path
    from arrow_sparse.pipeline.runner import _stale_temporaries

    target = tmp_path / "f.parquet"
    with atomic_path("test", target) as tmp:
        Path(tmp).write_text("")
        assert _stale_temporaries(str(target)) == [tmp]
    assert _stale_temporaries(str(target)) == []


def test_sigterm_handler_is_restored_after_main_issue14(clicks_file: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    before = signal.getsignal(signal.SIGTERM)
    assert main(["inspect", str(clicks_file)]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    capsys.readouterr()


def test_a_killed_runs_temporary_directory_is_removed_by_the_next_run(tmp_path: Path) -> None:
    src = tmp_path / "in.parquet"
    pq.write_table(pq.read_table(SAMPLE, columns=["user_id", "item_ids"]), src,
                   row_group_size=10_000)
    spec = tmp_path / "spec.toml"
    spec.write_text('[[steps]]\ntype = "slow"\n')
    out = tmp_path / "out" / "features"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_CLI, "120", "run", str(spec),
                             "--input", str(src), "--output", str(out), "--batch-rows",
                             "10000", "--threads", "1", "--max-rows-per-file", "5000",
                             "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_temporary(proc, out)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    left = _temporaries(out)
    assert len(left) == 1 and (out.parent / left[0]).is_dir()
    assert not out.exists()
    (out.parent / f".{out.name}.0123456789ab.tmp.keep").mkdir()  # not ours: stays
    plain = tmp_path / "plain.toml"
    plain.write_text('[[steps]]\ntype = "select"\ncolumns = ["user_id"]\n')
    assert main(["run", str(plain), "--input", str(src), "--output", str(out),
                 "--max-rows-per-file", "40000", "--no-progress"]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == [
        f".{out.name}.0123456789ab.tmp.keep", out.name]
    assert sorted(p.name for p in out.iterdir()) == [
        "part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert pq.read_table(out)["user_id"].to_pylist() == \
        pq.read_table(SAMPLE)["user_id"].to_pylist()


def test_stale_temporary_directories_match_the_writers_own_names(tmp_path: Path) -> None:
    from arrow_sparse.io._common import atomic_directory
    from arrow_sparse.pipeline.runner import _stale_temporaries

    target = tmp_path / "features"
    with atomic_directory("test", target) as tmp:
        assert _stale_temporaries(str(target), directories=True) == [tmp]
        assert _stale_temporaries(str(target)) == []  # a file output's: files only
    assert _stale_temporaries(str(target), directories=True) == []
    assert target.is_dir()


# ------------------------------------ issue 15: specs checked first, precise messages
def _spec_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "spec.toml"
    path.write_text(body)
    return str(path)


def test_schema_pipeline_refuses_steps_the_input_types_cannot_take_issue15(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"item_ids": pa.array([[1, 2]]), "scores": pa.array([[0.5]]),
                             "tags": pa.array([["a"]])}), data)
    hashed = _spec_file(tmp_path, '[[steps]]\ntype = "hash_bucket"\nname = "h"\n'
                                  'column = "scores"\nnum_buckets = 8\n')
    line = run_error(capsys, ["schema", str(data), "--pipeline", hashed], 1)
    assert "step 'h' (hash_bucket): column 'scores' must hold integers or strings" in line
    np_path = tmp_path / "emb.npy"
    np.save(np_path, np.ones((3, 2), np.float32))
    bag = _spec_file(tmp_path, f'[[steps]]\ntype = "embedding_bag"\nname = "e"\n'
                               f'column = "tags"\ntable = "{np_path}"\n')
    line = run_error(capsys, ["schema", str(data), "--pipeline", bag], 1)
    assert "step 'e' (embedding_bag): column 'tags' must be a list of integer ids" in line
    typo = _spec_file(tmp_path, '[[steps]]\ntype = "reduce"\nname = "r"\n'
                                'column = "item_id"\nop = "length"\n')
    line = run_error(capsys, ["run", typo, "--input", str(data), "--output",
                              str(tmp_path / "o.parquet")], 1)
    assert "no column 'item_id'; did you mean 'item_ids'?" in line
    assert line.startswith(f"arrow-sparse: error: input '{data}': step 'r' (reduce):")


def test_run_names_the_missing_input_and_the_unwritable_output_issue15(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = run_error(capsys, ["run", str(SPEC), "--input", "missing.parquet", "--output",
                              str(tmp_path / "o.parquet")], 1)
    assert line == "arrow-sparse: error: run: input 'missing.parquet' does not exist"
    (tmp_path / "file").write_text("x")
    line = run_error(capsys, ["run", str(SPEC), "--output",
                              str(tmp_path / "file" / "o.parquet")], 1)
    assert line.startswith("arrow-sparse: error: run: cannot write the output ")
