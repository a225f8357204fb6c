"""Doctests of the sparse formats that use an optional library run only where it is installed.

An Example that starts ``>>> import sparse`` (pydata sparse) or ``>>> import torch`` is
skipped, with the reason, when that library cannot be imported; everywhere else it
runs like any other doctest (``pytest --doctest-modules arrow_sparse/sparse``).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_IMPORT = re.compile(r"import (\w+)\s*$")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the doctests of this package that import a missing library as skipped."""
    for item in items:
        dtest = getattr(item, "dtest", None)
        if dtest is None or _HERE not in Path(str(item.path)).resolve().parents:
            continue
        for example in dtest.examples:
            found = _IMPORT.match(example.source)
            if found and not _installed(found.group(1)):
                item.add_marker(pytest.mark.skip(reason=f"needs {found.group(1)}"))
                break


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
