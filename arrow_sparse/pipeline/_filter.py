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

Limits: an expression is at most :data:`MAX_LENGTH` characters, holds at most
:data:`MAX_TERMS` comparisons, nests at most :data:`MAX_DEPTH` levels of parentheses
and ``not``, and a number literal has at most :data:`MAX_NUMBER_LENGTH` characters
(an integer must fit int64). Chains of ``and`` / ``or`` become balanced trees, so
``a and b and c and ...`` is ``log2(terms)`` deep rather than ``terms`` deep. Beyond
the limits pyarrow's evaluation recurses past the C stack (a crash near 9,000 terms),
so they are refused with a short message that quotes only an excerpt.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ArrowSparseValueError

__all__ = ["COMPARISONS", "MAX_DEPTH", "MAX_LENGTH", "MAX_NUMBER_LENGTH", "MAX_TERMS",
           "comparison", "evaluate", "excerpt", "parse"]

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")

#: Most characters in one expression.
MAX_LENGTH = 100_000
#: Most comparisons in one expression (use ``col in [...]`` for long lists of values).
MAX_TERMS = 1_000
#: Most levels of parentheses and ``not`` around one comparison.
MAX_DEPTH = 100
#: Most characters in one number literal.
MAX_NUMBER_LENGTH = 100

_EXCERPT = 40

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
            msg = f"filter: op {op!r} needs a list value, got {_short(value)}"
            raise ArrowSparseValueError(msg)
        try:
            expr = field.isin(pa.array(list(value)))
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            msg = f"filter: op {op!r} needs a list of values of one type, got {_short(value)}"
            raise ArrowSparseValueError(msg) from exc
        return ~expr if op == "not in" else expr
    ops = {"==": field.__eq__, "!=": field.__ne__, "<": field.__lt__,
           "<=": field.__le__, ">": field.__gt__, ">=": field.__ge__}
    if op not in ops:
        choices = ", ".join(repr(o) for o in (*COMPARISONS, "in", "not in", "is null",
                                              "is not null"))
        msg = f"filter: unknown op {_short(op)}; expected one of {choices}"
        raise ArrowSparseValueError(msg)
    if isinstance(value, (list, tuple, dict)) or value is None:
        msg = f"filter: op {op!r} needs a number, string or boolean value, got {_short(value)}"
        raise ArrowSparseValueError(msg)
    try:
        return ops[op](value)  # type: ignore[no-any-return]
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        msg = f"filter: value {_short(value)} cannot be compared (outside the int64 range?)"
        raise ArrowSparseValueError(msg) from exc


def _short(value: Any) -> str:
    """``repr(value)``, cut to a short excerpt."""
    text = repr(value)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def excerpt(text: str, pos: int = 0) -> str:
    """Quote at most a short piece of ``text`` around ``pos`` (for error messages).

    Examples
    --------
    >>> excerpt("label > 0 and " * 10, 28)
    "'...0 and label > 0 and label > 0 and label ...'"
    >>> excerpt("label >", 7)
    "'label >'"
    """
    lo = max(0, min(pos, len(text)) - _EXCERPT // 2)
    hi = min(len(text), lo + _EXCERPT)
    lo = max(0, hi - _EXCERPT)
    return "'" + ("..." if lo else "") + text[lo:hi] + ("..." if hi < len(text) else "") + "'"


def _tokens(where: str, text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            pos = len(text) - len(text[pos:].lstrip())
            msg = f"{where}: cannot parse expr at position {pos}: {excerpt(text, pos)}"
            raise ArrowSparseValueError(msg)
        kind = m.lastgroup or ""
        value, start = m.group(kind), m.start(kind)
        if kind == "name" and value.lower() in _KEYWORDS:
            kind, value = "kw", value.lower()
        out.append((kind, value, start))
        pos = m.end()
    return out


def _balanced(op: Any, items: list[pc.Expression]) -> pc.Expression:
    """Join ``items`` with ``op`` as a balanced tree (``and`` / ``or`` are associative)."""
    while len(items) > 1:
        items = [op(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


class _Parser:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.toks = _tokens(where, text)
        self.i = 0
        self.depth = 0
        self.terms = 0
        self.columns: list[str] = []

    def position(self) -> int:
        return self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)

    def fail(self, what: str) -> ArrowSparseValueError:
        got = self.toks[self.i][1] if self.i < len(self.toks) else "end of expression"
        if len(got) > _EXCERPT:
            got = got[:_EXCERPT] + "..."
        pos = self.position()
        msg = (f"{self.where}: cannot parse expr at position {pos}: expected {what}, "
               f"got {got!r} in {excerpt(self.text, pos)}")
        return ArrowSparseValueError(msg)

    def limit(self, problem: str) -> ArrowSparseValueError:
        pos = self.position()
        msg = f"{self.where}: expr {problem} (at position {pos}: {excerpt(self.text, pos)})"
        return ArrowSparseValueError(msg)

    def peek(self, kind: str, value: str | None = None) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v, _ = self.toks[self.i]
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
        items = [self.term()]
        while self.peek("kw", "or"):
            self.i += 1
            items.append(self.term())
        return _balanced(pc.Expression.__or__, items)

    def term(self) -> pc.Expression:
        items = [self.factor()]
        while self.peek("kw", "and"):
            self.i += 1
            items.append(self.factor())
        return _balanced(pc.Expression.__and__, items)

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            err = self.limit(f"nests deeper than {MAX_DEPTH} levels of parentheses and 'not'")
            raise err

    def factor(self) -> pc.Expression:
        if self.peek("kw", "not"):
            self.i += 1
            self.nest()
            out = ~self.factor()
            self.depth -= 1
            return out
        if self.peek("op", "("):
            self.i += 1
            self.nest()
            out = self.expr()
            self.take("op", ")")
            self.depth -= 1
            return out
        self.terms += 1
        if self.terms > MAX_TERMS:
            err = self.limit(f"has more than {MAX_TERMS:,} comparisons; "
                             "use 'col in [...]' for a long list of values")
            raise err
        name = self.take("name", what="a column name").strip("`")
        if name not in self.columns:
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
            if len(self.toks[self.i][1]) > MAX_NUMBER_LENGTH:
                err = self.limit(f"has a number longer than {MAX_NUMBER_LENGTH} characters")
                raise err
            text = self.take("num")
            if any(c in text for c in ".eE"):
                return float(text)
            value = int(text)
            if not _INT64_MIN <= value <= _INT64_MAX:
                self.i -= 1
                err = self.limit(f"has an integer outside the int64 range: {text}")
                raise err
            return value
        if self.peek("str"):
            return self.take("str")[1:-1]
        if self.peek("kw", "true") or self.peek("kw", "false"):
            return self.take("kw") == "true"
        err = self.fail("a number, a quoted string, true or false")
        raise err


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse(text: str, where: str = "filter") -> tuple[pc.Expression, list[str]]:
    """Parse a filter expression into a compute expression and the columns it reads.

    Parameters
    ----------
    text
        The expression (grammar in the module docstring).
    where
        What errors start with (a step passes its label, ``"step 'keep' (filter)"``).

    Returns
    -------
    tuple of (pyarrow.compute.Expression, list of str)
        The expression, and each column it reads once, in order of first use.

    Raises
    ------
    ValueError
        Bad syntax, an unknown operator or a bad literal; an expression beyond the
        limits (module docstring). The message quotes at most a short excerpt.

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
        shown = excerpt(text) if isinstance(text, str) else repr(text)[:_EXCERPT]
        msg = f"{where}: expr must be a non-empty string, got {shown}"
        raise ArrowSparseValueError(msg)
    if len(text) > MAX_LENGTH:
        msg = (f"{where}: expr is {len(text):,} characters long; at most {MAX_LENGTH:,} "
               f"are allowed (starts {excerpt(text)})")
        raise ArrowSparseValueError(msg)
    p = _Parser(text, where)
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
