"""The :class:`Pipeline`: an ordered list of named steps, fitted by streaming."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..transforms import Vocabulary
from . import _toml
from .steps import Categorify, EmbeddingBag, Step, step_from_dict

__all__ = ["Pipeline"]

_PIPELINE_KEYS = ("input", "output", "batch_rows")


def _as_table(item: Any) -> pa.Table:
    if isinstance(item, pa.Table):
        return item
    if isinstance(item, pa.RecordBatch):
        return pa.Table.from_batches([item])
    msg = f"Pipeline: expected a pyarrow Table or RecordBatch, got {type(item).__name__}"
    raise ArrowSparseTypeError(msg)


class Pipeline:
    """An ordered list of named feature steps over the columns of Arrow tables.

    Parameters
    ----------
    steps
        :class:`~arrow_sparse.pipeline.steps.Step` objects or their spec dicts
        (``{"type": "hash_bucket", "column": ..., ...}``). Unnamed steps are named
        ``<type>_<position>``; names must be unique.
    input, output
        Default input Parquet path and output path of :func:`~arrow_sparse.pipeline.run`.
    batch_rows
        Default rows per batch of the runner.
    base_dir
        Directory that relative paths (input, output, embedding tables) are resolved
        against: the spec file's directory for :meth:`load`, else the current one.

    Examples
    --------
    >>> pipe = asp.Pipeline([
    ...     {"type": "categorify", "column": "ids"},
    ...     {"type": "reduce", "column": "ids", "op": "length", "output": "n"},
    ...     {"type": "pad", "column": "ids", "length": 2},
    ... ])
    >>> t = pa.table({"ids": pa.array([[5, 6, 5], [], None])})
    >>> pipe.fit([t]).transform_table(t).to_pylist()
    [{'ids': [2, 3], 'n': 3}, {'ids': [0, 0], 'n': 0}, {'ids': None, 'n': None}]
    >>> pipe.output_schema(t.schema)
    ids: fixed_size_list<item: int64>[2]
      child 0, item: int64
    n: int32
    """

    def __init__(self, steps: Sequence[Step | dict[str, Any]], *, input: str | None = None,
                 output: str | None = None, batch_rows: int | None = None,
                 base_dir: str | None = None) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            msg = f"Pipeline: steps must be a list, got {type(steps).__name__}"
            raise ArrowSparseTypeError(msg)
        built: list[Step] = []
        for i, s in enumerate(steps):
            step = s if isinstance(s, Step) else step_from_dict(s, where=f"steps[{i}]")
            if step.name is None:
                step.name = f"{step.type}_{i}"
            built.append(step)
        names = [s.name for s in built]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            msg = f"Pipeline: step names must be unique; repeated: {', '.join(dup)}"
            raise ArrowSparseValueError(msg)
        self.steps = built
        self.input = input
        self.output = output
        self.batch_rows = batch_rows
        self.base_dir = base_dir
        for step in built:
            if step.base_dir is None:
                step.base_dir = base_dir

    def __repr__(self) -> str:
        inner = ", ".join(repr(s) for s in self.steps)
        return f"Pipeline([{inner}])"

    def __getitem__(self, name: str) -> Step:
        """Return the step called ``name``."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def fitted(self) -> bool:
        """Whether every stateful step is fitted."""
        return all(s.fitted for s in self.steps)

    def resolve(self, path: str | None) -> str | None:
        """Resolve a spec path against :attr:`base_dir` (absolute paths unchanged)."""
        if path is None:
            return None
        path = os.path.expanduser(path)
        if os.path.isabs(path) or self.base_dir is None or "://" in path:
            return path
        return os.path.normpath(os.path.join(self.base_dir, path))

    # ------------------------------------------------------------------ fit
    def fit(self, data: Any, *, refit: bool = False, progress: Any = None) -> Pipeline:
        """Fit the stateful steps by streaming batches and merging their states.

        Each stateful step is fitted on the output of the steps before it, one pass
        over ``data`` per stateful step (so ``data`` must be re-iterable when there
        are several: a list, a :class:`~arrow_sparse.io.ParquetBatches`).

        Parameters
        ----------
        data
            A Table, a RecordBatch, or an iterable of them.
        refit
            Refit steps that are already fitted (default: keep their state).
        progress
            Optional object with ``update(rows)``, called per batch read.

        Returns
        -------
        Pipeline
            ``self``.

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "categorify", "column": "ids"}])
        >>> t = pa.table({"ids": pa.array([[4, 4], [9]])})
        >>> pipe.fit([t.slice(0, 1), t.slice(1)])["categorify_0"].vocabulary.num_ids
        4
        """
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            data = [data]
        todo = [i for i, s in enumerate(self.steps) if s.stateful and (refit or not s.fitted)]
        passes = 0
        for i in todo:
            step = self.steps[i]
            if passes and iter(data) is data:
                msg = ("Pipeline.fit: several stateful steps need several passes over the "
                       "data; pass a re-iterable (a list or read_parquet(...)), not an "
                       "iterator")
                raise ArrowSparseTypeError(msg)
            passes += 1
            state: Any = None
            for item in data:
                table = _as_table(item)
                if progress is not None:
                    progress.update(table.num_rows)
                for prior in self.steps[:i]:
                    table = prior.transform(table)
                part = step.fit_batch(table)
                state = part if state is None else step.merge_states(state, part)
            if state is None:
                msg = f"Pipeline.fit: no batches to fit {step.label} on"
                raise ArrowSparseValueError(msg)
            step.set_state(state)
        return self

    # ------------------------------------------------------------ transform
    def transform_table(self, table: pa.Table | pa.RecordBatch) -> pa.Table:
        """Apply every step to one table.

        Parameters
        ----------
        table
            A ``pyarrow.Table`` or ``RecordBatch``.

        Returns
        -------
        pyarrow.Table

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "select", "columns": ["b"]}])
        >>> pipe.transform_table(pa.table({"a": [1], "b": [2]})).to_pylist()
        [{'b': 2}]
        """
        out = _as_table(table)
        for step in self.steps:
            out = step.transform(out)
        return out

    def transform_batches(self, batches: Iterable[Any]) -> Iterator[pa.RecordBatch]:
        """Transform a stream of batches lazily, one batch at a time.

        Parameters
        ----------
        batches
            Iterable of Tables or RecordBatches.

        Yields
        ------
        pyarrow.RecordBatch
            The transformed batches (a filter may leave some empty; they are kept).

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "filter", "expr": "a > 1"}])
        >>> t = pa.table({"a": [1, 2, 3]})
        >>> [b.num_rows for b in pipe.transform_batches([t.slice(0, 1), t.slice(1)])]
        [0, 2]
        """
        for item in batches:
            out = self.transform_table(item).combine_chunks()
            yield from out.to_batches() or [pa.RecordBatch.from_pylist([], schema=out.schema)]

    def output_schema(self, input_schema: pa.Schema) -> pa.Schema:
        """Return the output schema for input of ``input_schema`` (no data is read).

        Raises
        ------
        KeyError
            A step names a column that does not exist at that point.
        TypeError
            A column of the wrong type for its step.
        """
        schema = input_schema
        for step in self.steps:
            schema = step.output_schema(schema)
        return schema

    # ------------------------------------------------------------- spec I/O
    def to_dict(self) -> dict[str, Any]:
        """Return the spec as a dict: ``{"pipeline": {...}, "steps": [...]}`` (no fitted state)."""
        head = {"input": self.input, "output": self.output, "batch_rows": self.batch_rows}
        return {"pipeline": {k: v for k, v in head.items() if v is not None},
                "steps": [s.to_dict() for s in self.steps]}

    @classmethod
    def from_dict(cls, spec: dict[str, Any], *, base_dir: str | None = None,
                  source: str = "spec") -> Pipeline:
        """Build a pipeline from a spec dict (the parsed TOML).

        Categorify entries with ``vocabulary = "FILE"`` load that fitted vocabulary.
        """
        if not isinstance(spec, dict):
            msg = f"{source}: expected a table, got {type(spec).__name__}"
            raise ArrowSparseTypeError(msg)
        unknown = sorted(set(spec) - {"pipeline", "steps"})
        if unknown:
            msg = (f"{source}: unknown top-level key(s) {', '.join(map(repr, unknown))}; "
                   "expected [pipeline] and [[steps]]")
            raise ArrowSparseValueError(msg)
        head = spec.get("pipeline", {})
        bad = sorted(set(head) - set(_PIPELINE_KEYS))
        if bad:
            msg = (f"{source}: unknown [pipeline] key(s) {', '.join(map(repr, bad))}; "
                   f"allowed: {', '.join(_PIPELINE_KEYS)}")
            raise ArrowSparseValueError(msg)
        entries = spec.get("steps")
        if not isinstance(entries, list) or not entries:
            msg = f"{source}: no [[steps]]; a pipeline needs at least one step"
            raise ArrowSparseValueError(msg)
        steps: list[Step] = []
        for i, entry in enumerate(entries):
            entry = dict(entry) if isinstance(entry, dict) else entry
            vocab_file = entry.pop("vocabulary", None) if isinstance(entry, dict) else None
            step = step_from_dict(entry, where=f"{source}: steps[{i}]")
            step.base_dir = base_dir
            if vocab_file is not None:
                if not isinstance(step, Categorify):
                    msg = f"{source}: steps[{i}] ({step.type}): unknown key 'vocabulary'"
                    raise ArrowSparseValueError(msg)
                step.vocabulary = Vocabulary.load(step._resolve(str(vocab_file)))
            steps.append(step)
        return cls(steps, input=head.get("input"), output=head.get("output"),
                   batch_rows=head.get("batch_rows"), base_dir=base_dir)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Pipeline:
        """Read a TOML spec (and the fitted state files it names).

        Relative paths in the spec are resolved against the spec file's directory.

        Examples
        --------
        >>> pipe = asp.Pipeline.load("data/example_pipeline.toml")
        >>> [s.type for s in pipe.steps][:2]
        ['filter', 'reduce']
        """
        if not isinstance(path, (str, os.PathLike)):
            msg = f"Pipeline.load: path must be a str or path, got {type(path).__name__}"
            raise ArrowSparseTypeError(msg)
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError as exc:
            msg = f"pipeline spec not found: {path}"
            raise ArrowSparseValueError(msg) from exc
        spec = _toml.loads(text, source=path)
        return cls.from_dict(spec, base_dir=os.path.dirname(os.path.abspath(path)),
                             source=path)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the spec as TOML, and each fitted vocabulary as Parquet next to it.

        A fitted Categorify step ``NAME`` is saved as ``<spec stem>.NAME.vocab.parquet``
        and named by its ``vocabulary`` key, so :meth:`load` gives back a fitted
        pipeline with identical output. Relative paths are rewritten to stay valid
        from the new file's directory.
        """
        path = os.fspath(path)
        out_dir = os.path.dirname(os.path.abspath(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        doc = self.to_dict()
        for key in ("input", "output"):
            if key in doc["pipeline"]:
                doc["pipeline"][key] = _rebase(self.resolve(doc["pipeline"][key]), out_dir)
        for step, entry in zip(self.steps, doc["steps"], strict=True):
            if isinstance(step, EmbeddingBag):
                entry["table"] = _rebase(step._resolve(step.table), out_dir)
            if isinstance(step, Categorify) and step.vocabulary is not None:
                name = f"{stem}.{step.name}.vocab.parquet"
                step.vocabulary.save(os.path.join(out_dir, name))
                entry["vocabulary"] = name
        with open(path, "w", encoding="utf-8") as f:
            f.write(_toml.dumps(doc))


def _rebase(path: str | None, out_dir: str) -> str | None:
    if path is None or "://" in path:
        return path
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    try:
        return os.path.relpath(path, out_dir)
    except ValueError:  # another drive on Windows
        return path
