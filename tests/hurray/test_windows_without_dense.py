"""Windows and ``dequantize`` of sparse, broadcast/strided, block-paged and composite tensors
computed from what they touch, never from the whole dense array (issue 38, acceptance 1).

Every window is compared with the slice of a dense array built here independently of the
library's readers (scipy's / NumPy's broadcast / the paged lookup written out in the tests /
members placed by hand), with tiny chunk sizes so that entry chunks and output chunks cross
rows, entries and members. Memory is measured as the peak resident size of a child process
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` in a wrapper process of its own), so no
test depends on timing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hurray_decl as hd
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import entries as entries_module, values as values_module
from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
from hurray_decl.hurray.tables.codes import MemberRole
from hurray_decl.hurray.tensor import COO, CSC, CSF, CSR, BufferHandle, CompositeHead, Strided, TensorDescriptor
from hurray_decl.hurray.tensor.sections import CompositeMember, Shard
from hurray_decl.hurray.values import Tensor
from tests.helpers import measured
from tests.hurray.test_tensor_access import paged_tensor, ref_sequence

sp = pytest.importorskip("scipy.sparse")

WINDOWS = 200
MiB = 1 << 20


def same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def random_key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple:
    """A basic index: integers (negative too), slices with any bounds and steps, sometimes ``...``."""
    items: list = []
    for n in shape:
        if rng.random() < 0.2:
            items.append(int(rng.integers(-n, n)))
            continue
        start, stop = (int(v) if rng.random() < 0.8 else None for v in rng.integers(-n - 2, n + 3, 2))
        items.append(slice(start, stop, int(rng.choice([1, 1, 1, 2, 3, -1, -2]))))
    if items and rng.random() < 0.15:
        items = items[: int(rng.integers(0, len(items)))] + [Ellipsis]
    return tuple(items)


def with_sections(t: Tensor, **sections) -> Tensor:
    d = t.descriptor
    return Tensor(TensorDescriptor(type_tag=d.type_tag, shape=d.shape, layout=d.layout, quantization=d.quantization,
                                   buffers=d.buffers, **sections), t.buffers, t.name)


def sparse_dense(rng: np.random.Generator, shape: tuple[int, int], dtype=np.float32) -> np.ndarray:
    dense = np.zeros(shape, dtype)
    at = rng.choice(dense.size, dense.size // 5, replace=False)
    dense.reshape(-1)[at] = (rng.standard_normal(at.size) * 50).astype(dtype) + (1 if dtype != np.float32 else 0)
    return dense


def unsorted_coo(dense: np.ndarray, rng: np.random.Generator) -> Tensor:
    coords = np.argwhere(dense)
    rng.shuffle(coords)
    buffers = [dense[tuple(coords.T)].astype("<f4").tobytes(), coords.astype("<u8").tobytes()]
    d = TensorDescriptor(type_tag=0x03, shape=dense.shape, layout=COO(nnz=len(coords), is_sorted=0),
                         buffers=tuple(BufferHandle(byte_size=len(b)) for b in buffers))
    return Tensor(hd.read_tensor_descriptor(hd.write_tensor_descriptor(d)), buffers)


def quantized_coo(rng: np.random.Generator) -> tuple[Tensor, np.ndarray]:
    shape = (17, 29)
    coords = np.argwhere(sparse_dense(rng, shape))
    codes = rng.integers(-128, 128, len(coords)).astype(np.int8)
    d = TensorDescriptor(type_tag=0x10, shape=shape, layout=COO(nnz=len(coords), is_sorted=1),
                         quantization=PerTensorAffine(scale=0.5, zero_point=-1),
                         buffers=(BufferHandle(byte_size=codes.size), BufferHandle(byte_size=coords.size * 8)))
    t = Tensor(hd.read_tensor_descriptor(hd.write_tensor_descriptor(d)),
               [codes.tobytes(), coords.astype("<u8").tobytes()])
    expected = np.zeros(shape, np.float32)
    expected[tuple(coords.T)] = (codes.astype(np.float32) + 1) * np.float32(0.5)
    return t, expected


def csf() -> tuple[Tensor, np.ndarray]:
    u64 = lambda *v: np.array(v, "<u8").tobytes()  # noqa: E731
    buffers = [np.array([1, 2, 3], "<f4").tobytes(), u64(0, 2), u64(0, 2), u64(0, 1, 2), u64(1, 0),
               u64(0, 2, 3), u64(2, 3, 0)]
    d = TensorDescriptor(type_tag=0x03, shape=(3, 2, 4), layout=CSF(nnz=3, mode_order=(0, 1, 2)),
                         buffers=tuple(BufferHandle(byte_size=len(b)) for b in buffers))
    expected = np.zeros((3, 2, 4), np.float32)
    expected[0, 1, 2], expected[0, 1, 3], expected[2, 0, 0] = 1, 2, 3
    return Tensor(d, buffers), expected


def strided(type_name: str, shape: tuple[int, ...], strides: tuple[int, ...], stored: np.ndarray) -> Tensor:
    d = TensorDescriptor(type_tag=hd.element_type(type_name), shape=shape, layout=Strided(strides=strides),
                         buffers=(BufferHandle(byte_size=stored.nbytes),))
    return Tensor(hd.read_tensor_descriptor(hd.write_tensor_descriptor(d)), [stored.tobytes()])


def paged(quantized: bool) -> tuple[Tensor, np.ndarray]:
    sequences = (([2, 4], 5),) if quantized else (([3, 0], 8), ([1, 4], 8), ([2], 4))
    d, contents = paged_tensor(sequences, quantized=quantized)
    parts = [ref_sequence(contents[0], pages, tokens) for pages, tokens in sequences]
    if not quantized:
        return Tensor(d, contents), np.concatenate(parts)
    want = parts[0].view(np.int8) * np.array([9, 10, 11, 12, 17], "f4")[:, None, None]
    return Tensor(d, contents), want.astype(np.float32)


def composites(rng: np.random.Generator) -> dict[str, tuple[Tensor, np.ndarray]]:
    """A partition of a dense, a COO and a broadcast member; overlays (replace, add) of a dense
    base and a sparse correction; the overlay nested inside a partition."""
    expected = np.zeros((6, 10), np.float32)
    a = rng.standard_normal((6, 4)).astype(np.float32)
    b = sparse_dense(rng, (6, 3))
    expected[:, :4], expected[:, 4:7], expected[:, 7:] = a, b, 2.5
    parent = (6, 10)
    members = [with_sections(hd.Tensor.from_numpy(a), shard=Shard(parent_shape=parent, shard_offset=(0, 0))),
               with_sections(hd.Tensor.from_scipy(sp.coo_array(b)),
                             shard=Shard(parent_shape=parent, shard_offset=(0, 4))),
               with_sections(strided("float32", (6, 3), (0, 0), np.array([2.5], "<f4")),
                             shard=Shard(parent_shape=parent, shard_offset=(0, 7)))]
    head = TensorDescriptor(type_tag=0x03, shape=parent, layout=CompositeHead(composition_rule=0x01, member_count=3))
    found = {"partition": (Tensor(head, (), "p", members=members), expected)}
    base = rng.standard_normal((5, 8)).astype(np.float32)
    fix = sparse_dense(rng, (3, 4))
    for op in (0x01, 0x02):
        over = base.copy()
        if op == 0x01:
            over[1:4, 2:6][fix != 0] = fix[fix != 0]
        else:
            over[1:4, 2:6] += fix
        parts = [with_sections(hd.Tensor.from_numpy(base), shard=Shard(parent_shape=(5, 8), shard_offset=(0, 0)),
                               composite_member=CompositeMember(member_role=MemberRole.BASE)),
                 with_sections(hd.Tensor.from_scipy(sp.coo_array(fix)),
                               shard=Shard(parent_shape=(5, 8), shard_offset=(1, 2)),
                               composite_member=CompositeMember(member_role=MemberRole.CORRECTION))]
        head = TensorDescriptor(type_tag=0x03, shape=(5, 8),
                                layout=CompositeHead(composition_rule=0x02, combine_op=op, member_count=2))
        found[f"overlay {op}"] = (Tensor(head, (), "o", members=parts[::-1]), over)  # the base is found, not first
    inner, over = found["overlay 2"]
    inner_part = Tensor(TensorDescriptor(type_tag=0x03, shape=(5, 8), layout=inner.descriptor.layout,
                                         shard=Shard(parent_shape=(5, 11), shard_offset=(0, 3))),
                        (), "o", members=inner.members)
    left = with_sections(strided("float32", (5, 3), (1, 0), np.arange(5, dtype="<f4")),
                         shard=Shard(parent_shape=(5, 11), shard_offset=(0, 0)))
    outer = Tensor(TensorDescriptor(type_tag=0x03, shape=(5, 11),
                                    layout=CompositeHead(composition_rule=0x01, member_count=2)),
                   (), "n", members=[left, inner_part])
    found["nested"] = (outer, np.concatenate([np.repeat(np.arange(5, dtype=np.float32)[:, None], 3, 1), over], 1))
    return found


def cases() -> dict[str, tuple[Tensor, np.ndarray]]:
    rng = np.random.default_rng(38)
    dense = sparse_dense(rng, (31, 45))
    found: dict[str, tuple[Tensor, np.ndarray]] = {
        "csr": (hd.Tensor.from_scipy(sp.csr_array(dense)), dense),
        "csc": (hd.Tensor.from_scipy(sp.csc_array(dense)), dense),
        "coo": (hd.Tensor.from_scipy(sp.coo_array(dense)), dense),
        "coo unsorted": (unsorted_coo(dense, rng), dense),
        "csr int16 with empty rows": (hd.Tensor.from_scipy(sp.csr_array(np.where(
            np.arange(40)[:, None] % 3 == 0, 0, sparse_dense(rng, (40, 23), np.int16)))), None),
        "coo per-tensor affine": quantized_coo(rng),
        "csf": csf(),
        "broadcast (0, 0)": (strided("uint8", (23, 17), (0, 0), np.array([7], np.uint8)),
                             np.full((23, 17), 7, np.uint8)),
        "broadcast rows (0, 1)": (strided("float32", (19, 7), (0, 1), np.arange(7, dtype="<f4")),
                                  np.broadcast_to(np.arange(7, dtype=np.float32), (19, 7))),
        "broadcast columns (1, 0)": (strided("int16", (9, 13), (1, 0), np.arange(9, dtype="<i2") - 4),
                                     np.broadcast_to((np.arange(9, dtype=np.int16) - 4)[:, None], (9, 13))),
        "block-paged": paged(False),
        "block-paged per-block affine": paged(True),
        **composites(rng),
    }
    t, _ = found["csr int16 with empty rows"]
    found["csr int16 with empty rows"] = (t, t.to_scipy().toarray())  # scipy's dense of the stored arrays
    return found


CASES = cases()


@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(entries_module, "ENTRY_CHUNK", 3)  # entry chunks cross rows and windows
    monkeypatch.setattr(values_module, "OUT_CHUNK", 7)  # output chunks cross rows and members


@pytest.mark.parametrize("name", list(CASES))
def test_random_windows_equal_the_dense_arrays_slices(name, tiny_chunks):
    t, dense = CASES[name]
    assert same(t.numpy(), dense)
    rng = np.random.default_rng(len(name))
    for _ in range(WINDOWS):
        key = random_key(rng, t.shape)
        assert same(t[key], dense[key]), key


@pytest.mark.parametrize("name", list(CASES))
def test_out_is_filled_chunk_by_chunk(name, tiny_chunks):
    t, dense = CASES[name]
    out = np.full(t.shape, 99, dense.dtype)  # what was there before is overwritten, zeros included
    steps = []
    assert t.numpy(out=out, progress=lambda done, total: steps.append((done, total))) is out and same(out, dense)
    assert steps and steps[-1] == (dense.size, dense.size)
    wide = np.empty(t.shape, np.float64)
    assert same(t.numpy(np.float64, out=wide), dense.astype(np.float64))


@pytest.mark.parametrize("name", ["coo unsorted", "broadcast columns (1, 0)", "nested", "block-paged"])
def test_a_memory_mapped_out_is_filled_and_let_go_page_by_page(name, tmp_path, monkeypatch):
    """The pages written are unmapped as the chunks go (so a chunk ends mid-page, and an entry
    lands on a page let go already): the file holds every value."""
    monkeypatch.setattr(values_module, "OUT_CHUNK", 777)
    monkeypatch.setattr(entries_module, "ENTRY_CHUNK", 5)
    t, dense = CASES[name]
    out = np.memmap(tmp_path / "o.bin", dtype=dense.dtype, mode="w+", offset=0, shape=t.shape)
    assert same(np.asarray(t.numpy(out=out)), dense)
    out.flush()
    assert same(np.fromfile(tmp_path / "o.bin", dense.dtype).reshape(dense.shape), dense)
    big = strided("float32", (300, 1000), (1, 0), np.arange(300, dtype="<f4"))
    out = np.memmap(tmp_path / "b.bin", dtype=np.float32, mode="w+", offset=40, shape=(300, 1000))
    big.numpy(out=out)
    out.flush()
    assert same(np.fromfile(tmp_path / "b.bin", np.float32, offset=40).reshape(300, 1000),
                np.broadcast_to(np.arange(300, dtype=np.float32)[:, None], (300, 1000)))


def named(t: Tensor, names) -> Tensor:
    """``t`` and its members with names (a container names every tensor), an overlay's base first."""
    members = sorted(t.members, key=lambda m: m.descriptor.composite_member is None
                     or m.descriptor.composite_member.member_role != MemberRole.BASE)
    return Tensor(t.descriptor, t.buffers, next(names), members=[named(m, names) for m in members])


@pytest.mark.parametrize("name", list(CASES))
def test_dequantize_of_a_container_tensor_writes_the_dense_array(name, tmp_path, tiny_chunks, capsys):
    """Every tensor above in a .hrry, through ``dequantize FILE.hrry --name t``: the .npy holds
    the dense array (its values widened to float32 where .npy has no type)."""
    import itertools

    from hurray_decl import cli as command_line

    t, dense = CASES[name]
    hd.save(tmp_path / "t.hrry", {"t": named(t, (f"m{i}" for i in itertools.count()))})
    assert command_line.main(["dequantize", str(tmp_path / "t.hrry"), "--name", "t", "-o",
                              str(tmp_path / "t.npy")]) == 0, capsys.readouterr().err
    assert same(np.load(tmp_path / "t.npy"), dense)


def test_sparse_windows_read_only_their_entries():
    """Entries outside a CSR window's rows are never read: made NaN after the buffers were checked."""
    rng = np.random.default_rng(3)
    dense = sparse_dense(rng, (20, 30))
    t = hd.Tensor.from_scipy(sp.csr_array(dense))
    copies = [bytearray(b) for b in t.buffers]
    twin = Tensor(t.descriptor, copies)
    twin.check()
    ptr = np.frombuffer(copies[2], "<u8").astype(int)
    stored = np.frombuffer(copies[0], "<f4").copy()
    stored[: ptr[5]] = np.nan
    stored[ptr[9]:] = np.nan
    copies[0][:] = stored.tobytes()
    assert same(twin[5:9, 3:27], dense[5:9, 3:27])
    assert np.isnan(twin[0:5]).any()  # the poison is real


def test_members_outside_a_window_are_never_read():
    t, dense = CASES["partition"]
    poisoned = [Tensor(m.descriptor, [bytearray(b) for b in m.buffers], m.name) for m in t.members]
    head = Tensor(t.descriptor, (), "p", members=poisoned)
    head.check()
    raw = poisoned[0].buffers[0].obj  # the bytearray behind the read-only view
    raw[:] = np.full(24, np.nan, "<f4").tobytes()
    assert same(head[:, 4:], dense[:, 4:])
    assert np.isnan(head[:, :4]).all()


def test_check_refuses_before_any_value():
    dense = np.eye(4, dtype=np.float32)
    t = hd.Tensor.from_scipy(sp.coo_array(dense))
    bad = bytearray(t.buffers[1])
    bad[:8] = (99).to_bytes(8, "little")  # a coordinate past the shape
    twin = Tensor(t.descriptor, [t.buffers[0], bytes(bad)])
    with pytest.raises(HurrayDeclError) as err:
        twin.check()
    assert err.value.code.startswith("HT-LAY")


# ---------------------------------------------------------------- the T4-F files, measured

def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hurray_decl", *args]


def t4f_files(folder: Path, coo_side: int = 1 << 14) -> tuple[Path, Path]:
    """The 4 KB broadcast file (uint8 (2^15)^2, strides (0, 0)) and the 8 KB COO file (float32,
    one entry) of the issue."""
    broadcast = strided("uint8", (1 << 15, 1 << 15), (0, 0), np.array([7], np.uint8))
    hd.save(folder / "broadcast.hrry", {"b": broadcast})
    coo = Tensor(hd.read_tensor_descriptor(hd.write_tensor_descriptor(TensorDescriptor(
        type_tag=0x03, shape=(coo_side, coo_side), layout=COO(nnz=1, is_sorted=1),
        buffers=(BufferHandle(byte_size=4), BufferHandle(byte_size=16))))),
        [np.float32(2.5).tobytes(), np.array([1, coo_side - 2], "<u8").tobytes()])
    hd.save(folder / "coo.hrry", {"c": coo})
    return folder / "broadcast.hrry", folder / "coo.hrry"


def test_the_t4f_files_are_4_and_8_kb(tmp_path):
    broadcast, coo = t4f_files(tmp_path)
    assert broadcast.stat().st_size <= 4 * 1024 + 128 and coo.stat().st_size <= 8 * 1024 + 128


@pytest.mark.parametrize("which", ["broadcast", "coo"])
def test_dequantize_of_the_t4f_files_peaks_under_128_mib_beyond_its_output(which, tmp_path):
    broadcast, coo = t4f_files(tmp_path)
    source = broadcast if which == "broadcast" else coo
    out = tmp_path / "out.npy"
    run = measured(*cli("dequantize", str(source), "-o", str(out)), cwd=tmp_path)
    assert run["rc"] == 0, run["err"]
    size = out.stat().st_size
    assert size > 1 << 30  # the output is 1 GiB
    # under 128 MiB beyond the output, and in fact in all: the mapped pages written are let go as it goes
    assert run["peak"] < 128 * MiB, f"peak {run['peak'] / MiB:.0f} MiB for a {size / MiB:.0f} MiB output"
    got = np.load(out, mmap_mode="r")
    if which == "broadcast":
        assert got.shape == (1 << 15, 1 << 15) and got.dtype == np.uint8
        assert all((got[i: i + 4096] == 7).all() for i in range(0, 1 << 15, 4096))
    else:
        assert got.shape == (1 << 14, 1 << 14) and got.dtype == np.float32
        assert got[1, (1 << 14) - 2] == 2.5 and np.count_nonzero(got[:2]) == 1 and not got[2:].any()
    out.unlink()


@pytest.mark.parametrize("which", ["broadcast", "coo"])
def test_dequantize_refuses_by_the_free_space_check_before_creating_the_file(which, tmp_path, monkeypatch, capsys):
    from hurray_decl import cli as command_line
    from hurray_decl.cli import outputs

    broadcast, coo = t4f_files(tmp_path)
    source = broadcast if which == "broadcast" else coo
    monkeypatch.setattr(outputs, "free_space", lambda folder: 512 * MiB)  # a disk with 512 MiB left
    assert command_line.main(["dequantize", str(source), "-o", str(tmp_path / "out.npy")]) == 3
    err = capsys.readouterr().err
    assert "would take 1,073,741,9" in err and "536,870,912 bytes free" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broadcast.hrry", "coo.hrry"]  # nothing created


def test_dequantize_of_a_terabyte_output_is_refused_by_the_disk_without_memory(tmp_path):
    """(2^21)^2 uint8 broadcast, 4 TiB: no disk has room, and the refusal allocates nothing."""
    hd.save(tmp_path / "big.hrry", {"b": strided("uint8", (1 << 21, 1 << 21), (0, 0), np.array([7], np.uint8))})
    run = measured(*cli("dequantize", "big.hrry", "-o", "big.npy"), cwd=tmp_path)
    assert run["rc"] == 3 and "would take 4,398,046,511,232 bytes" in run["err"], run
    assert run["peak"] < 128 * MiB and not (tmp_path / "big.npy").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["big.hrry"]


@pytest.mark.parametrize("which, side", [("broadcast", 1 << 15), ("coo", 1 << 14), ("coo", 1 << 17)])
def test_2x2_windows_of_the_t4f_files_peak_under_64_mib(which, side, tmp_path):
    broadcast, coo = t4f_files(tmp_path, coo_side=side if which == "coo" else 1 << 14)
    source = broadcast if which == "broadcast" else coo
    run = measured(*cli("dequantize", str(source), "--region", "0:2,0:2", "-o", "w.npy"), cwd=tmp_path)
    assert run["rc"] == 0, run["err"]
    assert run["peak"] < 64 * MiB, f"peak {run['peak'] / MiB:.1f} MiB"
    expected = np.full((2, 2), 7, np.uint8) if which == "broadcast" else np.zeros((2, 2), np.float32)
    assert same(np.load(tmp_path / "w.npy"), expected)
    corner = f"{side - 2}:,{side - 2}:" if which == "coo" else "-2:,-2:"
    run = measured(*cli("dequantize", str(source), "--region", f"0:2,{corner.split(',')[1]}", "-o", "e.npy"),
                   cwd=tmp_path)
    assert run["rc"] == 0 and run["peak"] < 64 * MiB, run["err"]
    if which == "coo":
        assert same(np.load(tmp_path / "e.npy"), np.array([[0, 0], [2.5, 0]], np.float32))
    api = measured(sys.executable, "-c", "import hurray_decl as hd, sys; f = hd.open(sys.argv[1]); "
                   "print(f[list(f)[0]][0:2, 0:2].tolist())", str(source), cwd=tmp_path)
    assert api["rc"] == 0 and api["peak"] < 64 * MiB, api["err"]
    assert json.loads(api["out"]) == expected.tolist()


# ---------------------------------------------------------------- arbitrary entries


@given(layout=st.sampled_from(["coo", "csr", "csc"]), rows=st.integers(1, 9), cols=st.integers(1, 9),
       nnz=st.integers(0, 12), seed=st.integers(0, 2**32 - 1), key_seed=st.integers(0, 2**32 - 1))
def test_windows_of_arbitrary_entries_are_the_entries_placed_or_refused(layout, rows, cols, nnz, seed, key_seed):
    """Index buffers of random numbers (in range or not, repeated, unsorted): the tensor is refused
    with a rule, or every window is its stored entries placed by hand, sliced (entry chunks of 2)."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(nnz).astype("<f4")
    if layout == "coo":
        index = rng.integers(0, max(rows, cols) + 1, (nnz, 2)).astype("<u8")
        buffers = [values.tobytes(), index.tobytes()]
        kind = COO(nnz=nnz, is_sorted=int(rng.integers(0, 2)))
    else:
        along, across = (rows, cols) if layout == "csr" else (cols, rows)
        ptr = np.sort(rng.integers(0, nnz + 1, along + 1)).astype("<u8")
        if rng.random() < 0.7:
            ptr[0], ptr[-1] = 0, nnz
        buffers = [values.tobytes(), rng.integers(0, across + 1, nnz).astype("<u8").tobytes(), ptr.tobytes()]
        kind = CSR(nnz=nnz) if layout == "csr" else CSC(nnz=nnz)
    d = TensorDescriptor(type_tag=0x03, shape=(rows, cols), layout=kind,
                         buffers=tuple(BufferHandle(byte_size=len(b)) for b in buffers))
    t = Tensor(hd.read_tensor_descriptor(hd.write_tensor_descriptor(d)), buffers)
    try:
        entries = t.sparse()
    except HurrayDeclError as err:
        assert err.code
        with pytest.raises(HurrayDeclError) as again:
            t[0:rows, 0:cols]
        assert again.value.code == err.code
        return
    dense = np.zeros((rows, cols), np.float32)
    dense[tuple(entries.coords.T)] = entries.values
    saved = entries_module.ENTRY_CHUNK
    entries_module.ENTRY_CHUNK = 2
    try:
        key_rng = np.random.default_rng(key_seed)
        for _ in range(5):
            key = random_key(key_rng, (rows, cols))
            assert same(t[key], dense[key]), key
    finally:
        entries_module.ENTRY_CHUNK = saved
