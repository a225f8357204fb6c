"""User-defined Python steps (NVTabular's ``LambdaOp``): :func:`register_step`, ``type = "python"``.

A spec names Python code with ``type = "python"`` and ``function`` (a name given to
:func:`register_step`, or ``"package.module:function"``). Since a spec must not run
or import code by surprise, such an entry is refused unless the run opts in:
``allow_python_steps=True`` (:class:`~arrow_sparse.Pipeline`,
:meth:`~arrow_sparse.Pipeline.load`, :func:`~arrow_sparse.pipeline.run`) or
``arrow-sparse run --allow-python-steps``. A :class:`PythonStep` built in Python
needs no opt-in: that code is the caller's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pyarrow as pa

from ..errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError
from . import _filter
from .steps import _NAME, Step

__all__ = ["PythonStep", "register_step", "registered_steps"]

#: name -> (function or Step subclass, output_schema function or None)
_REGISTRY: dict[str, tuple[Any, Callable[..., pa.Schema] | None]] = {}


def register_step(name: str, cls_or_func: Any, *,
                  output_schema: Callable[..., pa.Schema] | None = None) -> None:
    """Make a Python function or :class:`~arrow_sparse.pipeline.Step` subclass nameable in specs.

    Parameters
    ----------
    name
        The name a spec gives as ``function`` (letters, digits, ``_``, ``-``).
        Registering a name again replaces the earlier entry.
    cls_or_func
        A function ``f(table, **options) -> table`` of ``pyarrow.Table``, or a
        subclass of :class:`~arrow_sparse.pipeline.Step` built as ``cls(**options)``
        (it may be stateful: its ``fit_batch`` / ``merge_states`` / ``set_state`` run
        in the fitting passes).
    output_schema
        For a function: ``g(schema, **options) -> schema``, its output schema. By
        default the function is applied to an empty table of the input schema (so it
        must accept zero rows).

    Raises
    ------
    ValueError
        A bad ``name``.
    TypeError
        ``cls_or_func`` is neither callable nor a Step subclass.

    Examples
    --------
    >>> import pyarrow.compute as pc
    >>> def clip_ids(table, high):
    ...     ids = table["ids"]
    ...     return table.set_column(0, "ids", pc.min_element_wise(ids, high, skip_nulls=False))
    >>> register_step("clip_ids", clip_ids)
    >>> spec = [{"type": "python", "function": "clip_ids", "options": {"high": 5}}]
    >>> pipe = asp.Pipeline(spec, allow_python_steps=True)
    >>> pipe.transform_table(pa.table({"ids": [3, 9, None]}))["ids"].to_pylist()
    [3, 5, None]
    """
    if not isinstance(name, str) or not _NAME.match(name):
        msg = f"register_step: name must be letters, digits, '_' or '-', got {name!r}"
        raise ArrowSparseValueError(msg)
    is_step = isinstance(cls_or_func, type) and issubclass(cls_or_func, Step)
    if not is_step and (isinstance(cls_or_func, type) or not callable(cls_or_func)):
        msg = (f"register_step: {name!r} must be a function table -> table or a Step "
               f"subclass, got {cls_or_func!r}")
        raise ArrowSparseTypeError(msg)
    if output_schema is not None and (is_step or not callable(output_schema)):
        msg = ("register_step: output_schema must be a function schema -> schema, for a "
               "function step (a Step subclass has its own output_schema method)")
        raise ArrowSparseTypeError(msg)
    _REGISTRY[name] = (cls_or_func, output_schema)


def registered_steps() -> list[str]:
    """Return the names given to :func:`register_step`, sorted."""
    return sorted(_REGISTRY)


def _lookup(label: str, function: str) -> tuple[Any, Callable[..., pa.Schema] | None]:
    if function in _REGISTRY:
        return _REGISTRY[function]
    if ":" in function:
        module, _, attr = function.partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            msg = f"{label}: cannot import {function!r} ({exc})"
            raise ArrowSparseKeyError(msg) from exc
        return obj, None
    names = registered_steps()
    hint = _filter.did_you_mean(function, names)
    listed = ", ".join(names) if names else "none"
    msg = (f"{label}: no Python step {function!r} is registered{hint or ';'} registered: "
           f"{listed} (call arrow_sparse.pipeline.register_step(name, func) first, or "
           f"name it 'package.module:function')")
    raise ArrowSparseKeyError(msg)


class PythonStep(Step):
    """A step running Python code: a function of tables, or a user Step subclass.

    Parameters
    ----------
    function
        A name given to :func:`register_step`, ``"package.module:function"``, or
        the function / Step subclass itself.
    options
        Keyword arguments of the function (after the table) or of the class.

    Notes
    -----
    A function step's output schema comes from ``output_schema`` given to
    :func:`register_step`, else from the function applied to an empty table of the
    input schema, before any data is read. Its input and output columns are not
    known, so the fitting passes of later stateful steps run it on every batch.
    Ray workers receive the function itself (pickled by Ray).

    Examples
    --------
    >>> def add_len(table):
    ...     return table.append_column("n", pa.compute.list_value_length(table["ids"]))
    >>> step = PythonStep(add_len)
    >>> step.transform(pa.table({"ids": [[1, 2], []]}))["n"].to_pylist()
    [2, 0]
    >>> step.output_schema(pa.schema({"ids": pa.list_(pa.int64())})).names
    ['ids', 'n']
    """

    type = "python"
    runs_python: ClassVar[bool] = True
    _keys: ClassVar[tuple[str, ...]] = ("function", "options")

    def __init__(self, function: Any, options: Mapping[str, Any] | None = None, *,
                 name: str | None = None) -> None:
        super().__init__(name)
        if options is None:
            options = {}
        if not isinstance(options, Mapping):
            msg = f"{self.label}: 'options' must be a table of keyword arguments, got {options!r}"
            raise ArrowSparseTypeError(msg)
        self.options = dict(options)
        schema_fn = None
        if isinstance(function, str):
            if not function:
                msg = f"{self.label}: 'function' must be a non-empty string"
                raise ArrowSparseTypeError(msg)
            obj, schema_fn = _lookup(self.label, function)
            self.function = function
        else:
            obj = function
            self.function = next((k for k, (o, _) in _REGISTRY.items() if o is obj),
                                 f"{getattr(obj, '__module__', '?')}:"
                                 f"{getattr(obj, '__qualname__', repr(obj))}")
            schema_fn = _REGISTRY.get(self.function, (None, None))[1]
        self._schema_fn = schema_fn
        self._inner: Step | None = None
        self._func: Callable[..., Any] | None = None
        if isinstance(obj, type) and issubclass(obj, Step):
            try:
                self._inner = obj(**self.options)
            except TypeError as exc:
                msg = f"{self.label}: cannot build {self.function!r} with {self.options}: {exc}"
                raise ArrowSparseValueError(msg) from exc
            self._inner.base_dir = self.base_dir
            self.stateful = self._inner.stateful  # type: ignore[misc]
        elif callable(obj) and not isinstance(obj, type):
            self._func = obj
        else:
            msg = (f"{self.label}: {self.function!r} is neither a function table -> table "
                   f"nor a Step subclass, got {obj!r}")
            raise ArrowSparseTypeError(msg)

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        out = super().to_dict()
        if not self.options:
            del out["options"]
        return out

    # ------------------------------------------------------ delegation
    @property
    def opaque(self) -> bool:  # noqa: D102
        return self._inner is None

    @property
    def fitted(self) -> bool:  # noqa: D102
        return True if self._inner is None else self._inner.fitted

    def fit_batch(self, table: pa.Table) -> Any:  # noqa: D102
        return None if self._inner is None else self._inner.fit_batch(table)

    def merge_states(self, a: Any, b: Any) -> Any:  # noqa: D102
        return None if self._inner is None else self._inner.merge_states(a, b)

    def set_state(self, state: Any) -> None:  # noqa: D102
        if self._inner is not None:
            self._inner.set_state(state)

    def input_columns(self) -> list[str]:  # noqa: D102
        return [] if self._inner is None else self._inner.input_columns()

    def output_columns(self) -> list[str]:  # noqa: D102
        return [] if self._inner is None else self._inner.output_columns()

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        if self._inner is not None:
            self._inner.base_dir = self.base_dir
            return self._inner.transform(table)
        assert self._func is not None
        out = self._func(table, **self.options)
        if isinstance(out, pa.RecordBatch):
            out = pa.Table.from_batches([out])
        if not isinstance(out, pa.Table):
            msg = (f"{self.label}: {self.function!r} must return a pyarrow.Table, got "
                   f"{type(out).__name__}")
            raise ArrowSparseTypeError(msg)
        return out

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        if self._inner is not None:
            self._inner.base_dir = self.base_dir
            return self._inner.output_schema(schema)
        if self._schema_fn is not None:
            out = self._schema_fn(schema, **self.options)
            if not isinstance(out, pa.Schema):
                msg = (f"{self.label}: the output_schema of {self.function!r} must return "
                       f"a pyarrow.Schema, got {type(out).__name__}")
                raise ArrowSparseTypeError(msg)
            return out
        return self.transform(schema.empty_table()).schema
