"""``import arrow_sparse`` stays light: no optional dependency, no Numba, nothing compiled.

Each check runs in a fresh interpreter, since this test process has imported
everything already.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import arrow_sparse

OPTIONAL = ["numba", "llvmlite", "pandas", "polars", "torch", "cupy", "scipy", "ray",
            "duckdb", "matplotlib", "awkward", "sparse", "fbgemm_gpu", "hypothesis"]


def loaded_after(code: str) -> list[str]:
    """Top-level optional packages in ``sys.modules`` after running ``code``."""
    script = textwrap.dedent(code) + textwrap.dedent(f"""
        import sys
        loaded = {{name.split('.')[0] for name, m in sys.modules.items() if m is not None}}
        print(sorted(loaded & set({OPTIONAL!r})))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return eval(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_import_loads_no_optional_dependency_and_no_numba() -> None:
    assert loaded_after("import arrow_sparse") == []


def test_arrow_work_needs_no_pandas() -> None:
    # Reading Arrow lists and the sparse extension types once went through
    # DataType.to_pandas_dtype, which imports pandas before pyarrow 26. pyarrow itself
    # imports pandas when it is installed (``pa.array`` does), so it is blocked here,
    # as if it were not installed.
    code = """
        import sys

        class NoPandas:  # ``import pandas`` raises, as if it were not installed
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "pandas":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        sys.meta_path.insert(0, NoPandas())
        import numpy as np
        import pyarrow as pa
        import arrow_sparse as asp
        arr = pa.array([[1, 2, 3], None, [3, 6]], pa.large_list(pa.float32()))
        j = asp.Jagged.from_arrow(arr.slice(1))
        assert j.to_list() == [None, [3.0, 6.0]] and j.to_arrow().equals(arr.slice(1))
        kj = asp.KeyedJagged.from_arrow(pa.table({"a": arr, "n": [1, 2, 3]}))
        assert kj.keys() == ["a"]
        from arrow_sparse.sparse import extension
        csr = asp.SparseCSR([0, 1, 2], [1, 0], np.array([1.5, 2.0], np.float32), (2, 2))
        column = extension.sparse_tensor_array([csr, None])
        assert column.type.value_dtype == np.float32 and column.null_count == 1
        for cls in (extension.SparseCOOType, extension.SparseCSRType, extension.SparseCSFType):
            assert cls(pa.int16()).value_dtype == np.int16
    """
    assert "pandas" not in loaded_after(code)


def test_no_module_calls_to_pandas_dtype() -> None:
    package = Path(arrow_sparse.__file__).parent
    callers = [str(p.relative_to(package)) for p in package.rglob("*.py")
               if ".to_pandas_dtype(" in p.read_text()]
    assert callers == [], "use arrow_sparse._arrow.numpy_dtype (pandas-free) instead"
