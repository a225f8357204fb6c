"""Infrastructure of the CUDA backend, for every kernel family at once.

* the registry: every CPU kernel has a CUDA launcher of the same name and parameters
  (after the array module), except the ones :data:`MISSING_CUDA_TWINS` lists (exactly
  those); ``get_kernel`` binds the array module, finds device-only launchers by name
  and memoises; the kernels import nothing above ``kernels/`` but ``errors``;
* the loader: the compiled text, lazy compilation by group, per-device memoisation,
  the CuPy call itself (with a stand-in ``cupy`` module), dispatch by ``get_kernel``;
* the device error word: encoding, ``// message:`` tables, ``check_errors`` now and
  deferred;
* ``nvcc --ptx`` for sm_90 of every ``.cu`` file with the loader's own ``OPTIONS``
  (skipped only where nvcc is absent), and that no kernel depends on the architecture;
* ``benchmarks/bench_gpu.py`` exits cleanly where there is no CuPy or no device.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arrow_sparse import _backend
from arrow_sparse.errors import ArrowSparseIndexError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import embedding as cpu_embedding
from arrow_sparse.kernels.cuda import embedding as cuda_embedding
from arrow_sparse.kernels.cuda import segment as cuda_segment
from tests.cuda_emu.emu import emulated

CUDA_DIR = Path(cuda.__file__).parent
CUDA_FAMILIES = sorted(p.stem for p in CUDA_DIR.glob("*.cu"))
REPO = Path(__file__).resolve().parent.parent

#: CPU kernels that have no CUDA launcher yet, by family: the GPU backend's honest
#: to-do list (docs/gpu.md). The registry test fails when one of them gains a twin
#: (remove it here) and when a CPU kernel appears without one (write the twin).
MISSING_CUDA_TWINS: dict[str, set[str]] = {
    # The host's masked CSR/CSC sums over the matrix as stored; device inputs keep the
    # canonicalise-then-merge path, whose kernels have twins (docs/gpu.md).
    "masked": {"csr_masked_sum", "index_sums", "line_sums", "mask_true_counts"},
}


def cuda_launcher_names(family: str) -> set[str]:
    if not cuda.has_family(family):
        return set()
    return set(__import__(f"arrow_sparse.kernels.cuda.{family}", fromlist=["_"]).__all__)


# ------------------------------------------------------------------ registry
@pytest.mark.parametrize("family", _backend.KERNEL_FAMILIES)
def test_every_cpu_kernel_has_a_cuda_twin_or_is_listed_as_missing(family: str) -> None:
    kernels = set(_backend.cpu_kernel_names(family))
    twins = cuda_launcher_names(family)
    assert twins <= kernels, f"CUDA launchers without a CPU kernel: {sorted(twins - kernels)}"
    missing = kernels - twins
    listed = MISSING_CUDA_TWINS.get(family, set())
    assert not listed - missing, (f"{family}: listed but not missing (a twin exists or the "
                                  f"CPU kernel is gone): {sorted(listed - missing)}")
    assert not missing - listed, f"{family}: CPU kernels without a twin {sorted(missing - listed)}"


@pytest.mark.parametrize("family", CUDA_FAMILIES)
def test_every_cuda_launcher_takes_its_cpu_twins_parameters(family: str) -> None:
    cpu = __import__(f"arrow_sparse.kernels.cpu.{family}", fromlist=["_"])
    gpu = __import__(f"arrow_sparse.kernels.cuda.{family}", fromlist=["_"])
    for name in cuda_launcher_names(family):
        cpu_params = list(inspect.signature(getattr(cpu, name)).parameters)
        assert list(inspect.signature(getattr(gpu, name)).parameters) == ["xp", *cpu_params], \
            name


def test_every_cu_file_has_launchers_and_every_name_expression_is_unique() -> None:
    assert set(CUDA_FAMILIES) <= set(_backend.KERNEL_FAMILIES)
    for family in CUDA_FAMILIES:
        names = cuda.name_expressions(family)
        assert names and len(names) == len(set(names)), family
        assert {cuda.group_of(n).split("<")[0] for n in names} <= {
            m.group(1) for m in re.finditer(r"__global__ void (\w+)", cuda.source(family))}


@pytest.mark.parametrize("family", CUDA_FAMILIES)
def test_device_only_launchers_take_the_array_module_and_have_no_cpu_twin(family: str) -> None:
    gpu = __import__(f"arrow_sparse.kernels.cuda.{family}", fromlist=["_"])
    assert not set(gpu.DEVICE_ONLY) & set(_backend.cpu_kernel_names(family))
    for name in gpu.DEVICE_ONLY:
        assert next(iter(inspect.signature(getattr(gpu, name)).parameters)) == "xp", name


def imports_of(path: Path, package: str) -> set[str]:
    """The modules ``path`` (module ``package``.<stem>) imports, relative ones resolved."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            found.add(".".join([*base, *([node.module] if node.module else [])]))
    return found


def test_the_kernels_import_nothing_above_them_but_errors() -> None:
    kernels = CUDA_DIR.parent
    for path in kernels.rglob("*.py"):
        package = ".".join(["arrow_sparse", *path.parent.relative_to(kernels.parent).parts])
        above = {m for m in imports_of(path, package) if m.startswith("arrow_sparse")
                 and not m.startswith("arrow_sparse.kernels")}
        assert above <= {"arrow_sparse.errors"}, (path.name, above)


# ------------------------------------------------------------------ dispatch
def bound(kernel: Any) -> tuple[Any, tuple[Any, ...]]:
    """``(launcher, bound arguments)`` of a CUDA kernel from ``get_kernel``."""
    assert isinstance(kernel, functools.partial), kernel
    return kernel.func, kernel.args


def without_twin(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make embedding kernel ``name`` one without a CUDA twin (every one has one now)."""
    monkeypatch.setattr(cuda_embedding, "__all__",
                        [n for n in cuda_embedding.__all__ if n != name])


def without_family(monkeypatch: pytest.MonkeyPatch, family: str) -> None:
    """Make ``family`` one without CUDA kernels (every family has a ``.cu`` file now)."""
    has_family = cuda.has_family
    monkeypatch.setattr(cuda, "has_family", lambda f: f != family and has_family(f))


def test_get_kernel_under_the_emulator_keeps_kernels_without_a_twin_on_the_cpu(
        monkeypatch: pytest.MonkeyPatch) -> None:
    without_twin(monkeypatch, "lookup_rows")
    without_family(monkeypatch, "sparse")
    assert _backend.get_kernel("embedding", "sgd_rows") is cpu_embedding.sgd_rows
    with emulated():
        assert bound(_backend.get_kernel("embedding", "sgd_rows")) == (cuda_embedding.sgd_rows,
                                                                       (np,))
        assert _backend.get_kernel("embedding", "lookup_rows") is cpu_embedding.lookup_rows
        assert _backend.get_kernel("sparse", "csr_spmv").__module__.endswith("cpu.sparse")
        with pytest.raises(NotImplementedError, match="nope: no cuda kernel in family 'embed"):
            _backend.get_kernel("embedding", "nope")
    assert _backend.get_kernel("embedding", "sgd_rows") is cpu_embedding.sgd_rows


def test_get_kernel_on_device_arrays_never_falls_back_to_the_cpu(
        monkeypatch: pytest.MonkeyPatch) -> None:
    without_twin(monkeypatch, "lookup_rows")
    without_family(monkeypatch, "sparse")
    fake = types.ModuleType("cupy")  # only its identity matters to get_kernel
    assert bound(_backend.get_kernel("embedding", "sgd_rows", fake)) == (
        cuda_embedding.sgd_rows, (fake,))
    with pytest.raises(NotImplementedError, match="lookup_rows: no cuda kernel in family "
                       "'embedding'"):
        _backend.get_kernel("embedding", "lookup_rows", fake)
    with pytest.raises(NotImplementedError, match="csr_spmv: no cupy kernel in family 'sparse'"):
        _backend.get_kernel("sparse", "csr_spmv", fake)
    with pytest.raises(KeyError, match="unknown kernel family 'nope'"):
        _backend.get_kernel("nope", "x", fake)


def test_get_kernel_finds_device_only_launchers_by_name() -> None:
    fake = types.ModuleType("cupy")
    assert bound(_backend.get_kernel("segment", "gather_rows", fake)) == (
        cuda_segment.gather_rows, (fake,))
    with pytest.raises(NotImplementedError, match="^gather_rows: a device-only kernel of "
                       "family 'segment' has no cpu kernel"):
        _backend.get_kernel("segment", "gather_rows")
    with emulated():  # the emulator runs every launcher on host arrays
        assert bound(_backend.get_kernel("segment", "gather_rows")) == (
            cuda_segment.gather_rows, (np,))


def test_get_kernel_is_memoised_per_array_module_and_factory() -> None:
    fake = types.ModuleType("cupy")
    kernel = _backend.get_kernel("segment", "sorted_sum", fake)
    assert _backend.get_kernel("segment", "sorted_sum", fake) is kernel
    cpu = _backend.get_kernel("segment", "sorted_sum")
    with emulated():
        on_emulator = _backend.get_kernel("segment", "sorted_sum")
        assert on_emulator is not cpu and bound(on_emulator)[1] == (np,)
        assert _backend.get_kernel("segment", "sorted_sum") is on_emulator
    assert _backend.get_kernel("segment", "sorted_sum") is cpu


# ------------------------------------------------------------------ loader
@pytest.mark.parametrize("family", CUDA_FAMILIES)
def test_source_prepends_the_header_and_names_the_family(family: str) -> None:
    text = cuda.source(family)
    directory = CUDA_DIR.as_posix()
    assert text.startswith(f'#line 1 "{directory}/_common.cuh"\n')
    index = _backend.KERNEL_FAMILIES.index(family)
    assert f'\n#define ASP_FAMILY_ID {index}\n#line 1 "{directory}/{family}.cu"\n' in text
    assert not re.search(r"^\s*#\s*include", text, re.MULTILINE)


@pytest.mark.parametrize(("name", "group"), [
    ("sgd_rows<float>", "sgd_rows<float>"),
    ("adagrad_rows<double, float>", "adagrad_rows<double>"),
    ("gather_reduce<unsigned long long, unsigned long long, unsigned long long, int, int>",
     "gather_reduce<unsigned long long>"),
    ("plain", "plain"),
])
def test_group_of_is_the_kernel_and_its_first_template_argument(name: str, group: str) -> None:
    assert cuda.group_of(name) == group


class Recorder:
    """A module factory that records what it is asked to compile; compiles nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, family: str, code: str, names: list[str]) -> Any:
        assert code == cuda.source(family)
        self.calls.append((family, names))
        return types.SimpleNamespace(get_function=lambda name: ("function", name))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    factory = Recorder()
    _backend.set_cuda_module_factory(factory)
    yield factory
    _backend.set_cuda_module_factory(None)


def test_the_first_launch_compiles_only_its_group(recorder: Recorder) -> None:
    family = "segment" if "segment" in CUDA_FAMILIES else CUDA_FAMILIES[0]
    every = cuda.name_expressions(family)
    first = every[0]
    module = cuda.load_module(family)
    assert module is cuda.load_module(family)
    assert recorder.calls == []  # nothing compiled before the first get_function
    assert module.get_function(first) == ("function", first)
    group = [n for n in every if cuda.group_of(n) == cuda.group_of(first)]
    assert recorder.calls == [(family, group)]
    assert len(group) < len(every)
    module.get_function(group[-1])  # same group: no compilation
    assert len(recorder.calls) == 1
    other = next(n for n in every if n not in group)
    module.get_function(other)
    assert [c[1][0] for c in recorder.calls] == [group[0], other]
    assert module.compiled_groups == [cuda.group_of(first), cuda.group_of(other)]
    with pytest.raises(KeyError, match="'nope<int>' is not a name expression of the"):
        module.get_function("nope<int>")


def test_cupy_modules_use_the_loader_options_and_are_memoised_per_device(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []
    device = [0]

    class RawModule:
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs)

        def get_function(self, name: str) -> tuple[str, str]:
            return ("kernel", name)

    fake = types.ModuleType("cupy")
    fake.RawModule = RawModule  # type: ignore[attr-defined]
    fake.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=types.SimpleNamespace(getDevice=lambda: device[0]))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    cuda.clear_cache()
    try:
        on_0 = cuda.load_module("embedding")
        assert on_0.get_function("sgd_rows<float>") == ("kernel", "sgd_rows<float>")
        assert built == [{"code": cuda.source("embedding"), "options": cuda.OPTIONS,
                          "name_expressions": ["sgd_rows<float>"]}]
        assert cuda.load_module("embedding") is on_0
        device[0] = 1
        on_1 = cuda.load_module("embedding")
        assert on_1 is not on_0
        on_1.get_function("sgd_rows<float>")
        assert len(built) == 2  # compiled again for the other device
    finally:
        cuda.clear_cache()


def test_missing_cupy_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'arrow-sparse\[gpu\]'"):
        cuda.load_module("embedding")


def test_importing_the_loaders_imports_neither_cupy_nor_numba() -> None:
    code = ("import sys, arrow_sparse; before = set(sys.modules); "
            "import arrow_sparse.kernels.cuda.embedding; "
            "assert 'cupy' not in sys.modules, 'cupy'; "
            "assert 'numba' in before or 'numba' not in sys.modules, 'numba'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# ------------------------------------------------------------------ device error word
def test_error_words_round_trip() -> None:
    word = (12345 << 16) | (5 << 8) | 7
    assert cuda.decode_error(word) == (5, 7, 12345)
    assert cuda.ERROR_NONE == 2 ** 64 - 1


def test_error_messages_are_read_from_the_source() -> None:
    text = """enum E {
        A_RANGE = 1,  // message: IndexError: ids out of range
        A_ORDER = 2,  // message: ids not sorted
    };"""
    table = cuda.error_messages(text)
    assert {code: (name, cls.__name__, msg) for code, (name, cls, msg) in table.items()} == {
        1: ("A_RANGE", "ArrowSparseIndexError", "ids out of range"),
        2: ("A_ORDER", "ArrowSparseValueError", "ids not sorted")}
    with pytest.raises(ValueError, match="must be unique and in 1..255"):
        cuda.error_messages(text.replace("= 2", "= 1"))
    with pytest.raises(ValueError, match="B = 0 must be unique"):
        cuda.error_messages("B = 0,  // message: x")


@pytest.mark.parametrize("family", CUDA_FAMILIES)
def test_every_raised_code_has_a_message(family: str) -> None:
    text = cuda.source(family)
    declared = {name for name, _, _ in cuda.error_messages(text).values()}
    raised = set(re.findall(r"ASP_RAISE\(\s*[^,]+,\s*(\w+)", text)) - {"code"}
    assert raised <= declared


def test_the_error_buffer_is_one_word_per_device() -> None:
    with emulated():
        buffer = cuda.error_buffer()
        assert buffer.dtype == np.uint64 and buffer.tolist() == [cuda.ERROR_NONE]
        assert cuda.error_buffer() is buffer
    with emulated():
        assert cuda.error_buffer() is not buffer  # a new factory is a new "device"


def bad_sgd_step() -> None:
    """Rows 7 (out of range, position 1) and 0 after 7 (unordered, position 2)."""
    cuda_embedding.sgd_rows(np, np.zeros((4, 2), np.float32), np.array([0, 7, 0]),
                            np.ones((3, 2), np.float32), 0.1)


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
def test_the_smallest_position_wins_in_any_thread_order(order: str) -> None:
    with emulated(order=order, check_orders=()):
        bad_sgd_step()
        with pytest.raises(ArrowSparseIndexError, match=r"^sgd: grad\.rows out of range of "
                           r"the table \(first at position 1; found by a device check\)$"):
            cuda.check_errors("sgd")
        cuda.check_errors("sgd")  # reset after raising


def test_a_deferred_check_raises_at_the_next_check() -> None:
    with emulated():
        bad_sgd_step()
        cuda.check_errors("sgd", wait=False)  # no synchronisation: nothing raised yet
        with pytest.raises(ArrowSparseIndexError, match=r"^sgd: .* \(first at position 1; "
                           r"found by a device check, reported by a later call\)$"):
            cuda.check_errors("adagrad", wait=False)
        cuda.check_errors("adagrad")
        cuda.check_errors("sgd", wait=False)  # clean deferred checks raise nothing
        cuda.check_errors("sgd", wait=False)
        cuda.check_errors("sgd")


def test_an_unknown_code_is_a_runtime_error() -> None:
    with emulated():
        index = _backend.KERNEL_FAMILIES.index("embedding")
        cuda.error_buffer()[0] = np.uint64((3 << 16) | (index << 8) | 200)
        with pytest.raises(RuntimeError, match="sgd: unknown device error code 200 of kernel "
                           f"family {index}"):
            cuda.check_errors("sgd")


# ------------------------------------------------------------------ nvcc
def uses_emulator_variant(family: str) -> bool:
    # The family's own file: the shared header's variant helpers (asp_group_sum) emit
    # code only where a family that has its own variants calls them.
    code = re.sub(r"//[^\n]*", "", (CUDA_DIR / f"{family}.cu").read_text(encoding="utf-8"))
    return cuda.EMULATOR_MACRO in code


# One architecture, the one the project measures on: no kernel has code that depends on
# __CUDA_ARCH__'s value (checked below), so another compiles the same text. The
# emulator variant is not nvcc's (only the emulator defines its macro; g++ builds it in
# every emulator test). nvcc takes minutes over all families: one case each is the check.
NVCC_ARCH = "sm_90"


def test_no_kernel_depends_on_the_architecture() -> None:
    for path in [*CUDA_DIR.glob("*.cu"), *CUDA_DIR.glob("*.cuh")]:
        code = path.read_text(encoding="utf-8")
        assert not re.search(r"__CUDA_ARCH__\s*[<>=!]", code), path.name


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("family", CUDA_FAMILIES)
def test_nvcc_compiles_every_instantiation(family: str, tmp_path: Path) -> None:
    names = cuda.name_expressions(family)
    # Taking each instantiation's address makes nvcc emit it, as name_expressions does.
    refs = "".join(f"static void* const asp_ref_{i} = (void*)&{name};\n"
                   for i, name in enumerate(names))
    src = tmp_path / f"{family}.cu"
    src.write_text(cuda.source(family) + refs)
    ptx = tmp_path / f"{family}.ptx"
    proc = subprocess.run(["nvcc", "--ptx", f"-arch={NVCC_ARCH}", *cuda.OPTIONS, "-Werror",
                           "all-warnings", str(src), "-o", str(ptx)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    text = ptx.read_text()
    assert text.count(".entry ") == len(names)
    if uses_emulator_variant(family):  # without the emulator's macro: the warp shuffles
        assert "shfl.sync" in text


def test_the_emulator_defines_the_variant_macro() -> None:
    header = (REPO / "tests" / "cuda_emu" / "cuda_emu.h").read_text()
    assert f"#define {cuda.EMULATOR_MACRO} 1" in header


# ------------------------------------------------------------------ benchmark script
@pytest.mark.parametrize(("setup", "reason"), [
    ("sys.modules['cupy'] = None", "CuPy is not installed"),
    ("m = types.ModuleType('cupy'); m.cuda = types.SimpleNamespace(runtime=types."
     "SimpleNamespace(getDeviceCount=lambda: 0)); sys.modules['cupy'] = m",
     "no CUDA device"),
])
def test_bench_gpu_exits_cleanly_without_a_gpu(setup: str, reason: str) -> None:
    script = REPO / "benchmarks" / "bench_gpu.py"
    code = (f"import runpy, sys, types; {setup}; sys.argv = [{str(script)!r}]; "
            f"runpy.run_path({str(script)!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"bench_gpu: skipped: {reason}" in proc.stdout
