"""Read and write the small TOML subset of pipeline specs.

Reading uses :mod:`tomllib` (Python 3.11+) or the ``tomli`` backport. Writing is
done here: a spec is a ``[pipeline]`` table of scalars and an array of ``[[steps]]``
tables whose values are scalars, lists of scalars, or one level of inline tables.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from ..errors import ArrowSparseTypeError, ArrowSparseValueError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["dumps", "loads"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def loads(text: str, source: str = "<string>") -> dict[str, Any]:
    r"""Parse TOML text, raising a ValueError that names the source on bad syntax.

    Parameters
    ----------
    text
        The TOML document.
    source
        Where the text came from, for the error message.

    Returns
    -------
    dict
        The parsed document.

    Examples
    --------
    >>> loads('a = 1\n[b]\nc = "x"')
    {'a': 1, 'b': {'c': 'x'}}
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = f"{source}: invalid TOML: {exc}"
        raise ArrowSparseValueError(msg) from exc


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, where) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x, where)}"
                               for k, x in v.items()) + "}"
    msg = f"cannot write {type(v).__name__} value {v!r} of {where} as TOML"
    raise ArrowSparseTypeError(msg)


def dumps(doc: dict[str, Any]) -> str:
    """Write a spec document (top-level tables and arrays of tables) as TOML.

    Parameters
    ----------
    doc
        ``{name: scalar}``, ``{name: {key: value}}`` (a table) or
        ``{name: [{key: value}, ...]}`` (an array of tables); ``None`` values are
        left out.

    Returns
    -------
    str
        TOML text that :func:`loads` parses back to ``doc`` (without the Nones).

    Examples
    --------
    >>> text = dumps({"pipeline": {"input": "a.parquet"},
    ...               "steps": [{"type": "select", "columns": ["x", "y"]}]})
    >>> print(text)
    [pipeline]
    input = "a.parquet"
    <BLANKLINE>
    [[steps]]
    type = "select"
    columns = ["x", "y"]
    <BLANKLINE>
    >>> loads(text)["steps"][0]["columns"]
    ['x', 'y']
    """
    scalars: list[str] = []
    blocks: list[str] = []
    for name, value in doc.items():
        if value is None:
            continue
        if isinstance(value, dict):
            lines = [f"[{_key(name)}]"]
            lines += [f"{_key(k)} = {_value(v, name)}" for k, v in value.items()
                      if v is not None]
            blocks.append("\n".join(lines) + "\n")
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for item in value:
                lines = [f"[[{_key(name)}]]"]
                lines += [f"{_key(k)} = {_value(v, name)}" for k, v in item.items()
                          if v is not None]
                blocks.append("\n".join(lines) + "\n")
        else:
            scalars.append(f"{_key(name)} = {_value(value, name)}\n")
    head = "".join(scalars)
    return head + ("\n" if head and blocks else "") + "\n".join(blocks)
