"""The kernel machinery piece by piece, against values written out by hand or by the simplest
NumPy form: block geometry, the chunks tiling the stored order in every branch, the code and
byte tables, zero-point folding, parameter rows, the affine arithmetic and rounding up."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hurray_decl.errors import ArgumentError, RuleViolation
from hurray_decl.hurray import kernels
from hurray_decl.hurray.kernels import Box, Geometry
from hurray_decl.hurray.tables import storage


def test_geometry_of_a_padded_axis() -> None:
    g = Geometry((2, 5, 3), axis=1, block=2)
    assert (g.before, g.extent, g.after) == (2, 5, 3)
    assert (g.blocks_per_axis, g.padded, g.num_blocks, g.block_rows) == (3, 6, 18, 6)
    assert (g.row_elements, g.stored_elements) == (6, 36)


def test_geometry_of_edges() -> None:
    scalar = Geometry((), axis=0, block=1)
    assert (scalar.before, scalar.extent, scalar.after, scalar.stored_elements) == (1, 1, 1, 1)
    first = Geometry((4, 3), axis=0, block=4)
    assert (first.before, first.after, first.blocks_per_axis, first.padded) == (1, 3, 1, 4)
    exact = Geometry((8,), axis=0, block=4)
    assert (exact.blocks_per_axis, exact.padded, exact.num_blocks) == (2, 8, 2)
    assert Geometry((3,), axis=0, block=0).blocks_per_axis == 0


def _elements(g: Geometry, box: Box) -> np.ndarray:
    """The stored-order indices a box addresses, from its rows, ks and lanes."""
    r = np.arange(box.rows.start, box.rows.stop)[:, None, None]
    k = np.arange(box.ks.start, box.ks.stop)[None, :, None]
    lane = np.arange(box.lanes.start, box.lanes.stop)[None, None, :]
    indices: np.ndarray = (r * g.row_elements + k * g.after + lane).reshape(-1)
    return indices


@pytest.mark.parametrize(("shape", "axis", "block", "budget", "count", "branch"), [
    ((6, 4), 1, 2, 16, 2, "whole outer indices"),  # 8 block rows of 2, then 4
    ((3, 10, 1), 1, 2, 5, 9, "block rows of one outer index"),  # 2 + 2 + 1 block rows per outer index
    ((2, 8, 3), 1, 4, 7, 8, "part of one block row"),  # 2 + 2 positions of 4, 4 block rows
    ((2, 2, 9), 1, 2, 4, 12, "part of one row of a block row"),  # lanes 4 + 4 + 1, 4 rows of block rows
    ((5, 3), 0, 2, 1000, 1, "everything in one chunk"),
])
def test_chunks_tile_the_stored_order_within_the_budget(monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...],
                                                        axis: int, block: int, budget: int, count: int,
                                                        branch: str) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", budget)
    g = Geometry(shape, axis, block)
    chunks = list(kernels.boxes(g, 8))
    position = 0
    for box in chunks:
        assert box.start == position and box.stop - box.start == int(np.prod(box.shape)) > 0, (branch, box)
        assert np.array_equal(_elements(g, box), np.arange(box.start, box.stop)), (branch, box)
        assert box.stop - box.start <= budget, (branch, box)
        position = box.stop
    assert position == g.stored_elements
    assert len(chunks) == count, branch


def test_chunks_start_on_a_byte_for_sub_byte_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of 3 four-bit codes: chunks take an even number of rows (a whole byte), 4 of 5 fit."""
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 14)
    g = Geometry((8, 3), axis=1, block=3)
    starts = [b.start for b in kernels.boxes(g, 4)]
    assert starts == [0, 12] and all(s % 2 == 0 for s in starts)
    assert [b.start for b in kernels.boxes(g, 8)] == [0, 12]
    assert [b.start for b in kernels.boxes(g, 4, scale=2)] == [0]


def test_storage_bits_and_byte_codes() -> None:
    assert [kernels.storage_bits(np.zeros((3, n))) for n in (2, 4, 16, 256)] == [1, 2, 4, 8]
    assert kernels.byte_codes(4)[0xAB].tolist() == [0xB, 0xA]
    assert kernels.byte_codes(2)[0b11_10_01_00].tolist() == [0, 1, 2, 3]
    assert kernels.byte_codes(1)[0b0000_0110].tolist() == [0, 1, 1, 0, 0, 0, 0, 0]
    assert kernels.byte_codes(8)[200].tolist() == [200]


def test_code_values() -> None:
    assert kernels.code_values("int4").tolist() == [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1]
    assert kernels.code_values("uint2").tolist() == [0, 1, 2, 3]
    assert kernels.code_values("uint2", (0.5, -1.0, 2.0, 3.0)).tolist() == [0.5, -1.0, 2.0, 3.0]
    assert kernels.code_values("int8").dtype == np.float32 and kernels.code_values("int8")[255] == -1


def test_the_packed_table_holds_each_bytes_values_under_each_key() -> None:
    table = np.arange(2 * 16, dtype=np.float32).reshape(2, 16) * 0.5
    packed = kernels.packed_table(table, 4)
    assert packed.dtype == np.uint64 and packed.size == 2 * 256
    for key, byte in ((0, 0x00), (0, 0xAB), (1, 0x3C), (1, 0xFF)):
        pair = packed[key * 256 + byte:key * 256 + byte + 1].view(np.float32)
        assert pair.tolist() == [table[key, byte & 15], table[key, byte >> 4]]
    two = kernels.packed_table(np.arange(4, dtype=np.float32)[None], 2)
    assert two[0b00_01_10_11:0b00_01_10_11 + 1].view(np.float32).tolist() == [3, 2, 1, 0]
    eight = kernels.packed_table(np.arange(256, dtype=np.float32)[None], 8)
    assert eight.dtype == np.uint32 and eight[7:8].view(np.float32).tolist() == [7]


def test_the_pair_table_holds_both_bytes_values_low_first() -> None:
    codes = np.arange(256, dtype=np.float32) - 128
    pairs = kernels.pair_table(codes[None])
    for low, high in ((0, 0), (1, 2), (255, 0), (17, 200)):
        assert pairs[high * 256 + low:high * 256 + low + 1].view(np.float32).tolist() == [codes[low], codes[high]]


def test_affine_tables_and_folded_zero_points() -> None:
    table = kernels.affine_table("uint8", 3, 5)
    assert table.shape == (3, 256) and table[0, 10] == 7 and table[2, 0] == -5 and table[1, 255] == 251
    folded, keys = kernels.fold_zero_points("uint4", np.array([5, 3, 7]))
    assert keys.tolist() == [2, 0, 4] and keys.dtype == np.uint8 and folded.shape == (5, 16)
    assert folded[keys[0], 9] == 9 - 5 and folded[keys[2], 0] == -7
    empty, none = kernels.fold_zero_points("uint4", np.array([], dtype=np.int64))
    assert empty.shape == (1, 16) and none.size == 0


def test_broadcast_repeat_is_np_repeat() -> None:
    values = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    for count in (1, 2, 5):
        assert np.array_equal(kernels.broadcast_repeat(values, count), np.repeat(values, count))


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_thread_counts_are_positive_integers(bad: object) -> None:
    with pytest.raises(ArgumentError):
        kernels.thread_count(bad)


def test_thread_counts() -> None:
    assert kernels.thread_count(1) == 1 and kernels.thread_count(np.int64(3)) == 3
    assert kernels.thread_count(None) == kernels.workers() and 1 <= kernels.workers() <= 4


def _at(array: np.ndarray, box: Box) -> np.ndarray:
    rows: np.ndarray | None = kernels._at(array, box)
    assert rows is not None
    return rows


def test_parameter_rows_for_a_chunk() -> None:
    per_row = np.arange(4 * 3, dtype=np.float32).reshape(4, 1, 3)
    box = Box(slice(1, 3), slice(0, 2), slice(1, 3), 0, 0)
    assert np.array_equal(_at(per_row, box), per_row[1:3, :, 1:3])
    past = Box(slice(3, 6), slice(0, 2), slice(0, 3), 0, 0)  # rows read modulo the period
    assert np.array_equal(_at(per_row, past), per_row[[3, 0, 1]])
    one = np.arange(3, dtype=np.float32).reshape(1, 1, 3)
    assert np.array_equal(_at(one, box), one[:, :, 1:3])
    lane = np.arange(4, dtype=np.float32).reshape(4, 1, 1)
    assert np.array_equal(_at(lane, box), lane[1:3])
    assert kernels._at(None, box) is None


def test_part_values_pad_the_last_block_with_zeros() -> None:
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    g = Geometry((2, 5), 1, 2)
    (part,), aligned = kernels.parts(g, 4)
    assert aligned and part == kernels.Part(slice(0, 2), slice(0, 3), slice(0, 1))
    values = kernels.part_values(x, g, part)
    assert values.shape == (2, 3, 2, 1) and values.dtype == np.float32
    assert values[1, 1, :, 0].tolist() == [7, 8] and values[0, 2, :, 0].tolist() == [4, 0]
    whole = kernels.part_values(x, Geometry((2, 5), 1, 5), kernels.Part(slice(0, 2), slice(0, 1), slice(0, 1)))
    assert whole.shape == (2, 1, 5, 1) and np.shares_memory(whole, x)  # no padding: a view
    codes = np.ones((2, 3, 2, 1))
    assert kernels.clear_padding(codes, g, part)[:, 2, :, 0].tolist() == [[1, 0], [1, 0]]


def test_parts_cover_every_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole outer indices, block rows of one, or one block over some lanes: every (a, j, lane) once,
    and whether parts end on whole packing units."""
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 12)
    for shape, axis, block, bits in (((3, 8, 2), 1, 4, 4), ((2, 40, 1), 1, 2, 2), ((2, 4, 30), 1, 2, 4),
                                     ((2, 4, 7), 1, 2, 4), ((5, 3), 0, 2, 2)):
        g = Geometry(shape, axis, block)
        chunks, aligned = kernels.parts(g, bits)
        seen = np.zeros((g.before, g.blocks_per_axis, g.after), dtype=int)
        for part in chunks:
            seen[part.outer, part.blocks, part.lanes] += 1
        assert (seen == 1).all(), shape
        unit = 8 // bits
        assert aligned == ((g.row_elements % unit == 0 and (g.row_elements <= 12 or g.after % unit == 0))
                           or g.blocks_per_axis * g.row_elements <= 12), shape


def test_codes_pack_parts_in_place_or_merge_their_bits() -> None:
    g = Geometry((3, 3), 0, 2)  # B = 3: one block over lanes, rows of 6 int4 codes, parts share bytes
    codes = kernels.Codes(g, "int4", aligned=False)
    values = np.arange(-6, 6).reshape(2, 2, 3).astype(np.float64)  # (blocks, K, lanes)
    for j in range(2):
        for lane in range(3):
            part = kernels.Part(slice(0, 1), slice(j, j + 1), slice(lane, lane + 1))
            codes.put(part, values[j, :, lane].reshape(1, 1, 2, 1))
    assert codes.data.tobytes() == storage.encode(values.reshape(-1), "int4")
    eight = kernels.Codes(Geometry((4,), 0, 1), "uint8", aligned=True)
    eight.put(kernels.Part(slice(0, 1), slice(0, 4), slice(0, 1)), np.array([0.0, 1, 254, 255]).reshape(1, 4, 1, 1))
    assert eight.data.tolist() == [0, 1, 254, 255]


def test_block_extreme_includes_zero() -> None:
    values = np.array([[1.0, 3.0, -2.0], [-1.0, -4.0, -0.5]]).reshape(1, 2, 3, 1)
    assert kernels.block_extreme(values, largest=True)[0, :, 0].tolist() == [3.0, 0.0]
    assert kernels.block_extreme(values, largest=False)[0, :, 0].tolist() == [-2.0, -4.0]
    assert kernels.block_extreme(np.abs(values[:, 1:]) + 1, largest=False)[0, :, 0].tolist() == [0.0]


def test_block_order_and_block_rows() -> None:
    per_block = np.arange(2 * 3 * 4).reshape(2, 3, 4)  # (A, nb, B)
    order = kernels.block_order(per_block)
    assert order[:4].tolist() == [0, 4, 8, 1] and order.size == 24  # b = (a * B + i) * nb + j
    g = Geometry((2, 6, 4), axis=1, block=2)
    rows = kernels.by_block_row(order, g)
    assert rows.shape == (6, 1, 4) and np.array_equal(rows.reshape(2, 3, 4), per_block)


def test_integer_ranges() -> None:
    assert kernels.integer_range("int4") == (-8, 7) and kernels.integer_range("uint8") == (0, 255)
    with pytest.raises(ValueError, match=r"^float32 is not an integer type$"):
        kernels.integer_range("float32")


def test_affine_calibration() -> None:
    scales, zeros = kernels.affine_calibration(np.array([-2.0, 0.0]), np.array([1.0, 0.0]), "int8", True)
    below = float((scales[:1].view(np.uint32) - 1).view(np.float32)[0])
    assert scales.dtype == np.float32 and float(scales[0]) >= 2 / 127 > below  # max|x| / qmax, rounded up
    assert scales[1] == 1.0 and zeros.tolist() == [0, 0]
    scales, zeros = kernels.affine_calibration(np.array([-1.0]), np.array([3.0]), "uint8", False)
    below = float((scales[:1].view(np.uint32) - 1).view(np.float32)[0])
    assert float(scales[0]) >= 4 / 254 > below  # (max - min) / (qmax - qmin - 1), rounded up
    assert zeros[0] == -np.floor(-1.0 / float(scales[0]))
    scales, zeros = kernels.affine_calibration(np.array([-1.0]), np.array([3.0]), "int8", False)
    below = float((scales[:1].view(np.uint32) - 1).view(np.float32)[0])
    assert float(scales[0]) >= 4 / 254 > below and zeros[0] == -128 - np.floor(-1.0 / float(scales[0]))
    scales, zeros = kernels.affine_calibration(np.array([1.0]), np.array([2.0]), "uint4", False)
    assert float(scales[0]) >= 2 / 14 and zeros[0] == 0  # the range always holds 0
    with pytest.raises(RuleViolation) as info:
        kernels.affine_calibration(np.array([-1.0]), np.array([1.0]), "uint8", True)
    assert (info.value.code, info.value.path) == ("HQ-ZP-02", "symmetric")
    assert (info.value.actual, info.value.expected) == ("uint8, minimum -1.0", "signed storage")
    assert info.value.detail.startswith("symmetric quantization subtracts no zero point, so unsigned codes cannot")
    scales, _ = kernels.affine_calibration(np.array([0.0]), np.array([1.0]), "uint8", True)
    assert float(scales[0]) >= 1 / 255


def test_affine_codes_round_and_clip() -> None:
    x = np.array([0.26, -0.26, 100.0, -100.0, 0.75, 0.5])
    q = kernels.affine_codes(x, np.full(6, 0.5), np.array([1, 1, 1, 1, 1, 0]), "int4")
    assert q.tolist() == [2, 0, 7, -8, 3, 1] and q.dtype == np.float64  # 1.5 + 1 rounds to 2 + 1, half to even
    narrow = kernels.affine_codes(x.astype(np.float32), np.full(6, 0.5, dtype=np.float16), None, "int8")
    assert narrow.dtype == np.float32 and narrow.tolist() == [1, -1, 200, -200, 2, 1]  # symmetric: no clip


def test_cast_up_never_rounds_down() -> None:
    third = np.array([1 / 3, 0.1, 2.0, 65504.0])
    for dtype in (np.float16, np.float32):
        cast = kernels.cast_up(third, dtype)
        assert cast.dtype == dtype and (cast.astype(np.float64) >= third).all()
        below = (cast.view(np.dtype(f"u{cast.dtype.itemsize}")) - 1).view(dtype).astype(np.float64)
        assert (below < third).all()  # the next value down is already below: the least cast above
        assert cast[2] == 2.0
    assert kernels.cast_up(np.array([0.5]), np.float16)[0] == 0.5


def test_padded_codes() -> None:
    codes = np.arange(1, 11).reshape(2, 5)
    g = Geometry((2, 5), axis=1, block=2)
    assert kernels.padded_codes(codes, g).tolist() == [1, 2, 3, 4, 5, 0, 6, 7, 8, 9, 10, 0]
    whole = Geometry((2, 5), axis=1, block=5)
    assert kernels.padded_codes(codes, whole).tolist() == list(range(1, 11))


# --- run(): the values, the path each chunk takes, threads and progress ---------------------


def _uint4_case(shape: tuple[int, int] = (4, 8), block: int = 4, zeros: bool = True):  # type: ignore[no-untyped-def]
    """Row-major uint4 codes quantized along axis 1 in blocks, per-block scales (and zero points):
    the plan, the packed bytes and the values written out by hand."""
    rng = np.random.default_rng(sum(shape) + block)
    g = Geometry(shape, 1, block)
    codes = rng.integers(0, 16, (g.before, g.padded, g.after))
    scales = rng.choice([0.5, -0.25, 2.0, 1.0], g.block_rows).astype(np.float32).reshape(-1, 1, 1)
    z = rng.integers(0, 16, g.block_rows).reshape(-1, 1, 1) if zeros else None
    plan = kernels.affine_plan(g, "uint4", scales, z)
    flat = codes.reshape(-1)
    data = (flat[0::2] | flat[1::2] << 4).astype(np.uint8)
    per_row = codes.reshape(g.block_rows, block, 1).astype(np.float32)
    expected = ((per_row - (0 if z is None else z)) * scales).reshape(g.before, g.padded, g.after)[:, : g.extent]
    return plan, data, expected.reshape(shape).astype(np.float32)


@pytest.mark.parametrize("zeros", [True, False])
@pytest.mark.parametrize("budget", [5, 8, 1 << 17])
def test_run_writes_the_formula(monkeypatch: pytest.MonkeyPatch, zeros: bool, budget: int) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", budget)
    plan, data, expected = _uint4_case(zeros=zeros)
    seen: list[tuple[int, int]] = []
    out = kernels.run(plan, "uint4", np.full(expected.shape, np.nan, np.float32), data=data, threads=1,
                      progress=lambda done, total: seen.append((done, total)))
    assert np.array_equal(out, expected)
    assert seen[-1] == (32, 32) and [d for d, _ in seen] == sorted({d for d, _ in seen})


def test_run_takes_the_per_byte_table_for_whole_byte_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Block rows of 4 four-bit codes (2 bytes) sharing their zero point: every chunk is one
    take of the packed table per byte, none goes element by element."""
    def no_codes(*args: object) -> None:
        raise AssertionError("a chunk went element by element")

    monkeypatch.setattr(kernels, "_from_codes", no_codes)
    for zeros in (True, False):
        plan, data, expected = _uint4_case(zeros=zeros)
        assert np.array_equal(kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data,
                                          threads=1), expected)


def test_run_goes_element_by_element_when_a_chunk_splits_a_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 3 four-bit codes: block rows do not end on a byte, keyed chunks cannot take bytes."""
    calls: list[int] = []
    real = kernels._from_bytes

    def counted(*args: object) -> None:
        calls.append(1)
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(kernels, "_from_bytes", counted)
    plan, data, expected = _uint4_case(shape=(4, 6), block=3)
    assert np.array_equal(kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=1),
                          expected)
    assert calls == []


def test_run_on_threads_gives_the_same_values_and_counts_every_element(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 4)
    plan, data, expected = _uint4_case(shape=(8, 8))
    seen: list[int] = []
    out = kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=3,
                      progress=lambda done, total: seen.append(done))
    assert np.array_equal(out, expected) and max(seen) == 64 and len(seen) == 64 // (4 * kernels.LARGE_CHUNKS)


def test_run_needs_data_or_codes() -> None:
    plan, _, expected = _uint4_case()
    with pytest.raises(ArgumentError) as info:
        kernels.run(plan, "uint4", np.empty(expected.shape, np.float32))
    assert (info.value.path, info.value.expected) == ("data", "one of them")


def test_a_failing_chunk_on_a_thread_is_raised_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 4)
    plan, data, expected = _uint4_case(shape=(8, 8))

    def fail(*args: object) -> None:
        raise ZeroDivisionError("chunk")

    monkeypatch.setattr(kernels, "_from_bytes", fail)
    with pytest.raises(ZeroDivisionError, match="chunk"):
        kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=2)


def test_workers_are_the_usable_cores_at_most_four(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    for cores, expected in ((3, 3), (1, 1), (16, 4), (None, 1)):
        monkeypatch.setattr(os, "cpu_count", lambda cores=cores: cores)
        assert kernels.workers() == expected


def test_one_thread_takes_chunks_of_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 8)
    plan, data, expected = _uint4_case()
    seen: list[int] = []
    kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=1,
                progress=lambda done, total: seen.append(done))
    assert seen == [8, 16, 24, 32]


def test_parameters_are_repeated_by_broadcast_copies_only_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """np.repeat holds the GIL, so threads expand parameters by a broadcast copy; one thread keeps np.repeat."""
    calls: list[int] = []
    real = kernels.broadcast_repeat

    def counted(values: np.ndarray, count: int) -> np.ndarray:
        calls.append(count)
        repeated: np.ndarray = real(values, count)
        return repeated

    monkeypatch.setattr(kernels, "broadcast_repeat", counted)
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 8)
    plan, data, expected = _uint4_case(shape=(8, 8))
    assert np.array_equal(kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=1),
                          expected) and calls == []
    assert np.array_equal(kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=2),
                          expected) and calls


def test_a_shared_one_key_byte_table_is_read_two_bytes_per_take(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = kernels.pair_table

    def counted(table: np.ndarray) -> np.ndarray:
        calls.append(table.shape[1])
        pairs: np.ndarray = real(table)
        return pairs

    monkeypatch.setattr(kernels.plan, "pair_table", counted)  # Plan.pairs reads it there
    g = Geometry((4, 8), 1, 1)
    plan = kernels.Plan(g, table=kernels.code_values("int8")[None])
    data = np.arange(32, dtype=np.uint8) * 7
    out = kernels.run(plan, "int8", np.empty((4, 8), np.float32), data=data, threads=1)
    assert np.array_equal(out.reshape(-1), data.view(np.int8).astype(np.float32)) and calls == [256]


def test_two_bit_codes_take_the_per_byte_table_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Block rows of 8 two-bit codes (2 bytes) sharing their zero point: one take per byte."""
    def no_codes(*args: object) -> None:
        raise AssertionError("a chunk went element by element")

    monkeypatch.setattr(kernels, "_from_codes", no_codes)
    rng = np.random.default_rng(2)
    g = Geometry((3, 16), 1, 8)
    codes = rng.integers(0, 4, (3, 16))
    scales = np.array([0.5, 1.0, -2.0, 0.25, 4.0, 1.5], np.float32).reshape(-1, 1, 1)
    zeros = rng.integers(0, 4, 6).reshape(-1, 1, 1)
    flat = codes.reshape(-1)
    data = (flat[0::4] | flat[1::4] << 2 | flat[2::4] << 4 | flat[3::4] << 6).astype(np.uint8)
    expected = ((codes.reshape(6, 8, 1) - zeros) * scales).reshape(3, 16).astype(np.float32)
    out = kernels.run(kernels.affine_plan(g, "uint2", scales, zeros), "uint2", np.empty((3, 16), np.float32),
                      data=data, threads=1)
    assert np.array_equal(out, expected)


def test_a_zero_chunk_budget_still_takes_one_element_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 0)
    g = Geometry((2, 3), 1, 1)
    assert [(b.start, b.stop) for b in kernels.boxes(g, 8)] == [(i, i + 1) for i in range(6)]


@pytest.mark.parametrize("per", [3, 4, 8, 12, 20])
def test_keyed_index_ors_each_rows_key_into_its_bytes(per: int) -> None:
    """``base[r] | byte`` for every byte of row r, with rows of 12 and 20 bytes too (three and five
    packed four-key copies, where a wrong repeat count shows)."""
    base = (np.array([3, 7], dtype=np.uint16) << np.uint16(8)).astype(np.uint16)
    raw = (np.arange(2 * per) * 37 % 256).astype(np.uint8)
    got = kernels._keyed_index(base, raw, np.repeat)
    assert got.tolist() == (np.repeat(base, per) | raw).tolist()


def test_a_32_bit_zero_point_is_subtracted_exactly() -> None:
    """int32 codes near 2^30 and their zero point differ by less than float32 resolves there:
    the subtraction is in int64 (HD-13), so q - z comes out exact."""
    g = Geometry((1, 4), 1, 4)
    z = 1 << 30
    codes = np.array([z + 1, z - 1, z, z + 3], dtype="<i4")
    plan = kernels.affine_plan(g, "int32", np.ones((1, 1, 1), np.float32), np.full((1, 1, 1), z))
    out = kernels.run(plan, "int32", np.full((1, 4), np.nan, np.float32), data=codes.view(np.uint8), threads=1)
    assert out.tolist() == [[1.0, -1.0, 0.0, 3.0]]


def test_what_quantize_returns_cannot_be_changed_afterwards() -> None:
    """A ``Quantized`` is handed from a scheme's quantizer to the writer: frozen, so nothing between
    them can swap the model or the arrays it was checked with."""
    import dataclasses

    done = kernels.Quantized(model=object(), data=np.zeros(4, np.uint8), parameters=(np.ones(1),))
    for name in ("model", "data", "parameters"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(done, name, None)


@pytest.mark.parametrize("budget", [2, 4])
def test_every_chunk_of_a_shared_one_key_table_takes_two_bytes_at_a_time(monkeypatch: pytest.MonkeyPatch,
                                                                         budget: int) -> None:
    """Chunks of 2 or 4 int8 codes, starting at 0, 2, 4, ... (parts of blocks of 8 when 2 or 4): each
    one is a take of the two-byte table, none of the one-byte table, none element by element."""
    def never(*args: object) -> None:
        raise AssertionError("a chunk left the two-byte path")

    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", budget)
    monkeypatch.setattr(kernels, "_from_codes", never)
    monkeypatch.setattr(kernels.Plan, "packed", property(never))
    g = Geometry((4, 8), 1, 8)
    assert [b.start for b in kernels.boxes(g, 8)] == list(range(0, 32, budget))
    assert all(b.ks.stop - b.ks.start == budget for b in kernels.boxes(g, 8)), "each chunk is part of a block"
    data = np.arange(32, dtype=np.uint8) * 7
    out = kernels.run(kernels.Plan(g, table=kernels.code_values("int8")[None]), "int8", np.empty((4, 8), np.float32),
                      data=data, threads=1)
    assert np.array_equal(out.reshape(-1), data.view(np.int8).astype(np.float32))


@pytest.mark.parametrize("threads", [2, 3])
def test_each_of_the_threads_asked_for_takes_chunks(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """The first ``threads`` chunks wait until all of them are in flight at once: with one thread
    fewer than asked, that barrier never fills and the run fails."""
    import itertools
    import threading

    barrier = threading.Barrier(threads, timeout=20)
    order = itertools.count()
    real = kernels._from_bytes

    def together(*args: object) -> None:
        if next(order) < threads:
            barrier.wait()
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(kernels, "_from_bytes", together)
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 4)
    plan, data, expected = _uint4_case(shape=(8, 8))
    assert len(list(kernels.boxes(plan.geometry, 4, kernels.LARGE_CHUNKS))) > threads, "a chunk for every thread"
    out = kernels.run(plan, "uint4", np.empty(expected.shape, np.float32), data=data, threads=threads)
    assert np.array_equal(out, expected)


@pytest.mark.parametrize(("name", "kind", "widened"), [("int16", "<i2", "int16"), ("uint16", "<u2", "uint16"),
                                                       ("int32", "<i4", "int64"), ("uint32", "<u4", "int64")])
def test_wide_codes_are_numbers_of_their_own_width_and_32_bit_ones_of_64(name: str, kind: str, widened: str) -> None:
    """16-bit codes stay 16-bit (a chunk costs no more than its codes); 32-bit codes become int64, so
    that ``q - z`` is exact (HD-13), unsigned ones included."""
    codes = np.array([1, 2, np.iinfo(kind).max], dtype=kind)
    values = kernels._decoded(codes, name, None)
    assert values.dtype == np.dtype(widened) and values.tolist() == codes.tolist()


# --- exact values where only a count or a coverage was checked ------------------------------

def test_a_thread_count_below_one_names_the_argument_and_the_bound() -> None:
    with pytest.raises(ArgumentError) as info:
        kernels.thread_count(0)
    err = info.value
    assert (err.code, err.path, err.actual, err.expected) == ("ARGUMENT", "threads", 0, ">= 1")
    assert err.detail == "threads is a positive integer"


def _spans(chunks: list[kernels.Part]) -> list[tuple[tuple[int, int], tuple[int, int], tuple[int, int]]]:
    return [((p.outer.start, p.outer.stop), (p.blocks.start, p.blocks.stop), (p.lanes.start, p.lanes.stop))
            for p in chunks]


@pytest.mark.parametrize(("shape", "bits", "budget", "spans", "aligned"), [
    # whole outer indices: rows of 2 two-bit codes end on a byte every 2 outer indices; 10 // 2 // 2 * 2 = 4
    ((6, 2, 1), 2, 10, [((0, 4), (0, 1), (0, 1)), ((4, 6), (0, 1), (0, 1))], True),
    ((6, 2, 1), 2, 3, [((0, 2), (0, 1), (0, 1)), ((2, 4), (0, 1), (0, 1)), ((4, 6), (0, 1), (0, 1))], True),
    # block rows of one outer index: 7 // 2 = 3 block rows of 2 elements
    ((2, 10, 1), 4, 7, [((a, a + 1), j, (0, 1)) for a in (0, 1) for j in ((0, 3), (3, 5))], True),
    ((2, 10, 1), 2, 7, [((a, a + 1), j, (0, 1)) for a in (0, 1) for j in ((0, 3), (3, 5))], False),
    # one block over some lanes: 14 // 2 = 7 lanes, down to 6, a multiple of the 2 codes of a byte
    ((1, 2, 30), 4, 14, [((0, 1), (0, 1), (i, i + 6)) for i in range(0, 30, 6)], True),
    ((1, 2, 5), 8, 1, [((0, 1), (0, 1), (i, i + 1)) for i in range(5)], True),  # at least one lane
    ((1, 2, 5), 4, 4, [((0, 1), (0, 1), (0, 2)), ((0, 1), (0, 1), (2, 4)), ((0, 1), (0, 1), (4, 5))], False),
    ((1, 2, 4), 4, 2, [((0, 1), (0, 1), (0, 2)), ((0, 1), (0, 1), (2, 4))], True),  # at least one byte's lanes
])
def test_parts_are_exactly_the_budgets_spans(monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...], bits: int,
                                             budget: int, spans: list[object], aligned: bool) -> None:
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", budget)
    chunks, whole = kernels.parts(Geometry(shape, axis=1, block=2), bits)
    assert (_spans(chunks), whole) == (spans, aligned)


def test_sub_byte_codes_are_read_through_the_code_table() -> None:
    codes = np.array([[0, 7, 8, 15]], dtype=np.uint8)
    values = kernels._decoded(codes, "int4", None)
    assert values.dtype == np.float32 and values.tolist() == [[0, 7, -8, -1]]
    nf = tuple(float(v) / 2 for v in range(256))
    mapped = kernels._decoded(np.array([[0, 3, 255]], dtype=np.uint8), "uint8", nf)
    assert mapped.dtype == np.float32 and mapped.tolist() == [[0.0, 1.5, 127.5]]
    wide = kernels._decoded(np.array([[0, 3, 255]], dtype=np.uint8), "uint8", None)
    assert wide.dtype == np.uint8 and wide.tolist() == [[0, 3, 255]]


def test_one_scale_per_block_divides_contiguously(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scales (outer, blocks, 1, 1) are repeated along the block before the divide; other shapes broadcast."""
    seen: list[tuple[int, ...]] = []
    divide = np.divide

    def spy(values: np.ndarray, scales: np.ndarray) -> np.ndarray:
        seen.append(np.shape(scales))
        result: np.ndarray = divide(values, scales)
        return result

    monkeypatch.setattr(kernels.np, "divide", spy)
    values = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    per_block = np.arange(1, 7, dtype=np.float64).reshape(2, 3, 1, 1)
    q = kernels.affine_codes(values, per_block, None, "int32")
    assert seen == [(2, 3, 4, 1)] and np.array_equal(q, np.rint(values / per_block))
    per_element = np.full((2, 3, 4, 5), 0.5)
    assert np.array_equal(kernels.affine_codes(values, per_element, None, "int32"), values * 2)
    single = np.arange(1, 7, dtype=np.float64).reshape(2, 3, 1, 1)
    one = kernels.affine_codes(values[:, :, :1], single, None, "int32")
    assert np.array_equal(one, np.rint(values[:, :, :1] / single))
    assert seen[1:] == [(2, 3, 4, 5), (2, 3, 1, 1)]


def test_short_rows_of_row_parameters_are_spread_into_a_contiguous_chunk() -> None:
    """Several rows of one value each, rows of fewer than 256 elements: repeated into the chunk's
    shape; otherwise the parameters are returned as they are (a broadcast)."""
    counts: list[int] = []

    def repeat(values: np.ndarray, count: int) -> np.ndarray:
        counts.append(count)
        return np.repeat(values, count)

    rows = np.array([2.0, 3.0], dtype=np.float32).reshape(2, 1, 1)
    for shape in ((2, 4, 5), (2, 15, 17)):
        spread = kernels._spread(rows, shape, repeat)
        assert spread.shape == shape and np.array_equal(spread, np.broadcast_to(rows, shape))
    assert counts == [20, 255]
    lanes = np.arange(10, dtype=np.float32).reshape(2, 1, 5)
    one = np.ones((1, 1, 1), dtype=np.float32)
    for values, shape in ((rows, (2, 16, 16)), (lanes, (2, 4, 5)), (one, (1, 4, 5))):
        assert kernels._spread(values, shape, repeat) is values
    assert counts == [20, 255]


def test_the_quotient_is_float32_only_for_float32_values_16_bit_scales_and_codes_of_8_bits_at_most() -> None:
    x = np.array([0.26, -0.26, 1.0], dtype=np.float32)
    half = np.full(3, 0.5, dtype=np.float16)
    for name in ("int2", "int4", "uint4", "int8"):
        q = kernels.affine_codes(x, half, None, name)
        assert q.dtype == np.float32 and q.tolist() == [1, -1, 2], name
    for values, scales, name in ((x, half, "int16"), (x, half.astype(np.float32), "int4"),
                                 (x.astype(np.float64), half, "int4")):
        q = kernels.affine_codes(values, scales, None, name)
        assert q.dtype == np.float64 and q.tolist() == [1, -1, 2], name


def test_eight_and_four_bit_integer_codes_skip_the_generic_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = storage.encode

    def encode(codes: np.ndarray, name: str) -> bytes:
        calls.append(name)
        return real(codes, name)

    monkeypatch.setattr(storage, "encode", encode)
    values = np.array([-3.0, 0.0, 5.0, -8.0, 7.0, 1.0])
    for name, size, generic in (("int8", 6, []), ("int4", 6, []), ("uint4", 4, []), ("int4", 5, ["int4"]),
                                ("int2", 4, ["int2"])):
        codes = np.clip(values[:size], *kernels.integer_range(name))
        packed = kernels.Codes(Geometry((size,), 0, 1), name, aligned=True)
        packed.put(kernels.Part(slice(0, 1), slice(0, size), slice(0, 1)), codes.reshape(1, size, 1, 1))
        assert calls == generic, name
        assert packed.data.tobytes() == real(codes, name), name
        calls.clear()


def test_the_row_start_and_pair_caches_are_bounded() -> None:
    kernels.row_starts.cache_clear()
    for rows in range(1, 11):
        assert kernels.row_starts(rows, 3).tolist() == [3 * r for r in range(rows)]
    assert kernels.row_starts.cache_info().currsize == 8
    kernels.plan._pairs_of.cache_clear()
    for key in range(18):
        kernels.pair_table(np.full(256, key, dtype=np.float32))
    assert kernels.plan._pairs_of.cache_info().currsize == 16
