"""A safe parser for filter expressions such as ``"label >= 0 and len(item_ids) > 3"``.

Grammar (no evaluation of Python code; a bare name is a column)::

    condition  := disjunct ("or" disjunct)*
    disjunct   := negation ("and" negation)*
    negation   := "not" negation | predicate
    predicate  := value OP value
                | value "is" ["not"] "null"
                | value ["not"] "in" ("[" | "(") literal ("," literal)* ("]" | ")")
                | value ["not"] "between" value "and" value
                | "contains" "(" value "," value ")"
                | "(" condition ")" | "true" | "false"
    value      := term (("+" | "-") term)*
    term       := unary (("*" | "/") unary)*
    unary      := ("-" | "+") unary | primary
    primary    := NAME | `quoted name` | literal | "len" "(" value ")" | "(" value ")"
    OP         := "==" | "!=" | "<" | "<=" | ">" | ">="
    literal    := ["-"] integer | ["-"] float | 'string' | "string" | true | false | null

Keywords and function names are case-insensitive; a column named like one is
written in backquotes (`` `len` ``).

Types are checked against the input schema before any row is read
(:meth:`Predicate.compile`): numbers compare with numbers, strings with strings,
booleans with booleans; arithmetic takes numbers; ``len`` takes a list or a string;
``contains(list, x)`` takes a list and a value of its element kind.

Nulls follow SQL's three-valued logic, as DuckDB and Polars do:

- a comparison, arithmetic or ``len`` with a null operand is null;
- ``not null`` is null; ``false and null`` is false, ``true or null`` is true, and
  the other ``and`` / ``or`` with a null are null;
- ``x in [...]`` is true when ``x`` equals a listed value, else null when ``x`` is
  null or the list holds ``null``, else false; ``not in`` is its negation, so
  ``label not in [0]`` is null, not true, for a null label;
- ``x between a and b`` is ``x >= a and x <= b``;
- ``contains(list, x)`` is null for a null list or a null ``x``, true when an
  element equals ``x``, else false (null elements are skipped);
- ``is null`` / ``is not null`` are never null;
- the filter keeps the rows where the condition is true: false and null drop.

Arithmetic computes integers as int64 (overflow is an error) and anything with a
float as float64; ``/`` always divides as float64, so ``x / 0`` is ``inf``, ``-inf``
or NaN (as in DuckDB and Polars). NaN compares as IEEE floats do: unequal to
everything, itself included, and neither above nor below a number (DuckDB and Polars
order NaN above every number instead).

The compiled form is a ``pyarrow.compute.Expression``: the same expression filters
batches and, given to :func:`arrow_sparse.io.read_parquet` as ``filter``, skips the
row groups whose statistics rule it out.

Limits: an expression is at most :data:`MAX_LENGTH` characters, holds at most
:data:`MAX_TERMS` comparisons, nests at most :data:`MAX_DEPTH` levels of
parentheses, ``not``, signs and function calls, chains at most :data:`MAX_DEPTH`
arithmetic operators, and a number literal has at most :data:`MAX_NUMBER_LENGTH`
characters (an integer must fit int64). Chains of ``and`` / ``or`` become balanced
trees, so ``a and b and c and ...`` is ``log2(terms)`` deep rather than ``terms``
deep. Beyond the limits pyarrow's evaluation recurses past the C stack (a crash near
9,000 terms), so they are refused with a short message that quotes only an excerpt.
"""

from __future__ import annotations

import difflib
import re
import threading
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError

__all__ = ["COMPARISONS", "FUNCTIONS", "MAX_DEPTH", "MAX_LENGTH", "MAX_NUMBER_LENGTH",
           "MAX_TERMS", "Predicate", "comparison", "did_you_mean", "evaluate", "excerpt",
           "parse"]

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
#: The functions an expression may call.
FUNCTIONS = ("len", "contains")

#: Most characters in one expression.
MAX_LENGTH = 100_000
#: Most comparisons in one expression (use ``col in [...]`` for long lists of values).
MAX_TERMS = 1_000
#: Most levels of parentheses, ``not``, signs and calls around one comparison; also the
#: longest chain of arithmetic operators.
MAX_DEPTH = 100
#: Most characters in one number literal.
MAX_NUMBER_LENGTH = 100

#: ``x in [...]`` with at most this many values compiles to ``x == a or x == b ...``
#: (which row-group statistics can rule out); longer lists use one ``is_in`` lookup.
_IN_AS_EQUALITIES = 16

_EXCERPT = 40

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<str>'[^']*'|"[^"]*")
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|\+|-|\*|/)
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*|`[^`]+`)
    )""", re.VERBOSE)

_KEYWORDS = {"and", "or", "not", "is", "null", "in", "between", "true", "false"}
_ARITH = ("+", "-", "*", "/")


class Node(NamedTuple):
    """One node of a parsed expression.

    ``kind`` is ``col``, ``lit``, ``arith``, ``neg``, ``len``, ``contains``, ``cmp``,
    ``in``, ``between``, ``isnull``, ``not``, ``and`` or ``or``; ``args`` its operands;
    ``pos`` where it starts in the text (for messages); ``depth`` the longest chain of
    arithmetic operators below it.
    """

    kind: str
    args: tuple[Any, ...]
    pos: int = 0
    depth: int = 0


_CONDITIONS = {"cmp", "in", "between", "isnull", "not", "and", "or", "contains"}


def _is_condition(node: Node) -> bool:
    return node.kind in _CONDITIONS or (node.kind == "lit" and isinstance(node.args[0], bool))


def did_you_mean(name: str, choices: Any) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest of ``choices``, or ``""``.

    Examples
    --------
    >>> did_you_mean("item_id", ["user_id", "item_ids", "label"])
    "; did you mean 'item_ids'?"
    >>> did_you_mean("zzz", ["user_id"])
    ''
    """
    found = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


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
            hint = "; compare with '=='" if text.startswith("=", pos) else ""
            msg = f"{where}: cannot parse expr at position {pos}: {excerpt(text, pos)}{hint}"
            raise ArrowSparseValueError(msg)
        kind = m.lastgroup or ""
        value, start = m.group(kind), m.start(kind)
        if kind == "name" and value.lower() in _KEYWORDS:
            kind, value = "kw", value.lower()
        out.append((kind, value, start))
        pos = m.end()
    return out


def _balanced(kind: str, items: list[Node]) -> Node:
    """Join ``items`` with ``and`` / ``or`` as a balanced tree (they are associative)."""
    while len(items) > 1:
        items = [Node(kind, (items[i], items[i + 1]), items[i].pos)
                 if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


_CONDITION_OPS = "a comparison (==, !=, <, <=, >, >=, in, between, is null)"
#: Binding strength of the infix operators (higher binds tighter); ``not`` is 3.
_PREC = {"or": 1, "and": 2, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6}


class _Parser:
    """Precedence climbing over the tokens: about three Python frames per nesting level."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.toks = _tokens(where, text)
        self.i = 0
        self.depth = 0
        self.terms = 0
        self.columns: list[str] = []

    # ------------------------------------------------------------- helpers
    def position(self) -> int:
        return self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)

    def got(self) -> str:
        got = self.toks[self.i][1] if self.i < len(self.toks) else "end of expression"
        return got[:_EXCERPT] + "..." if len(got) > _EXCERPT else got

    def fail(self, what: str) -> ArrowSparseValueError:
        pos = self.position()
        msg = (f"{self.where}: cannot parse expr at position {pos}: expected {what}, "
               f"got {self.got()!r} in {excerpt(self.text, pos)}")
        return ArrowSparseValueError(msg)

    def limit(self, problem: str, pos: int | None = None) -> ArrowSparseValueError:
        pos = self.position() if pos is None else pos
        msg = f"{self.where}: expr {problem} (at position {pos}: {excerpt(self.text, pos)})"
        return ArrowSparseValueError(msg)

    def peek(self, kind: str, value: str | None = None, ahead: int = 0) -> bool:
        if self.i + ahead >= len(self.toks):
            return False
        k, v, _ = self.toks[self.i + ahead]
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value: str | None = None, what: str = "") -> str:
        if not self.peek(kind, value):
            err = self.fail(what or repr(value or kind))
            raise err
        self.i += 1
        return self.toks[self.i - 1][1]

    def nest(self, levels: int = 1) -> None:
        if self.depth + levels > MAX_DEPTH:
            err = self.limit(f"nests deeper than {MAX_DEPTH} levels of parentheses, 'not', "
                             "signs, calls and operators")
            raise err
        self.depth += levels

    def count_term(self) -> None:
        self.terms += 1
        if self.terms > MAX_TERMS:
            err = self.limit(f"has more than {MAX_TERMS:,} comparisons; "
                             "use 'col in [...]' for a long list of values")
            raise err

    def need_condition(self, node: Node) -> Node:
        if not _is_condition(node):
            err = self.fail(_CONDITION_OPS)
            raise err
        return node

    def need_value(self, node: Node, where: str) -> Node:
        if _is_condition(node) and node.kind != "lit":
            err = self.limit(f"uses a condition as a value {where}", node.pos)
            raise err
        return node

    def infix(self) -> str | None:
        """Return the infix operator at the current token (``"cmp"`` for any comparison)."""
        if self.i >= len(self.toks):
            return None
        kind, value, _ = self.toks[self.i]
        if kind == "op" and value in _ARITH:
            return value
        if kind == "op" and value in COMPARISONS:
            return "cmp"
        if kind == "kw" and value in ("and", "or"):
            return value
        if kind == "kw" and (value in ("is", "in", "between") or value == "not" and (
                self.peek("kw", "in", 1) or self.peek("kw", "between", 1))):
            return "cmp"
        return None

    # ---------------------------------------------------------------- parse
    def parse(self) -> Node:
        node = self.expr(1)
        if self.i != len(self.toks):
            err = self.fail("'and', 'or' or the end" if _is_condition(node) else
                            f"{_CONDITION_OPS} or an operator")
            raise err
        return node

    def expr(self, min_prec: int) -> Node:
        left = self.prefix()
        while True:
            op = self.infix()
            if op is None or _PREC[op] < min_prec:
                return left
            if op in ("and", "or"):
                items = [self.need_condition(left)]
                while self.peek("kw", op):
                    self.i += 1
                    items.append(self.need_condition(self.expr(_PREC[op] + 1)))
                left = _balanced(op, items)
            elif op == "cmp":
                if _is_condition(left) and left.kind != "lit":
                    err = self.fail("'and', 'or' or the end (comparisons do not chain)")
                    raise err
                left = self.comparison(left)
            else:
                left = self.arith(left, op)

    def arith(self, left: Node, op: str) -> Node:
        pos = self.position()
        self.i += 1
        right = self.expr(_PREC[op] + 1)
        self.need_value(left, f"around {op!r}")
        self.need_value(right, f"around {op!r}")
        depth = max(left.depth, right.depth) + 1
        if self.depth + depth > MAX_DEPTH:
            err = self.limit(f"nests deeper than {MAX_DEPTH} levels of parentheses, 'not', "
                             "signs, calls and operators", pos)
            raise err
        return Node("arith", (op, left, right), left.pos, depth)

    def operand(self) -> Node:
        """Parse a value on the right of a comparison: arithmetic, no comparison."""
        return self.need_value(self.expr(_PREC["+"]), "in a comparison")

    def comparison(self, left: Node) -> Node:
        pos = left.pos
        self.count_term()
        if self.peek("kw", "is"):
            self.i += 1
            negate = self.peek("kw", "not")
            self.i += negate
            self.take("kw", "null", "'null'")
            return Node("isnull", (left, negate), pos, left.depth)
        negate = self.peek("kw", "not")
        self.i += negate
        if self.peek("kw", "in"):
            self.i += 1
            close = {"[": "]", "(": ")"}
            if not (self.peek("op", "[") or self.peek("op", "(")):
                err = self.fail("'[' or '('")
                raise err
            end = close[self.take("op")]
            items = [self.literal()]
            while self.peek("op", ","):
                self.i += 1
                items.append(self.literal())
            self.take("op", end, f"',' or {end!r}")
            return Node("in", (left, tuple(items), negate), pos, left.depth)
        if self.peek("kw", "between"):
            self.i += 1
            lo = self.operand()
            self.take("kw", "and", "'and'")
            hi = self.operand()
            return Node("between", (left, lo, hi, negate), pos,
                        max(left.depth, lo.depth, hi.depth))
        op = self.take("op")
        right = self.operand()
        return Node("cmp", (op, left, right), pos, max(left.depth, right.depth))

    def prefix(self) -> Node:
        pos = self.position()
        if self.peek("kw", "not"):
            self.i += 1
            self.nest()
            inner = self.need_condition(self.expr(3))
            self.depth -= 1
            return Node("not", (inner,), pos, inner.depth + 1)
        if self.peek("op", "-") or self.peek("op", "+"):
            if self.peek("num", None, 1):
                return Node("lit", (self.literal(),), pos)
            sign = self.take("op")
            self.nest()
            inner = self.need_value(self.prefix(), f"after {sign!r}")
            self.depth -= 1
            return inner if sign == "+" else Node("neg", (inner,), pos, inner.depth + 1)
        if self.peek("op", "("):
            self.i += 1
            self.nest()
            inner = self.expr(1)
            if not self.peek("op", ")"):
                err = self.fail("'and', 'or' or ')'" if _is_condition(inner) else
                                f"{_CONDITION_OPS}, an operator or ')'")
                raise err
            self.i += 1
            self.depth -= 1
            return inner
        if self.peek("name") and self.peek("op", "(", 1):
            return self.call()
        if self.peek("name"):
            name = self.take("name").strip("`")
            if name not in self.columns:
                self.columns.append(name)
            return Node("col", (name,), pos)
        if self.peek("num") or self.peek("str") or self.peek("kw", "true") \
                or self.peek("kw", "false") or self.peek("kw", "null"):
            return Node("lit", (self.literal(),), pos)
        err = self.fail("a number, a quoted string, a column name, true, false, null or '('")
        raise err

    def call(self) -> Node:
        pos = self.position()
        name = self.take("name")
        func = name.lower()
        if func not in FUNCTIONS:
            err = self.limit(f"calls an unknown function {name[:_EXCERPT]!r}; the functions "
                             f"are {', '.join(FUNCTIONS)}{did_you_mean(func, FUNCTIONS)}", pos)
            raise err
        self.take("op", "(")
        self.nest()
        args = [self.operand()]
        while self.peek("op", ","):
            self.i += 1
            args.append(self.operand())
        self.take("op", ")", "')' or ','")
        self.depth -= 1
        want = 1 if func == "len" else 2
        if len(args) != want:
            err = self.limit(f"calls {func}() with {len(args)} argument(s); it takes {want}",
                             pos)
            raise err
        if func == "contains":
            self.count_term()
        return Node(func, tuple(args), pos, max(a.depth for a in args) + 1)

    def literal(self) -> Any:
        sign = ""
        if (self.peek("op", "-") or self.peek("op", "+")) and self.peek("num", None, 1):
            sign = self.take("op")
        if self.peek("num"):
            if len(self.toks[self.i][1]) > MAX_NUMBER_LENGTH:
                err = self.limit(f"has a number longer than {MAX_NUMBER_LENGTH} characters")
                raise err
            text = sign + self.take("num")
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
        if self.peek("kw", "null"):
            self.i += 1
            return None
        err = self.fail("a number, a quoted string, true, false or null")
        raise err


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# ================================================================== compile
def _kind(t: pa.DataType) -> str:
    """Return the kind of an Arrow type's values, as the type checks see it."""
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) \
            or pa.types.is_fixed_size_binary(t):
        return "binary"
    if _is_list(t):
        return "list"
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    if pa.types.is_temporal(t):
        return f"temporal {t}"
    return f"other {t}"


def _is_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


_NUMERIC = ("int", "float", "decimal")
_DESCRIBE = {"int": "an integer", "float": "a float", "decimal": "a decimal",
             "string": "a string", "binary": "a binary value", "bool": "a boolean",
             "list": "a list", "null": "null"}


def _comparable(a: str, b: str) -> bool:
    if "null" in (a, b):
        return True
    if a in _NUMERIC and b in _NUMERIC:
        return a != "decimal" or b != "float"  # pyarrow compares decimals with ints only
    return a == b and a != "list"


class _Typed(NamedTuple):
    expr: pc.Expression
    kind: str
    type: pa.DataType


_CONTAINS_LOCK = threading.Lock()
_CONTAINS_NAMES: dict[tuple[str, str], str] = {}


def _contains_kernel(ctx: Any, lists: Any, value: Any) -> pa.Array:
    """``contains``: true where a row holds ``value``, null for a null row or value."""
    if isinstance(lists, pa.Scalar):
        lists = pa.array([lists.as_py()], lists.type)
    n = len(lists) if isinstance(value, pa.Scalar) else max(len(lists), len(value))
    if len(lists) != n:
        lists = pa.array([lists[0].as_py()] * n, lists.type)
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy()
    if isinstance(value, pa.Scalar):
        if not value.is_valid:
            return pa.nulls(n, pa.bool_())
        target: Any = value
        value_null = None
    else:
        target = pc.take(value, pa.array(parents))
        value_null = value.is_null().to_numpy(zero_copy_only=False)
    hit = pc.fill_null(pc.equal(flat, target), False).to_numpy(zero_copy_only=False)
    out = np.zeros(n, dtype=bool)
    out[parents[hit]] = True
    mask = lists.is_null().to_numpy(zero_copy_only=False)
    if value_null is not None:
        mask = mask | value_null
    return pa.array(out, mask=mask if mask.any() else None)


def _contains_function(list_type: pa.DataType, value_type: pa.DataType) -> str:
    """Register (once per process and pair of types) the ``contains`` compute function."""
    key = (str(list_type), str(value_type))
    with _CONTAINS_LOCK:
        name = _CONTAINS_NAMES.get(key)
        if name is None:
            name = f"arrow_sparse_contains_{len(_CONTAINS_NAMES)}"
            while True:
                try:
                    pc.get_function(name)
                except pa.ArrowKeyError:
                    break
                name += "_"
            doc = {"summary": "Whether each list holds a value",
                   "description": "Null for a null list or value; null elements skipped."}
            pc.register_scalar_function(_contains_kernel, name, doc,
                                        {"lists": list_type, "value": value_type},
                                        pa.bool_())
            _CONTAINS_NAMES[key] = name
    return name


class _Compiler:
    def __init__(self, text: str, where: str, schema: pa.Schema) -> None:
        self.text = text
        self.where = where
        self.schema = schema

    def error(self, node: Node, problem: str, cls: type = ArrowSparseTypeError) -> Exception:
        return cls(f"{self.where}: {problem} (at position {node.pos}: "
                   f"{excerpt(self.text, node.pos)})")

    def describe(self, node: Node, typed: _Typed) -> str:
        if node.kind == "col":
            return f"column {node.args[0]!r} ({typed.type})"
        if node.kind == "lit":
            return f"{_DESCRIBE.get(typed.kind, typed.kind)} {_short(node.args[0])}"
        return f"{_DESCRIBE.get(typed.kind, typed.kind)} ({typed.type})"

    def condition(self, node: Node) -> pc.Expression:
        typed = self.compile(node)
        if typed.kind not in ("bool", "null"):
            err = self.error(node, f"the condition is {self.describe(node, typed)}, "
                                   "not true or false")
            raise err
        return typed.expr

    def compile(self, node: Node) -> _Typed:
        return getattr(self, "_" + node.kind)(node)

    # ---------------------------------------------------------------- values
    def _col(self, node: Node) -> _Typed:
        name = node.args[0]
        idx = self.schema.get_field_index(name)
        if idx < 0:
            names = ", ".join(self.schema.names)
            msg = (f"{self.where}: no column {name!r}{did_you_mean(name, self.schema.names)} "
                   f"the columns are: {names}")
            msg = msg.replace("? the", "? The") if "did you mean" in msg else \
                msg.replace(" the columns", "; the columns")
            raise ArrowSparseKeyError(msg)
        t = self.schema.field(idx).type
        return _Typed(pc.field(name), _kind(t), t)

    def _lit(self, node: Node) -> _Typed:
        value = node.args[0]
        if value is None:
            return _Typed(pc.scalar(pa.scalar(None, pa.null())), "null", pa.null())
        s = pa.scalar(value)
        return _Typed(pc.scalar(s), _kind(s.type), s.type)

    def _number(self, node: Node, op: str) -> _Typed:
        typed = self.compile(node)
        if typed.kind not in ("int", "float", "null"):
            err = self.error(node, f"{op!r} takes numbers, got {self.describe(node, typed)}")
            raise err
        return typed

    def _cast(self, node: Node, typed: _Typed, t: pa.DataType) -> pc.Expression:
        if typed.type == t:
            return typed.expr
        if node.kind == "lit":
            return pc.scalar(pa.scalar(node.args[0], t))
        return typed.expr.cast(t)

    def _arith(self, node: Node) -> _Typed:
        op, a, b = node.args
        ta, tb = self._number(a, op), self._number(b, op)
        kinds = {ta.kind, tb.kind}
        t = pa.float64() if op == "/" or "float" in kinds else pa.int64()
        ea, eb = self._cast(a, ta, t), self._cast(b, tb, t)
        if op == "/":
            out = pc.divide(ea, eb)
        else:
            func = {"+": pc.add_checked, "-": pc.subtract_checked,
                    "*": pc.multiply_checked}[op]
            out = func(ea, eb)
        return _Typed(out, "float" if t == pa.float64() else "int", t)

    def _neg(self, node: Node) -> _Typed:
        (inner,) = node.args
        typed = self._number(inner, "-")
        t = pa.float64() if typed.kind == "float" else pa.int64()
        return _Typed(pc.negate_checked(self._cast(inner, typed, t)), _kind(t), t)

    def _len(self, node: Node) -> _Typed:
        (inner,) = node.args
        typed = self.compile(inner)
        if typed.kind == "list":
            if pa.types.is_fixed_size_list(typed.type):
                size = pc.scalar(pa.scalar(typed.type.list_size, pa.int32()))
                expr = pc.if_else(typed.expr.is_valid(), size, pc.scalar(pa.scalar(None,
                                                                                   pa.int32())))
            else:
                expr = pc.list_value_length(typed.expr)
        elif typed.kind == "string":
            expr = pc.utf8_length(typed.expr)
        elif typed.kind == "binary":
            expr = pc.binary_length(typed.expr)
        elif typed.kind == "null":
            expr = pc.scalar(pa.scalar(None, pa.int64()))
        else:
            err = self.error(node, f"len() takes a list or a string, got "
                                   f"{self.describe(inner, typed)}")
            raise err
        return _Typed(expr, "int", pa.int64())

    # ------------------------------------------------------------ conditions
    def _cmp(self, node: Node) -> _Typed:
        op, a, b = node.args
        ta, tb = self.compile(a), self.compile(b)
        if not _comparable(ta.kind, tb.kind):
            hint = "; use len() or contains() on lists" if "list" in (ta.kind, tb.kind) \
                else ""
            err = self.error(node, f"cannot compare {self.describe(a, ta)} with "
                                   f"{self.describe(b, tb)}{hint}")
            raise err
        func = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
                ">": pc.greater, ">=": pc.greater_equal}[op]
        return _Typed(func(ta.expr, tb.expr), "bool", pa.bool_())

    def _in(self, node: Node) -> _Typed:
        x, values, negate = node.args
        tx = self.compile(x)
        present = [v for v in values if v is not None]
        for v in present:
            kind = _kind(pa.scalar(v).type)
            if not _comparable(tx.kind, kind):
                err = self.error(node, f"cannot compare {self.describe(x, tx)} with "
                                       f"{_DESCRIBE.get(kind, kind)} {_short(v)}")
                raise err
        has_null = len(present) < len(values)
        null = pc.scalar(pa.scalar(None, pa.bool_()))
        if not present:
            expr = null
        elif len(present) <= _IN_AS_EQUALITIES:
            # SQL's definition, exactly: x == a or x == b or ... (a null in the list
            # makes a miss null, as x == null is).
            items = [pc.equal(tx.expr, pc.scalar(v)) for v in present]
            expr = _balanced_expr(pc.or_kleene, items)
            if has_null:
                expr = pc.or_kleene(expr, null)
        else:
            try:
                value_set = pa.array(present)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                err = self.error(node, "'in' needs values of one kind", ArrowSparseValueError)
                raise err from exc
            target = tx.expr
            if tx.kind == "int" and pa.types.is_floating(value_set.type):
                target = target.cast(pa.float64())
            found = pc.is_in(target, value_set=value_set)
            miss = null if has_null else pc.scalar(pa.scalar(False))
            expr = pc.if_else(tx.expr.is_null(), null, pc.if_else(found, pc.scalar(True), miss))
        return _Typed(pc.invert(expr) if negate else expr, "bool", pa.bool_())

    def _between(self, node: Node) -> _Typed:
        x, lo, hi, negate = node.args
        low = self._cmp(Node("cmp", (">=", x, lo), node.pos))
        high = self._cmp(Node("cmp", ("<=", x, hi), node.pos))
        expr = pc.and_kleene(low.expr, high.expr)
        return _Typed(pc.invert(expr) if negate else expr, "bool", pa.bool_())

    def _isnull(self, node: Node) -> _Typed:
        x, negate = node.args
        tx = self.compile(x)
        return _Typed(tx.expr.is_valid() if negate else tx.expr.is_null(), "bool", pa.bool_())

    def _contains(self, node: Node) -> _Typed:
        lists, value = node.args
        tl, tv = self.compile(lists), self.compile(value)
        if tl.kind != "list":
            err = self.error(node, f"contains() takes a list first, got "
                                   f"{self.describe(lists, tl)}")
            raise err
        vt = tl.type.value_type
        vkind = _kind(vt)
        if vkind not in ("int", "float", "string", "binary", "bool"):
            err = self.error(node, f"contains() takes a list of numbers, strings or "
                                   f"booleans, got {self.describe(lists, tl)}")
            raise err
        if not _comparable(vkind, tv.kind) or tv.kind == "decimal":
            err = self.error(node, f"contains() cannot look for {self.describe(value, tv)} "
                                   f"in {self.describe(lists, tl)}")
            raise err
        if value.kind == "lit":
            try:
                needle = pc.scalar(pa.scalar(value.args[0], vt))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                err = self.error(node, f"contains(): {_short(value.args[0])} is not a value "
                                       f"of {vt}", ArrowSparseValueError)
                raise err from exc
        else:
            needle = tv.expr.cast(vt)
        name = _contains_function(tl.type, vt)
        return _Typed(pc.Expression._call(name, [tl.expr, needle]), "bool", pa.bool_())

    def _not(self, node: Node) -> _Typed:
        (inner,) = node.args
        return _Typed(pc.invert(self.condition(inner)), "bool", pa.bool_())

    def _and(self, node: Node) -> _Typed:
        a, b = node.args
        return _Typed(pc.and_kleene(self.condition(a), self.condition(b)), "bool", pa.bool_())

    def _or(self, node: Node) -> _Typed:
        a, b = node.args
        return _Typed(pc.or_kleene(self.condition(a), self.condition(b)), "bool", pa.bool_())


def _balanced_expr(func: Any, items: list[pc.Expression]) -> pc.Expression:
    while len(items) > 1:
        items = [func(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


class Predicate:
    """A parsed filter expression: its text, the columns it reads, and its syntax tree.

    Parsing checks the syntax and the limits; :meth:`compile` checks the types against
    a schema and gives the ``pyarrow.compute.Expression``.

    Examples
    --------
    >>> p = parse("label not in [0] and len(ids) between 1 and 3")
    >>> p.columns
    ['label', 'ids']
    >>> t = pa.table({"label": [0, 1, None, 2], "ids": [[1], [1, 2], [3], []]})
    >>> t.filter(p.compile(t.schema))["label"].to_pylist()
    [1]
    """

    def __init__(self, text: str, node: Node, columns: list[str],
                 where: str = "filter") -> None:
        self.text = text
        self.node = node
        self.columns = columns
        self.where = where

    def __repr__(self) -> str:
        return f"Predicate({self.text!r})"

    def compile(self, schema: pa.Schema, where: str | None = None) -> pc.Expression:
        """Check the types against ``schema`` and return the compute expression.

        Raises
        ------
        KeyError
            A column the schema lacks (the message suggests the closest name).
        TypeError
            Operands of kinds that do not go together (a string compared with a
            number, arithmetic on strings, ``len`` of a number ...).
        """
        compiler = _Compiler(self.text, where or self.where, schema)
        return compiler.condition(self.node)


def parse(text: str, where: str = "filter") -> Predicate:
    """Parse a filter expression (syntax and limits; the types are checked by ``compile``).

    Parameters
    ----------
    text
        The expression (grammar and null rules in the module docstring).
    where
        What errors start with (a step passes its label, ``"step 'keep' (filter)"``).

    Returns
    -------
    Predicate
        With ``columns``, each column it reads once, in order of first use.

    Raises
    ------
    ValueError
        Bad syntax, an unknown function or a bad literal; an expression beyond the
        limits (module docstring). The message quotes at most a short excerpt.

    Examples
    --------
    >>> pred = parse("label >= 1 and not (user_id in [3, 4])")
    >>> pred.columns
    ['label', 'user_id']
    >>> t = pa.table({"label": [0, 1, 1, None], "user_id": [1, 2, 3, 4]})
    >>> t.filter(pred.compile(t.schema))["user_id"].to_pylist()
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
    node = p.parse()
    if not _is_condition(node):
        err = p.limit("is a value, not a condition; compare it (==, !=, <, <=, >, >=, in, "
                      "between, is null)", node.pos)
        raise err
    return Predicate(text, node, p.columns, where)


_STRUCTURED_OPS = (*COMPARISONS, "in", "not in", "is null", "is not null")


def comparison(column: str, op: str, value: Any, where: str = "filter") -> Predicate:
    """Build the predicate ``column OP value`` (a filter step's ``column``/``op``/``value`` form).

    ``op`` is one of :data:`COMPARISONS`, ``"in"``, ``"not in"``, ``"is null"`` or
    ``"is not null"``; nulls as in :func:`parse`.

    Examples
    --------
    >>> p = comparison("label", "not in", [0])
    >>> t = pa.table({"label": [0, 1, None]})
    >>> t.filter(p.compile(t.schema))["label"].to_pylist()
    [1]
    """
    if op not in _STRUCTURED_OPS:
        choices = ", ".join(repr(o) for o in _STRUCTURED_OPS)
        msg = (f"{where}: unknown op {_short(op)}{did_you_mean(op, _STRUCTURED_OPS)} "
               f"expected one of {choices}")
        msg = msg.replace("? expected", "? Expected") if "did you mean" in msg else \
            msg.replace(" expected", "; expected")
        raise ArrowSparseValueError(msg)
    col = Node("col", (column,))
    text = f"{column} {op}"
    if op in ("is null", "is not null"):
        return Predicate(text, Node("isnull", (col, op == "is not null")), [column], where)
    if op in ("in", "not in"):
        if not isinstance(value, (list, tuple)) or not value:
            msg = f"{where}: op {op!r} needs a non-empty list value, got {_short(value)}"
            raise ArrowSparseValueError(msg)
        items = list(value)
        try:
            pa.array([v for v in items if v is not None])
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            msg = f"{where}: op {op!r} needs a list of values of one type, got {_short(value)}"
            raise ArrowSparseValueError(msg) from exc
        if any(isinstance(v, (list, tuple, dict)) for v in items):
            msg = f"{where}: op {op!r} needs a list of values of one type, got {_short(value)}"
            raise ArrowSparseValueError(msg)
        return Predicate(f"{text} {items!r}", Node("in", (col, tuple(items), op == "not in")),
                         [column], where)
    if isinstance(value, (list, tuple, dict)) or value is None:
        msg = f"{where}: op {op!r} needs a number, string or boolean value, got {_short(value)}"
        raise ArrowSparseValueError(msg)
    try:
        pa.scalar(value)
        if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
            raise OverflowError
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        msg = f"{where}: value {_short(value)} cannot be compared (outside the int64 range?)"
        raise ArrowSparseValueError(msg) from exc
    return Predicate(f"{text} {value!r}", Node("cmp", (op, col, Node("lit", (value,)))),
                     [column], where)


def evaluate(expression: pc.Expression, table: pa.Table,
             columns: list[str]) -> pa.ChunkedArray:
    """Evaluate ``expression`` over the ``columns`` of ``table`` it refers to.

    Only those columns are scanned (the list columns of a wide table are not
    touched); the result is the boolean column a filter keeps rows by.

    Examples
    --------
    >>> t = pa.table({"a": [1, 2], "b": [[1], [2]]})
    >>> evaluate(parse("a > 1").compile(t.schema), t, ["a"]).to_pylist()
    [False, True]
    """
    import pyarrow.dataset as ds

    source = ds.dataset(table.select(columns))
    return source.to_table(columns={"keep": expression}).column("keep")
