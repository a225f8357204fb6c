"""A safe parser for filter expressions such as ``"label >= 0 and num_items > 0"``.

Grammar (no evaluation of Python code; every name is a column)::

    expr       := term ("or" term)*
    term       := factor ("and" factor)*
    factor     := "not" factor | "(" expr ")" | comparison
    comparison := NAME OP literal | NAME "is" ["not"] "null"
                | NAME ["not"] "in" "[" literal ("," literal)* "]"
    OP         := "==" | "!=" | "<" | "<=" | ">" | ">="
    literal    := integer | float | 'string' | "string" | true | false

The result is a ``pyarrow.compute.Expression``; a comparison with a null is null and
the row is dropped, as in SQL.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ArrowSparseValueError

__all__ = ["COMPARISONS", "comparison", "evaluate", "parse"]

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<str>'[^']*'|"[^"]*")
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,)
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*|`[^`]+`)
    )""", re.VERBOSE)

_KEYWORDS = {"and", "or", "not", "is", "null", "in", "true", "false"}


def comparison(column: str, op: str, value: Any) -> pc.Expression:
    """Build the expression ``field(column) OP value``.

    ``op`` is one of :data:`COMPARISONS`, ``"in"``, ``"not in"``, ``"is null"`` or
    ``"is not null"``.

    Examples
    --------
    >>> comparison("label", ">=", 0)
    <pyarrow.compute.Expression (label >= 0)>
    """
    field = pc.field(column)
    if op == "is null":
        return field.is_null()
    if op == "is not null":
        return field.is_valid()
    if op in ("in", "not in"):
        if not isinstance(value, (list, tuple)):
            msg = f"filter: op {op!r} needs a list value, got {value!r}"
            raise ArrowSparseValueError(msg)
        expr = field.isin(pa.array(list(value)))
        return ~expr if op == "not in" else expr
    ops = {"==": field.__eq__, "!=": field.__ne__, "<": field.__lt__,
           "<=": field.__le__, ">": field.__gt__, ">=": field.__ge__}
    if op not in ops:
        choices = ", ".join(repr(o) for o in (*COMPARISONS, "in", "not in", "is null",
                                              "is not null"))
        msg = f"filter: unknown op {op!r}; expected one of {choices}"
        raise ArrowSparseValueError(msg)
    if isinstance(value, (list, tuple, dict)) or value is None:
        msg = f"filter: op {op!r} needs a number, string or boolean value, got {value!r}"
        raise ArrowSparseValueError(msg)
    return ops[op](value)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            msg = f"filter: cannot parse {text!r} at position {pos}: {text[pos:]!r}"
            raise ArrowSparseValueError(msg)
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "name" and value.lower() in _KEYWORDS:
            kind, value = "kw", value.lower()
        out.append((kind, value))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.columns: list[str] = []

    def fail(self, what: str) -> ArrowSparseValueError:
        got = self.toks[self.i][1] if self.i < len(self.toks) else "end of expression"
        msg = f"filter: cannot parse {self.text!r}: expected {what}, got {got!r}"
        return ArrowSparseValueError(msg)

    def peek(self, kind: str, value: str | None = None) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v = self.toks[self.i]
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value: str | None = None, what: str = "") -> str:
        if not self.peek(kind, value):
            err = self.fail(what or value or kind)
            raise err
        self.i += 1
        return self.toks[self.i - 1][1]

    def parse(self) -> pc.Expression:
        expr = self.expr()
        if self.i != len(self.toks):
            err = self.fail("'and', 'or' or the end")
            raise err
        return expr

    def expr(self) -> pc.Expression:
        out = self.term()
        while self.peek("kw", "or"):
            self.i += 1
            out = out | self.term()
        return out

    def term(self) -> pc.Expression:
        out = self.factor()
        while self.peek("kw", "and"):
            self.i += 1
            out = out & self.factor()
        return out

    def factor(self) -> pc.Expression:
        if self.peek("kw", "not"):
            self.i += 1
            return ~self.factor()
        if self.peek("op", "("):
            self.i += 1
            out = self.expr()
            self.take("op", ")")
            return out
        name = self.take("name", what="a column name").strip("`")
        self.columns.append(name)
        if self.peek("kw", "is"):
            self.i += 1
            negate = self.peek("kw", "not")
            self.i += negate
            self.take("kw", "null")
            return comparison(name, "is not null" if negate else "is null", None)
        negate = self.peek("kw", "not")
        self.i += negate
        if self.peek("kw", "in"):
            self.i += 1
            self.take("op", "[")
            items = [self.literal()]
            while self.peek("op", ","):
                self.i += 1
                items.append(self.literal())
            self.take("op", "]")
            return comparison(name, "not in" if negate else "in", items)
        if negate:
            err = self.fail("'in'")
            raise err
        if self.i < len(self.toks) and self.toks[self.i][1] in COMPARISONS:
            op = self.toks[self.i][1]
            self.i += 1
            return comparison(name, op, self.literal())
        err = self.fail("a comparison (==, !=, <, <=, >, >=, in, is null)")
        raise err

    def literal(self) -> Any:
        if self.peek("num"):
            text = self.take("num")
            return float(text) if any(c in text for c in ".eE") else int(text)
        if self.peek("str"):
            return self.take("str")[1:-1]
        if self.peek("kw", "true") or self.peek("kw", "false"):
            return self.take("kw") == "true"
        err = self.fail("a number, a quoted string, true or false")
        raise err


def parse(text: str) -> tuple[pc.Expression, list[str]]:
    """Parse a filter expression into a compute expression and the columns it reads.

    Parameters
    ----------
    text
        The expression (grammar in the module docstring).

    Returns
    -------
    tuple of (pyarrow.compute.Expression, list of str)

    Raises
    ------
    ValueError
        Bad syntax, an unknown operator or a bad literal.

    Examples
    --------
    >>> expr, cols = parse("label >= 1 and not (user_id in [3, 4])")
    >>> cols
    ['label', 'user_id']
    >>> t = pa.table({"label": [0, 1, 1, None], "user_id": [1, 2, 3, 4]})
    >>> t.filter(expr)["user_id"].to_pylist()
    [2]
    """
    if not isinstance(text, str) or not text.strip():
        msg = f"filter: expr must be a non-empty string, got {text!r}"
        raise ArrowSparseValueError(msg)
    p = _Parser(text)
    return p.parse(), p.columns


def evaluate(expression: pc.Expression, table: pa.Table,
             columns: list[str]) -> pa.ChunkedArray:
    """Evaluate ``expression`` over the ``columns`` of ``table`` it refers to.

    Only those columns are scanned (the list columns of a wide table are not
    touched); the result is the boolean column a filter keeps rows by.

    Examples
    --------
    >>> expr, cols = parse("a > 1")
    >>> evaluate(expr, pa.table({"a": [1, 2], "b": [[1], [2]]}), cols).to_pylist()
    [False, True]
    """
    import pyarrow.dataset as ds

    source = ds.dataset(table.select(columns))
    return source.to_table(columns={"keep": expression}).column("keep")
