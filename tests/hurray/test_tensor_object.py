"""hd.Tensor: every tensor as numbers, files by path, interop with pyhurray (issue 21).

pyhurray (``hurray``) writes and reads the files on the other side; values are compared with
its ``np.asarray`` where it has one, and otherwise with the stored bytes decoded here by the
packing rules themselves (HE-12, HE-14, HE-16, HE-18), independently of the library's code.
"""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import kernels, numerics
from hurray_decl.hurray.container import KVTag
from hurray_decl.hurray.tables.codes import MemberRole
from hurray_decl.hurray.tensor import BufferHandle, ColumnMajor, CompositeHead, TensorDescriptor, Tiled
from hurray_decl.hurray.tensor.sections import CompositeMember

hurray = pytest.importorskip("hurray")

VALUE_TYPES = {  # element type -> the dtype hd gives its values (the table)
    "float16": np.float16, "float32": np.float32, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e8m0": ml_dtypes.float8_e8m0fnu, "float4_e2m1": ml_dtypes.float4_e2m1fn,
    "float6_e2m3": ml_dtypes.float6_e2m3fn, "float6_e3m2": ml_dtypes.float6_e3m2fn,
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
    "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "int4": np.int8, "uint4": np.uint8,
    "int2": np.int8, "uint2": np.uint8, "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
}
BITS = {"bool": 1, "int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1": 4, "float6_e2m3": 6, "float6_e3m2": 6}
SHAPE = (3, 5)


def pack(codes: np.ndarray, bits: int) -> bytes:
    """Codes packed LSB first (HE-12/14/16), 6-bit ones four per 24-bit little-endian group (HE-18)."""
    codes = codes.astype(np.uint64).reshape(-1)
    per = 4 if bits == 6 else 8 // bits
    size = 3 if bits == 6 else 1
    groups = -(-codes.size // per)
    padded = np.zeros(groups * per, np.uint64)
    padded[:codes.size] = codes
    words = (padded.reshape(groups, per) << (np.arange(per, dtype=np.uint64) * np.uint64(bits))).sum(axis=1)
    return b"".join(int(w).to_bytes(size, "little") for w in words)


def unpack(raw: bytes, bits: int, count: int) -> np.ndarray:
    per = 4 if bits == 6 else 8 // bits
    size = 3 if bits == 6 else 1
    words = [int.from_bytes(raw[i:i + size], "little") for i in range(0, len(raw), size)]
    return np.array([(w >> (bits * j)) & ((1 << bits) - 1) for w in words for j in range(per)][:count], np.uint8)


def reference(name: str, raw: bytes, count: int) -> np.ndarray:
    """The values of ``count`` stored elements, decoded by the packing rules and the value types."""
    target = np.dtype(VALUE_TYPES[name])
    if name not in BITS:
        return np.frombuffer(raw, dtype=target.newbyteorder("<"), count=count).astype(target)
    codes = unpack(raw, BITS[name], count)
    if name.startswith("int"):
        signed = codes.astype(np.int16)
        return np.where(codes >= 1 << (BITS[name] - 1), signed - (1 << BITS[name]), signed).astype(np.int8)
    if name == "bool":
        return codes.astype(bool)
    return codes.view(target) if name.startswith("float") else codes


def random_raw(name: str, rng: np.random.Generator, count: int) -> bytes:
    """Valid stored bytes of ``count`` elements: random codes, float8_e8m0 avoiding 0x00/0xFF (HE-26)."""
    if name in BITS:
        return pack(rng.integers(0, 1 << BITS[name], count), BITS[name])
    width = np.dtype(VALUE_TYPES[name]).itemsize
    raw = rng.integers(0, 256, count * width, dtype=np.uint8)
    if name == "float8_e8m0":
        raw = rng.integers(1, 255, count, dtype=np.uint8)
    return raw.tobytes()


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bits (NaN payloads included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def theirs_values(theirs, folder) -> np.ndarray:
    """A pyhurray tensor's values: its np.asarray where it has one, else the tensor written
    again by pyhurray and read here (pyhurray carried the bytes through its own reader and writer)."""
    try:
        return np.asarray(theirs)
    except (hurray.UnsupportedError, hurray.BufferError, BufferError, RuntimeError):  # pyhurray has no NumPy view
        hurray.save(str(folder / "theirs.hrry"), {"y": theirs})
        return hd.load(folder / "theirs.hrry")["y"].numpy()


PYHURRAY_TYPES = [n for n in VALUE_TYPES if hasattr(hurray.dtype, n)]


def test_pyhurray_covers_the_element_table():
    assert set(PYHURRAY_TYPES) == set(VALUE_TYPES)


@pytest.mark.parametrize("name", PYHURRAY_TYPES)
def test_files_written_by_pyhurray_load_with_its_values(name, tmp_path):
    """Acceptance 1, first half: same values, dtype and shape as pyhurray's np.asarray."""
    raw = random_raw(name, np.random.default_rng(len(name)), 15)
    path = tmp_path / "p.hrry"
    hurray.save(str(path), {"x": hurray.Tensor(raw, getattr(hurray.dtype, name), list(SHAPE))})
    t = hd.load(path)["x"]
    got = np.asarray(t)
    assert got.shape == SHAPE and got.dtype == np.dtype(VALUE_TYPES[name]) and t.type_name == name
    assert same(got, reference(name, raw, 15).reshape(SHAPE))
    assert same(got, theirs_values(hurray.load(str(path))["x"], tmp_path))
    assert isinstance(t.buffers[0], memoryview) and t.buffers[0].readonly


@pytest.mark.parametrize("name", PYHURRAY_TYPES)
def test_files_written_by_hd_save_read_back_in_pyhurray(name, tmp_path):
    """Acceptance 1, second half: from_numpy + save; pyhurray sees the type, shape and bytes."""
    raw = random_raw(name, np.random.default_rng(3 + len(name)), 15)
    values = reference(name, raw, 15).reshape(SHAPE)
    path = tmp_path / "h.hrry"
    t = hd.Tensor.from_numpy(values, type=name if name in BITS else None, name="x")
    hd.save(path, {"x": t}, kv={"n": 1})
    theirs = hurray.load(str(path))["x"]
    assert theirs.dtype.name == name and tuple(theirs.shape) == SHAPE
    if name != "bool":  # pyhurray gives no view of a bool buffer
        assert np.asarray(theirs.buffer(0)).tobytes() == raw
    assert same(values, theirs_values(theirs, tmp_path))


def test_float128_is_read_but_its_values_refused(tmp_path):
    path = tmp_path / "f.hrry"
    hurray.save(str(path), {"x": hurray.Tensor(bytes(32), hurray.dtype.float128, [2])})
    t = hd.load(path)["x"]
    with pytest.raises(HurrayDeclError) as err:
        t.numpy()
    assert err.value.code == "HE-11"



@pytest.mark.parametrize("name", [*PYHURRAY_TYPES, "float128"])
def test_rank_0_tensors_written_by_pyhurray_keep_shape_0(name, tmp_path):
    """A rank-0 tensor of every element type has shape () and its values are 0-d (complex128 came
    back (1,): its 16-byte codes went through np.ascontiguousarray, which makes a 0-d array 1-d);
    float128's values are refused (HE-11) but its shape is still ()."""
    raw = random_raw(name, np.random.default_rng(7), 1) if name != "float128" else bytes(16)
    path = tmp_path / "r0.hrry"
    hurray.save(str(path), {"x": hurray.Tensor(raw, getattr(hurray.dtype, name), [])})
    t = hd.load(path)["x"]
    assert t.shape == () and t.ndim == 0 and t.size == 1 and tuple(hurray.load(str(path))["x"].shape) == ()
    if name == "float128":
        with pytest.raises(HurrayDeclError) as err:
            t.numpy()
        assert err.value.code == "HE-11"
        return
    for got in (np.asarray(t), t.numpy(), t[()], t[...]):
        assert same(got, reference(name, raw, 1).reshape(()))
    assert same(hd.Tensor.from_numpy(t.numpy(), type=name if name in BITS else None).numpy(), t.numpy())

def test_from_numpy_refuses_values_that_do_not_fit():
    with pytest.raises(HurrayDeclError) as err:
        hd.Tensor.from_numpy(np.array([1, -9, 3], np.int8), type="int4")
    assert (err.value.code, err.value.path, err.value.actual) == ("HE-11", "array -> [1]", -9)
    with pytest.raises(HurrayDeclError) as err:
        hd.Tensor.from_numpy(np.array([0.1]), type="float16")
    assert err.value.code == "ARGUMENT"
    assert hd.element_type("int4") == 0x48 and hd.element_type(0x01) == 0x01


def test_from_numpy_column_major_and_ml_dtypes_types():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4).astype(ml_dtypes.bfloat16)
    t = hd.Tensor.from_numpy(x, layout="column-major")
    assert isinstance(t.layout, ColumnMajor) and same(t.numpy(), x) and same(t[1, ::2, 3:0:-2], x[1, ::2, 3:0:-2])
    small = (np.arange(16) - 8).astype(ml_dtypes.int4)
    assert same(hd.Tensor.from_numpy(small).numpy(), np.arange(-8, 8, dtype=np.int8))


def test_tensor_is_immutable_and_pickles():
    t = hd.Tensor.from_numpy(np.arange(6, dtype=np.int16), name="a")
    with pytest.raises(AttributeError):
        t.name = "b"
    back = pickle.loads(pickle.dumps(t))
    assert back.name == "a" and same(back.numpy(), t.numpy())


def test_numpy_dtype_and_out():
    q = hd.quantize(np.linspace(-1, 1, 128).reshape(4, 32), "per_block_affine", block_size=32)
    out = np.empty((4, 32), np.float32)
    assert q.numpy(out=out) is out and same(out, hd.dequantize(q.descriptor, q.buffers))
    assert q.numpy(np.float64).dtype == np.float64


# ---------------------------------------------------------------- files by path

def test_save_load_open_and_kv(tmp_path):
    path = tmp_path / "m.hrry"
    w = hd.quantize(np.random.default_rng(0).random((8, 64)), "nf4", block_size=32, axis=1)
    hd.save(path, {"w": w, "ids": np.arange(5, dtype=np.int64)},
            kv={"layers": [1, 2, 3], "name": "m", "blob": b"\x01", "pi": 3.5})
    assert hd.load_kv(path) == {"layers": [1, 2, 3], "name": "m", "blob": b"\x01", "pi": 3.5}
    assert type(hd.load_kv(path)["layers"]) is list
    loaded = hd.load(path, names=["w"])
    assert list(loaded) == ["w"] and same(loaded["w"].numpy(), w.numpy())
    with hd.open(path) as f:
        assert list(f) == ["w", "ids"] and "ids" in f and "nope" not in f and len(f) == 2
        assert f.kv_entries["layers"].tag == KVTag.ARRAY and f.kv_entries["layers"].element_tag is not None
        assert same(f["ids"].numpy(), np.arange(5, dtype=np.int64))
        with pytest.raises(HurrayDeclError) as err:
            f["nope"]
        assert err.value.code == "ARGUMENT"
    with pytest.raises(HurrayDeclError):
        f["w"]  # closed
    with pytest.raises(HurrayDeclError) as err:
        hd.load(tmp_path / "missing.hrry")
    assert err.value.code == "ARGUMENT"


def test_a_partition_composite_from_pyhurray_assembles(tmp_path):
    """Acceptance 2, last part: members reachable, the head the array they were cut from."""
    a = np.arange(96, dtype=np.float32).reshape(8, 12)
    members = [hurray.Tensor(np.ascontiguousarray(a[:, c:c + 4]).tobytes(), hurray.float32, [8, 4],
                             shard=hurray.Shard([8, 12], [0, c])) for c in (0, 4, 8)]
    path = tmp_path / "c.hrry"
    hurray.save(str(path), {"c": hurray.Composite("partition", shape=[8, 12], dtype=hurray.float32, members=members)})
    f = hd.open(path)
    assert list(f) == ["c"]  # members are reached through the head
    t = f["c"]
    assert len(t.members) == 3 and same(t.members[1].numpy(), a[:, 4:8])
    assert same(t.numpy(), a) and same(t[2:5, 3:9], a[2:5, 3:9])
    again = tmp_path / "again.hrry"
    hd.save(again, {"c": t})
    assert same(hd.load(again)["c"].numpy(), a)


def plain(values: np.ndarray, **sections) -> tuple[TensorDescriptor, bytes]:
    raw = values.astype("<f4").tobytes()
    return TensorDescriptor(type_tag=0x03, shape=values.shape, buffers=(BufferHandle(byte_size=len(raw)),),
                            **sections), raw


@pytest.mark.parametrize("op", [0x01, 0x02])
def test_nested_overlay_composites_assemble(op):
    from hurray_decl.hurray.tensor.sections import Shard

    base_values = np.arange(16, dtype=np.float32).reshape(4, 4)
    fix = np.full((2, 2), 100, np.float32)
    base_d, base_raw = plain(base_values, shard=Shard(parent_shape=(4, 4), shard_offset=(0, 0)),
                             composite_member=CompositeMember(member_role=MemberRole.BASE))
    fix_d, fix_raw = plain(fix, shard=Shard(parent_shape=(4, 4), shard_offset=(1, 2)),
                           composite_member=CompositeMember(member_role=MemberRole.CORRECTION))
    head = TensorDescriptor(type_tag=0x03, shape=(4, 4),
                            layout=CompositeHead(composition_rule=0x02, combine_op=op, member_count=2))
    inner = hd.Tensor(head, (), "o", members=[hd.Tensor(base_d, [base_raw], "b"), hd.Tensor(fix_d, [fix_raw], "f")])
    expected = base_values.copy()
    expected[1:3, 2:4] = fix if op == 0x01 else expected[1:3, 2:4] + fix
    assert same(inner.numpy(), expected)
    left_d, left_raw = plain(np.zeros((4, 2), np.float32), shard=Shard(parent_shape=(4, 6), shard_offset=(0, 4)))
    inner_part = hd.Tensor(head.model_copy(update={"shard": Shard(parent_shape=(4, 6), shard_offset=(0, 0))}).checked(),
                           (), "o", members=inner.members)
    outer = hd.Tensor(TensorDescriptor(type_tag=0x03, shape=(4, 6),
                                       layout=CompositeHead(composition_rule=0x01, member_count=2)),
                      (), "p", members=[inner_part, hd.Tensor(left_d, [left_raw], "z")])
    assert same(outer.numpy(), np.concatenate([expected, np.zeros((4, 2), np.float32)], axis=1))


# ---------------------------------------------------------------- sparse

def test_csr_and_coo_written_by_pyhurray(tmp_path):
    """Acceptance 2: sparse(), numpy() and to_scipy() equal the original."""
    sp = pytest.importorskip("scipy.sparse")
    dense = np.zeros((6, 7), np.float32)
    rng = np.random.default_rng(5)
    at = rng.choice(42, 11, replace=False)
    dense.reshape(-1)[at] = rng.standard_normal(11).astype(np.float32)
    m = sp.csr_matrix(dense)
    m.indices, m.indptr = m.indices.astype(np.uint64), m.indptr.astype(np.uint64)
    coo = np.argwhere(dense)
    path = tmp_path / "s.hrry"
    hurray.save(str(path), {"csr": hurray.from_scipy(m), "coo": hurray.sparse_coo(
        dense[tuple(coo.T)], np.ascontiguousarray(coo.astype(np.uint64)), list(dense.shape))})
    f = hd.open(path)
    for name in ("csr", "coo"):
        t = f[name]
        entries = t.sparse()
        assert entries.coords.shape == (11, 2) and entries.shape == dense.shape
        rebuilt = np.zeros_like(dense)
        rebuilt[tuple(entries.coords.T)] = entries.values
        assert same(rebuilt, dense) and same(t.numpy(), dense) and same(t[1:4, ::3], dense[1:4, ::3])
        s = t.to_scipy()
        assert s.format == name and same(s.toarray(), dense)
    back = hd.Tensor.from_scipy(sp.csc_matrix(dense))
    assert same(back.numpy(), dense) and back.to_scipy().format == "csc"
    again = tmp_path / "again.hrry"
    hd.save(again, {"csr": hd.Tensor.from_scipy(m), "coo": hd.Tensor.from_scipy(sp.coo_matrix(dense))})
    for name in ("csr", "coo"):
        assert same(hd.load(again)[name].numpy(), dense)
        theirs = hurray.load(str(again))[name]
        assert theirs.nnz == 11
    assert same(hurray.load(str(again))["csr"].to_scipy().toarray(), dense)


def test_a_dense_view_too_large_is_refused_but_entries_are_read():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.coo_array((np.array([2.0], np.float32), (np.array([5]), np.array([1 << 40]))), shape=(1 << 40, 1 << 41))
    t = hd.Tensor.from_scipy(m)
    assert t.sparse().coords.tolist() == [[5, 1 << 40]]
    with pytest.raises(HurrayDeclError) as err:
        t.numpy()
    assert err.value.code == "HX-01"


def test_a_per_tensor_quantized_coo_tensor_dequantizes_its_values():
    from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
    from hurray_decl.hurray.tensor import COO

    values, coords = np.array([3, -4, 7], np.int8), np.array([[0, 1], [1, 0], [2, 2]], "<u8")
    d = TensorDescriptor(type_tag=0x10, shape=(3, 3), layout=COO(nnz=3, is_sorted=1),
                         quantization=PerTensorAffine(scale=0.5, zero_point=-1),
                         buffers=(BufferHandle(byte_size=3), BufferHandle(byte_size=coords.nbytes)))
    t = hd.Tensor(hd.read_tensor_descriptor(hd.write_tensor_descriptor(d)), [values.tobytes(), coords.tobytes()])
    assert same(t.sparse().values, np.array([2, -1.5, 4], np.float32))
    expected = np.zeros((3, 3), np.float32)
    expected[0, 1], expected[1, 0], expected[2, 2] = 2, -1.5, 4
    assert same(t.numpy(), expected) and t.dtype == np.float32


def test_csf_coordinates():
    from hurray_decl.hurray.tensor import CSF

    # entries (0,1,2)=1, (0,1,3)=2, (2,0,0)=3 in mode order (0, 1, 2)
    u64 = lambda *v: np.array(v, "<u8").tobytes()  # noqa: E731
    buffers = [np.array([1, 2, 3], "<f4").tobytes(), u64(0, 2), u64(0, 2), u64(0, 1, 2), u64(1, 0),
               u64(0, 2, 3), u64(2, 3, 0)]
    d = TensorDescriptor(type_tag=0x03, shape=(3, 2, 4), layout=CSF(nnz=3, mode_order=(0, 1, 2)),
                         buffers=tuple(BufferHandle(byte_size=len(b)) for b in buffers))
    t = hd.Tensor(d, buffers)
    expected = np.zeros((3, 2, 4), np.float32)
    expected[0, 1, 2], expected[0, 1, 3], expected[2, 0, 0] = 1, 2, 3
    assert t.sparse().coords.tolist() == [[0, 1, 2], [0, 1, 3], [2, 0, 0]] and same(t.numpy(), expected)


# ---------------------------------------------------------------- block-paged

def test_block_paged_sequences():
    from hurray_decl.hurray.tensor.access import block_paged_codes
    from tests.hurray.test_tensor_access import paged_tensor

    d, contents = paged_tensor((([3, 0], 8), ([1, 4], 8)))  # token counts pinned by shape[0]
    t = hd.Tensor(d, contents)
    parts = [block_paged_codes(d, contents, s).codes for s in range(d.layout.num_seqs)]
    assert all(same(t.sequence(s), p.astype(np.uint8)) for s, p in enumerate(parts))
    assert same(t.numpy(), np.concatenate(parts).astype(np.uint8)) and t.shape == t.numpy().shape


def test_quantized_block_paged_sequences_use_their_page_slots():
    from tests.hurray.test_tensor_access import paged_tensor, ref_sequence

    d, contents = paged_tensor((([2, 4], 5),), quantized=True)
    t = hd.Tensor(d, contents)
    want = ref_sequence(contents[0], [2, 4], 5).view(np.int8) * np.array([9, 10, 11, 12, 17], "f4")[:, None, None]
    assert same(t.sequence(0), want.astype(np.float32)) and same(t.numpy(), want.astype(np.float32))
    assert t.dtype == np.float32


# ---------------------------------------------------------------- windows

KEYS = [np.s_[3:17, 5:70], np.s_[:, 33], np.s_[::-3, 1:90:7], np.s_[-1], np.s_[..., 95], np.s_[2:2], np.s_[5, 7],
        np.s_[60:, ::-1]]
SCHEMES = [("per_block_affine", dict(axis=1, block_size=32, storage="int4")),
           ("per_block_affine", dict(axis=0, block_size=16, storage="uint4", symmetric=False)),
           ("per_block_affine", dict(axis=1, block_size=64, storage="uint2", symmetric=False)),
           ("per_channel_affine", dict(axis=1)), ("per_channel_affine", dict(axis=0, symmetric=False)),
           ("per_tensor_affine", {}), ("nf4", dict(axis=1, block_size=32)), ("mxfp", dict(axis=1))]


@pytest.mark.parametrize("scheme, options", SCHEMES)
def test_windows_equal_the_whole_result_sliced(scheme, options, monkeypatch):
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 7)  # chunks cross rows, blocks and lanes
    x = np.random.default_rng(1).standard_normal((67, 96))
    t = hd.quantize(x, scheme, **options)
    full = t.numpy()
    for key in KEYS:
        assert same(t[key], full[key]), key


def test_windows_of_every_dense_layout():
    x = np.arange(6 * 10, dtype=np.int16).reshape(6, 10)
    codes = x.reshape(6, 10)
    tiled = TensorDescriptor(type_tag=0x12, shape=(6, 10), layout=Tiled(tile_shape=(4, 4)),
                             buffers=(BufferHandle(byte_size=2 * 8 * 12),))
    grid = np.zeros((8, 12), np.int16)
    grid[:6, :10] = codes
    stored = grid.reshape(2, 4, 3, 4).transpose(0, 2, 1, 3).tobytes()
    t = hd.Tensor(tiled, [stored])
    assert same(t.numpy(), x)
    for key in [np.s_[1:5, 2:9], np.s_[:, 3], np.s_[::-2, 1:9:3], np.s_[-1], np.s_[..., 9], np.s_[4, 7]]:
        assert same(t[key], x[key]), key


def test_a_window_restricts_the_plan_to_its_blocks():
    t = hd.quantize(np.random.default_rng(2).standard_normal((64, 256)), "per_block_affine", axis=1, block_size=32,
                    storage="int4")
    prepared = numerics.prepare_dequantize(t.descriptor, t.buffers)
    plan, origin, extents, keep = numerics.window_plan(prepared.plan, (64, 256), (8, 40), (12, 100))
    assert (origin, extents) == ([8, 32], [4, 96]) and plan.scales.shape[0] == 4 * 3
    assert keep == (slice(None), slice(8, 68))
    rows = np.arange(8, 12)[:, None] * 8 + np.arange(1, 4)  # block rows (a, j) of the window, 8 blocks per row
    assert same(plan.scales.reshape(-1), prepared.plan.scales.reshape(-1)[rows.reshape(-1)])


def poisoned(t: hd.Tensor, keep: tuple[slice, ...]) -> tuple[hd.Tensor, np.ndarray, list[bytearray]]:
    """``t`` over writable copies of its buffers, and the copies: what the window reads can be
    found by changing everything else after the buffers were checked."""
    copies = [bytearray(b) for b in t.buffers]
    twin = hd.Tensor(t.descriptor, copies, t.name)
    expected = twin.numpy()[keep]
    return twin, expected, copies


@pytest.mark.parametrize("layout", ["row-major", "column-major"])
def test_a_window_reads_nothing_outside_its_blocks(layout):
    """After the first read checked the buffers, every code byte outside the window's rows and
    blocks is scrambled and every scale outside its blocks made NaN: the window is unchanged,
    the whole tensor is not (so the poison is real)."""
    from hurray_decl.hurray.bench import relaid

    x = np.random.default_rng(6).standard_normal((32, 128))
    q = hd.quantize(x, "per_block_affine", axis=1, block_size=32, storage="int4")
    d, buffers = relaid(q.descriptor, list(q.buffers), layout)
    rows, cols = slice(9, 14), slice(40, 90)
    twin, expected, copies = poisoned(hd.Tensor(d, buffers), (rows, cols))
    codes = np.frombuffer(copies[0], np.uint8).copy()
    touched = np.zeros((32, 128), bool)
    touched[rows, 32:96] = True  # whole blocks 1 and 2 of rows 9..13
    order = touched if layout == "row-major" else touched.T
    nibbles = order.reshape(-1)
    untouched_bytes = ~(nibbles[0::2] | nibbles[1::2])
    codes[untouched_bytes] ^= 0x5A
    copies[0][:] = codes.tobytes()
    scales = np.frombuffer(copies[1], np.float32).copy().reshape(32, 4)
    block_touched = touched.reshape(32, 4, 32).any(axis=2)
    scales[~block_touched] = np.nan
    copies[1][:] = scales.astype(np.float32).tobytes()
    assert same(twin[rows, cols], expected)
    assert not np.array_equal(twin._dequantization().run(), hd.quantize(x, "per_block_affine", axis=1, block_size=32,
                                                                        storage="int4").numpy(), equal_nan=True)


def test_a_plain_window_reads_nothing_outside_it():
    x = np.arange(40 * 24, dtype=np.int16).reshape(40, 24)
    twin, expected, copies = poisoned(hd.Tensor.from_numpy(x), (slice(5, 9), slice(3, 20)))
    twin.numpy()  # checked once
    values = np.frombuffer(copies[0], np.int16).copy().reshape(40, 24)
    mask = np.ones_like(values, bool)
    mask[5:9, 3:20] = False
    values[mask] = -1
    copies[0][:] = values.tobytes()
    assert same(twin[5:9, 3:20], expected) and not np.array_equal(twin.numpy(), x)


def test_window_index_errors():
    t = hd.Tensor.from_numpy(np.zeros((3, 4), np.float32))
    for key in [np.s_[3], np.s_[0, 0, 0], np.s_[..., ...], np.s_[[0, 1]]]:
        with pytest.raises(HurrayDeclError) as err:
            t[key]
        assert err.value.code == "ARGUMENT"


# ---------------------------------------------------------------- dask

def test_to_dask_on_a_two_process_cluster(tmp_path):
    """Acceptance 4: bit for bit on a LocalCluster of 2 processes; the graph holds no data."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "d.hrry"
    x = np.random.default_rng(4).standard_normal((96, 128))
    hd.save(path, {"w": hd.quantize(x, "per_block_affine", axis=1, block_size=32, storage="int4"),
                   "b": x.astype(np.float16)})
    t = hd.open(path)["w"]
    lazy = t.to_dask(chunks=(40, 64))
    assert isinstance(lazy, da.Array) and lazy.numblocks == (3, 2)
    assert len(pickle.dumps(dict(lazy.__dask_graph__()))) < 4096  # path and name, no values
    arrays = hd.dask.open(path, chunks=32)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        got = client.compute(lazy).result()
        bias = client.compute(arrays["b"][5:70]).result()
    assert same(got, t.numpy()) and same(bias, x.astype(np.float16)[5:70])


# ---------------------------------------------------------------- command line and types

def test_cli_dequantize_writes_an_f16_tensor_from_convert(tmp_path):
    """Acceptance 5: hurray-decl dequantize model.hrry --name norm on convert's F16 tensor."""
    gguf = pytest.importorskip("gguf")
    from tests.convert.test_cli_convert import cli

    norm = np.linspace(-2, 2, 64, dtype=np.float16)
    writer = gguf.GGUFWriter(str(tmp_path / "model.gguf"), "test")
    writer.add_tensor("norm", norm)
    writer.add_tensor("w", np.ones((4, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert cli("convert", "model.gguf", "-o", "model.hrry", cwd=tmp_path).returncode == 0
    done = cli("dequantize", "model.hrry", "--name", "norm", "-o", "n.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert same(np.load(tmp_path / "n.npy"), norm) and "float16" in done.stdout


def test_cli_dequantize_region_writes_a_window(tmp_path):
    from tests.convert.test_cli_convert import cli

    x = np.random.default_rng(8).standard_normal((16, 64))
    w = hd.quantize(x, "per_block_affine", axis=1, block_size=32, storage="int4")
    hd.save(tmp_path / "m.hrry", {"w": w, "b": x.astype(np.float16)})
    done = cli("dequantize", "m.hrry", "--name", "w", "--region", "3:9, ::-5", "-o", "r.npy", cwd=tmp_path)
    assert done.returncode == 0 and "[6, 13]" in done.stdout, done.stderr
    assert same(np.load(tmp_path / "r.npy"), w.numpy()[3:9, ::-5])
    done = cli("dequantize", "m.hrry", "--name", "b", "--region", "...,7", "-o", "b.npy", cwd=tmp_path)
    assert done.returncode == 0 and same(np.load(tmp_path / "b.npy"), x.astype(np.float16)[..., 7])
    for bad in ("1:x", "99", "1:2:3:4"):
        done = cli("dequantize", "m.hrry", "--name", "w", "--region", bad, "-o", "z.npy", cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "z.npy").exists()


def test_mypy_sees_tensors_and_arrays(tmp_path):
    """Acceptance 6: hd.load's values are Tensors, Tensor.numpy() an ndarray."""
    api = pytest.importorskip("mypy.api")
    from pathlib import Path

    probe = tmp_path / "probe.py"
    probe.write_text("import hurray_decl as hd\n"
                     "t = hd.load('m.hrry')['w']\n"
                     "reveal_type(t)\n"
                     "reveal_type(t.numpy())\n"
                     "reveal_type(hd.open('m.hrry')['w'][0:2])\n"
                     "x: int = t.numpy()\n")
    root = Path(__file__).resolve().parents[2]
    out, _, status = api.run([str(probe), "--no-incremental", "--follow-imports=silent", "--ignore-missing-imports",
                              "--config-file", str(root / "pyproject.toml")])
    lines = [line for line in out.splitlines() if "probe.py" in line]
    assert 'Revealed type is "hurray_decl.hurray.values.Tensor"' in lines[0]
    assert "numpy.ndarray" in lines[1] and "numpy.ndarray" in lines[2]
    assert "Incompatible types in assignment" in lines[3] and status == 1  # ndarray is not int: mypy checks it


def test_bench_window_reports_both_ratios(capsys):
    """``bench --window``: a 1/64 window against the whole tensor, warm and cold, from one run."""
    import re

    from hurray_decl import cli

    assert cli.main(["bench", "--window", "--size", "256", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "32x32 window (1/64 of the elements)" in out
    ratios = [float(r) for r in re.findall(r"ratio ([0-9.]+) \(1/", out)]
    assert len(ratios) == 2 and all(0 < r for r in ratios)


def test_quantize_passes_threads_on(monkeypatch):
    """hurray_decl.quantize takes numerics.quantize's threads, gives it on, and the bytes do not
    depend on it."""
    seen = []
    original = numerics.quantize

    def spy(*args, **kwargs):
        seen.append(kwargs.get("threads"))
        return original(*args, **kwargs)

    monkeypatch.setattr(numerics, "quantize", spy)
    x = np.random.default_rng(4).standard_normal((96, 160)).astype(np.float32)
    one = hd.quantize(x, "per_block_affine", axis=1, block_size=32, threads=1)
    two = hd.quantize(x, "per_block_affine", axis=1, block_size=32, threads=2)
    assert seen == [1, 2]
    assert one.buffers == two.buffers and one.descriptor == two.descriptor
