from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arrow_sparse.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample_clicks.parquet"
SPEC = REPO / "data" / "example_pipeline.toml"


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
def test_errors(argv: list[str], code: int, match: str,
                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("arrow-sparse: error:") and match in err
    assert err.count("\n") == 1


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
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
