"""Device dispatch of the public functions, without a GPU (docs/gpu.md, "Dispatch").

A stand-in CuPy (``tests/cuda_emu/fake_cupy.py``) supplies device arrays and the CPU
emulator runs the CUDA kernels, so these tests run the library's real device path:

* which array module an operation picks, and the errors for mixed or misplaced inputs;
* the device checks: deferred (raised by the next check) where an operation does not
  synchronise, at once where it reads a device value anyway, with the messages of
  ``convert.cu``; the kernels' own re-checks of the offsets they read;
* the synchronisations each conversion documents, and launch counts that do not grow
  with the batch;
* ``Jagged`` on the device: ``to_device``, ``device``/``xp``, DLPack in and out, and
  every public member either working there or raising NotImplementedError naming it.

The conversions' results on the device are compared with the CPU by the ``cupy_emu``
backend of ``tests/test_convert.py`` and ``tests/test_jagged.py``.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse import _validate as v
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cuda import convert as cuda_convert
from arrow_sparse.kernels.cuda import transforms as cuda_transforms
from tests.cuda_emu.fake_cupy import DeviceBuffer, emulated_cupy

from ._strategies import list_arrays
from .masked._helpers import MASKED_LAUNCHES, MASKED_SYNCS
from .segment._helpers import SEGMENT_SYNCS
from .sparse._helpers import SPARSE_LAUNCHES, SPARSE_SYNCS


@pytest.fixture
def cp() -> Iterator[ModuleType]:
    """The stand-in ``cupy``, for this test only."""
    with emulated_cupy(check_orders=("reverse", "shuffle")) as module:
        yield module


def dev(cp: ModuleType, x: Any, dtype: Any = None) -> Any:
    return cp.asarray(np.asarray(x, dtype=dtype))


DEFERRED = r" \(first at position {}; found by a device check, reported by a later call\)$"
AT_ONCE = r" \(first at position {}; found by a device check\)$"


def raised_later(cp: ModuleType) -> None:
    """The next check: what an earlier operation left in the error word is raised now."""
    asp.offsets_to_lengths(dev(cp, [0, 1]))


# ------------------------------------------------------------------ the stand-in itself
def test_the_stand_in_is_installed_for_one_test_only() -> None:
    assert "cupy" not in sys.modules
    with emulated_cupy() as module:
        assert sys.modules["cupy"] is module
        x = module.asarray(np.arange(3))
        assert _backend.is_cupy_array(x) and type(x).__module__ == "cupy"
        with pytest.raises(TypeError, match="Implicit conversion to a NumPy array"):
            np.asarray(x)
        with pytest.raises(TypeError, match="Unsupported type"):
            x + np.arange(3)  # noqa: B018 (no implicit host-to-device transfer)
        module.stats.reset()
        assert int(x.sum()) == 3
        assert (module.stats.syncs, module.stats.launches) == (1, 1)
    assert "cupy" not in sys.modules


def test_a_host_array_in_a_device_launch_is_refused(cp: ModuleType) -> None:
    values = dev(cp, np.arange(3.0))
    out = cp.empty((1, 3, 1), dtype=np.float64)
    # A launcher trusts the array module it is given (the public operation checked its
    # inputs once); a host array that slips through is still refused before the launch.
    with pytest.raises(TypeError, match="Unsupported type .*fake cupy: device arrays only"):
        cuda_convert.pad_rows(cp, values.reshape(3, 1), None, np.array([0, 3]), None, 3,
                              np.float64(0), out)
    kernel = cuda.load_module("convert").get_function("check_offsets<long long>")
    with pytest.raises(TypeError, match="check_offsets<long long> argument 0 is a host .numpy. "
                       "array in a device launch"):
        kernel((1,), (32,), (np.array([0, 1]), np.int64(2), np.int64(-1), cuda.error_buffer()))
    kernel((1,), (32,), (dev(cp, [0, 1]), np.int64(2), np.int64(-1), cuda.error_buffer()))


# ------------------------------------------------------------------ array module
def test_array_module_follows_the_inputs(cp: ModuleType) -> None:
    x = dev(cp, [0, 1])
    assert _backend.array_module("f", values=np.arange(2), offsets=[0, 2], x=None) is np
    assert _backend.array_module("f", values=x, offsets=[x, x]) is cp
    assert _backend.array_module("f", j=asp.Jagged(dev(cp, [1.0]), x)) is cp
    assert _backend.array_module("f", j=asp.Jagged.from_list([[1]])) is np
    # any container is placed by its leaf_values: _backend knows no Jagged
    assert _backend.array_module("f", c=types.SimpleNamespace(leaf_values=x)) is cp
    assert _backend.array_module("f", c=types.SimpleNamespace(leaf_values=None)) is np


@pytest.mark.parametrize("case", ["numpy offsets", "list offsets", "arrow offsets",
                                  "host validity", "offsets levels"])
def test_mixing_host_and_device_inputs_names_them_and_the_fix(cp: ModuleType,
                                                              case: str) -> None:
    values, offsets = dev(cp, np.arange(3.0)), dev(cp, [0, 3])
    fix = (r"; move them to one device first: to the GPU with Jagged.to_device\('cuda'\) or "
           r"cupy.asarray\(x\), to the host with Jagged.to_device\('cpu'\) or x.get\(\)$")
    if case == "numpy offsets":
        call, match = lambda: asp.Jagged(values, np.array([0, 3])), "offsets is a host"
    elif case == "list offsets":
        call, match = lambda: asp.jagged_to_padded_dense(values, [0, 3]), "offsets is a host"
    elif case == "arrow offsets":
        call, match = lambda: asp.Jagged(values, pa.array([0, 3])), "offsets is a host"
    elif case == "host validity":
        call, match = (lambda: asp.Jagged(values, offsets, validity=np.ones(1, bool)),
                       "validity is a host")
    else:
        call, match = (lambda: asp.dense_to_jagged(dev(cp, np.zeros((1, 2, 2))),
                                                   [offsets, np.array([0, 1, 2])]),
                       "inputs mix host")
    with pytest.raises(TypeError, match=match + ".*" + fix):
        call()
    with pytest.raises(ArrowSparseError):
        call()


def test_inputs_on_two_devices_are_refused(cp: ModuleType) -> None:
    values = dev(cp, np.arange(3.0))
    with cp.cuda.Device(1):
        offsets = dev(cp, [0, 3])
    with pytest.raises(TypeError, match=r"^Jagged: inputs are on different CUDA devices \[0, 1\]"
                       r"; move them to one with Jagged.to_device\('cuda:N'\)"):
        asp.Jagged(values, offsets)


def test_host_only_checks_refuse_device_arrays_with_the_fix(cp: ModuleType) -> None:
    x = dev(cp, [0, 1])
    for check in (lambda: v.as_values_array("op", "values", x),
                  lambda: v.check_offsets("op", "offsets", x),
                  lambda: v.check_indices("op", "ids", x, 4),
                  lambda: v.check_mask("op", "mask", x, 2),
                  lambda: v.lengths_offsets("op", "lengths", x)):
        with pytest.raises(NotImplementedError, match=r"^op: \w+ is a device \(cupy\) array, but "
                           r"op runs on the host only so far; move it to the host first with "
                           r"Jagged.to_device\('cpu'\) or x.get\(\)$"):
            check()


def test_missing_cupy_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    with pytest.raises(ModuleNotFoundError, match=r"Jagged.to_device: the GPU backend needs "
                       r"the optional dependency 'cupy'; pip install 'arrow-sparse\[gpu\]'"):
        asp.Jagged.from_list([[1]]).to_device("cuda")


# ------------------------------------------------------------------ device checks
@pytest.mark.parametrize(("offsets", "problem", "position"), [
    ([-1, 2], "offsets must be non-negative", 0),
    ([0, 3, 1, 4], "offsets must be non-decreasing", 2),
    ([0, 2, 9], "offsets exceed the number of values", 2),
    ([0, 9, 1], "offsets exceed the number of values", 1),  # the smallest position wins
])
def test_bad_offsets_are_raised_by_the_next_check_or_at_once(
        cp: ModuleType, offsets: list[int], problem: str, position: int) -> None:
    values = dev(cp, np.arange(4.0))
    j = asp.Jagged(values, dev(cp, offsets))  # no synchronisation: nothing raised yet
    with pytest.raises(ValueError, match="^Jagged: " + problem + DEFERRED.format(position)):
        raised_later(cp)
    with pytest.raises(ValueError, match="^Jagged.validate: " + problem + AT_ONCE.format(position)):
        j.validate()
    asp.jagged_to_padded_dense(values, dev(cp, offsets), [2])  # sized: no synchronisation
    with pytest.raises(ValueError, match="^jagged_to_padded_dense: " + problem):
        raised_later(cp)
    with pytest.raises(ValueError, match="^jagged_to_padded_dense: " + problem
                       + AT_ONCE.format(position)):
        asp.jagged_to_padded_dense(values, dev(cp, offsets))  # reads the longest row


def test_offsets_checks_of_each_conversion(cp: ModuleType) -> None:
    bad = dev(cp, [0, 3, 1])
    decreasing = "offsets must be non-decreasing"
    asp.offsets_to_lengths(bad)
    with pytest.raises(ValueError, match="^offsets_to_lengths: " + decreasing):
        raised_later(cp)
    with pytest.raises(ValueError, match="^offsets_to_segment_ids: " + decreasing
                       + AT_ONCE.format(2)):
        asp.offsets_to_segment_ids(bad)
    with pytest.raises(ValueError, match="^dense_to_jagged: " + decreasing + AT_ONCE.format(2)):
        asp.dense_to_jagged(dev(cp, np.zeros((2, 3))), bad)
    two = [dev(cp, [0, 1, 3]), dev(cp, [0, 2, 1, 4])]  # the inner level decreases
    with pytest.raises(ValueError, match="^dense_to_jagged: " + decreasing + AT_ONCE.format(2)):
        asp.dense_to_jagged(dev(cp, np.zeros((2, 2, 4))), two)
    outer_beyond = [dev(cp, [0, 1, 5]), dev(cp, [0, 2, 3, 4])]  # 5 > 3 inner rows
    with pytest.raises(ValueError, match="^dense_to_jagged: offsets exceed the number of "
                       "values" + AT_ONCE.format(2)):
        asp.dense_to_jagged(dev(cp, np.zeros((2, 2, 4))), outer_beyond)


@pytest.mark.parametrize(("call", "message"), [
    (lambda cp: asp.lengths_to_offsets(dev(cp, [2, -1])),
     "lengths_to_offsets: lengths must be non-negative" + DEFERRED.format(1)),
    (lambda cp: asp.lengths_to_offsets(dev(cp, [1, 2**31 - 1]), dtype=np.int32),
     "lengths_to_offsets: lengths sum beyond the int32 range; use dtype=np.int64"
     + DEFERRED.format(1)),
    (lambda cp: asp.lengths_to_offsets(dev(cp, [2**58, 2**58, 1])),
     r"lengths_to_offsets: lengths sum to more than 2\*\*59 values" + DEFERRED.format(2)),
    (lambda cp: asp.lengths_to_offsets(dev(cp, [2**62, 2**62, 2**62])),
     r"lengths_to_offsets: lengths sum to more than 2\*\*59 values" + DEFERRED.format(0)),
    (lambda cp: asp.lengths_to_offsets(dev(cp, [1, 2**64 - 1], np.uint64)),
     "lengths_to_offsets: lengths must be non-negative" + DEFERRED.format(1)),  # wraps to -1
    (lambda cp: asp.Jagged.from_lengths(dev(cp, np.arange(5)), dev(cp, [2, 2])),
     "Jagged.from_lengths: lengths do not sum to the number of values" + DEFERRED.format(1)),
    (lambda cp: asp.segment_ids_to_lengths(dev(cp, [0, 2, 1]), num_segments=3),
     r"segment_ids_to_lengths: segment_ids must be sorted \(non-decreasing\)"
     + DEFERRED.format(2)),
    (lambda cp: asp.Jagged.from_segment_ids(dev(cp, np.arange(2)), dev(cp, [0, 4]), 3),
     "Jagged.from_segment_ids: segment_ids must be < num_segments" + DEFERRED.format(1)),
])
def test_deferred_checks_of_lengths_and_segment_ids(cp: ModuleType, call: Callable[..., Any],
                                                    message: str) -> None:
    call(cp)
    with pytest.raises(ArrowSparseError, match="^" + message):
        raised_later(cp)


@pytest.mark.parametrize(("call", "cls", "message"), [
    (lambda cp: asp.lengths_to_segment_ids(dev(cp, [2, -1, 1])), ValueError,
     "lengths_to_segment_ids: lengths must be non-negative" + AT_ONCE.format(1)),
    (lambda cp: asp.Jagged.from_padded(dev(cp, np.zeros((2, 2))), dev(cp, [1, 3])), ValueError,
     "Jagged.from_padded: lengths must be <= the padded length" + AT_ONCE.format(1)),
    (lambda cp: asp.segment_ids_to_offsets(dev(cp, [0, 1, 0])), ValueError,
     r"segment_ids_to_offsets: segment_ids must be sorted \(non-decreasing\)"
     + AT_ONCE.format(2)),
    (lambda cp: asp.segment_ids_to_lengths(dev(cp, [-1, 0])), IndexError,
     "segment_ids_to_lengths: segment_ids must be non-negative" + AT_ONCE.format(0)),
    (lambda cp: asp.segment_ids_to_lengths(dev(cp, [1, -1])), ValueError,  # as on the host
     r"segment_ids_to_lengths: segment_ids must be sorted \(non-decreasing\)"
     + AT_ONCE.format(1)),
    (lambda cp: asp.Jagged.from_segment_ids(dev(cp, np.arange(2)), dev(cp, [0, 1])[::-1]),
     ValueError, r"Jagged.from_segment_ids: segment_ids must be sorted \(non-decreasing\)"
     + AT_ONCE.format(1)),
])
def test_checks_are_raised_at_once_where_a_value_is_read(cp: ModuleType,
                                                         call: Callable[..., Any], cls: type,
                                                         message: str) -> None:
    with pytest.raises(cls, match="^" + message):
        call(cp)


def test_o1_checks_stay_on_the_host_with_the_host_messages(cp: ModuleType) -> None:
    with pytest.raises(TypeError, match="^Jagged: offsets must have an integer dtype, got "
                       "float64$"):
        asp.Jagged(dev(cp, np.arange(2)), dev(cp, [0.0, 2.0]))
    with pytest.raises(ValueError, match="offsets must have at least one element"):
        asp.offsets_to_lengths(dev(cp, [], np.int64))
    with pytest.raises(ValueError, match=r"validity has shape \(3,\) but 1 entries are needed"):
        asp.Jagged(dev(cp, np.arange(2)), dev(cp, [0, 2]), validity=dev(cp, np.ones(3, bool)))
    with pytest.raises(ValueError, match="Jagged.from_lengths: lengths sum to 0 but there are 2"):
        asp.Jagged.from_lengths(dev(cp, np.arange(2)), dev(cp, [], np.int64))
    with pytest.raises(ValueError, match="segment_ids has length 1 but there are 2 values"):
        asp.Jagged.from_segment_ids(dev(cp, np.arange(2)), dev(cp, [0]))
    with pytest.raises(ValueError, match="lengths has 1 entries but dense has 2 rows"):
        asp.Jagged.from_padded(dev(cp, np.zeros((2, 2))), dev(cp, [1]))
    with pytest.raises(ValueError, match=r"dense has 2 rows but offsets\[0\] describes 1"):
        asp.dense_to_jagged(dev(cp, np.zeros((2, 2))), dev(cp, [0, 1]))
    assert cp.stats.syncs == 0


def test_a_device_check_is_raised_once(cp: ModuleType) -> None:
    asp.offsets_to_lengths(dev(cp, [0, 3, 1]))
    with pytest.raises(ValueError, match="non-decreasing"):
        raised_later(cp)
    raised_later(cp)  # the word was reset
    cuda.check_errors("now")


def test_kernels_treat_rows_outside_the_values_as_padding(cp: ModuleType) -> None:
    # Offsets that were never checked (built without checks, or changed after their
    # check) cannot make the kernels read outside the buffers.
    values = dev(cp, np.arange(1.0, 4.0))
    j = asp.Jagged._trusted(values, dev(cp, [0, 2, 5]))  # row 1 ends beyond the 3 values
    got = j.to_padded(3, pad_value=-1)
    np.testing.assert_array_equal(got.get(), [[1, 2, -1], [-1, -1, -1]])
    with pytest.raises(ValueError, match="^Jagged.to_padded: offsets address values outside "
                       "the values buffer" + DEFERRED.format(2)):
        raised_later(cp)
    inner = asp.Jagged._trusted(values, dev(cp, [0, 1, 3]))
    nested = asp.Jagged._trusted(inner, dev(cp, [0, 4]))  # 4 rows of a 2-row level
    got = nested.to_padded([4, 2], pad_value=0)
    np.testing.assert_array_equal(got.get(), [[[1, 0], [2, 3], [0, 0], [0, 0]]])
    with pytest.raises(ValueError, match="offsets address values outside the values buffer"
                       + DEFERRED.format(3)):
        raised_later(cp)


# ------------------------------------------------------------------ synchronisations, launches
def batch(cp: ModuleType, rows: int) -> dict[str, Any]:
    rng = np.random.default_rng(rows)
    lengths = rng.integers(0, 4, size=rows)
    offsets = np.concatenate([[2], 2 + np.cumsum(lengths)])
    values = rng.standard_normal(int(offsets[-1]))
    ids = np.repeat(np.arange(rows), lengths)
    return {"lengths": dev(cp, lengths), "offsets": dev(cp, offsets), "values": dev(cp, values),
            "ids": dev(cp, ids), "rows": rows, "jagged": asp.Jagged(dev(cp, values),
                                                                   dev(cp, offsets)),
            "dense": dev(cp, np.zeros((rows, 3))), "flat": dev(cp, values[2:])}


def _embedding(b: dict[str, Any]) -> dict[str, Any]:
    """Embedding inputs of a batch, made on first use.

    A table of one row per segment, a gradient row per id, the ids as bags, and a
    coalesced gradient of every row.
    """
    if "embedding" not in b:
        table = b["dense"] + 1.0
        rows = _backend.module_of(table).arange(b["rows"])
        b["embedding"] = {"table": table, "grad": b["flat"][:, None] * table[:1],
                          "bags": asp.Jagged._trusted(b["ids"], b["offsets"] - 2),
                          "coalesced": asp.embedding.SparseGrad._coalesced(rows, table.copy())}
    return b["embedding"]  # type: ignore[no-any-return]


#: Launches of the operations that may make more than 25 (none grows with the batch).
LAUNCHES = {"embedding.lookup_backward": 40, "SparseGrad.coalesce": 30,
            # forward, backward and update (views and allocations count here)
            "embedding.train_step": 35, "embedding.train_step return_grad": 45,
            # a KeyedJagged (11 launches) then, per key run, bucket or group, slices
            # and a concatenation or a view: launches grow with those, not the batch
            "KeyedJagged.permute": 30, "KeyedJagged.concat": 45,
            "KeyedJagged.regroup": 40, "KeyedJagged.block_bucketize": 55,
            **SPARSE_LAUNCHES, **MASKED_LAUNCHES}

#: Each conversion on a device batch, and the synchronisations it documents.
SYNCS: dict[str, tuple[Callable[[dict[str, Any]], Any], int]] = {
    "lengths_to_offsets": (lambda b: asp.lengths_to_offsets(b["lengths"]), 0),
    "offsets_to_lengths": (lambda b: asp.offsets_to_lengths(b["offsets"]), 0),
    "lengths_to_segment_ids": (lambda b: asp.lengths_to_segment_ids(b["lengths"]), 1),
    "offsets_to_segment_ids": (lambda b: asp.offsets_to_segment_ids(b["offsets"]), 1),
    "segment_ids_to_lengths sized": (
        lambda b: asp.segment_ids_to_lengths(b["ids"], num_segments=b["rows"]), 0),
    "segment_ids_to_lengths": (lambda b: asp.segment_ids_to_lengths(b["ids"]), 1),
    "segment_ids_to_offsets sized": (
        lambda b: asp.segment_ids_to_offsets(b["ids"], b["rows"]), 0),
    "segment_ids_to_offsets": (lambda b: asp.segment_ids_to_offsets(b["ids"]), 1),
    "jagged_to_padded_dense sized": (
        lambda b: asp.jagged_to_padded_dense(b["values"], b["offsets"], 3), 0),
    "jagged_to_padded_dense": (lambda b: asp.jagged_to_padded_dense(b["values"], b["offsets"]),
                               1),
    "dense_to_jagged": (lambda b: asp.dense_to_jagged(b["dense"], b["offsets"]), 1),
    "Jagged": (lambda b: asp.Jagged(b["values"], b["offsets"]), 0),
    "Jagged.from_lengths": (lambda b: asp.Jagged.from_lengths(b["flat"], b["lengths"]), 0),
    "Jagged.from_segment_ids sized": (
        lambda b: asp.Jagged.from_segment_ids(b["flat"], b["ids"], b["rows"]), 0),
    "Jagged.from_padded": (lambda b: asp.Jagged.from_padded(b["dense"], b["lengths"]), 1),
    "Jagged.to_padded sized": (lambda b: b["jagged"].to_padded(3), 0),
    "Jagged.to_padded": (lambda b: b["jagged"].to_padded(), 1),
    "Jagged.lengths": (lambda b: b["jagged"].lengths, 0),
    "Jagged.segment_ids": (lambda b: b["jagged"].segment_ids, 1),
    "Jagged.max_length": (lambda b: b["jagged"].max_length, 1),
    "Jagged.validate": (lambda b: b["jagged"].validate(), 0),  # the error word only
    "Jagged[a:b]": (lambda b: b["jagged"][1:3], 0),
    "Jagged.to_device": (lambda b: b["jagged"].to_device("cuda:1"), 0),
    # embedding (pooled lookups synchronise where the segment family's gather kernel does)
    "embedding.lookup": (lambda b: asp.embedding.lookup(_embedding(b)["table"], b["ids"]), 0),
    "embedding.lookup_backward": (lambda b: asp.embedding.lookup_backward(
        _embedding(b)["table"], _embedding(b)["bags"], num_embeddings=b["rows"]), 1),
    "embedding.lookup_backward_weights": (lambda b: asp.embedding.lookup_backward_weights(
        _embedding(b)["table"], _embedding(b)["table"], _embedding(b)["bags"]), 0),
    "SparseGrad.coalesce": (lambda b: asp.embedding.SparseGrad(
        b["ids"], _embedding(b)["grad"]).coalesce(), 1),
    "embedding.sgd": (lambda b: asp.embedding.sgd(_embedding(b)["table"],
                                                  _embedding(b)["coalesced"], 0.1), 0),
    "embedding.train_step": (lambda b: asp.embedding.train_step(
        _embedding(b)["table"], _embedding(b)["bags"], lambda y: y, lr=0.1), 0),
    "embedding.train_step return_grad": (lambda b: asp.embedding.train_step(
        _embedding(b)["table"], _embedding(b)["bags"], _embedding(b)["table"].copy(),
        lr=0.1, return_grad=True), 1),
    # transforms (the Jagged of ids holds null values where the values are negative)
    "hash_bucket": (lambda b: asp.hash_bucket(_ids(b), 100), 0),
    "bucketize": (lambda b: asp.bucketize(b["jagged"], b["values"][:3].cumsum()), 0),
    "categorify": (lambda b: asp.categorify(_ids(b), asp.fit_vocabulary(np.arange(3))), 1),
    "value_counts": (lambda b: asp.value_counts(_ids(b)), 2),
    "fit_vocabulary": (lambda b: asp.fit_vocabulary(_ids(b)), 3),
    "pad_or_truncate": (lambda b: asp.pad_or_truncate(_ids(b), 3), 0),
    "drop_nulls": (lambda b: asp.drop_nulls(_ids(b)), 1),
    "fill_null": (lambda b: asp.fill_null(_ids(b), 0), 0),
    "fill_null empty_null_rows": (
        lambda b: asp.fill_null(_ids(b), 0, empty_null_rows=True), 1),
    "length_stats": (lambda b: asp.length_stats(_ids(b)), 1),
    # jagged arithmetic (elementwise.py)
    "jagged_ufunc": (lambda b: asp.elementwise.ufunc.jagged_ufunc(np.add, b["jagged"], 1), 0),
    "array_ufunc": (lambda b: np.exp(b["jagged"]), 0),
    "Jagged * Jagged": (lambda b: b["jagged"] * b["jagged"], 0),
    "Jagged * per-row": (lambda b: b["jagged"] * b["lengths"], 0),
    "Jagged * padded": (lambda b: b["jagged"] * b["dense"], 0),
    "map_values": (lambda b: b["jagged"].map_values(lambda x: x * 2), 0),
    "segment_softmax": (lambda b: asp.segment_softmax(b["jagged"]), 0),
    "segment_softmax segment_ids": (
        lambda b: asp.segment_softmax(b["flat"], segment_ids=b["ids"]), 1),
    "jagged_softmax": (lambda b: asp.jagged_softmax(b["values"], b["offsets"], 2), 0),
    "segment_cumsum": (lambda b: asp.segment_cumsum(b["flat"], lengths=b["lengths"]), 0),
    "jagged_dense_elementwise_add": (
        lambda b: asp.jagged_dense_elementwise_add(b["values"], [b["offsets"]], b["dense"]), 0),
    "jagged_dense_elementwise_add dense": (lambda b: asp.jagged_dense_elementwise_add(
        b["jagged"], None, b["dense"], output="dense"), 0),
    "jagged_dense_elementwise_add_jagged_output": (
        lambda b: asp.jagged_dense_elementwise_add_jagged_output(b["jagged"], None, b["dense"]),
        0),
    "jagged_dense_elementwise_mul": (
        lambda b: asp.jagged_dense_elementwise_mul(b["values"], [b["offsets"]], b["dense"]), 0),
    "jagged_dense_bmm": (lambda b: asp.jagged_dense_bmm(
        b["values"].reshape(-1, 1), b["offsets"], b["dense"].reshape(-1, 1, 3)), 0),
    "jagged_jagged_bmm": (lambda b: asp.jagged_jagged_bmm(
        b["values"].reshape(-1, 1), b["values"].reshape(-1, 1), b["offsets"]), 0),
    "index_select": (lambda b: asp.index_select(b["jagged"], b["ids"]), 1),
    "jagged_index_select": (lambda b: asp.jagged_index_select(b["flat"], b["lengths"], b["ids"]),
                            1),
    "list_slice": (lambda b: asp.list_slice(b["jagged"], 1, -1), 1),
    "truncate": (lambda b: asp.truncate(b["jagged"], 2), 1),
    "jagged_unique": (lambda b: asp.jagged_unique(b["jagged"]), 1),
    "repeat": (lambda b: asp.repeat(b["lengths"], b["jagged"]), 0),
    "expand_into_jagged": (lambda b: asp.expand_into_jagged(b["lengths"], b["offsets"]), 1),
    # KeyedJagged (two keys over the batch's rows, weighted, every third row null)
    "KeyedJagged": (lambda b: asp.KeyedJagged(["a"], b["flat"], b["lengths"]), 0),
    "KeyedJagged offsets": (lambda b: asp.KeyedJagged(["a"], b["values"], offsets=b["offsets"]),
                            1),
    "KeyedJagged[]": (lambda b: _keyed(b)["b"], 0),
    "KeyedJagged.weights_of": (lambda b: _keyed(b).weights_of("b"), 0),
    "KeyedJagged.to_dict": (lambda b: _keyed(b).to_dict(), 0),
    "KeyedJagged.offset_per_key": (lambda b: _keyed(b).offset_per_key(), 0),
    "KeyedJagged.length_per_key": (lambda b: _keyed(b).length_per_key(), 0),
    "KeyedJagged.to_device": (lambda b: _keyed(b).to_device("cuda:1"), 0),
    "KeyedJagged.permute": (lambda b: _keyed(b).permute(["b", "a"]), 1),
    "KeyedJagged.split": (lambda b: _keyed(b).split([1, 1]), 1),
    "KeyedJagged.concat": (lambda b: asp.KeyedJagged.concat([_keyed(b), _keyed(b, ("c",))]),
                           1),
    "KeyedJagged.regroup": (lambda b: asp.KeyedJagged.regroup(_keyed(b), [["b"], ["b", "a"]]),
                            1),
    "KeyedJagged.block_bucketize": (lambda b: _keyed(b).block_bucketize(
        4, 3, sequence=True, bucketize_pos=True), 2),
    "KeyedJagged.to_padded_dict sized": (lambda b: _keyed(b).to_padded_dict(3), 0),
    "KeyedJagged.to_padded_dict": (lambda b: _keyed(b).to_padded_dict(), 1),
    # segment reductions, gather and scatter (tests/segment/_helpers.py)
    **SEGMENT_SYNCS,
    # sparse tensors and masked reductions (tests/sparse/, tests/masked/)
    **SPARSE_SYNCS, **MASKED_SYNCS,
}


def _ids(b: dict[str, Any]) -> asp.Jagged:
    """A Jagged of int ids with null rows and null values, on the batch's device."""
    values = b["values"]
    return asp.Jagged._trusted((values * 3).astype(np.int64), b["offsets"], b["lengths"] != 1,
                               values > 0)


def _keyed(b: dict[str, Any], keys: tuple[str, ...] = ("a", "b")) -> asp.KeyedJagged:
    """A KeyedJagged of weighted ids, one copy of the batch's rows per key, on its device.

    Its empty rows are null rows.
    """
    cp = _backend.module_of(b["flat"])
    n = len(keys)
    ids = (b["flat"] * 4).astype(np.int64) % 50
    return asp.KeyedJagged._new(keys, cp.concatenate([ids] * n),
                                cp.concatenate([b["lengths"]] * n),
                                cp.concatenate([b["flat"]] * n),
                                cp.concatenate([b["lengths"] > 0] * n), b["rows"])


@pytest.mark.parametrize("name", SYNCS)
def test_synchronisations_are_the_documented_ones_and_launches_do_not_grow(
        cp: ModuleType, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    call, syncs = SYNCS[name]
    waits: list[str] = []
    check = cuda.check_errors

    def recording(func: str, *, wait: bool = True) -> None:
        if wait:
            waits.append(func)
        check(func, wait=wait)

    for module in (cuda, cuda_transforms):  # the launchers that check after a sync
        monkeypatch.setattr(module, "check_errors", recording)
    call(batch(cp, 5))  # once per device first: the launchers' shared empty arrays
    launches = []
    for rows in (5, 300):
        data = batch(cp, rows)
        cp.stats.reset()
        waits.clear()
        result = call(data)
        if name == "Jagged.validate":
            assert waits == [name]  # it waits for the error word, by design
        else:
            assert cp.stats.syncs == syncs, cp.stats.log
            assert len(waits) == syncs  # a read of data also raises the device checks
        for array in (result if isinstance(result, tuple) else (result,)):
            if isinstance(array, np.ndarray):
                raise AssertionError(f"{name} answered a host array for device inputs")
        launches.append(cp.stats.launches)
    assert launches[0] == launches[1], "launches grow with the batch"
    assert launches[0] <= LAUNCHES.get(name, 25)


def test_every_conversion_is_covered_by_the_synchronisation_table() -> None:
    assert set(asp.convert.__all__) <= {key.split(" ")[0] for key in SYNCS}


# ------------------------------------------------------------------ Jagged on the device
def test_to_device_moves_every_buffer_and_back(cp: ModuleType) -> None:
    arr = pa.array([[[1, None], None, [3]], None, [[], [4, 5]]],
                   pa.list_(pa.large_list(pa.int16()))).slice(0)
    host = asp.Jagged.from_arrow(arr)
    on = host.to_device("cuda")
    assert (on.device, on.xp, host.device, host.xp) == ("cuda:0", cp, "cpu", np)
    parts = [on.values.values, on.values.offsets, on.offsets, on.validity,
             on.values.validity, on.values.values_validity]
    assert all(_backend.is_cupy_array(p) for p in parts)
    assert on.to_device("cuda") is on and on.to_device("cuda:0") is on
    assert host.to_device("cpu") is host
    back = on.to_device("cpu")
    assert back.to_arrow().equals(arr) and back.to_list() == arr.to_pylist()
    assert on.to_list() == arr.to_pylist()
    other = on.to_device("cuda:1")
    assert other.device == "cuda:1" and other.offsets.device.id == 1
    assert other.values.values.device.id == 1 and other.to_list() == arr.to_pylist()
    assert repr(on) == ("Jagged([[[1, None], None, [3]], None, [[], [4, 5]]], dtype=int16, "
                        "offsets=int32, device='cuda:0')")


@pytest.mark.parametrize(("device", "cls", "match"), [
    ("gpu", ValueError, "device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
    ("cpu:0", ValueError, "device must be 'cpu', 'cuda' or 'cuda:N', got 'cpu:0'"),
    (0, TypeError, "device must be 'cpu', 'cuda' or 'cuda:N', got 0"),
])
def test_to_device_errors(device: Any, cls: type, match: str) -> None:
    with pytest.raises(cls, match="^Jagged.to_device: " + match):
        asp.Jagged.from_list([[1]]).to_device(device)


def test_from_dlpack_wraps_host_producers_without_copies() -> None:
    torch = pytest.importorskip("torch")
    values, offsets = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 1, 3], dtype=torch.int32)
    valid = torch.tensor([True, False])
    j = asp.Jagged.from_dlpack(values, offsets, valid)
    assert j.to_list() == [[1.0], None] and j.device == "cpu"
    values[0] = 5.0
    assert j.values[0] == 5.0  # the tensor's memory
    out_values, out_offsets = j.to_dlpack()
    assert out_values is j.values and out_offsets is j.offsets
    assert torch.from_dlpack(out_offsets).data_ptr() == offsets.data_ptr()
    nested = asp.Jagged.from_dlpack(torch.arange(4), [torch.tensor([0, 1, 2]),
                                                      torch.tensor([0, 3, 3])],
                                    values_validity=torch.tensor([True, True, False, True]))
    assert nested.to_list() == [[[0, 1, None]], [[]]]
    leaf, levels = nested.to_dlpack()
    assert isinstance(levels, tuple) and len(levels) == 2 and leaf is nested.leaf_values
    assert asp.Jagged.from_dlpack(np.arange(2), np.array([0, 2])).to_list() == [[0, 1]]


def test_from_dlpack_reads_device_producers_on_their_device(cp: ModuleType) -> None:
    values = np.arange(4.0)
    j = asp.Jagged.from_dlpack(DeviceBuffer(values, 1), DeviceBuffer(np.array([0, 1, 4]), 1))
    assert j.device == "cuda:1" and j.values._a is values  # no copy
    assert j.to_list() == [[0.0], [1.0, 2.0, 3.0]]
    x = dev(cp, [0, 2])
    assert asp.Jagged.from_dlpack(dev(cp, [1, 2]), x).offsets is x
    values_out, offsets_out = j.to_dlpack()
    assert values_out is j.values and offsets_out.__dlpack_device__() == (2, 1)


@pytest.mark.parametrize(("values", "offsets", "cls", "match"), [
    ([1, 2], np.array([0, 2]), TypeError,
     r"^Jagged.from_dlpack: values must support DLPack \(__dlpack__ and __dlpack_device__\), "
     "got list$"),
    (np.arange(2), [], TypeError, "offsets must be an array or a non-empty list of arrays"),
    (np.arange(2), [np.array([0, 1]), 3], TypeError, r"offsets\[1\] must support DLPack"),
    (np.arange(2), np.array([0, 3]), ValueError, "^Jagged: offsets exceed the number of values"),
])
def test_from_dlpack_errors(values: Any, offsets: Any, cls: type, match: str) -> None:
    with pytest.raises(cls, match=match):
        asp.Jagged.from_dlpack(values, offsets)


def test_from_dlpack_turns_a_refused_export_into_a_type_error() -> None:
    class Refusing:
        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
            raise BufferError("Can only use DLPack on arrays with no nulls.")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    with pytest.raises(TypeError, match=r"^Jagged.from_dlpack: offsets could not be read "
                       r"through DLPack \(Can only use DLPack on arrays with no nulls.\)$"):
        asp.Jagged.from_dlpack(np.arange(2), Refusing())


def test_from_dlpack_refuses_memory_that_is_neither_host_nor_cuda() -> None:
    class OnAnotherDevice:
        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("not read")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (14, 0)  # kDLOneAPI

    with pytest.raises(TypeError, match=r"^Jagged.from_dlpack: values lives on DLPack device "
                       r"type 14; only host \(1\) and CUDA \(2, 13\) memory can be read"):
        asp.Jagged.from_dlpack(OnAnotherDevice(), np.array([0]))


def test_a_jagged_is_not_one_dlpack_tensor() -> None:
    j = asp.Jagged.from_list([[1]])
    with pytest.raises(TypeError, match=r"several buffers \(values, offsets\), not one DLPack "
                       r"tensor; export them with values, offsets = j.to_dlpack\(\)"):
        np.from_dlpack(j)


def device_calls(cp: ModuleType) -> dict[str, Callable[[asp.Jagged], Any]]:
    """One call of every public member of Jagged on a device instance."""
    ones = dev(cp, [1, 1, 1])
    return {
        "values": lambda j: j.values, "offsets": lambda j: j.offsets,
        "validity": lambda j: j.validity, "values_validity": lambda j: j.values_validity,
        "num_rows": lambda j: j.num_rows, "lengths": lambda j: j.lengths,
        "segment_ids": lambda j: j.segment_ids, "max_length": lambda j: j.max_length,
        "null_count": lambda j: j.null_count, "num_levels": lambda j: j.num_levels,
        "leaf_values": lambda j: j.leaf_values, "dtype": lambda j: j.dtype,
        "xp": lambda j: j.xp, "device": lambda j: j.device,
        "flat_values": lambda j: j.flat_values(), "to_device": lambda j: j.to_device("cpu"),
        "to_dlpack": lambda j: j.to_dlpack(), "to_list": lambda j: j.to_list(),
        "to_padded": lambda j: j.to_padded(), "validate": lambda j: j.validate(),
        "from_offsets": lambda j: asp.Jagged.from_offsets(j.values, j.offsets),
        "from_lengths": lambda j: asp.Jagged.from_lengths(j.values, ones),
        "from_segment_ids": lambda j: asp.Jagged.from_segment_ids(j.values, j.offsets[:3]),
        "from_padded": lambda j: asp.Jagged.from_padded(j.to_padded(), j.lengths),
        "from_dlpack": lambda j: asp.Jagged.from_dlpack(j.values, j.offsets),
        "from_list": lambda j: asp.Jagged.from_list([[1]]).to_device("cuda"),
        "from_arrow": lambda j: asp.Jagged.from_arrow(pa.array([[1]])).to_device("cuda"),
        "__getitem__": lambda j: (j[0], j[1], j[0:2]), "__len__": len,
        "__iter__": list, "__repr__": repr,
        "map_values": lambda j: j.map_values(lambda x: x * 2),
        "__array_ufunc__": lambda j: np.negative(j),
        **{name: (lambda j, name=name: getattr(j, name)(1) if name not in
                  ("__neg__", "__pos__", "__abs__") else getattr(j, name)())
           for name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                        "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__",
                        "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__",
                        "__abs__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")},
    }


#: Members with no device path yet, and the error they raise there.
HOST_ONLY = {
    "to_arrow": lambda j: j.to_arrow(),
    "to_csr": lambda j: j.to_csr(4),
}


def test_every_jagged_member_works_on_the_device_or_says_it_is_host_only(
        cp: ModuleType) -> None:
    public = {name for name, _ in inspect.getmembers(asp.Jagged) if not name.startswith("_")}
    calls = device_calls(cp)
    assert public <= set(calls) | set(HOST_ONLY), sorted(public - set(calls) - set(HOST_ONLY))
    j = asp.Jagged.from_arrow(pa.array([[1, None], None, [3]], pa.list_(pa.int64())))
    j = j.to_device("cuda")
    for name, call in calls.items():
        result = call(j)
        for part in result if isinstance(result, tuple) else (result,):
            assert not isinstance(part, np.ndarray), f"{name} answered a host array"
    for name, call in HOST_ONLY.items():
        with pytest.raises(NotImplementedError, match=rf"^Jagged\.{name}: .*(on the device|on "
                           r"cuda:0|in host memory)"):
            call(j)
    cuda.check_errors("test")  # nothing was recorded


@pytest.mark.hypothesis
@given(list_arrays(levels=2, null_values=True, null_ranges=True), st.integers(0, 3),
       st.integers(0, 3))
def test_device_jagged_matches_the_host(case: tuple[pa.Array, list[Any]], l0: int,
                                        l1: int) -> None:
    # Sliced arrays, null rows over arbitrary ranges, null elements, two levels.
    arr, _ = case
    host = asp.Jagged.from_arrow(arr)
    width = max(host.values.lengths.tolist(), default=0)  # null rows' ranges included

    def answers(j: asp.Jagged, host_array: Callable[[Any], Any]) -> list[Any]:
        inner = j.values
        back = asp.Jagged.from_padded(inner.to_padded(width), inner.lengths)
        return [j.max_length, j.null_count, host_array(j.lengths).tolist(),
                host_array(j.segment_ids).tolist(), host_array(j.to_padded()).tolist(),
                host_array(j.to_padded([l0, l1], pad_value=1)).tolist(), inner.max_length,
                j.to_list(), back.to_list(), repr(j).replace(", device='cuda:0'", "")]

    expected = answers(host, np.asarray)
    with emulated_cupy():
        got = answers(host.to_device("cuda"), _backend.to_host)
        cuda.check_errors("test")
    assert got == expected


# ------------------------------------------------------------------ on a real GPU
@pytest.mark.gpu
def test_torch_cuda_tensors_pass_without_copies() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    values = torch.arange(6.0, device="cuda")
    offsets = torch.tensor([0, 2, 6], device="cuda")
    j = asp.Jagged.from_dlpack(values, offsets)
    assert j.device == "cuda:0" and j.values.data.ptr == values.data_ptr()
    padded = torch.from_dlpack(j.to_padded())
    assert padded.tolist() == [[0.0, 1.0, 0.0, 0.0], [2.0, 3.0, 4.0, 5.0]]
