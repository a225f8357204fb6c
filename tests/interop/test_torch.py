"""PyTorch interop: DLPack zero-copy by data_ptr, null rows, nested tensors, TorchRec inputs."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseTypeError, ArrowSparseValueError
from arrow_sparse.interop.torch import keyed_to_torchrec, to_torch_nested

CAFFE2 = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]


def address(array: Any) -> int:
    """Address of a numpy array's first element."""
    return int(array.ctypes.data)


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def caffe2(offsets_dtype: Any = np.int64, values_dtype: Any = np.int64) -> asp.Jagged:
    return asp.Jagged(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6], dtype=values_dtype),
                      np.array([0, 3, 7, 9], dtype=offsets_dtype))


# ------------------------------------------------------------------ optional import
def test_import_arrow_sparse_imports_no_torch() -> None:
    code = "import sys, arrow_sparse as a; print(callable(a.to_torch), 'torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]


def test_missing_torch_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    hint = r"^torch is required .* pip install 'arrow-sparse\[torch\]'"
    with pytest.raises(ModuleNotFoundError, match=hint):
        asp.to_torch(caffe2())
    with pytest.raises(ModuleNotFoundError, match=hint):
        to_torch_nested(caffe2())
    with pytest.raises(ModuleNotFoundError, match=hint):
        keyed_to_torchrec(asp.KeyedJagged.from_dict({"a": [[1]]}))
    # Bad input is reported before torch is needed; from_torch never imports torch.
    with pytest.raises(ArrowSparseTypeError, match="^to_torch: jagged must be a Jagged"):
        asp.to_torch(object())  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match="^to_torch: jagged has null rows"):
        asp.to_torch(asp.Jagged.from_list([[1], None]))
    with pytest.raises(ArrowSparseTypeError, match="^from_torch: values must be a torch.Tensor"):
        asp.from_torch(np.arange(3), np.array([0, 3]))


# ------------------------------------------------------------------------- to_torch
def test_to_torch_shares_memory(torch: Any, offsets_dtype: np.dtype,
                                values_dtype: np.dtype) -> None:
    j = caffe2(offsets_dtype, values_dtype)
    values, offsets = asp.to_torch(j)
    assert values.data_ptr() == address(j.values)
    assert offsets.data_ptr() == j.offsets.ctypes.data
    assert values.dtype == torch.from_numpy(np.zeros(1, values_dtype)).dtype
    assert offsets.dtype == (torch.int32 if offsets_dtype == np.int32 else torch.int64)
    assert values.tolist() == [1, 2, 3, 2, 4, 6, 7, 3, 6]
    back = asp.from_torch(values, offsets)
    assert address(back.values) == address(j.values)
    assert back.offsets.ctypes.data == j.offsets.ctypes.data
    assert back.dtype == values_dtype and back.offsets.dtype == offsets_dtype


def test_to_torch_from_arrow_buffers(torch: Any) -> None:
    arr = pa.array(CAFFE2, type=pa.large_list(pa.float32()))
    values, offsets = asp.to_torch(asp.Jagged.from_arrow(arr))
    assert values.data_ptr() == arr.values.buffers()[1].address
    assert offsets.data_ptr() == arr.buffers()[1].address
    read_only = np.arange(4.0)
    read_only.flags.writeable = False
    values, _ = asp.to_torch(asp.Jagged(read_only, np.array([0, 4])))
    assert values.data_ptr() == read_only.ctypes.data


def test_to_torch_slice_rebases_offsets_and_views_values(torch: Any) -> None:
    j = asp.Jagged.from_list(CAFFE2)[1:]
    values, offsets = asp.to_torch(j)
    assert offsets.tolist() == [0, 4, 6]
    assert offsets.dtype == torch.int32
    assert values.tolist() == [2, 4, 6, 7, 3, 6]
    assert values.data_ptr() == address(j.values) + 3 * j.values.itemsize
    trimmed = asp.Jagged(np.arange(10), np.array([0, 2, 4]))  # ends before the last value
    values, offsets = asp.to_torch(trimmed)
    assert values.tolist() == [0, 1, 2, 3] and offsets.tolist() == [0, 2, 4]


def test_to_torch_vectors_and_booleans(torch: Any) -> None:
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    values, offsets = asp.to_torch(asp.Jagged.from_lengths(table, [4, 2]))
    assert tuple(values.shape) == (6, 2) and values.data_ptr() == table.ctypes.data
    mask, _ = asp.to_torch(asp.Jagged.from_list([[True, False], [True]]))
    assert mask.dtype == torch.bool and mask.tolist() == [True, False, True]


def test_to_torch_null_rows(torch: Any) -> None:
    j = asp.Jagged.from_list([[1, 2], None, [3]])
    with pytest.raises(ArrowSparseValueError,
                       match=r"^to_torch: jagged has null rows \(first at position 1\)"):
        asp.to_torch(j)
    values, offsets = asp.to_torch(j, null_rows="empty")
    assert offsets.tolist() == [0, 2, 2, 3]
    assert values.data_ptr() == address(j.values)  # null row already empty: no copy
    assert offsets.data_ptr() == j.offsets.ctypes.data
    # Arrow allows a null row to cover values: "empty" drops them (one copy).
    covering = asp.Jagged(np.array([1, 2, 9, 9, 3]), np.array([0, 2, 4, 5]), [True, False, True])
    values, offsets = asp.to_torch(covering, null_rows="empty")
    assert values.tolist() == [1, 2, 3] and offsets.tolist() == [0, 2, 2, 3]
    nested = to_torch_nested(covering, null_rows="empty")
    assert [row.tolist() for row in nested.unbind()] == [[1, 2], [], [3]]


def test_to_torch_null_elements_raise_unless_inside_dropped_rows(torch: Any) -> None:
    with pytest.raises(ArrowSparseValueError,
                       match=r"^to_torch: jagged has null elements \(first at value 1\)"):
        asp.to_torch(asp.Jagged.from_arrow(pa.array([[1, None], [3]])))
    j = asp.Jagged(np.array([1, 0, 3]), np.array([0, 2, 3]), [False, True],
                   values_validity=[True, False, True])
    values, offsets = asp.to_torch(j, null_rows="empty")
    assert values.tolist() == [3] and offsets.tolist() == [0, 0, 1]


@pytest.mark.parametrize("jagged,kwargs,exc,match", [
    (object(), {}, ArrowSparseTypeError, "^to_torch: jagged must be a Jagged"),
    (pa.array([[1]]), {}, ArrowSparseTypeError, "^to_torch: jagged must be a Jagged"),
    (asp.Jagged.from_list([[1]]), {"null_rows": 1}, ArrowSparseTypeError, "null_rows must be"),
    (asp.Jagged.from_list([[1]]), {"null_rows": "drop"}, ArrowSparseValueError,
     "null_rows must be one of"),
    (asp.Jagged.from_list([[[1], [2]]]), {}, ArrowSparseTypeError, "nested rows"),
])
def test_to_torch_errors(torch: Any, jagged: Any, kwargs: dict[str, Any], exc: type,
                         match: str) -> None:
    with pytest.raises(exc, match=match):
        asp.to_torch(jagged, **kwargs)


# ----------------------------------------------------------------------- from_torch
def test_from_torch_shares_memory(torch: Any) -> None:
    values = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    offsets = torch.tensor([0, 1, 4], dtype=torch.int32)
    j = asp.from_torch(values, offsets, validity=torch.tensor([True, False]))
    assert address(j.values) == values.data_ptr()  # detached, not copied
    assert j.offsets.ctypes.data == offsets.data_ptr() and j.offsets.dtype == np.int32
    assert j.to_list() == [[1.0], None]
    arr = j.to_arrow()
    assert arr.values.buffers()[1].address == values.data_ptr()  # on to Arrow, still shared
    j2 = asp.from_torch(torch.arange(6).reshape(3, 2), torch.tensor([0, 3]))
    assert j2.leaf_values.shape == (3, 2)


def test_from_torch_errors(torch: Any) -> None:
    values = torch.arange(3)
    with pytest.raises(ArrowSparseTypeError, match="^from_torch: values must be a torch.Tensor"):
        asp.from_torch([1, 2, 3], torch.tensor([0, 3]))
    with pytest.raises(ArrowSparseTypeError, match="^from_torch: offsets must be a torch.Tensor"):
        asp.from_torch(values, [0, 3])
    with pytest.raises(ArrowSparseValueError, match="^from_torch: offsets is required"):
        asp.from_torch(values)
    with pytest.raises(ArrowSparseValueError, match="offsets must be non-decreasing|offsets"):
        asp.from_torch(values, torch.tensor([0, 2, 1]))
    with pytest.raises(ArrowSparseTypeError, match=r"^from_torch: values is on meta"):
        asp.from_torch(torch.empty(3, device="meta"), torch.tensor([0, 3]))
    with pytest.raises(ArrowSparseTypeError, match="bfloat16 has no numpy equivalent"):
        asp.from_torch(torch.zeros(3, dtype=torch.bfloat16), torch.tensor([0, 3]))
    with pytest.raises(ArrowSparseTypeError, match="layout torch.sparse_coo"):
        asp.from_torch(torch.zeros(3).to_sparse(), torch.tensor([0, 3]))
    with pytest.warns(UserWarning, match="prototype"):  # torch's own warning for this layout
        strided = torch.nested.nested_tensor([torch.arange(2), torch.arange(3)])
    with pytest.raises(ArrowSparseTypeError, match="only the jagged layout"):
        asp.from_torch(strided)
    nested = torch.nested.nested_tensor_from_jagged(torch.arange(3), torch.tensor([0, 1, 3]))
    with pytest.raises(ArrowSparseValueError, match="offsets must be None"):
        asp.from_torch(nested, torch.tensor([0, 3]))


# ------------------------------------------------------------------- nested tensors
def test_to_torch_nested_shares_memory_and_round_trips(torch: Any) -> None:
    j = caffe2(np.int64, np.float32)
    nt = to_torch_nested(j)
    assert nt.is_nested and nt.layout == torch.jagged and nt.size(0) == 3
    assert nt.values().data_ptr() == address(j.values)
    assert nt.offsets().data_ptr() == j.offsets.ctypes.data
    assert [row.tolist() for row in nt.unbind()] == CAFFE2
    back = asp.from_torch(nt)
    assert address(back.values) == address(j.values)
    assert back.offsets.ctypes.data == j.offsets.ctypes.data


def test_to_torch_nested_slice_and_errors(torch: Any) -> None:
    j = asp.Jagged.from_list(CAFFE2)[1:]
    nt = to_torch_nested(j)
    assert nt.offsets().tolist() == [0, 4, 6]
    assert nt.values().data_ptr() == address(j.values) + 3 * j.values.itemsize
    with pytest.raises(ArrowSparseValueError, match="^to_torch_nested: jagged has no rows"):
        to_torch_nested(asp.Jagged(np.arange(0), np.array([0])))
    with pytest.raises(ArrowSparseValueError, match="^to_torch_nested: jagged has null rows"):
        to_torch_nested(asp.Jagged.from_list([None, [1]]))
    with pytest.raises(ArrowSparseTypeError, match="^to_torch_nested: jagged must be a Jagged"):
        to_torch_nested(np.arange(3))  # type: ignore[arg-type]


# ----------------------------------------------------------------------- TorchRec
def test_keyed_to_torchrec_shares_memory(torch: Any) -> None:
    m = pa.array([[(1, [10, 11]), (3, [101])], None, [(1, [11]), (2, [50])]],
                 type=pa.map_(pa.int64(), pa.list_(pa.int64())))
    kj = asp.KeyedJagged.from_arrow(m)
    inputs = keyed_to_torchrec(kj)
    assert inputs.keys == ["1", "2", "3"]
    assert inputs.values.data_ptr() == address(kj.values)
    assert inputs.lengths.data_ptr() == kj.lengths.ctypes.data
    assert inputs.lengths.dtype == torch.int32
    assert inputs.lengths.tolist() == [2, 0, 1, 0, 0, 1, 1, 0, 0]  # null example: empty rows
    assert inputs.weights is None
    assert set(inputs._asdict()) == {"keys", "values", "lengths", "weights"}
    weighted = asp.KeyedJagged.from_dict({"a": [[1, 2]]}, weights={"a": [[0.5, 2.0]]})
    inputs = keyed_to_torchrec(weighted)
    assert weighted.weights is not None
    assert inputs.weights.data_ptr() == weighted.weights.ctypes.data
    with pytest.raises(ArrowSparseTypeError, match="^keyed_to_torchrec: kj must be a KeyedJagged"):
        keyed_to_torchrec(caffe2())  # type: ignore[arg-type]


# ================================================================= CUDA tensors (no GPU here)
class CudaTensorStandIn:
    """What ``_array`` reads of a CUDA tensor: its device, layout and DLPack export."""

    def __init__(self, torch: Any, memory: np.ndarray) -> None:
        from tests.cuda_emu.fake_cupy import DeviceBuffer

        self.device, self.layout = torch.device("cuda", 0), torch.strided
        self._buffer = DeviceBuffer(memory, 0)

    def detach(self) -> Any:
        return self._buffer


def test_cuda_tensors_are_read_through_cupy_without_a_copy(torch: Any) -> None:
    from arrow_sparse.interop import torch as bridge
    from tests.cuda_emu.fake_cupy import emulated_cupy

    memory = np.arange(4.0)
    with emulated_cupy() as cp:
        got = bridge._array("f", "values", torch, CudaTensorStandIn(torch, memory))
        assert isinstance(got, cp.ndarray) and got._a is memory  # the tensor's memory


def test_cuda_tensors_without_cupy_say_how_to_get_it(torch: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from arrow_sparse.interop import torch as bridge

    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    with pytest.raises(ArrowSparseTypeError, match=r"^f: values is on cuda:0; arrow_sparse "
                       r"reads CUDA tensors through CuPy, which is not installed \(pip install "
                       r"'arrow-sparse\[gpu\]'\), or move it to the CPU first \(values.cpu\(\), "
                       r"a copy\)$"):
        bridge._array("f", "values", torch, CudaTensorStandIn(torch, np.arange(2.0)))


@pytest.mark.parametrize("null_rows", ["raise", "empty"])
def test_a_device_jagged_gives_the_rows_of_the_host_one(null_rows: str) -> None:
    from arrow_sparse.interop import torch as bridge
    from tests.cuda_emu.fake_cupy import emulated_cupy

    covered = asp.Jagged(np.arange(5), np.array([0, 2, 4]), validity=np.array([True, False]))
    cases = [  # (Jagged, synchronisations with null_rows="empty")
        (asp.Jagged.from_arrow(pa.array([[9], [1, 2, 3], [2, 4, 6, 7]]).slice(1)), 1),
        (asp.Jagged.from_arrow(pa.array([[1, 2], None, [3]])), 2),  # offsets; any covered
        (covered, 3)]  # and the values it drops
    for host, syncs in cases:
        try:
            want = bridge._plain_rows("to_torch", host, null_rows)
        except ArrowSparseValueError as exc:
            with emulated_cupy(), pytest.raises(ArrowSparseValueError, match=re.escape(str(exc))):
                bridge._plain_rows("to_torch", host.to_device("cuda"), null_rows)
            continue
        with emulated_cupy() as cp:
            device = host.to_device("cuda")
            cp.stats.reset()
            got = bridge._plain_rows("to_torch", device, null_rows)
            assert cp.stats.syncs == syncs
            for g, w in zip(got, want, strict=True):
                assert isinstance(g, cp.ndarray) and g.get().tolist() == w.tolist()


# --------------------------------------------------------------- TorchRec both ways
def real_torchrec() -> Any:
    """TorchRec's jagged_tensor module, or skip (its import of FBGEMM warns about kernels)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return pytest.importorskip("torchrec.sparse.jagged_tensor")


class DuckKJT:
    """Not TorchRec's class: just its accessors."""

    def __init__(self, torch: Any, weights: bool) -> None:
        self._values = torch.tensor([1, 2, 3, 4, 5])
        self._lengths = torch.tensor([2, 0, 1, 2], dtype=torch.int32)
        self._weights = torch.tensor([0.5, 1.0, 1.5, 2.0, 2.5]) if weights else None

    def keys(self) -> list[str]:
        return ["a", "b"]

    def values(self) -> Any:
        return self._values

    def lengths(self) -> Any:
        return self._lengths

    def weights_or_none(self) -> Any:
        return self._weights


def test_to_torchrec_without_torchrec_gives_the_inputs(torch: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from arrow_sparse.interop import torch as asp_torch

    monkeypatch.setattr(asp_torch, "_torchrec_class", lambda: None)
    kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]},
                                   weights={"b": [[0.5], [1.0, 2.0]]})
    inputs = kj.to_torchrec()
    assert isinstance(inputs, asp_torch.TorchRecInputs)
    assert inputs.keys == ["a", "b"] and inputs.lengths.tolist() == [2, 0, 1, 2]
    back = asp.KeyedJagged.from_torchrec(inputs)
    assert back.values.ctypes.data == kj.values.ctypes.data  # shared both ways
    assert back.weights.ctypes.data == kj.weights.ctypes.data
    assert back["a"].to_list() == [[1, 2], []] and back["b"].to_list() == [[3], [4, 5]]


@pytest.mark.parametrize("weights", [False, True])
def test_from_torchrec_takes_any_object_with_the_accessors(torch: Any, weights: bool) -> None:
    duck = DuckKJT(torch, weights)
    kj = asp.KeyedJagged.from_torchrec(duck)
    assert kj.keys() == ["a", "b"] and kj.batch_size == 2
    assert kj["a"].to_list() == [[1, 2], []] and kj["b"].to_list() == [[3], [4, 5]]
    assert kj.values.ctypes.data == duck.values().data_ptr()
    assert kj.lengths.ctypes.data == duck.lengths().data_ptr()
    if weights:
        assert kj.weights_of("b").to_list() == [[1.5], [2.0, 2.5]]
    else:
        assert kj.weights is None
    with pytest.raises(ArrowSparseTypeError,
                       match=r"^KeyedJagged.from_torchrec: kjt must be .* lacks keys\(\)"):
        asp.KeyedJagged.from_torchrec(object())
    duck._values = [1, 2, 3, 4, 5]
    with pytest.raises(ArrowSparseTypeError,
                       match="^KeyedJagged.from_torchrec: values must be a torch.Tensor"):
        asp.KeyedJagged.from_torchrec(duck)


def test_from_torchrec_checks_lengths(torch: Any) -> None:
    duck = DuckKJT(torch, False)
    duck._lengths = torch.tensor([2, 0, 1, 9])
    with pytest.raises(ArrowSparseValueError, match="^KeyedJagged: lengths"):
        asp.KeyedJagged.from_torchrec(duck)


def test_to_torchrec_gives_a_real_keyed_jagged_tensor(torch: Any) -> None:
    jt = real_torchrec()
    kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None, [7]], "b": [[3], [4, 5], []]},
                                   weights={"b": [[0.5], [1.0, 2.0], []]})
    kjt = kj.to_torchrec()
    assert isinstance(kjt, jt.KeyedJaggedTensor)
    assert kjt.keys() == ["a", "b"] and kjt.stride() == 3
    assert kjt.values().data_ptr() == kj.values.ctypes.data  # zero-copy
    # TorchRec's own view of it agrees with the KeyedJagged
    per_key = kjt.to_dict()
    assert [t.tolist() for t in per_key["a"].to_dense()] == [[1, 2], [], [7]]
    assert [t.tolist() for t in per_key["b"].to_dense()] == [[3], [4, 5], []]
    assert [t.tolist() for t in per_key["b"].to_dense_weights()] == [[0.5], [1.0, 2.0], []]
    assert kjt.offsets().tolist() == kj.offsets.tolist()
    # and back, also from one TorchRec built itself (offsets only) and permuted
    back = asp.KeyedJagged.from_torchrec(kjt)
    assert back.values.ctypes.data == kj.values.ctypes.data
    assert back["b"].to_list() == [[3], [4, 5], []]
    built = jt.KeyedJaggedTensor(keys=["x", "y"], values=torch.tensor([1.0, 2.0, 3.0]),
                                 offsets=torch.tensor([0, 1, 1, 3, 3]))
    assert asp.KeyedJagged.from_torchrec(built)["y"].to_list() == [[2.0, 3.0], []]
    swapped = asp.KeyedJagged.from_torchrec(kjt.permute([1, 0]))
    assert swapped.keys() == ["b", "a"] and swapped["a"].to_list() == [[1, 2], [], [7]]
    empty = jt.KeyedJaggedTensor(keys=[], values=torch.tensor([], dtype=torch.int64),
                                 lengths=torch.tensor([], dtype=torch.int64), stride=4)
    assert asp.KeyedJagged.from_torchrec(empty).batch_size == 4
