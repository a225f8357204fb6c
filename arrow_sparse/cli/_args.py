"""Argument types the subcommands share (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["comma_list"]


def comma_list(what: str) -> Callable[[str], list[str]]:
    """Return an argparse type for ``A,B,...``: the stripped, non-empty ``what``.

    Examples
    --------
    >>> comma_list("column names")(" a, b,,")
    ['a', 'b']
    >>> comma_list("column names")(",")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected comma-separated column names
    """
    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        if not names:
            msg = f"expected comma-separated {what}"
            raise argparse.ArgumentTypeError(msg)
        return names

    return parse
