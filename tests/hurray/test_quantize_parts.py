"""The quantizer, part by part, against the previous whole-array float64 quantizer
(``quantize_reference``): the same descriptor bytes and buffers, bit for bit, or the same refusal,
for every scheme and storage type, on odd shapes of 10^5+ elements, parts far smaller than a
block row (so every kind of part boundary is crossed), float32 and float64 input, and blocks
of zeros, subnormals, huge values, exact ties and NaN / infinities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import kernels, numerics
from hurray_decl.hurray.tensor import write_tensor_descriptor
from tests.hurray import quantize_reference

CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("per_block_affine", {"block_size": 32, "storage": "int4", "scale_type": "float16"}),
    ("per_block_affine", {"block_size": 32, "storage": "int8", "scale_type": "float16"}),
    ("per_block_affine", {"block_size": 32, "storage": "uint4", "symmetric": False, "scale_type": "float16"}),
    ("per_block_affine", {"block_size": 16, "storage": "int8", "symmetric": False, "scale_type": "bfloat16"}),
    ("per_block_affine", {"block_size": 8, "storage": "uint8", "symmetric": False, "axis": 0}),
    ("per_block_affine", {"block_size": 4, "storage": "int2", "axis": 1}),
    ("per_block_affine", {"block_size": 2, "storage": "uint2", "symmetric": False, "axis": 1}),
    ("per_block_affine", {"block_size": 32, "storage": "int4", "axis": 2}),
    ("per_channel_affine", {"axis": 0, "storage": "int8"}),
    ("per_channel_affine", {"axis": 1, "storage": "uint4", "symmetric": False}),
    ("per_channel_affine", {"axis": 2, "storage": "int16", "symmetric": False}),
    ("per_channel_affine", {"axis": 1, "storage": "uint2", "symmetric": False}),
    ("per_tensor_affine", {"storage": "int4"}),
    ("per_tensor_affine", {"storage": "uint32", "symmetric": False}),
    ("per_tensor_affine", {"storage": "int2", "symmetric": False}),
    ("nf4", {"block_size": 32}),
    ("nf4", {"block_size": 8, "axis": 1}),
    ("mxfp", {"block_size": 16, "storage": "float4_e2m1"}),
    ("mxfp", {"block_size": 32, "storage": "float6_e3m2", "axis": 0}),
    ("mxfp", {"block_size": 16, "storage": "float8_e5m2", "axis": 1}),
    ("mxfp", {"block_size": 16, "storage": "int8"}),
    ("mxfp", {"block_size": 16, "storage": "int4", "axis": 1}),
)
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in options.items())}" for name, options in CASES]


def outcome(work: Any) -> Any:
    """What a quantize call gives: (descriptor bytes, buffers), or the refusal's code, path and values."""
    try:
        descriptor, buffers = work()
    except HurrayDeclError as exc:
        return ("refused", exc.code, exc.path, repr(exc.actual), repr(exc.expected), str(exc))
    encoded = descriptor if isinstance(descriptor, bytes) else write_tensor_descriptor(descriptor)
    return encoded, [bytes(b) for b in buffers]


def check_same(x: np.ndarray, name: str, options: dict[str, Any], threads: int = 1) -> Any:
    expected = outcome(lambda: quantize_reference.quantize(x, name, **options))
    ours = outcome(lambda: numerics.quantize(x, name, threads=threads, **options))
    if ours != expected:
        if ours[0] == "refused" or expected[0] == "refused":
            raise AssertionError(f"ours {ours[:6]!r}, reference {expected[:6]!r}")
        for index, (a, b) in enumerate(zip(ours[1], expected[1])):
            if a != b:
                at = next(i for i in range(min(len(a), len(b))) if a[i] != b[i]) if len(a) == len(b) else None
                raise AssertionError(f"buffer {index} differs (sizes {len(a)}, {len(b)}; first byte {at})")
        raise AssertionError("descriptor bytes differ")
    return ours


def odd_array(shape: tuple[int, ...], seed: int, dtype: Any = np.float32) -> np.ndarray:
    """Normal values at scales from 1e-30 to 1e30 per outer index, with zero, subnormal, huge and
    single-spike blocks, and values on exact halves of a float16 scale."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30, shape[:1]).reshape((-1,) + (1,) * (len(shape) - 1))
    flat = x.reshape(-1)
    n = flat.size
    flat[n // 7: n // 7 + 300] = 0.0
    flat[n // 5: n // 5 + 200] = rng.standard_normal(200) * 1e-42  # subnormal in float32
    flat[n // 3: n // 3 + 100] = rng.uniform(-3.4e38, 3.4e38, 100)
    flat[n // 2] = 1e6
    ties = np.float32(np.float16(0.013671875))  # a float16 scale: multiples of s / 2 are exact ties
    flat[2 * n // 3: 2 * n // 3 + 64] = ties * (np.arange(64) - 32) / 2
    flat[2 * n // 3 + 64: 2 * n // 3 + 128] = np.nextafter(flat[2 * n // 3: 2 * n // 3 + 64].astype(np.float32),
                                                        np.float32(np.inf))
    return x.astype(dtype)


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_large_odd_arrays_quantize_as_before(name, options):
    """10^5+ elements of odd extents (partial blocks on every axis) on two threads."""
    x = odd_array((37, 61, 47), seed=len(IDS[CASES.index((name, options))]))
    ours = check_same(x, name, options, threads=2)
    if ours[0] != "refused":
        assert outcome(lambda: numerics.quantize(x, name, threads=1, **options)) == ours
    plain = np.random.default_rng(3).standard_normal((37, 61, 47)).astype(np.float32)
    assert check_same(plain, name, options)[0] != "refused" or name == "mxfp"


@pytest.mark.parametrize("chunk", [1, 5, 97, 4096])
@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_parts_smaller_than_blocks_rows_and_lanes(monkeypatch, chunk, name, options):
    """Parts of one block, of some lanes of one block, of block rows and of outer indices, with
    codes that start inside a byte; float32 and float64 input."""
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", chunk)
    for dtype, shape in ((np.float32, (5, 35, 13)), (np.float64, (3, 33, 9))):
        x = np.random.default_rng(chunk).standard_normal(shape).astype(dtype)
        x[1] *= 1e-3
        x[-1, :3] = 0.0
        check_same(x, name, options)


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_non_finite_and_invalid_inputs_are_refused_as_before(name, options):
    x = np.random.default_rng(5).standard_normal((6, 40, 3)).astype(np.float32)
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[4, 17, 1] = bad
        y[5, 0, 0] = np.nan
        assert check_same(y, name, options)[:2] == ("refused", "HQ-PT-03")
    huge = np.full((2, 32), 3e38)  # MXFP: past float32 when stored; the others: finite scales
    check_same(huge, name, options)
    symmetric = {**options, "symmetric": True} if "storage" in options else options
    check_same(-np.abs(x), name, symmetric)  # unsigned storage: refused (HQ-ZP-02)
    check_same(np.abs(x), name, symmetric)
    check_same(x.astype(np.float16), name, options)
    check_same((x * 100).astype(np.int16), name, options)
    check_same((x * 1e6).astype(np.int64), name, options)
    check_same(np.zeros((4, 64)), name, options)
    check_same(np.zeros((0, 64)), name, options)


def test_exact_float16_ties_round_as_float64():
    """x / s exactly at n + 1/2 (ties to even) and one float32 ulp either side, for every float16
    scale exponent: the float32 quotient the fast path takes rounds as the float64 one."""
    rng = np.random.default_rng(11)
    blocks = []
    for exponent in range(-24, 16):
        scale = np.float16(rng.uniform(1, 2) * 2.0 ** exponent)
        halves = (rng.integers(-15, 15, 31) + 0.5) * np.float32(scale)
        top = np.float32(scale) * 7  # the block's max |x|: its scale is max / 7 rounded up
        for shift in (0, 1, -1):
            values = np.nextafter(halves.astype(np.float32), np.float32(np.inf if shift > 0 else -np.inf)) \
                if shift else halves.astype(np.float32)
            blocks.append(np.concatenate([[top], values]))
    x = np.array(blocks, dtype=np.float32)
    for storage in ("int4", "int8"):
        check_same(x, "per_block_affine", {"block_size": 32, "storage": storage, "scale_type": "float16"})
    check_same(x, "per_block_affine", {"block_size": 32, "storage": "uint8", "symmetric": False,
                                       "scale_type": "bfloat16"})


def test_symmetric_unsigned_blocks_of_positive_values():
    x = np.abs(odd_array((33, 200), seed=2))
    for storage in ("uint4", "uint8", "uint2"):
        for name, options in (("per_block_affine", {"block_size": 32}), ("per_channel_affine", {"axis": 1}),
                              ("per_tensor_affine", {})):
            assert check_same(x, name, {**options, "storage": storage, "symmetric": True})[0] != "refused"
