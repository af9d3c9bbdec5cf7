"""The optional sections after the buffer table (DIGEST § 5.9-5.12): shard, statistics,
extension type and composite member. The quantization section is framed by the reader and its
payload decoded by :func:`hurray_decl.hurray.quantization.decode_quantization`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import construct as cs

from hurray_decl.declare.schema import Record, Rule, zero_bytes
from hurray_decl.hurray.tables.codes import MemberRole, Statistic, alternatives, bit_legend, clear_above, legend
from hurray_decl.hurray.tensor.common import Section, boolean, one_of

QUANTIZATION_LENGTH = "quantization_length" / cs.Int32ul * (
    "bytes of the quantization descriptor that follow; not counting this prefix")

# ---------------------------------------------------------------- shard (flags bit 1)


def shard_fields(rank: int) -> tuple[cs.Construct, ...]:
    return (
        "parent_shape" / cs.Array(rank, cs.Int64ul) * "u64[rank]: shape of the whole tensor; no DYNAMIC",
        "shard_offset" / cs.Array(rank, cs.Int64ul)
        * "u64[rank]: position of this shard; shard_offset[k] + shape[k] <= parent_shape[k]",
    )


class Shard(Section):
    """Where this tensor sits inside a larger parent (HT-SEC-03)."""

    rule: ClassVar[str] = "HT-SEC-03"
    wire_name: ClassVar[str] = "shard"

    fields = staticmethod(shard_fields)  # the model's fields are derived from it

    def wire_declaration(self) -> cs.Construct:
        return cs.Struct(*shard_fields(len(self.parent_shape)))


# ---------------------------------------------------------------- statistics (flags bit 3)

MASK_DEFINED = int(sum(Statistic))
"""Every defined computed_mask bit."""

_S = Statistic
_GUARDED = {
    "nnz": _S.NNZ_VALID, "sparsity_ratio": _S.SPARSITY_VALID,
    "value_min": _S.VALUE_RANGE_VALID, "value_max": _S.VALUE_RANGE_VALID, "value_abs_max": _S.VALUE_RANGE_VALID,
    "value_mean": _S.VALUE_STATS_VALID, "value_stddev": _S.VALUE_STATS_VALID,
    "nm_n": _S.NM_SPARSITY_VALID, "nm_m": _S.NM_SPARSITY_VALID,
    "has_nan": _S.NAN_INF_VALID, "has_inf": _S.NAN_INF_VALID,
}
"""The computed_mask bit that makes each statistic known (HT-SEC-12)."""


def _guarded(name: str, text: str) -> str:
    """A statistic's documentation, led by the name of the bit that makes it known."""
    return f"{_GUARDED[name].name}: {text}"


def _valid(bit: int, check: Any) -> Any:
    return lambda v, ctx: not ctx.computed_mask & bit or check(v, ctx)


def _flag_byte(name: str) -> cs.Construct:
    return cs.Default(Rule(cs.Int8ul, _valid(_GUARDED[name], lambda v, _: v in (0, 1)), "HT-SEC-08", "0x00 or 0x01",
                           f"{name} is a 0/1 byte"), 0) * _guarded(name, f"1 if any element is {name[4:]}")


STATISTICS = Record(
    "computed_mask" / cs.Default(Rule(cs.Int32ul, lambda v, _: v & ~MASK_DEFINED == 0, "HT-SEC-09",
                                      clear_above(Statistic), "a reserved computed_mask bit is set"), 0)
    * f"which statistics are known: {bit_legend(Statistic)}",
    "reserved" / zero_bytes(4, "HT-SEC-10") * "_reserved: u32 zero",
    "nnz" / cs.Default(cs.Int64ul, 0) * _guarded("nnz", "non-zero elements; equals a sparse layout's nnz"),
    "sparsity_ratio" / cs.Default(cs.Float64l, 0.0)
    * _guarded("sparsity_ratio", "fraction of zero elements, nominally [0, 1]"),
    "value_min" / cs.Default(cs.Float64l, 0.0) * _guarded("value_min", "smallest dequantized value"),
    "value_max" / cs.Default(cs.Float64l, 0.0) * _guarded("value_max", "largest dequantized value"),
    "value_abs_max" / cs.Default(cs.Float64l, 0.0) * _guarded("value_abs_max", "max(|min|, |max|)"),
    "value_mean" / cs.Default(cs.Float64l, 0.0) * _guarded("value_mean", "mean of the values"),
    "value_stddev" / cs.Default(Rule(cs.Float64l, _valid(_GUARDED["value_stddev"], lambda v, _: v >= 0), "HT-SEC-14",
                                     ">= 0", "a standard deviation is never negative or NaN"), 0.0)
    * _guarded("value_stddev", "standard deviation; >= 0"),
    "nm_n" / cs.Default(cs.Int8ul, 0) * _guarded("nm_n", "N of N:M structured sparsity"),
    "nm_m" / cs.Default(Rule(cs.Int8ul, _valid(_GUARDED["nm_m"], lambda v, ctx: ctx.nm_n <= v), "HT-SEC-15",
                             ">= nm_n", "N:M sparsity needs nm_n <= nm_m"), 0)
    * _guarded("nm_m", "M of N:M structured sparsity"),
    "has_nan" / _flag_byte("has_nan"),
    "has_inf" / _flag_byte("has_inf"),
    "reserved2" / zero_bytes(4, "HT-SEC-11") * "_reserved2: four zero bytes",
)
"""The 72-byte statistics section (HT-SEC-08)."""


class Statistics(Section):
    """Advisory statistics; a field whose mask bit is clear is unknown (HT-SEC-12)."""

    rule: ClassVar[str] = "HT-SEC-08"
    wire_name: ClassVar[str] = "statistics"

    declaration: ClassVar[cs.Construct] = STATISTICS  # the model's fields are derived from it

    def wire_declaration(self) -> cs.Construct:
        return STATISTICS

    def known(self, name: str) -> Any:
        """The statistic ``name``, or None when its computed_mask bit is clear."""
        return getattr(self, name) if self.computed_mask & _GUARDED[name] else None


# ---------------------------------------------------------------- extension type (flags bit 2)


def _packing_ok(value: int, ctx: Any) -> bool:
    width: int = ctx.bit_width  # a construct context (untyped)
    return width < 8 or value == 1


def _sub_byte_packing(value: int, ctx: Any) -> bool:
    width: int = ctx.bit_width
    return width >= 8 or value * width == 8


def _integer_zero(code: str, name: str, subcon: cs.Construct = cs.Int8ul) -> cs.Construct:
    """A float-only field: 0 for an integer type (and 0 unless given)."""
    return cs.Default(Rule(subcon, lambda v, ctx: ctx.is_float == 1 or v == 0, code, "0 for an integer type",
                           f"an integer extension type has no {name}"), 0)


EXTENSION_TYPE = Record(
    "bit_width" / Rule(Rule(Rule(
        cs.Int32ul, lambda v, _: v > 0, "HT-SEC-22", "> 0", "bit_width is 0"),
        lambda v, _: v >= 8 or v in (1, 2, 4), "HT-SEC-24", "1, 2, 4 or a multiple of 8",
        "sub-byte private types are 1, 2 or 4 bits wide"),
        lambda v, _: v < 8 or v % 8 == 0, "HT-SEC-34", "a multiple of 8",
        "a type of 8 bits or more has a whole number of bytes (HD-25)")
    * "bits per element; 1, 2, 4 or a multiple of 8",
    "packing_factor" / cs.Default(Rule(
        Rule(cs.Int8ul, _packing_ok, "HT-SEC-23", 1, "whole-byte types have packing_factor 1"),
        _sub_byte_packing, "HT-SEC-25", "8 / bit_width", "sub-byte packing_factor is 8 / bit_width"), 1)
    * "elements per byte: 8 / bit_width below 8 bits, else 1",
    "is_float" / cs.Default(boolean("HT-SEC-21", "is_float"), 0) * "0x00 integer, 0x01 floating point",
    "is_signed" / cs.Default(Rule(boolean("HT-SEC-21", "is_signed"), lambda v, ctx: ctx.is_float == 0 or v == 0,
                                  "HT-SEC-26", 0, "a float extension type carries its sign in sign_bits"), 0)
    * "0x01 two's-complement integer; 0 for floats",
    "sign_bits" / cs.Default(Rule(
        Rule(cs.Int8ul, lambda v, _: v <= 1, "HT-SEC-27", "0 or 1", "sign_bits is at most 1"),
        lambda v, ctx: ctx.is_float == 1 or v == 0, "HT-SEC-28", "0 for an integer type",
        "an integer extension type has no sign bit field"), 0)
    * "float sign bits: 0 or 1",
    "exponent_bits" / _integer_zero("HT-SEC-29", "exponent") * "float exponent bits",
    "mantissa_bits" / _integer_zero("HT-SEC-30", "mantissa") * "float mantissa bits",
    "reserved" / zero_bytes(2, "HT-SEC-32") * "_reserved: two zero bytes",
    "exponent_bias" / _integer_zero("HT-SEC-31", "exponent bias", cs.Int32ul) * "float exponent bias",
    "has_nan" / cs.Default(boolean("HT-SEC-21", "has_nan"), 0) * "0x01 if the type has NaN codes",
    "has_inf" / cs.Default(boolean("HT-SEC-21", "has_inf"), 0) * "0x01 if the type has infinities",
    "reserved2" / zero_bytes(2, "HT-SEC-33") * "_reserved2: two zero bytes",
)
"""The 20-byte extension-type section (HT-SEC-21)."""


class ExtensionType(Section):
    """How to size (not interpret) a private element type (HT-SEC-34)."""

    rule: ClassVar[str] = "HT-SEC-21"
    wire_name: ClassVar[str] = "extension_type"

    declaration: ClassVar[cs.Construct] = EXTENSION_TYPE  # the model's fields are derived from it

    def wire_declaration(self) -> cs.Construct:
        return EXTENSION_TYPE

    def packed_size(self, count: int) -> int:
        """Bytes of ``count`` elements of this type (HT-SEC-34)."""
        if self.bit_width < 8:
            return -(-count // int(self.packing_factor))
        return count * (int(self.bit_width) // 8)


# ---------------------------------------------------------------- composite member (flags bit 4)

COMPOSITE_MEMBER = Record(
    "member_role" / cs.Default(one_of(cs.Int8ul, MemberRole.codes(), "HT-SEC-36", alternatives(MemberRole),
                                      "reserved member role"), int(MemberRole.CORRECTION))
    * legend(MemberRole),
    "reserved" / zero_bytes(15, "HT-SEC-37") * "_reserved: fifteen zero bytes",
)
"""The 16-byte composite-member section (HT-SEC-35)."""


class CompositeMember(Section):
    """This descriptor's role inside an overlay composite."""

    rule: ClassVar[str] = "HT-SEC-35"
    wire_name: ClassVar[str] = "composite_member"

    declaration: ClassVar[cs.Construct] = COMPOSITE_MEMBER  # the model's fields are derived from it

    def wire_declaration(self) -> cs.Construct:
        return COMPOSITE_MEMBER
