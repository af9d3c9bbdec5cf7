"""GGUF's IQ, TQ and NVFP4 blocks as the project's private ggml codebook scheme (0xF1), and back.

Each type's block is read into the scheme's three arrays (:mod:`hurray_decl.hurray.schemes.ggml_codebook`):
every element's codebook value ``q`` (grid value times sign, IQ4 non-linear value, ternary
digit, doubled E2M1 value), every super-block's float16 ``d`` and every sub-block's integer scale
code ``sc``; and written back from them. The grids are ggml's (:mod:`.ggml_grids`, data); the
sign tables, non-linear values and E4M3 scales are computed here from their definitions.

A block converts only when writing its arrays back gives its bytes (CV-GGML-01): every block
llama.cpp's quantizers write does, but a byte the decoders ignore or read as another's value
(an IQ sign byte of odd parity, a TQ1_0 byte that is not the canonical one for its digits, an
NVFP4 code 8 or scale byte 0x7F and above) would not come back. Work is done ``chunk`` blocks
at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from hurray_decl.convert.ggml_grids import GRIDS
from hurray_decl.errors import ArgumentError, RuleViolation
from hurray_decl.hurray.schemes.ggml_codebook import TYPES, CodebookType

__all__ = ["CHUNK", "FORMATS", "CodebookBlocks", "decode_blocks", "encode_blocks"]

CHUNK = 1 << 14
"""GGUF blocks converted at a time."""

IQ4_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.int16)
"""IQ4_NL / IQ4_XS: the non-linear value of each 4-bit code (ggml's ``kvalues_iq4nl``)."""
E2M1_DOUBLED = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.int16)
"""NVFP4: twice the E2M1 value of each 4-bit code (code 8, -0, reads as 0)."""
UE4M3_BYTES = 0x7F
"""NVFP4 scale bytes 0x00 .. 0x7E have distinct values; 0x7F reads as 0, and the top bit is ignored."""


@dataclass(frozen=True)
class CodebookBlocks:
    """GGUF blocks of one codebook type as the scheme's arrays: ``q`` (blocks x elements, int16),
    ``d`` (float16, one per scheme super-block) and ``sc`` (int16, one per sub-block)."""

    q: np.ndarray
    d: np.ndarray
    sc: np.ndarray


F16 = "<f2"


def _record(*fields: tuple) -> np.dtype:
    return np.dtype(list(fields))


RECORDS: dict[str, np.dtype] = {
    "IQ2_XXS": _record(("d", F16), ("qs", "<u4", (8, 2))),  # per 32 elements: grid bytes, then signs and scale
    "IQ2_XS": _record(("d", F16), ("qs", "<u2", (32,)), ("scales", "u1", (8,))),
    "IQ2_S": _record(("d", F16), ("qs", "u1", (32,)), ("signs", "u1", (32,)), ("qh", "u1", (8,)),
                     ("scales", "u1", (8,))),
    "IQ3_XXS": _record(("d", F16), ("qs", "u1", (64,)), ("scales_and_signs", "<u4", (8,))),
    "IQ3_S": _record(("d", F16), ("qs", "u1", (64,)), ("qh", "u1", (8,)), ("signs", "u1", (32,)),
                     ("scales", "u1", (4,))),
    "IQ1_S": _record(("d", F16), ("qs", "u1", (32,)), ("qh", "<u2", (8,))),
    "IQ1_M": _record(("qs", "u1", (32,)), ("qh", "u1", (16,)), ("scales", "<u2", (4,))),  # d in the scales' tops
    "IQ4_NL": _record(("d", F16), ("qs", "u1", (16,))),
    "IQ4_XS": _record(("d", F16), ("scales_h", "<u2"), ("scales_l", "u1", (4,)), ("qs", "u1", (128,))),
    "TQ1_0": _record(("qs", "u1", (48,)), ("qh", "u1", (4,)), ("d", F16)),
    "TQ2_0": _record(("qs", "u1", (64,)), ("d", F16)),
    "NVFP4": _record(("d", "u1", (4,)), ("qs", "u1", (32,))),  # one unsigned E4M3 scale per 16 elements
}
"""Each type's block, field by field, as ggml's ``block_*`` records lay it out (little-endian)."""


def _int(field: np.ndarray) -> np.ndarray:
    return field.astype(np.int64)


def _nibbles(x: np.ndarray) -> np.ndarray:
    """Bytes (..., k) as 2k 4-bit codes: the k low nibbles, then the k high ones."""
    return np.concatenate([x & 15, x >> 4], axis=-1)


def _put_nibbles(codes: np.ndarray) -> np.ndarray:
    k = codes.shape[-1] // 2
    return (codes[..., :k] | (codes[..., k:] << 4)).astype(np.uint8)


def _pairs(x: np.ndarray) -> np.ndarray:
    """Bytes (n, k) as 2k 4-bit codes, low nibble first, byte by byte."""
    return np.stack([x & 15, x >> 4], axis=-1).reshape(x.shape[0], -1)


def _put_pairs(codes: np.ndarray) -> np.ndarray:
    pairs = codes.reshape(codes.shape[0], -1, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).astype(np.uint8)


def _bits(x: np.ndarray) -> np.ndarray:
    """Bytes (...,) as their 8 bits (..., 8), bit 0 first."""
    return (x[..., None] >> np.arange(8)) & 1


def _byte(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.int64) << np.arange(8)).sum(axis=-1)


def _parity(x: np.ndarray) -> np.ndarray:
    return _bits(x).sum(axis=-1) & 1


def _ksigns(index: np.ndarray) -> np.ndarray:
    """ggml's ``ksigns_iq2xs``: a 7-bit index as 8 sign bits, the eighth making their count even."""
    return index | (_parity(index) << 7)


def _scale_codes(sc: np.ndarray, low: int, high: int, what: str) -> np.ndarray:
    """Odd scale codes ``2 ls + 1`` back to ``ls`` in ``low .. high``."""
    sc = sc.astype(np.int64)
    ls = (sc - 1) // 2
    bad = ((sc - 1) % 2 != 0) | (ls < low) | (ls > high)
    if bad.any():
        j = int(np.flatnonzero(bad.ravel())[0])
        raise _no_form(what, f"a scale code is 2 ls + 1 with ls in {low} .. {high}", f"sc[{j}]", int(sc.ravel()[j]))
    return ls


def _no_form(type_name: str, why: str, path: str, actual: Any = None) -> ArgumentError:
    return ArgumentError(path, f"no exact {type_name} form: {why}", actual=actual)


@cache
def _grid(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid of ``name`` (entries x width, int16), its entries' keys sorted, and the entry of each."""
    entries, width, text = GRIDS[name]
    grid = np.frombuffer(bytes.fromhex(text), np.int8).reshape(entries, width).astype(np.int16)
    keys = _keys(grid)
    order = np.argsort(keys, kind="stable")
    return grid, keys[order], order


def _keys(values: np.ndarray) -> np.ndarray:
    """One integer per row of small integers (-64 .. 63): 7 bits a value."""
    shifted = (values.astype(np.int64) + 64) << (7 * np.arange(values.shape[-1]))
    return shifted.sum(axis=-1)


def _grid_index(name: str, rows: np.ndarray, type_name: str) -> np.ndarray:
    """The grid entry of every row of ``rows`` (..., width), refused when a row is none."""
    _, keys, order = _grid(name)
    want = _keys(rows)
    at = np.minimum(np.searchsorted(keys, want), keys.size - 1)
    found = keys[at] == want
    if not found.all():
        j = int(np.flatnonzero(~found.ravel())[0])
        raise _no_form(type_name, "the values of a group are no entry of the type's grid", f"groups[{j}]",
                       rows.reshape(-1, rows.shape[-1])[j].tolist())
    return order[at]


def _signed(name: str, index: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Grid rows of ``index`` (...,) with the sign bits of ``signs`` (..., 8 bits over the rows' values)."""
    grid = _grid(name)[0]
    values = grid[index]
    flat = values.reshape(*signs.shape[:-1], -1)
    return np.where(signs.astype(bool), -flat, flat)


def _unsigned(q: np.ndarray, width: int, name: str, type_name: str) -> tuple[np.ndarray, np.ndarray]:
    """(grid entries of groups of ``width`` magnitudes, sign bits per 8 values) of signed grid values."""
    groups = np.abs(q).reshape(*q.shape[:-1], -1, width)
    return _grid_index(name, groups, type_name), (q < 0).reshape(*q.shape[:-1], -1, 8).astype(np.int64)


def _even_signs(signs: np.ndarray, type_name: str) -> np.ndarray:
    """The 7-bit sign indices of sign bytes (..., 8 bits), refused unless each count of minus signs is even."""
    sign_bytes = _byte(signs)
    low = sign_bytes & 127
    if (_ksigns(low) != sign_bytes).any():
        raise _no_form(type_name, "every 8 signs have an even count of minus signs", "signs")
    return low


SIGN_SHIFTS = np.array([0, 7, 14, 21])
"""IQ2_XXS / IQ3_XXS: the four 7-bit sign indices of a 32-bit word (its top four bits the scale)."""


# --- IQ2_XXS, IQ3_XXS: grid entries, then per 32 elements 4 7-bit sign indices and a 4-bit scale -----

def _xxs_words(b: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(grid entries per 32 elements, sign-and-scale word per 32 elements) of IQ2_XXS / IQ3_XXS blocks."""
    n = b.shape[0]
    if name == "IQ2_XXS":  # (grid bytes, signs and scale) interleaved per 32 elements
        words = b["qs"]
        return np.ascontiguousarray(words[..., 0]).view(np.uint8).reshape(n, 8, 4).astype(np.int64), _int(words[..., 1])
    return _int(b["qs"]).reshape(n, 8, 8), _int(b["scales_and_signs"])


def _xxs(name: str, width: int) -> tuple[Callable[..., CodebookBlocks], Callable[..., None]]:
    def decode(b: np.ndarray) -> CodebookBlocks:
        n = b.shape[0]
        index, aux = _xxs_words(b, name)
        signs = _bits(_ksigns((aux[..., None] >> SIGN_SHIFTS) & 127))  # (n, 8, 4, 8)
        q = _signed(name, index, signs).reshape(n, 256)
        return CodebookBlocks(q, b["d"], (2 * (aux >> 28) + 1).reshape(-1))

    def encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
        n = b.shape[0]
        index, signs = _unsigned(blocks.q.reshape(n, 8, 32), width, name, name)
        low = _even_signs(signs, name)
        aux = (low << SIGN_SHIFTS).sum(axis=-1) | (_scale_codes(blocks.sc.reshape(n, 8), 0, 15, name) << 28)
        b["d"] = blocks.d
        if name == "IQ2_XXS":
            b["qs"][..., 0] = np.ascontiguousarray(index.reshape(n, 8, 4).astype(np.uint8)).view("<u4")[..., 0]
            b["qs"][..., 1] = aux
        else:
            b["qs"] = index.reshape(n, 64)
            b["scales_and_signs"] = aux

    return decode, encode


# --- IQ2_XS: per 8 elements a 16-bit word (9-bit grid entry, 7-bit sign index); 4-bit scales ----------

def _iq2_xs_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    words = _int(b["qs"])
    q = _signed("IQ2_XS", words & 511, _bits(_ksigns(words >> 9))).reshape(n, 256)
    return CodebookBlocks(q, b["d"], (2 * _pairs(_int(b["scales"])) + 1).reshape(-1))


def _iq2_xs_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    index, signs = _unsigned(blocks.q.reshape(n, 256), 8, "IQ2_XS", "IQ2_XS")
    b["d"] = blocks.d
    b["qs"] = index | (_even_signs(signs, "IQ2_XS") << 9)
    b["scales"] = _put_pairs(_scale_codes(blocks.sc.reshape(n, 16), 0, 15, "IQ2_XS"))


# --- IQ2_S, IQ3_S: grid entry low bytes, high bits, sign bytes, 4-bit scales -------------------------

def _s_type(name: str, width: int, high_bits: int, sub_block: int) -> tuple[Callable[..., CodebookBlocks],
                                                                          Callable[..., None]]:
    groups = 256 // width
    subs = 256 // sub_block
    per_byte = 8 // high_bits
    shifts = high_bits * np.arange(per_byte)
    mask = (1 << high_bits) - 1

    def decode(b: np.ndarray) -> CodebookBlocks:
        n = b.shape[0]
        high = ((_int(b["qh"])[..., None] >> shifts) & mask).reshape(n, groups)
        index = _int(b["qs"]) | (high << 8)
        q = _signed(name, index.reshape(n, 32, -1), _bits(_int(b["signs"])))
        return CodebookBlocks(q.reshape(n, 256), b["d"], (2 * _pairs(_int(b["scales"])) + 1).reshape(-1))

    def encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
        n = b.shape[0]
        index, signs = _unsigned(blocks.q.reshape(n, 256), width, name, name)
        index = index.reshape(n, groups)
        b["d"] = blocks.d
        b["qs"] = index & 255
        b["qh"] = ((index >> 8).reshape(n, -1, per_byte) << shifts).sum(axis=-1)
        b["signs"] = _byte(signs).reshape(n, 32)
        b["scales"] = _put_pairs(_scale_codes(blocks.sc.reshape(n, subs), 0, 15, name))

    return decode, encode


# --- IQ1_S, IQ1_M: grid entries of -1, 0, 1 plus or minus 1/8: codes 8 g +- 1 --------------------------

IQ1_SHIFTS = np.array([0, 3, 6, 9])
"""IQ1_S qh / IQ1_M scales: four 3-bit fields of a 16-bit word."""


def _iq1_values(index: np.ndarray, minus: np.ndarray) -> np.ndarray:
    """8 g + delta for the grid rows of ``index`` (..., groups) and delta signs ``minus`` (..., groups)."""
    grid = _grid("IQ1_S")[0][index]
    return 8 * grid + np.where(minus.astype(bool), -1, 1)[..., None]


def _iq1_split(q: np.ndarray, type_name: str, per_delta: int) -> tuple[np.ndarray, np.ndarray]:
    """(grid entries per 8 elements, delta sign per ``per_delta`` elements) of IQ1 codes."""
    g = np.floor_divide(q + 1, 8)  # 8 g - 1 and 8 g + 1 both give g
    delta = q - 8 * g
    if not np.isin(delta, (-1, 1)).all():
        raise _no_form(type_name, "every code is 8 g + 1 or 8 g - 1", "codes")
    runs = delta.reshape(q.shape[0], -1, per_delta)
    if (runs != runs[..., :1]).any():
        raise _no_form(type_name, f"one delta sign per {per_delta} elements", "codes")
    index = _grid_index("IQ1_S", g.reshape(q.shape[0], -1, 8), type_name)
    return index, (runs[..., 0] < 0).astype(np.int64)


def _iq1_s_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    qh = _int(b["qh"])  # per 32 elements
    index = _int(b["qs"]).reshape(n, 8, 4) | (((qh[..., None] >> IQ1_SHIFTS) & 7) << 8)
    q = _iq1_values(index, np.repeat((qh >> 15)[..., None], 4, axis=-1))
    return CodebookBlocks(q.reshape(n, 256), b["d"], (2 * ((qh >> 12) & 7) + 1).reshape(-1))


def _iq1_s_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    index, minus = _iq1_split(blocks.q.reshape(n, 256), "IQ1_S", 32)
    index = index.reshape(n, 8, 4)
    ls = _scale_codes(blocks.sc.reshape(n, 8), 0, 7, "IQ1_S")
    b["d"] = blocks.d
    b["qs"] = (index & 255).reshape(n, 32)
    b["qh"] = ((index >> 8) << IQ1_SHIFTS).sum(axis=-1) | (ls << 12) | (minus << 15)


D_NIBBLES = np.array([0, 4, 8, 12])
"""IQ1_M: d's four nibbles, one in the top of each 16-bit scale word."""


def _iq1_m_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    words = _int(b["scales"])
    d = ((words >> 12) << D_NIBBLES).sum(axis=-1).astype(np.uint16).view(F16)
    scales = ((words[..., None] >> IQ1_SHIFTS) & 7).reshape(n, 16)
    nibbles = _pairs(_int(b["qh"]))
    index = _int(b["qs"]) | ((nibbles & 7) << 8)
    q = _iq1_values(index, nibbles >> 3)
    return CodebookBlocks(q.reshape(n, 256), d, (2 * scales + 1).reshape(-1))


def _iq1_m_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    index, minus = _iq1_split(blocks.q.reshape(n, 256), "IQ1_M", 8)
    index = index.reshape(n, 32)
    b["qs"] = index & 255
    b["qh"] = _put_pairs((index >> 8) | (minus << 3))
    ls = _scale_codes(blocks.sc.reshape(n, 4, 4), 0, 7, "IQ1_M")
    top = (_int(np.ascontiguousarray(blocks.d.astype(F16)).view("<u2"))[:, None] >> D_NIBBLES) & 15
    b["scales"] = (ls << IQ1_SHIFTS).sum(axis=-1) | (top << 12)


# --- IQ4_NL, IQ4_XS: 4-bit codes into the non-linear values ------------------------------------------

def _lookup(values: np.ndarray, table: np.ndarray, type_name: str) -> np.ndarray:
    """The code of every value in ``table`` (the first code of a value two codes share)."""
    inverse = np.full(256, -1, np.int64)
    inverse[(table[::-1] + 128)] = np.arange(table.size)[::-1]
    codes = inverse[np.clip(values + 128, 0, 255)]
    if ((codes < 0) | (np.abs(values) > 128)).any():
        j = int(np.flatnonzero((codes < 0).ravel())[0])
        raise _no_form(type_name, "a code is none of the type's values", f"elements[{j}]", int(values.ravel()[j]))
    return codes


def _no_scales(blocks: CodebookBlocks, type_name: str) -> None:
    if (blocks.sc != 1).any():
        raise _no_form(type_name, f"{type_name} has no sub-block scales (code 1)", "sc")


def _iq4_nl_decode(b: np.ndarray) -> CodebookBlocks:
    return CodebookBlocks(IQ4_VALUES[_nibbles(b["qs"])], b["d"], np.ones(b.shape[0], np.int16))


def _iq4_nl_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    _no_scales(blocks, "IQ4_NL")
    b["d"] = blocks.d
    b["qs"] = _put_nibbles(_lookup(blocks.q, IQ4_VALUES, "IQ4_NL"))


def _iq4_xs_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    high = (_int(b["scales_h"])[:, None] >> (2 * np.arange(8))) & 3
    ls = _pairs(_int(b["scales_l"])) | (high << 4)
    q = IQ4_VALUES[_nibbles(b["qs"].reshape(n, 8, 16))]
    return CodebookBlocks(q.reshape(n, 256), b["d"], (ls - 32).reshape(-1))


def _iq4_xs_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    ls = blocks.sc.reshape(n, 8).astype(np.int64) + 32
    if ((ls < 0) | (ls > 63)).any():
        raise _no_form("IQ4_XS", "sub-block scale codes are -32 .. 31", "sc")
    b["d"] = blocks.d
    b["scales_h"] = ((ls >> 4) << (2 * np.arange(8))).sum(axis=-1)
    b["scales_l"] = _put_pairs(ls & 15)
    b["qs"] = _put_nibbles(_lookup(blocks.q.reshape(n, 8, 32), IQ4_VALUES, "IQ4_XS")).reshape(n, 128)


# --- TQ1_0, TQ2_0: ternary digits ------------------------------------------------------------------

TQ1_GROUPS = (("qs", slice(0, 32), 5), ("qs", slice(32, 48), 5), ("qh", slice(0, 4), 4))
"""TQ1_0's digit bytes: (field, bytes, digits per byte); byte i of a group of k bytes holds the
group's element ``j * k + i`` as its digit j (160 elements in 32 bytes, 80 in 16, 16 in 4)."""


def _tq1_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    parts = []
    for field, at, digits in TQ1_GROUPS:
        x = b[field][:, at].astype(np.uint16)
        shifted = (x[:, None, :] * (3 ** np.arange(digits, dtype=np.uint16))[:, None]) & 255  # the byte's top digit
        parts.append(((shifted * 3) >> 8).reshape(n, -1))
    q = np.concatenate(parts, axis=-1).astype(np.int16) - 1
    return CodebookBlocks(q, b["d"], np.ones(n, np.int16))


def _tq1_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    _tq_check(blocks, "TQ1_0", 1)
    digits_all = blocks.q.astype(np.int64) + 1
    done = 0
    for field, at, digits in TQ1_GROUPS:
        count = at.stop - at.start
        t = digits_all[:, done:done + digits * count].reshape(n, digits, count)
        done += digits * count
        value = (t * (3 ** (4 - np.arange(digits)))[:, None]).sum(axis=1)  # base 3, 5 digits (the fifth 0)
        b[field][:, at] = (value * 256 + 242) // 243
    b["d"] = blocks.d


def _tq_check(blocks: CodebookBlocks, type_name: str, high: int) -> None:
    _no_scales(blocks, type_name)
    bad = (blocks.q < -1) | (blocks.q > high)
    if bad.any():
        j = int(np.flatnonzero(bad.ravel())[0])
        raise _no_form(type_name, f"codes are -1 .. {high}", f"elements[{j}]", int(blocks.q.ravel()[j]))


TQ2_SHIFTS = (2 * np.arange(4, dtype=np.int16))[:, None]
"""TQ2_0: the four 2-bit digits of a byte; byte i of each 32 holds elements i, 32 + i, 64 + i, 96 + i."""


def _tq2_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    x = b["qs"].reshape(n, 2, 1, 32).astype(np.int16)
    q = ((x >> TQ2_SHIFTS) & 3).reshape(n, 256) - 1
    return CodebookBlocks(q, b["d"], np.ones(n, np.int16))


def _tq2_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    _tq_check(blocks, "TQ2_0", 2)
    t = (blocks.q.astype(np.int64) + 1).reshape(n, 2, 4, 32)
    b["qs"] = (t << TQ2_SHIFTS).sum(axis=2).reshape(n, 64)
    b["d"] = blocks.d


# --- NVFP4: 4 scale bytes (unsigned E4M3, halved), 64 E2M1 codes ---------------------------------------

@cache
def _ue4m3() -> np.ndarray:
    """The float16 value of every NVFP4 scale byte: unsigned E4M3 (bias 7) of its low seven bits,
    halved; 0x00 and 0x7F are 0. Exact: every value is a float16."""
    x = np.arange(256)
    exponent, mantissa = (x >> 3) & 15, x & 7
    value = np.where(exponent == 0, mantissa * 2.0 ** -9, (1 + mantissa / 8) * 2.0 ** (exponent - 7)) * 0.5
    return np.where((x == 0) | (x == UE4M3_BYTES), 0.0, value).astype(np.float16)


def _nvfp4_decode(b: np.ndarray) -> CodebookBlocks:
    n = b.shape[0]
    q = E2M1_DOUBLED[_nibbles(b["qs"].reshape(n, 4, 8))]
    return CodebookBlocks(q.reshape(n, 64), _ue4m3()[b["d"]].astype(F16).reshape(-1), np.ones(n * 4, np.int16))


def _nvfp4_encode(b: np.ndarray, blocks: CodebookBlocks) -> None:
    n = b.shape[0]
    _no_scales(blocks, "NVFP4")
    bits = np.ascontiguousarray(blocks.d.astype(F16)).view("<u2")
    table = _ue4m3()[:UE4M3_BYTES].view("<u2")  # distinct values
    order = np.argsort(table)
    at = np.minimum(np.searchsorted(table[order], bits), table.size - 1)
    if (table[order][at] != bits).any():
        j = int(np.flatnonzero(table[order][at] != bits)[0])
        raise _no_form("NVFP4", "a scale is no unsigned E4M3 value halved", f"d[{j}]", float(blocks.d[j]))
    b["d"] = order[at].reshape(n, 4)
    b["qs"] = _put_nibbles(_lookup(blocks.q.reshape(n, 4, 16), E2M1_DOUBLED, "NVFP4")).reshape(n, 32)


# --- the table -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BlockFormat:
    """A GGML codebook type's block: its record, elements, and its two directions."""

    kind: CodebookType
    record: np.dtype
    elements: int
    decode: Callable[[np.ndarray], CodebookBlocks]
    encode: Callable[[np.ndarray, CodebookBlocks], None]

    @property
    def size(self) -> int:
        """Bytes per block."""
        return int(self.record.itemsize)


def _formats() -> dict[str, BlockFormat]:
    xxs2, xxs3 = _xxs("IQ2_XXS", 8), _xxs("IQ3_XXS", 4)
    s2, s3 = _s_type("IQ2_S", 8, 2, 16), _s_type("IQ3_S", 4, 1, 32)
    rows = {"IQ2_XXS": (256, *xxs2), "IQ2_XS": (256, _iq2_xs_decode, _iq2_xs_encode), "IQ2_S": (256, *s2),
            "IQ3_XXS": (256, *xxs3), "IQ3_S": (256, *s3), "IQ1_S": (256, _iq1_s_decode, _iq1_s_encode),
            "IQ1_M": (256, _iq1_m_decode, _iq1_m_encode), "IQ4_NL": (32, _iq4_nl_decode, _iq4_nl_encode),
            "IQ4_XS": (256, _iq4_xs_decode, _iq4_xs_encode), "TQ1_0": (256, _tq1_decode, _tq1_encode),
            "TQ2_0": (256, _tq2_decode, _tq2_encode), "NVFP4": (64, _nvfp4_decode, _nvfp4_encode)}
    return {name: BlockFormat(TYPES[name], RECORDS[name], *row) for name, row in rows.items()}


FORMATS: dict[str, BlockFormat] = _formats()
"""Every GGML type of :data:`~hurray_decl.hurray.schemes.ggml_codebook.TYPES`, by name."""


def _blocks(raw: Any, form: BlockFormat) -> np.ndarray:
    data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
    if data.size % form.size:
        raise ArgumentError("raw", f"{form.kind.name} data is whole blocks of {form.size} bytes", actual=data.size)
    return data.view(form.record)


def decode_blocks(raw: Any, type_name: str, chunk: int = CHUNK) -> CodebookBlocks:
    """GGUF blocks of ``type_name`` as the scheme's arrays, ``chunk`` blocks at a time; refused
    (CV-GGML-01) when the arrays would not give the same bytes back."""
    form = FORMATS[type_name]
    blocks = _blocks(raw, form)
    n = blocks.shape[0]
    kind = form.kind
    q = np.empty((n, form.elements), np.int8)
    d = np.empty(n * form.elements // kind.super_block, "<f2")
    sc = np.empty(n * form.elements // kind.sub_block, np.int8)
    per_d, per_sc = form.elements // kind.super_block, form.elements // kind.sub_block
    step = max(1, chunk)
    for start in range(0, n, step):
        part = blocks[start:start + step]
        got = form.decode(part)
        again = np.zeros(part.shape[0], form.record)
        try:
            form.encode(again, got)
        except ArgumentError as err:  # not reached for the types' own decoders; kept as the rule says
            raise RuleViolation("CV-GGML-01", f"{type_name} blocks {start}..: {err.detail}", path="raw") from None
        before = np.ascontiguousarray(part).view(np.uint8).reshape(-1, form.size)
        after = again.view(np.uint8).reshape(-1, form.size)
        if not np.array_equal(after, before):
            row, byte = np.argwhere(after != before)[0]
            j = start + int(row)
            raise RuleViolation("CV-GGML-01", f"{type_name} block {j} holds bytes its values do not give back "
                                f"(byte {int(byte)}: 0x{int(before[row, byte]):02X}, written back as "
                                f"0x{int(after[row, byte]):02X}): no exact ggml codebook form",
                                path=f"raw -> blocks[{j}]", offset=j * form.size + int(byte),
                                actual=int(before[row, byte]), expected=int(after[row, byte]))
        stop = start + part.shape[0]
        q[start:stop] = got.q
        d[start * per_d:stop * per_d] = got.d
        sc[start * per_sc:stop * per_sc] = got.sc
    return CodebookBlocks(q, d, sc)


def encode_blocks(type_name: str, q: np.ndarray, d: np.ndarray, sc: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """GGUF blocks (uint8, flat) of ``type_name`` from the scheme's arrays, ``chunk`` blocks at a
    time; a value with no form in the type is refused as :class:`ArgumentError`."""
    form = FORMATS[type_name]
    kind = form.kind
    q = np.asarray(q).reshape(-1, form.elements).astype(np.int16)
    n = q.shape[0]
    per_d, per_sc = form.elements // kind.super_block, form.elements // kind.sub_block
    d = np.asarray(d).astype("<f2").reshape(-1)
    sc = np.asarray(sc).astype(np.int16).reshape(-1)
    if d.size != n * per_d or sc.size != n * per_sc:
        raise ArgumentError("parameters", f"{type_name}: one d per {kind.super_block} elements and one scale code "
                            f"per {kind.sub_block}", actual=(d.size, sc.size), expected=(n * per_d, n * per_sc))
    out = np.zeros(n, form.record)
    step = max(1, chunk)
    for start in range(0, n, step):
        stop = min(n, start + step)
        form.encode(out[start:stop], CodebookBlocks(q[start:stop], d[start * per_d:stop * per_d],
                                                    sc[start * per_sc:stop * per_sc]))
    return out.view(np.uint8)

