"""Tests of ``arrow_sparse._optional``: importing an optional dependency, or saying how to
install it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from arrow_sparse._optional import import_optional


def test_import_optional_returns_the_module_and_keeps_a_broken_dependency_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert import_optional("json", "x") is sys.modules["json"]
    with pytest.raises(ModuleNotFoundError, match=r"arrow-sparse\[demo\]") as info:
        import_optional("no_such_module_for_arrow_sparse", "demo")
    assert info.value.name == "no_such_module_for_arrow_sparse"

    def broken(name: str) -> Any:
        raise ModuleNotFoundError("No module named 'its_dependency'", name="its_dependency")

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="its_dependency") as info:
        import_optional("pandas", "pandas")
    assert "pip install" not in str(info.value)
