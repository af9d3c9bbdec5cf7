"""DLPack both ways: tensors read from a file handed to NumPy and torch without a copy (the
address inside the file's mapping), every DLPack type, the copies and refusals, torch
producers read back (a ``state_dict`` saved and loaded bit for bit)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import dlpack
from hurray_decl.hurray.tables import storage

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(34)
NUMPY_READS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
               "float64", "complex64", "complex128"}
"""The DLPack types NumPy's own consumer takes (it has no bfloat16, float8, float6 or float4)."""


def random_values(element: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random valid values of ``element`` (every bit pattern but float8_e8m0's 0x00 and 0xFF, HE-26)."""
    bits = storage.element(element).bits
    count = int(np.prod(shape))
    if bits < 8:
        codes = RNG.integers(0, 1 << bits, count, dtype=np.uint8)
        return codes.view(storage.value_dtype(element)).reshape(shape)
    if element == "bool":
        return RNG.integers(0, 2, count).astype(bool).reshape(shape)
    raw = RNG.integers(0, 256, count * bits // 8, dtype=np.uint8)
    if element == "float8_e8m0":
        raw = np.clip(raw, 1, 254).astype(np.uint8)
    return raw.view(storage.value_dtype(element)).reshape(shape)


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    """A file holding a (331, 307) tensor (10^5 elements, odd shape) of every DLPack type, a
    column-major one and a quantized one, loaded (its buffers view the file's mapping)."""
    path = tmp_path_factory.mktemp("dlpack") / "all.hrry"
    source = {name: random_values(name, (331, 307)) for name in dlpack.TYPES}
    tensors: dict[str, object] = dict(source)
    tensors["column"] = hd.Tensor.from_numpy(source["float32"][:40, :31], layout="column-major")
    tensors["q"] = hd.quantize(np.linspace(-1, 1, 4 * 96).reshape(4, 96), "per_block_affine", block_size=32)
    hd.save(path, tensors)
    return source, hd.load(path)


def mapping_range(tensor: hd.Tensor) -> tuple[int, int]:
    """The address range of the file mapping a loaded tensor's data buffer views."""
    whole = tensor.buffers[0].obj
    start = np.frombuffer(whole, np.uint8).ctypes.data
    return start, start + len(whole)


@pytest.mark.parametrize("element", sorted(NUMPY_READS))
def test_numpy_reads_the_mapping_itself(mapped, element):
    source, loaded = mapped
    values = np.from_dlpack(loaded[element])
    assert values.dtype == source[element].dtype and values.tobytes() == source[element].tobytes()
    low, high = mapping_range(loaded[element])
    assert low <= values.ctypes.data < high and not values.flags.writeable  # DLPACK_FLAG_BITMASK_READ_ONLY


ML_DTYPES = {"bfloat16", "float8_e4m3", "float8_e5m2", "float8_e8m0"}
"""The DLPack types NumPy's consumer refuses (``np.from_dlpack`` of kDLBfloat, kDLFloat8_*:
"Unsupported dtype in DLTensor.", NumPy 2.4.6 and every release before it; ml_dtypes arrays are
no DLPack producers either), which ``np.asarray`` gives as ml_dtypes types, from the mapping."""


@pytest.mark.parametrize("element", sorted(ML_DTYPES | NUMPY_READS))
def test_asarray_views_the_mapping(mapped, element):
    """``np.asarray(t)`` of every plain type of a byte or more: the stored bytes, not copied
    (read-only, the address inside the mapping), bfloat16 and float8 as ml_dtypes types;
    ``copy=True`` and another dtype give a copy."""
    source, loaded = mapped
    values = np.asarray(loaded[element])
    assert values.dtype == source[element].dtype and values.tobytes() == source[element].tobytes()
    low, high = mapping_range(loaded[element])
    assert low <= values.ctypes.data < high and not values.flags.writeable
    own = np.array(loaded[element], copy=True)
    assert own.flags.writeable and not low <= own.ctypes.data < high and own.tobytes() == values.tobytes()
    column = np.asarray(loaded["column"])
    column_low, column_high = mapping_range(loaded["column"])
    assert column.flags.f_contiguous and column_low <= column.ctypes.data < column_high
    assert np.ascontiguousarray(column).tobytes() == np.ascontiguousarray(source["float32"][:40, :31]).tobytes()
    wide = np.asarray(loaded["float16"], dtype=np.float32)
    assert wide.dtype == np.float32 and wide.tobytes() == source["float16"].astype(np.float32).tobytes()


@pytest.mark.parametrize("element", sorted(ML_DTYPES))
def test_numpy_consumer_has_no_bfloat16_or_float8_and_the_values_go_around_it(mapped, element):
    """The tensor exports its DLPack type (kDLBfloat, kDLFloat8_*), which torch reads from the
    mapping; NumPy's consumer refuses those codes, or gives the values where a NumPy release
    reads them; the bytes as uint8/uint16 through ``np.from_dlpack`` of ``np.asarray(t)``'s view
    are the mapping too."""
    source, loaded = mapped
    low, high = mapping_range(loaded[element])
    try:
        values = np.from_dlpack(loaded[element])
    except RuntimeError as err:  # NumPy <= 2.4.6: no bfloat16 or float8 in its DLPack consumer
        assert "Unsupported dtype" in str(err)
    else:
        assert values.tobytes() == source[element].tobytes() and low <= values.ctypes.data < high
    carrier = np.asarray(loaded[element]).view(np.uint16 if element == "bfloat16" else np.uint8)
    raw = np.from_dlpack(carrier)
    assert low <= raw.ctypes.data < high and raw.view(source[element].dtype).tobytes() == source[element].tobytes()


def test_a_column_major_tensor_is_handed_over_with_its_strides(mapped):
    source, loaded = mapped
    values = np.from_dlpack(loaded["column"])
    assert values.tobytes() == source["float32"][:40, :31].tobytes() and values.flags.f_contiguous
    low, high = mapping_range(loaded["column"])
    assert low <= values.ctypes.data < high


@pytest.mark.parametrize("element", sorted(dlpack.TYPES))
def test_every_type_comes_back_through_from_dlpack(mapped, element):
    """Our own consumer reads what our producer exports, the packed float6/float4 included."""
    source, loaded = mapped
    back = hd.Tensor.from_dlpack(loaded[element], name="x")
    assert back.type_name == element and back.numpy().tobytes() == source[element].tobytes()


def test_copies_and_refusals(mapped):
    _, loaded = mapped
    quantized = np.from_dlpack(loaded["q"])  # dequantized, a copy
    assert np.array_equal(quantized, loaded["q"].numpy()) and quantized.flags.writeable
    assert np.array_equal(np.from_dlpack(loaded["bool"]), loaded["bool"].numpy())  # DLPack bool: a byte a value
    for name in ("q", "bool"):
        with pytest.raises(HurrayDeclError) as caught:
            loaded[name].__dlpack__(max_version=(1, 0), copy=False)
        assert caught.value.code == "CV-DLP-02"
    with pytest.raises(HurrayDeclError) as caught:  # read-only memory cannot be marked so without a version
        loaded["float32"].__dlpack__(copy=False)
    assert caught.value.code == "CV-DLP-02"
    legacy = hd.Tensor.from_dlpack(loaded["float32"].__dlpack__())  # an unversioned capsule: a copy
    assert legacy.numpy().tobytes() == loaded["float32"].numpy().tobytes()
    with pytest.raises(HurrayDeclError) as caught:
        hd.Tensor.from_numpy(np.arange(-8, 8, dtype=np.int8), type="int4").__dlpack__(max_version=(1, 0))
    assert caught.value.code == "CV-DLP-01"


class Producer:
    """A DLPack producer on a device we do not read, or handing out a capsule we cannot read."""

    def __init__(self, device: tuple[int, int], capsule: object = None) -> None:
        self.device, self.capsule = device, capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: object) -> object:
        return self.capsule


def test_imports_without_a_hurray_form_are_refused():
    with pytest.raises(HurrayDeclError) as caught:
        hd.Tensor.from_dlpack(Producer((2, 0)))
    assert caught.value.code == "CV-DLP-03"
    with pytest.raises(HurrayDeclError) as caught:
        hd.Tensor.from_dlpack(Producer((1, 0), "not a capsule"))
    assert caught.value.code == "CV-DLP-03"


def test_the_mapping_outlives_the_tensor_while_a_consumer_holds_it(tmp_path):
    values = RNG.standard_normal((1000, 7)).astype(np.float32)
    hd.save(tmp_path / "m.hrry", {"w": values})
    held = np.from_dlpack(hd.load(tmp_path / "m.hrry")["w"])
    gc.collect()
    assert held.tobytes() == values.tobytes()


def test_the_package_does_not_import_torch():
    code = ("import sys, numpy as np, hurray_decl as hd; t = hd.Tensor.from_numpy(np.arange(3.0)); "
            "np.from_dlpack(t); hd.Tensor.from_dlpack(np.arange(2)); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


# ---------------------------------------------------------------- torch

TORCH_TYPES = {"bfloat16", "float8_e4m3", "float8_e5m2", "float8_e8m0", "bool"} | NUMPY_READS
"""The types torch's consumer takes as DLPack types (not float6, nor float4 with one lane)."""


@pytest.mark.parametrize("element", sorted(TORCH_TYPES))
def test_torch_reads_every_type_it_has_from_the_mapping(mapped, element):
    torch = pytest.importorskip("torch")
    source, loaded = mapped
    tensor = torch.from_dlpack(loaded[element])
    if element != "bool":  # DLPack's bool is a byte a value: a copy of Hurray's packed bits
        low, high = mapping_range(loaded[element])
        assert low <= tensor.data_ptr() < high
    assert tuple(tensor.shape) == source[element].shape
    raw = tensor.view(torch.uint8) if element != "bool" else tensor.to(torch.uint8)
    assert raw.numpy().tobytes() == source[element].view(np.uint8).tobytes()


def test_to_torch_dequantizes_and_converts(mapped):
    torch = pytest.importorskip("torch")
    _, loaded = mapped
    half = loaded["q"].to_torch(dtype=torch.float16)
    assert half.dtype == torch.float16 and np.array_equal(half.numpy(), loaded["q"].numpy().astype(np.float16))
    shared = loaded["bfloat16"].to_torch()  # not a copy: the same bytes of the mapping
    assert shared.dtype == torch.bfloat16 and shared.data_ptr() == torch.from_dlpack(loaded["bfloat16"]).data_ptr()
    own = loaded["bfloat16"].to_torch(copy=True)  # writable, the values the same
    own[0, 0] = 1
    low, high = mapping_range(loaded["bfloat16"])
    assert not low <= own.data_ptr() < high and torch.equal(own.view(torch.int16)[1:], shared.view(torch.int16)[1:])


def test_a_state_dict_is_saved_and_loaded_bit_for_bit(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(34)
    model = torch.nn.Sequential(torch.nn.Embedding(331, 307), torch.nn.Linear(307, 13), torch.nn.LayerNorm(13))
    model[1].to(torch.bfloat16)
    model[2].to(torch.float16)
    model.register_buffer("ids", torch.arange(-50, 50, dtype=torch.int64).reshape(10, 10))
    model.register_buffer("mask", torch.tensor([True, False, True]))
    model.register_buffer("transposed", torch.randn(9, 5).t())  # not contiguous: strides come through DLPack
    state = model.state_dict()
    hd.save(tmp_path / "m.hrry", state)
    loaded = hd.load(tmp_path / "m.hrry")
    assert list(loaded) == list(state)
    for name, tensor in state.items():
        back = loaded[name].to_torch()
        assert back.dtype == tensor.dtype and back.shape == tensor.shape, name
        assert torch.equal(back.contiguous().view(torch.uint8), tensor.contiguous().view(torch.uint8)), name


def test_torch_float4_pairs_are_read_as_float4(mapped):
    torch = pytest.importorskip("torch")
    codes = RNG.integers(0, 256, (3, 8), dtype=np.uint8)
    pairs = torch.from_numpy(codes.copy()).view(torch.float4_e2m1fn_x2)
    back = hd.Tensor.from_dlpack(pairs)
    assert back.type_name == "float4_e2m1" and back.shape == (3, 16)
    expected = np.stack([codes & 15, codes >> 4], axis=-1).reshape(3, 16)  # element 2k in the low nibble
    assert np.array_equal(back.numpy().view(np.uint8), expected)


def test_a_torch_tensor_needing_grad_is_refused_by_rule():
    torch = pytest.importorskip("torch")
    with pytest.raises(HurrayDeclError) as caught:
        hd.Tensor.from_dlpack(torch.ones(3, requires_grad=True))
    assert caught.value.code == "CV-DLP-03"



def test_to_torch_gives_float4_as_torch_pairs_and_float6_as_float32(mapped):
    torch = pytest.importorskip("torch")
    source, loaded = mapped
    pairs = loaded["float4_e2m1"].to_torch()  # (331, 307): an odd last dimension, so float32 values
    assert pairs.dtype == torch.float32
    assert pairs.numpy().tobytes() == source["float4_e2m1"].astype(np.float32).tobytes()
    even = hd.Tensor.from_numpy(source["float4_e2m1"][:, :306])
    shared = even.to_torch()
    assert shared.dtype == torch.float4_e2m1fn_x2 and tuple(shared.shape) == (331, 153)
    assert shared.view(torch.uint8).numpy().tobytes() == bytes(even.buffers[0])  # element 2k in the low nibble
    assert even.to_torch(dtype=torch.bfloat16).float().numpy().tobytes() == \
        source["float4_e2m1"][:, :306].astype(np.float32).tobytes()
    six = loaded["float6_e3m2"].to_torch()
    assert six.dtype == torch.float32 and six.numpy().tobytes() == source["float6_e3m2"].astype(np.float32).tobytes()
