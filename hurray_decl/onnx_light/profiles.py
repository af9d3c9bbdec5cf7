"""The onnx-light profile catalogue: 43 profiles, their wire names, defaults and fixed tables.

DIGEST.md § 2. A profile only picks a numeric family and its starting values; it does not
reproduce that library's packing ABI. Each table is declared once here and everything else
(plan factory, calibration, tests) reads it from :data:`PROFILES`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from hurray_decl.errors import OnnxLightError, OnnxLightTypeError
from hurray_decl.onnx_light.numerics import DataType

__all__ = [
    "PORTABLE_COUNT",
    "PROFILES",
    "WIRE_PREFIX",
    "ProfileDefaults",
    "QuantizationFormat",
    "QuantizationMethod",
    "fixed_table",
    "parse_quantization_format",
    "quantization_format_name",
    "quantization_formats",
]

WIRE_PREFIX = "onnx_light.quantization.v1/"
"""The root-name prefix of every portable descriptor (OL-WIRE-14)."""

PORTABLE_COUNT = 40
"""Profiles 0..39 are portable; 40..42 use the ORT MatMulNBits layout (OL-PROF-01)."""


class QuantizationMethod(enum.IntEnum):
    """The block method codes of the nine-value header (position 1); each has one row in
    :data:`hurray_decl.onnx_light.methods.METHODS`."""

    AFFINE = 0
    CODEBOOK = 1
    CAST = 2

    @property
    def wire_name(self) -> str:
        """``affine``, ``codebook``, ``cast``: how messages and dumps name the method."""
        return self.name.lower()


class QuantizationFormat(enum.IntEnum):
    """The 43 profiles; the value is the profile's position in the catalogue (OL-PROF-01)."""

    INT8 = 0
    INT8_PER_CHANNEL = 1
    INT4 = 2
    GPTQ = 3
    AWQ = 4
    EETQ = 5
    MATMULNBITS = 6
    Q2_K = 7
    Q3_K = 8
    Q4_K = 9
    Q5_K = 10
    Q6_K = 11
    HQQ = 12
    EXL2 = 13
    EXL3 = 14
    NF4 = 15
    IQ4_NL = 16
    BINARY = 17
    TERNARY = 18
    TQ1_0 = 19
    TQ2_0 = 20
    BITNET = 21
    PARETOQ = 22
    TEQUILA = 23
    STQ1_0 = 24
    IQ1_S = 25
    AQLM = 26
    QUIP_SHARP = 27
    SPQR = 28
    SQUEEZELLM = 29
    LOG = 30
    FP6_LLM = 31
    FP8_E4M3 = 32
    MXFP4 = 33
    MXFP6 = 34
    NVFP4 = 35
    QUAROT = 36
    SMOOTHQUANT = 37
    TILED_FLOAT = 38
    COLUMN_MAJOR = 39
    ORT_MATMULNBITS_INT2 = 40
    ORT_MATMULNBITS_INT4 = 41
    ORT_MATMULNBITS_INT8 = 42

    @property
    def wire_name(self) -> str:
        """The stable name stored after ``onnx_light.quantization.v1/``."""
        return self.name.lower()

    @property
    def portable(self) -> bool:
        return self.value < PORTABLE_COUNT


# --- fixed tables (DIGEST.md § 2.4) ------------------------------------------------------------

_NF4 = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)
_IQ4_NL = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
_BINARY = (-1.0, 1.0)
_TERNARY = (-1.0, 0.0, 1.0)
_LOG = (0, 0.125, -0.125, 0.25, -0.25, 0.5, -0.5, 1, -1, 2, -2, 4, -4, 8, -8)


def _decoded_codes(dtype: np.dtype, codes: int) -> tuple[float, ...]:
    """Decode codes 0..codes-1 of a narrow float type, in code order, keeping finite values."""
    values = np.arange(codes, dtype=np.uint8).view(dtype).astype(np.float64)
    return tuple(float(v) for v in values[np.isfinite(values)])


def _e3m2() -> tuple[float, ...]:
    """E3M2 (fp6): sign bit 5, exponent bits 4..2, mantissa bits 1..0, bias 3 (OL-PROF-19)."""
    codes = np.arange(64)
    exponent = (codes >> 2) & 7
    mantissa = (codes & 3).astype(np.float64)
    magnitude = np.where(exponent == 0, mantissa / 16, (1 + mantissa / 4) * np.exp2(exponent - 3.0))
    return tuple(float(v) for v in np.where(codes & 0x20, -magnitude, magnitude))


FIXED_TABLES: dict[str, tuple[float, ...]] = {
    "NF4": tuple(float(v) for v in _NF4),
    "IQ4_NL": tuple(float(v) for v in _IQ4_NL),
    "BINARY": _BINARY,
    "TERNARY": _TERNARY,
    "LOG": tuple(float(v) for v in _LOG),
    # ml_dtypes' float4_e2m1fn and float8_e4m3fn decode codes exactly as DIGEST.md § 2.4 says.
    "E2M1": _decoded_codes(np.dtype(ml_dtypes.float4_e2m1fn), 16),
    "E3M2": _e3m2(),
    "E4M3FN": _decoded_codes(np.dtype(ml_dtypes.float8_e4m3fn), 256),
}


@dataclass(frozen=True)
class ProfileDefaults:
    """One catalogue row: the baseline layout after the profile's overrides (DIGEST.md § 2.3)."""

    format: QuantizationFormat
    method: int = QuantizationMethod.AFFINE
    bits: int = 4
    signed: int = 1
    books: int = 1
    entries: int = 0
    vector: int = 1
    base3: int = 0
    cast_type: int = int(DataType.FLOAT16)
    zero_point: float = 0.0
    table: str | None = None
    learned: bool = False
    needs_transform: bool = False

    @property
    def header_tail(self) -> tuple[int, ...]:
        """The eight header values after count: method, bits, signed, books, entries, vector,
        base3, cast."""
        return (int(self.method), self.bits, self.signed, self.books, self.entries, self.vector,
                self.base3, self.cast_type)

    @property
    def table_values(self) -> tuple[float, ...]:
        return FIXED_TABLES[self.table] if self.table else ()


def _affine(fmt: QuantizationFormat, bits: int, signed: int = 1, zero_point: float = 0.0,
            needs_transform: bool = False) -> ProfileDefaults:
    return ProfileDefaults(fmt, bits=bits, signed=signed, zero_point=zero_point,
                           needs_transform=needs_transform)


def _fixed(fmt: QuantizationFormat, table: str, base3: int = 0) -> ProfileDefaults:
    """Fixed-table rule: codebook, unsigned, entries = table length, bits = index width."""
    entries = len(FIXED_TABLES[table])
    bits = max(1, (entries - 1).bit_length())
    return ProfileDefaults(fmt, method=QuantizationMethod.CODEBOOK, bits=bits, signed=0,
                           entries=entries, base3=base3, table=table)


def _learned(fmt: QuantizationFormat, bits: int, books: int, entries: int, vector: int,
             needs_transform: bool = False) -> ProfileDefaults:
    """Learned-table profiles keep signed = 1 (DIGEST.md § 2.2)."""
    return ProfileDefaults(fmt, method=QuantizationMethod.CODEBOOK, bits=bits, signed=1,
                           books=books, entries=entries, vector=vector, learned=True,
                           needs_transform=needs_transform)


def _catalogue() -> dict[QuantizationFormat, ProfileDefaults]:
    F = QuantizationFormat
    rows = [
        _affine(F.INT8, 8), _affine(F.INT8_PER_CHANNEL, 8), _affine(F.INT4, 4),
        _affine(F.GPTQ, 4, 0, 8.0), _affine(F.AWQ, 4, 0, 8.0), _affine(F.EETQ, 8),
        _affine(F.MATMULNBITS, 4, 0, 8.0),
        _affine(F.Q2_K, 2), _affine(F.Q3_K, 3), _affine(F.Q4_K, 4), _affine(F.Q5_K, 5),
        _affine(F.Q6_K, 6),
        _affine(F.HQQ, 4), _affine(F.EXL2, 4), _affine(F.EXL3, 4),
        _fixed(F.NF4, "NF4"), _fixed(F.IQ4_NL, "IQ4_NL"), _fixed(F.BINARY, "BINARY"),
        _fixed(F.TERNARY, "TERNARY", base3=1), _fixed(F.TQ1_0, "TERNARY", base3=1),
        _fixed(F.TQ2_0, "TERNARY"), _fixed(F.BITNET, "TERNARY", base3=1),
        _fixed(F.PARETOQ, "TERNARY", base3=1), _fixed(F.TEQUILA, "TERNARY", base3=1),
        _learned(F.STQ1_0, 5, 1, 32, 4), _learned(F.IQ1_S, 8, 1, 256, 8),
        _learned(F.AQLM, 8, 2, 256, 8), _learned(F.QUIP_SHARP, 8, 1, 256, 8, True),
        _affine(F.SPQR, 4), _learned(F.SQUEEZELLM, 4, 1, 16, 1),
        _fixed(F.LOG, "LOG"), _fixed(F.FP6_LLM, "E3M2"), _fixed(F.FP8_E4M3, "E4M3FN"),
        _fixed(F.MXFP4, "E2M1"), _fixed(F.MXFP6, "E3M2"), _fixed(F.NVFP4, "E2M1"),
        _affine(F.QUAROT, 4, needs_transform=True), _affine(F.SMOOTHQUANT, 8, needs_transform=True),
        ProfileDefaults(F.TILED_FLOAT, method=QuantizationMethod.CAST, cast_type=int(DataType.FLOAT)),
        ProfileDefaults(F.COLUMN_MAJOR, method=QuantizationMethod.CAST, cast_type=int(DataType.FLOAT)),
        _affine(F.ORT_MATMULNBITS_INT2, 2, 0, 2.0), _affine(F.ORT_MATMULNBITS_INT4, 4, 0, 8.0),
        _affine(F.ORT_MATMULNBITS_INT8, 8, 0, 128.0),
    ]
    table = {row.format: row for row in rows}
    if list(table) != list(F):
        raise RuntimeError("the profile catalogue is not in enum order")
    return table


PROFILES: dict[QuantizationFormat, ProfileDefaults] = _catalogue()
_BY_NAME = {fmt.wire_name: fmt for fmt in QuantizationFormat}


def quantization_formats() -> list[QuantizationFormat]:
    """The 43 profiles in enum order (OL-PROF-01)."""
    return list(QuantizationFormat)


def require_format(value: object, what: str = "format") -> QuantizationFormat:
    """Accept only the enum; strings and integers raise TypeError (OL-PROF-04)."""
    if not isinstance(value, QuantizationFormat):
        raise OnnxLightTypeError(
            "OL-PROF-04", f"{what} must be a QuantizationFormat, not {type(value).__name__}",
            path=what, actual=repr(value), expected="QuantizationFormat member",
        )
    return value


def quantization_format_name(fmt: QuantizationFormat) -> str:
    """The stable wire name of a profile, e.g. ``"int4"``."""
    return require_format(fmt).wire_name


def parse_quantization_format(name: str, *, path: str = "name") -> QuantizationFormat:
    """The profile with this exact, case-sensitive wire name (OL-PROF-02)."""
    if not isinstance(name, str) or name not in _BY_NAME:
        raise OnnxLightError(
            "OL-PROF-02", "unknown onnx-light quantization profile name", path=path,
            actual=repr(name), expected="a wire name such as 'int4'",
        )
    return _BY_NAME[name]


def fixed_table(fmt: QuantizationFormat) -> tuple[float, ...]:
    """The fixed table of a profile, or () for affine, cast and learned-table profiles."""
    return PROFILES[require_format(fmt)].table_values
