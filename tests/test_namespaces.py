"""Every public namespace's ``dir()`` is its ``__all__`` plus its submodules.

A module's imports (``np``, ``v``, ``annotations`` from ``from __future__ import
annotations``, helper functions of other modules) are not its API; ``dir()`` is what
tab completion and ``help()`` show, so nothing else may appear there, and nothing of
``__all__`` may be missing from it (a lazily built class included).
"""

from __future__ import annotations

import importlib
import types

import pytest

NAMESPACES = [
    "arrow_sparse", "arrow_sparse.io", "arrow_sparse.embedding", "arrow_sparse.masked",
    "arrow_sparse.segment", "arrow_sparse.elementwise", "arrow_sparse.transforms",
    "arrow_sparse.keyed", "arrow_sparse.sparse", "arrow_sparse.errors", "arrow_sparse.interop",
    "arrow_sparse.interop.torch", "arrow_sparse.interop.torch_data", "arrow_sparse.interop.pandas",
    "arrow_sparse.interop.pandas_convert", "arrow_sparse.interop.polars",
    "arrow_sparse.pipeline",
]
NEEDS = {"arrow_sparse.interop.pandas": "pandas"}  # imports its library on import


def public_names(module: types.ModuleType) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_")}


def submodules(module: types.ModuleType) -> set[str]:
    # The module's own dict, not getattr: a lazily built class (interop.torch's
    # EmbeddingBag) would import its optional library, or fail where it is not installed.
    members = vars(module)
    return {name for name in public_names(module)
            if isinstance(members.get(name), types.ModuleType)
            and members[name].__name__ == f"{module.__name__}.{name}"}


@pytest.mark.parametrize("name", NAMESPACES)
def test_dir_is_all_plus_submodules_issue_14(name: str) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    module = importlib.import_module(name)
    exported = {n for n in module.__all__ if not n.startswith("_")}
    shown = public_names(module)
    assert not exported - shown, f"in __all__ but not in dir(): {sorted(exported - shown)}"
    leaked = shown - exported - submodules(module)
    assert not leaked, f"in dir() but not in __all__: {sorted(leaked)}"


def test_lazily_built_torch_classes_are_listed_without_importing_torch() -> None:
    import sys

    module = importlib.import_module("arrow_sparse.interop.torch")
    had_torch = "torch" in sys.modules
    assert {"EmbeddingBag", "EmbeddingBagFunction"} <= set(dir(module))
    assert ("torch" in sys.modules) == had_torch
