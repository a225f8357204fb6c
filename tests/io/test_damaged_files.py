"""Damaged-file corpus: every reader of arrow_sparse on truncated files and flipped bytes.

Readers: ``io.read_parquet``, ``io.read_ipc`` (file and stream format),
``embedding.load_table``, ``Vocabulary.load``, ``Pipeline.load`` (its TOML spec, and
the vocabulary file the spec names) and the sparse-tensor extension columns read back
from Parquet and from IPC. Each reader's pristine file is built deterministically,
then damaged copies are read: truncations at several lengths and single bytes XORed
with a random mask at random positions (seeded, so every run reads the same corpus).

Every read must raise an :class:`~arrow_sparse.errors.ArrowSparseError` whose message
names the damaged file, or return values that pass validation (``validate(full=True)``
for Arrow data, full checks of every decoded sparse tensor, a well-formed table or
pipeline). Values that differ from the original are accepted only where the format
cannot see them: IPC has no checksums, a TOML spec none, and a Parquet footer none
(its page checksums catch damaged pages). Never a crash: the corpus runs in a worker
subprocess per reader; a case that kills the worker is recorded and a new worker goes
on after it, so a crash fails the test with its case named instead of ending pytest.

``python -m tests.io.test_damaged_files`` prints the table of outcomes per reader.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLIPS = 40  # seeded single-byte flips per reader

# Outcomes: "raised" (a typed error naming the file), "same" (the original values),
# "other" (other values that pass validation), "refused" (other Arrow data that passes
# validation, whose sparse tensors the decoder refuses with a typed error); the rest
# are failures: "unnamed" (a typed error that does not name the file), "untyped"
# (another exception), "invalid" (values that fail validation), "crash".
GOOD = ("raised", "same", "other", "refused")


# ----------------------------------------------------------------------- readers
class Reader:
    """How to build one reader's pristine file, read a copy of it, and judge the result."""

    name = ""
    #: Whether values other than the original may come back (no checksum protects them).
    other_ok = True

    def build(self, directory: Path) -> Path:  # pragma: no cover - overridden
        raise NotImplementedError

    def read(self, path: Path) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def judge(self, result: Any, original: Any) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


def _table() -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(14)
    rows = 300
    lengths = rng.integers(0, 6, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 10**6,
                                                                            offsets[-1])),
                                   mask=pa.array(rng.random(rows) < 0.1))
    scores = pa.LargeListArray.from_arrays(
        pa.array(offsets.astype(np.int64)),
        pa.array(rng.random(offsets[-1], dtype=np.float32)))
    words = pa.array([None if i % 7 == 3 else f"user{i}" for i in range(rows)])
    return pa.table({"row": pa.array(np.arange(rows)), "ids": ids, "scores": scores,
                     "name": words, "label": pa.array(rng.integers(0, 2, rows), pa.int8())})


def _judge_table(result: Any, original: Any) -> str:
    try:
        result.validate(full=True)
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return f"invalid: {type(exc).__name__}: {exc}"
    return "same" if result.equals(original, check_metadata=True) else "other"


class ParquetReader(Reader):
    name = "io.read_parquet"
    other_ok = False  # page checksums; see judge for the footer

    def build(self, directory: Path) -> Path:
        import arrow_sparse as asp

        path = directory / "data.parquet"
        asp.io.write_parquet(_table(), path, row_group_rows=128)
        return path

    def read(self, path: Path) -> Any:
        import pyarrow as pa

        import arrow_sparse as asp

        batches = asp.io.read_parquet(path)
        return pa.Table.from_batches(list(batches), batches.schema)

    def judge(self, result: Any, original: Any) -> str:
        return _judge_table(result, original)


class IpcReader(Reader):
    def __init__(self, stream: bool) -> None:
        self.stream = stream
        self.name = "io.read_ipc (stream)" if stream else "io.read_ipc (file)"

    def build(self, directory: Path) -> Path:
        import arrow_sparse as asp

        path = directory / "data.arrow"
        asp.io.write_ipc(_table().to_batches(max_chunksize=128), path, stream=self.stream)
        return path

    def read(self, path: Path) -> Any:
        import arrow_sparse as asp

        return asp.io.read_ipc(path)

    def judge(self, result: Any, original: Any) -> str:
        return _judge_table(result, original)


class TableReader(Reader):
    name = "embedding.load_table"

    def build(self, directory: Path) -> Path:
        import numpy as np

        import arrow_sparse as asp

        path = directory / "table.arrow"  # the 4x2 float32 table of issue 14
        asp.embedding.save_table(np.arange(8, dtype=np.float32).reshape(4, 2), path)
        return path

    def read(self, path: Path) -> Any:
        import numpy as np

        import arrow_sparse as asp

        table = asp.embedding.load_table(path)
        np.asarray(table).sum()  # touch every value
        return table

    def judge(self, result: Any, original: Any) -> str:
        import numpy as np

        if not isinstance(result, np.ndarray) or result.ndim != 2 \
                or result.dtype not in (np.float32, np.float64):
            return f"invalid: {type(result).__name__} {getattr(result, 'shape', '')}"
        same = result.shape == original.shape and result.dtype == original.dtype and \
            np.array_equal(result, original, equal_nan=True)
        return "same" if same else "other"


class VocabularyReader(Reader):
    name = "Vocabulary.load"
    other_ok = False  # page checksums

    def build(self, directory: Path) -> Path:
        import pyarrow as pa

        import arrow_sparse as asp

        path = directory / "vocab.parquet"
        words = pa.array([[f"w{i % 97}", f"w{i % 13}"] for i in range(400)])
        asp.fit_vocabulary(words).save(path)
        return path

    def read(self, path: Path) -> Any:
        import arrow_sparse as asp

        return asp.Vocabulary.load(path)

    def judge(self, result: Any, original: Any) -> str:
        import arrow_sparse as asp

        if not isinstance(result, asp.Vocabulary):
            return f"invalid: {type(result).__name__}"
        return "same" if result == original else "other"


SPEC = """\
[pipeline]
input = "clicks.parquet"
output = "features.parquet"
batch_rows = 1024

[[steps]]
type = "filter"
name = "labelled"
expr = "label >= 0"

[[steps]]
type = "categorify"
name = "cat"
column = "ids"
output = "ids_cat"
vocabulary = "spec.cat.vocab.parquet"

[[steps]]
type = "pad"
name = "pad_cat"
column = "ids_cat"
length = 8
side = "left"
"""


class PipelineReader(Reader):
    """``Pipeline.load`` of a damaged spec (``vocab=False``) or of a damaged vocabulary."""

    def __init__(self, vocab: bool) -> None:
        self.vocab = vocab
        self.name = "Pipeline.load (vocabulary)" if vocab else "Pipeline.load (spec)"
        self.other_ok = not vocab  # text has no checksum; the vocabulary has

    def build(self, directory: Path) -> Path:
        import numpy as np

        import arrow_sparse as asp

        (directory / "spec.toml").write_text(SPEC, encoding="utf-8")
        asp.fit_vocabulary(np.arange(50, dtype=np.int64) % 17).save(
            directory / "spec.cat.vocab.parquet")
        return directory / ("spec.cat.vocab.parquet" if self.vocab else "spec.toml")

    def read(self, path: Path) -> Any:
        import arrow_sparse as asp

        return asp.Pipeline.load(path.parent / "spec.toml")

    def judge(self, result: Any, original: Any) -> str:
        import arrow_sparse as asp

        if not isinstance(result, asp.Pipeline):
            return f"invalid: {type(result).__name__}"
        vocabs = [getattr(s, "vocabulary", None) for s in result.steps]
        same = result.to_dict() == original.to_dict() and \
            vocabs == [getattr(s, "vocabulary", None) for s in original.steps]
        return "same" if same else "other"


def _tensors() -> list[Any]:
    import numpy as np

    import arrow_sparse as asp

    rng = np.random.default_rng(3)
    dense = [np.where(rng.random((4, 5)) < 0.4, rng.integers(1, 9, (4, 5)), 0).astype(np.float32)
             for _ in range(6)]
    cube = [np.where(rng.random((3, 2, 4)) < 0.4, 1.5, 0.0).astype(np.float32)
            for _ in range(6)]
    return [[asp.SparseCOO.from_dense(d) for d in dense],
            [asp.SparseCSR.from_dense(d) for d in dense],
            [None if i == 2 else asp.SparseCSC.from_dense(d) for i, d in enumerate(dense)],
            [asp.SparseCSF.from_dense(c, axis_order=[2, 0, 1]) for c in cube]]


class SparseReader(Reader):
    """Sparse-tensor extension columns written by write_parquet / write_ipc and read back."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.name = f"sparse columns ({fmt})"
        self.other_ok = fmt == "ipc"

    def build(self, directory: Path) -> Path:
        import pyarrow as pa

        import arrow_sparse as asp

        columns = {name: asp.sparse.sparse_tensor_array(tensors)
                   for name, tensors in zip(("coo", "csr", "csc", "csf"), _tensors(),
                                            strict=True)}
        table = pa.table(columns)
        if self.fmt == "parquet":
            path = directory / "tensors.parquet"
            asp.io.write_parquet(table, path)
        else:
            path = directory / "tensors.arrow"
            asp.io.write_ipc(table, path)
        return path

    def read(self, path: Path) -> Any:
        import pyarrow as pa

        import arrow_sparse as asp

        if self.fmt == "parquet":
            batches = asp.io.read_parquet(path)
            return pa.Table.from_batches(list(batches), batches.schema)
        return asp.io.read_ipc(path)

    def judge(self, result: Any, original: Any) -> str:
        from arrow_sparse.errors import ArrowSparseError
        from arrow_sparse.sparse import SparseTensorArray

        verdict = _judge_table(result, original)
        if verdict != "other":
            return verdict
        for column in result.columns:
            for chunk in column.chunks:
                if not isinstance(chunk, SparseTensorArray):
                    return "other"  # read as its storage struct: plain Arrow data, valid
                try:  # every tensor checked in full, as the constructors check
                    list(chunk.tensors(validate=True))
                except ArrowSparseError:
                    return "refused"
        return "other"


READERS: dict[str, Reader] = {r.name: r for r in (
    ParquetReader(), IpcReader(stream=False), IpcReader(stream=True), TableReader(),
    VocabularyReader(), PipelineReader(vocab=False), PipelineReader(vocab=True),
    SparseReader("parquet"), SparseReader("ipc"))}


# ------------------------------------------------------------------------ corpus
def damages(name: str, size: int) -> list[tuple[str, int, int]]:
    """The damaged copies of a ``size``-byte file: ``(kind, position, xor mask)``.

    Truncations keep the first ``position`` bytes; flips XOR byte ``position`` with
    the mask. Seeded by the reader's name, so the corpus is the same on every run.
    """
    cuts = sorted({0, 1, 7, size // 8, size // 4, size // 2, 3 * size // 4, size - 12,
                   size - 1} - {size} & set(range(size)))
    rng = random.Random(f"issue 14: {name}")
    flips = [("flip", rng.randrange(size), rng.randrange(1, 256)) for _ in range(FLIPS)]
    return [("truncate", cut, 0) for cut in cuts] + flips


def run_case(reader: Reader, pristine_path: Path, original: Any, damage: tuple[str, int, int],
             index: int) -> tuple[str, str]:
    """Read a damaged copy of ``pristine_path``; return ``(outcome, detail)``.

    The copy is a new file beside it (same name, in a directory of its own: a reader
    may find other files by name, as Pipeline.load finds the vocabulary), judged while
    it is still there: a memory-mapped result reads the file itself.
    """
    from arrow_sparse.errors import ArrowSparseError

    kind, position, mask = damage
    data = bytearray(pristine_path.read_bytes())
    if kind == "truncate":
        del data[position:]
    else:
        data[position] ^= mask
    directory = pristine_path.parent.parent / f"case{index}"
    shutil.copytree(pristine_path.parent, directory)
    path = directory / pristine_path.name
    path.write_bytes(bytes(data))
    try:
        try:
            result = reader.read(path)
        except ArrowSparseError as exc:
            text = str(exc)
            outcome = "raised" if str(path) in text else "unnamed"
            return outcome, f"{type(exc).__name__}: {text}"
        except Exception as exc:  # noqa: BLE001 - any other exception is the finding
            return "untyped", f"{type(exc).__name__}: {exc}"
        verdict = reader.judge(result, original)
        del result
        if verdict.startswith("invalid"):
            return "invalid", verdict
        return verdict, ""
    finally:
        shutil.rmtree(directory)


def worker(name: str, directory: str, start: int) -> None:
    """Run ``name``'s corpus from case ``start``, one JSON line per case on stdout.

    A ``{"case": i}`` line goes out (flushed) before case ``i`` runs, so that the
    parent knows which case a crash interrupted.
    """
    reader = READERS[name]
    (Path(directory) / "pristine").mkdir()
    path = reader.build(Path(directory) / "pristine")
    original = reader.read(path)
    cases = damages(name, path.stat().st_size)
    for i in range(start, len(cases)):
        print(json.dumps({"case": i}), flush=True)
        try:
            outcome, detail = run_case(reader, path, original, cases[i], i)
        except Exception:  # noqa: BLE001 - judging failed: report it, go on
            outcome, detail = "untyped", traceback.format_exc()[-400:]
        print(json.dumps({"case": i, "damage": cases[i], "outcome": outcome,
                          "detail": detail[:400]}), flush=True)
    print(json.dumps({"done": len(cases)}), flush=True)


def run_corpus(name: str, timeout: float = 600) -> list[dict[str, Any]]:
    """Run ``name``'s corpus in worker subprocesses; a crashed case is recorded, then resumed."""
    results: list[dict[str, Any]] = []
    start = 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    code = "import sys; from tests.io.test_damaged_files import worker; worker(*sys.argv[1:3], " \
           "int(sys.argv[3]))"
    while True:
        with tempfile.TemporaryDirectory() as directory:
            proc = subprocess.run([sys.executable, "-c", code, name, directory, str(start)],
                                  capture_output=True, text=True, timeout=timeout, env=env,
                                  cwd=ROOT, check=False)
        lines = [json.loads(line) for line in proc.stdout.splitlines()
                 if line.startswith("{")]
        results += [line for line in lines if "outcome" in line]
        if any("done" in line for line in lines) and proc.returncode == 0:
            return results
        started = [line["case"] for line in lines if set(line) == {"case"}]
        finished = {line["case"] for line in lines if "outcome" in line}
        crashed = [i for i in started if i not in finished]
        if not crashed:  # the worker failed before its first case
            pytest.fail(f"{name}: the corpus worker failed (exit {proc.returncode}): "
                        f"{proc.stderr[-3000:]}")
        case = crashed[0]
        damage = damages(name, _size(name))[case]
        results.append({"case": case, "damage": damage, "outcome": "crash",
                        "detail": f"exit {proc.returncode}: {proc.stderr[-400:]}"})
        start = case + 1


def _size(name: str) -> int:
    with tempfile.TemporaryDirectory() as directory:
        return READERS[name].build(Path(directory)).stat().st_size


def _failures(name: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    allowed = GOOD if READERS[name].other_ok else ("raised", "same")
    return [r for r in results if r["outcome"] not in allowed]


# ------------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", list(READERS))
def test_damaged_files_raise_a_typed_error_naming_the_file_issue_14(name: str) -> None:
    results = run_corpus(name)
    assert len(results) == len(damages(name, _size(name)))
    failures = _failures(name, results)
    assert not failures, "\n".join(
        f"{r['damage']}: {r['outcome']}: {r['detail']}" for r in failures)
    assert any(r["outcome"] == "raised" for r in results)  # the corpus does damage


def test_corpus_is_deterministic() -> None:
    assert damages("x", 1000) == damages("x", 1000)
    kinds = [d[0] for d in damages("x", 1000)]
    assert kinds.count("flip") == FLIPS and kinds.count("truncate") == 9
    assert all(0 <= d[1] < 1000 and (d[0] == "truncate" or 0 < d[2] < 256)
               for d in damages("x", 1000))


def _table_of_outcomes() -> str:  # pragma: no cover - run by hand
    columns = ("raised", "same", "other", "refused", "unnamed", "untyped", "invalid", "crash")
    lines = ["| reader | tried | " + " | ".join(columns) + " |",
             "| --- | --- | " + " | ".join("---" for _ in columns) + " |"]
    for name in READERS:
        results = run_corpus(name)
        counts = [sum(r["outcome"] == c for r in results) for c in columns]
        lines.append(f"| {name} | {len(results)} | " + " | ".join(map(str, counts)) + " |")
        for r in _failures(name, results):
            lines.append(f"|   {r['damage']} | {r['outcome']}: {r['detail'][:200]} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - run by hand
    print(_table_of_outcomes())
