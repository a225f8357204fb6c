"""Docstrings of twin functions, written once as a template and filled per function.

A family of functions that differ only by the reduction (``unsorted_segment_sum`` /
``_mean`` / ``_max`` ...) or by the format (``from_coo`` / ``from_csr`` ...) shares one
numpydoc body. Each function keeps its own one-line summary in the source (the
linter and a reader see a docstring where they expect one) and :func:`fill_doc`
appends the shared sections, filled with the function's own words, when the module is
imported. Doctests and ``help()`` read the filled ``__doc__``. pyarrow builds its
compute functions' docstrings the same way, from one description per function.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["TO_DEVICE", "fill_doc"]

#: The ``to_device`` methods of :class:`Jagged`, :class:`KeyedJagged` and the sparse
#: tensors. Fields: ``a_kind`` (one object of the class, with its article), ``cls``,
#: ``copy`` (what the copy is), ``see_also``, ``notes`` (what the transfer means for
#: the class), ``build`` (an expression making one, for the example).
TO_DEVICE = """
    Parameters
    ----------
    device
        ``"cpu"``, ``"cuda"`` (the current CUDA device; {a_kind} already on a CUDA
        device stays there) or ``"cuda:N"``.

    Returns
    -------
    {cls}
        ``self`` when it is on ``device`` already, else {copy} there (to the host
        with ``.get()``, to a GPU with ``cupy.asarray``). Nothing is re-checked.

    Raises
    ------
    ValueError, TypeError
        Not a device string.
    ModuleNotFoundError
        ``"cuda"`` without CuPy installed.

    See Also
    --------
    {see_also}

    Notes
    -----
    {notes}
    Copies to the host synchronise.

    Examples
    --------
    >>> x = {build}
    >>> x.to_device("cpu") is x
    True
    """


def fill_doc(template: str, **fields: Any) -> Callable[[F], F]:
    """Return a decorator appending ``template.format(**fields)`` to a function's docstring.

    The template is numpydoc text after the summary (Parameters, Returns, ...), written
    at the indentation of a function body's docstring or at none; a field is written
    ``{name}`` and a literal brace ``{{``. A multi-line value whose placeholder starts an
    indented line (a description under a parameter) is indented like its first line.

    Examples
    --------
    >>> @fill_doc("The {what} of ``a`` and ``b``, for {kind} numbers.", what="sum",
    ...           kind="real")
    ... def add(a, b):
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> print(add.__doc__)
    Add two numbers.
    <BLANKLINE>
    The sum of ``a`` and ``b``, for real numbers.
    <BLANKLINE>
    """
    text = inspect.cleandoc(template)
    for name, value in fields.items():  # a multi-line value keeps its placeholder's indent
        placeholder = re.search(rf"^( *)\{{{name}\}}", text, re.MULTILINE)
        if placeholder and placeholder.group(1) and isinstance(value, str):
            fields[name] = value.replace("\n", "\n" + placeholder.group(1))
    body = text.format(**fields)

    def decorate(fn: F) -> F:
        summary = inspect.cleandoc(fn.__doc__ or "")
        if not summary:
            msg = f"{fn.__qualname__}: give the function its own one-line summary docstring"
            raise ValueError(msg)
        fn.__doc__ = f"{summary}\n\n{body}\n"
        return fn
    return decorate
