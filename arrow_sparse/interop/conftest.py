"""pytest: collect an interop module's doctests only where its library is installed.

Each module's Examples call the library it converts to (pandas, Polars, torch), and
none of them is a required dependency (torch is not even in the ``test`` extra). So,
as pyarrow does for its optional modules, the doctests of a module whose library is
missing are not collected, instead of failing or cluttering the Examples with skips.
The tests in ``tests/interop/`` skip the same way (``pytest.importorskip``).
"""

from __future__ import annotations

import importlib.util

_NEEDS = {
    "pandas.py": "pandas",
    "pandas_convert.py": "pandas",
    "polars.py": "polars",
    "torch.py": "torch",
    "torch_data.py": "torch",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[module] is None or has no spec
        return False


collect_ignore = [path for path, module in _NEEDS.items() if not _installed(module)]
