"""Whole safetensors checkpoints: plain tensors, and GPTQ / AWQ / compressed-tensors packed linear weights.

A linear layer ``P`` of a GPTQ or AWQ checkpoint is the tensors ``P.qweight``, ``P.qzeros``,
``P.scales`` (and, for GPTQ, ``P.g_idx``); :func:`read_checkpoint` groups them into one
:class:`Item` named ``P.weight``, whose :meth:`Item.parts` are the per-block affine
:class:`~hurray_decl.convert.BlockParts` of :mod:`.group` (bit for bit: Hurray's
``(q - z) * scale`` is the GPTQ/AWQ formula ``scale * (q - zero)``, GPTQ's stored ``zero - 1``
normalized, HQ-ZP-01). The weight keeps the packed layout's orientation, ``(in_features,
out_features)`` blocked along axis 0: the ``[K, N]`` matrix ORT MatMulNBits multiplies by.
Every other tensor (biases, norms, embeddings) is an unquantized item. A compressed-tensors
``pack-quantized`` layer ``P`` is ``P.weight_packed``, ``P.weight_scale``, ``P.weight_shape``
(and ``P.weight_zero_point``, ``P.weight_g_idx``): its item ``P.weight`` keeps the ``(out, in)``
orientation (:func:`~hurray_decl.convert.group.compressed_tensors_parts`).

The quantization settings come from a ``quantization_config`` (the first found of):
``__metadata__["quantization_config"]`` (JSON text), ``quantize_config.json`` beside the file
(AutoGPTQ, AutoAWQ's ``quant_config``), or ``config.json``'s ``quantization_config``
(transformers). Read: ``quant_method`` (``gptq``, ``awq``; AutoGPTQ's file names none:
``gptq``), ``bits`` / ``w_bit``, ``group_size`` / ``q_group_size`` (-1: one group over all
inputs), ``desc_act``, ``checkpoint_format`` (``gptq`` or ``gptq_v2``, whose zeros are stored as
they are) and AWQ's ``version`` (``gemm``; the GEMV packing is refused). Activation order (a
``g_idx`` that is not ``i // group_size``) is refused by HQ-PB-15, as :func:`gptq_parts` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hurray_decl.convert.codebook import bitsandbytes_nf4_to_hurray, mxfp4_blocks_to_hurray
from hurray_decl.convert.group import awq_parts, compressed_tensors_parts, float16_scales, gptq_parts
from hurray_decl.convert.parts import BlockParts
from hurray_decl.convert.safetensors import SafetensorsFile, open_safetensors
from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.values import Tensor

__all__ = ["BNB_ROLES", "BNB_STATE", "CONFIG_FILES", "CT_ROLES", "MXFP4_ROLES", "PACKED_ROLES", "Checkpoint",
           "Item", "QuantizationConfig", "read_checkpoint"]

PACKED_ROLES = ("qweight", "qzeros", "scales", "g_idx")
"""The suffixes of a packed linear layer's tensors; ``g_idx`` is GPTQ's, and optional."""
CT_ROLES = ("weight_packed", "weight_scale", "weight_shape", "weight_zero_point", "weight_g_idx")
"""compressed-tensors ``pack-quantized``: a layer's tensors (zero point and g_idx optional)."""
MXFP4_ROLES = ("blocks", "scales")
"""gpt-oss MXFP4: ``P_blocks`` and ``P_scales`` (transformers' names; ``P.blocks``, ``P.scales`` too)."""
BNB_STATE = ".quant_state.bitsandbytes__nf4"
"""The suffix of a bitsandbytes NF4 weight's packed state (JSON bytes); the weight is its prefix."""
BNB_ROLES = ("absmax", "quant_map", "nested_absmax", "nested_quant_map")
"""bitsandbytes NF4: the weight ``W`` and ``W.absmax``, ``W.quant_map`` (nested: two more)."""
NVFP4_SCALE = ".weight_scale_2"
"""ModelOpt NVFP4: ``P.weight`` (E2M1 pairs), ``P.weight_scale`` (E4M3 a block of 16) and this
float32 tensor scale; no Hurray scheme holds E4M3 block scales times a tensor scale (HQ-MX-11)."""
FP8_SCALE = ".weight_scale"
"""compressed-tensors ``float-quantized`` (FP8): ``P.weight`` (F8_E4M3 or F8_E5M2 codes) with this
float scale (a tensor's, a channel's; ``P.input_scale`` beside it for static activations); MXFP's
float8 elements are scaled by powers of two only, so no Hurray scheme holds them (HQ-MX-11)."""
_FP8_CODES = ("F8_E4M3", "F8_E5M2")
_FIRST = {"gptq": "qweight", "awq": "qweight", "compressed-tensors": "weight_packed", "mxfp4": "blocks"}
"""The tensor that marks a packed layer of each method (its name's prefix is the layer's)."""
CONFIG_FILES = ("quantize_config.json", "config.json")
"""Files beside a checkpoint that may hold its quantization config, in the order they are asked."""


@dataclass(frozen=True)
class QuantizationConfig:
    """The settings of a GPTQ or AWQ checkpoint that its conversion needs."""

    method: str
    bits: int
    group_size: int
    desc_act: bool = False
    zero_offset: int = 1
    """What GPTQ adds to a stored zero (1 for the v1 format, 0 for ``gptq_v2``); AWQ: 0."""
    source: str = ""

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any], source: str) -> QuantizationConfig:
        """Read a ``quantization_config`` mapping (transformers, AutoGPTQ or AutoAWQ spelling)."""
        method = str(config.get("quant_method", "gptq")).lower()
        if method == "compressed-tensors":
            return cls._compressed_tensors(config, source)
        if method == "mxfp4":  # gpt-oss: E2M1 blocks of 32 with E8M0 scales, nothing to configure
            return cls("mxfp4", 4, 32, False, 0, source)
        if method not in ("gptq", "awq"):
            raise UnsupportedError("HQ-PB-01", f"{source}: quant_method {method!r} is not a GPTQ or AWQ checkpoint",
                                   path="quantization_config -> quant_method", actual=method, expected="gptq or awq")
        bits = config.get("bits", config.get("w_bit", 4))
        group = config.get("group_size", config.get("q_group_size", 128))
        for name, value in (("bits", bits), ("group_size", group)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentError("quantization_config", f"{source}: {name} is an integer", actual=value)
        if method == "awq":
            version = str(config.get("version", "gemm")).lower()
            if version != "gemm":
                raise UnsupportedError("HQ-PB-15", f"{source}: AWQ version {version!r} packs codes other than the "
                                       "GEMM layout read here", path="quantization_config -> version",
                                       actual=version, expected="gemm")
            if bits != 4:
                raise UnsupportedError("HQ-PB-14", f"{source}: AWQ packs 4-bit codes", path="quantization_config "
                                       "-> bits", actual=bits, expected=4)
            return cls("awq", 4, int(group), False, 0, source)
        formats = {"gptq": 1, "gptq_v2": 0}
        checkpoint_format = str(config.get("checkpoint_format", "gptq")).lower()
        if checkpoint_format not in formats:
            raise UnsupportedError("HQ-ZP-01", f"{source}: checkpoint_format {checkpoint_format!r} is not gptq or "
                                   "gptq_v2", path="quantization_config -> checkpoint_format",
                                   actual=checkpoint_format, expected="gptq or gptq_v2")
        return cls("gptq", int(bits), int(group), bool(config.get("desc_act", False)), formats[checkpoint_format],
                   source)


    @classmethod
    def _compressed_tensors(cls, config: Mapping[str, Any], source: str) -> QuantizationConfig:
        """compressed-tensors: ``format`` ``pack-quantized`` (the config's, or each group's),
        every ``config_groups`` entry integer weights of one ``num_bits``."""
        groups = config.get("config_groups")
        if not isinstance(groups, dict) or not groups:
            raise ArgumentError("quantization_config", f"{source}: compressed-tensors without config_groups")
        bits: set[Any] = set()
        sizes: set[Any] = set()
        for name, group in groups.items():
            weights = group.get("weights") if isinstance(group, dict) else None
            form = (group.get("format") if isinstance(group, dict) else None) or config.get("format")
            if isinstance(weights, dict) and weights.get("type") == "float" and weights.get("num_bits") == 8 \
                    and form in ("float-quantized", "naive-quantized"):
                continue  # FP8 codes times a float scale: each weight an item refused by itself (Item.parts)
            if not isinstance(weights, dict) or form != "pack-quantized" or weights.get("type", "int") != "int":
                raise UnsupportedError("HQ-PB-01", f"{source}: config group {name} is not integer pack-quantized "
                                       "weights", path=f"quantization_config -> config_groups -> {name}",
                                       actual=str(form), expected="pack-quantized int weights")
            bits.add(weights.get("num_bits"))
            if weights.get("strategy") == "group":
                sizes.add(weights.get("group_size"))
        if not bits:  # FP8 groups only: no packed integer weights
            return cls("compressed-tensors", 8, 0, False, 0, source)
        only = next(iter(bits))
        if len(bits) != 1 or isinstance(only, bool) or only not in (4, 8):
            raise UnsupportedError("HQ-PB-14", f"{source}: the config groups' num_bits are not one of 4 and 8",
                                   path="quantization_config -> config_groups", actual=sorted(map(str, bits)),
                                   expected="4 or 8, the same in every group")
        size = next(iter(sizes)) if sizes else 0
        if len(sizes) > 1 or isinstance(size, bool) or not isinstance(size, int):
            raise ArgumentError("quantization_config", f"{source}: the group strategy's group_size is one integer "
                                "for every config group", actual=sorted(map(str, sizes)))
        return cls("compressed-tensors", int(only), size, False, 0, source)


def _json_object(text: str, source: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ArgumentError("quantization_config", f"{source} is not JSON: {err}") from None
    if not isinstance(value, dict):
        raise ArgumentError("quantization_config", f"{source} is not a JSON object", actual=type(value).__name__)
    return value


def find_config(path: Path, metadata: Mapping[str, str]) -> QuantizationConfig | None:
    """The checkpoint's quantization config (see the module's documentation), or None."""
    if "quantization_config" in metadata:
        source = f"{path.name} __metadata__ quantization_config"
        return QuantizationConfig.from_mapping(_json_object(metadata["quantization_config"], source), source)
    for name in CONFIG_FILES:
        beside = path.parent / name
        if not beside.is_file():
            continue
        config = _json_object(beside.read_text(encoding="utf-8"), str(beside))
        if name == "config.json":
            if "quantization_config" not in config:
                continue
            config = config["quantization_config"]
            if not isinstance(config, dict):
                raise ArgumentError("quantization_config", f"{beside}: quantization_config is not an object")
        return QuantizationConfig.from_mapping(config, str(beside))
    return None


@dataclass(frozen=True)
class Item:
    """One tensor of the converted checkpoint: a packed linear weight (``roles`` maps each of
    :data:`PACKED_ROLES` present to the file's tensor name) or a plain tensor (``roles`` empty)."""

    name: str
    source: SafetensorsFile = field(repr=False)
    config: QuantizationConfig | None
    roles: Mapping[str, str] = field(default_factory=dict)

    @property
    def quantized(self) -> bool:
        return bool(self.roles)

    @property
    def kind(self) -> str:
        """``gptq``, ``awq``, ``compressed-tensors``, ``mxfp4``, ``bitsandbytes-nf4``, ``nvfp4``,
        ``fp8`` or the safetensors dtype code of a plain tensor."""
        if "state" in self.roles:
            return "bitsandbytes-nf4"
        if "weight_scale_2" in self.roles:
            return "nvfp4"
        if "weight_scale" in self.roles and "weight" in self.roles:
            return "fp8"
        if self.config is not None and self.roles:
            return self.config.method
        return self.source.entries[self.name].code

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape: ``(in_features, out_features)`` for a packed weight."""
        if not self.roles:
            return self.source.entries[self.name].shape
        if "weight_scale_2" in self.roles:  # NVFP4: two E2M1 values a byte along the rows
            *leading, pairs = self.source.entries[self.roles["weight"]].shape
            return (*leading, pairs * 2)
        if self.kind == "fp8":  # one code a value
            return self.source.entries[self.roles["weight"]].shape
        if "state" in self.roles:  # bitsandbytes: the shape its state names
            return tuple(int(n) for n in self.state().get("shape") or ())
        if "blocks" in self.roles:  # MXFP4: (*prefix, G, 16) bytes, 32 values a block
            *prefix, groups, _ = self.source.entries[self.roles["blocks"]].shape
            return (*prefix, groups * 32)
        if "weight_shape" in self.roles:  # compressed-tensors: (out, in), as stored
            return tuple(int(n) for n in self.source.array(self.roles["weight_shape"]).reshape(-1))
        rows, columns = self.source.entries[self.roles["qweight"]].shape
        if self.kind == "awq":
            return rows, columns * (32 // 4)
        return rows * (32 // (self.config.bits if self.config else 4)), columns

    def array(self) -> np.ndarray:
        """A plain tensor's values (same bits)."""
        return self.source.array(self.name)

    def state(self) -> dict[str, Any]:
        """A bitsandbytes weight's quant_state (JSON bytes in a uint8 tensor)."""
        raw = self.source.array(self.roles["state"])
        try:
            value = json.loads(raw.tobytes())
        except ValueError as err:
            raise RuleViolation("HQ-NF4-01", f"{self.roles['state']} is not a JSON quant state: {err}",
                                path=self.roles["state"], actual=raw[:16].tobytes()) from None
        if not isinstance(value, dict):
            raise RuleViolation("HQ-NF4-01", f"{self.roles['state']} is not a JSON object", path=self.roles["state"],
                                actual=type(value).__name__)
        return value

    def nf4(self) -> tuple[Any, list[bytes]]:
        """A bitsandbytes NF4 weight as the Hurray NF4 tensor with the same values."""
        read = {role: self.source.array(name) for role, name in self.roles.items() if role != "state"}
        nested = (read["nested_absmax"], read["nested_quant_map"]) if "nested_absmax" in read else None
        return bitsandbytes_nf4_to_hurray(read["weight"], read["absmax"], read["quant_map"], self.state(), nested,
                                          self.name)

    def mxfp(self) -> tuple[Any, list[bytes]]:
        """A gpt-oss MXFP4 tensor as the Hurray MXFP tensor with the same bytes."""
        if "blocks" not in self.roles:
            raise ArgumentError("item", f"{self.name} is not an MXFP4 tensor", actual=self.name)
        return mxfp4_blocks_to_hurray(self.source.array(self.roles["blocks"]), self.source.array(self.roles["scales"]),
                                      self.name)

    def hurray(self) -> Tensor:
        """The item as the Hurray tensor ``convert -o NAME.hrry`` writes (refused by rule where
        it has no exact form): MXFP4 as MXFP, NF4 as NF4, packed integer weights as per-block
        affine, plain tensors as themselves."""
        from hurray_decl.convert.hurray import from_block_parts
        from hurray_decl.convert.safetensors import to_hurray

        if self.kind == "mxfp4":
            return Tensor(*self.mxfp(), self.name)
        if self.kind == "bitsandbytes-nf4":
            return Tensor(*self.nf4(), self.name)
        if self.quantized:
            return Tensor(*from_block_parts(self.parts()), self.name)
        return to_hurray(self.name, self.array())

    def parts(self) -> BlockParts:
        """A packed weight's per-block affine parts, bit for bit (refused by rule where none exist:
        an FP8 or NVFP4 weight, whatever its target, HQ-MX-11)."""
        if self.kind == "nvfp4":
            raise UnsupportedError("HQ-MX-11", f"{self.name}: NVFP4 scales its E2M1 blocks by E4M3 values times a "
                                   "float32 tensor scale; MXFP's scales are powers of two 2^(e - 127)",
                                   path=self.roles["weight_scale_2"], actual="nvfp4 (weight_scale, weight_scale_2)",
                                   expected="integer, MXFP4 or NF4 block codes")
        if self.kind == "fp8":
            code = self.source.entries[self.roles["weight"]].code
            raise UnsupportedError("HQ-MX-11", f"{self.name}: FP8 codes ({code}) times a float scale "
                                   f"({self.roles['weight_scale']}); MXFP scales float8 blocks by powers of two "
                                   "2^(e - 127) only, and no other scheme holds float8 codes",
                                   path=self.roles["weight_scale"], actual=f"fp8 {code} with weight_scale",
                                   expected="integer, MXFP4 or NF4 block codes")
        if self.config is None or not self.roles:
            raise ArgumentError("item", f"{self.name} is not a packed weight", actual=self.name)
        read = {role: self.source.array(name) for role, name in self.roles.items()}
        if self.config.method == "compressed-tensors":
            scales = read["weight_scale"]
            scale_type = storage.element_of_dtype(scales.dtype)
            if scale_type not in ("float16", "bfloat16", "float32"):
                raise RuleViolation("HQ-PB-08", f"{self.roles['weight_scale']} holds {scales.dtype} scales",
                                    path=self.roles["weight_scale"], actual=str(scales.dtype),
                                    expected="float16, bfloat16 or float32")
            return compressed_tensors_parts(read["weight_packed"], scales, read["weight_shape"],
                                            bits=self.config.bits, group_size=self.config.group_size,
                                            scale_type=scale_type,
                                            zero_points=read.get("weight_zero_point"), g_idx=read.get("weight_g_idx"))
        for role in ("qweight", "qzeros"):
            if read[role].dtype != np.int32:
                raise RuleViolation("HQ-PB-14", f"{self.roles[role]} holds packed int32 words", path=self.roles[role],
                                    actual=str(read[role].dtype), expected="int32")
        read["scales"] = float16_scales(read["scales"], self.roles["scales"])
        in_features = self.shape[0]
        group = in_features if self.config.group_size == -1 else self.config.group_size
        if self.config.method == "awq":
            return awq_parts(read["qweight"], read["qzeros"], read["scales"], group_size=group)
        return gptq_parts(read["qweight"], read["qzeros"], read["scales"], bits=self.config.bits, group_size=group,
                          g_idx=read.get("g_idx"), zero_offset=self.config.zero_offset)


@dataclass
class Checkpoint:
    """A safetensors file as conversion items, with its metadata and quantization config."""

    source: SafetensorsFile
    config: QuantizationConfig | None
    items: list[Item]

    @property
    def metadata(self) -> dict[str, str]:
        return self.source.metadata

    def close(self) -> None:
        self.source.close()


def read_checkpoint(path: str | Path) -> Checkpoint:
    """A safetensors file as items: packed GPTQ/AWQ linear weights (when it has ``*.qweight``
    tensors, which then need a quantization config) and plain tensors, in file order."""
    path = Path(path)
    source = open_safetensors(path)
    try:
        marks = [n for n in source.names if n.endswith((".qweight", ".weight_packed"))]
        blocks = [n for n in source.names if n.endswith(("_blocks", ".blocks"))
                  and f"{n[: -len('blocks')]}scales" in source.entries]  # MXFP4 only with a config that says so
        config = find_config(path, source.metadata) if marks or blocks else None
        if marks and config is None:
            raise ArgumentError("quantization_config", f"{path} holds packed weights ({marks[0]}) but no "
                                "quantization_config (in __metadata__, or a quantize_config.json / config.json "
                                "beside it) says how they are packed")
        first = _FIRST[config.method] if config is not None else "qweight"
        names, needed = {"weight_packed": (CT_ROLES, CT_ROLES[:3]), "blocks": (MXFP4_ROLES, MXFP4_ROLES)}.get(
            first, (PACKED_ROLES, PACKED_ROLES[1:3]))
        joints = ("_", ".") if first == "blocks" else (".",)
        prefixes = [(n[: -len(first) - 1], n[-len(first) - 1]) for n in source.names
                    if n.endswith(first) and n[-len(first) - 1: -len(first)] in joints]
        grouped: dict[str, dict[str, str]] = {}
        for prefix, joint in prefixes:
            roles = {role: f"{prefix}{joint}{role}" for role in names if f"{prefix}{joint}{role}" in source.entries}
            missing = [r for r in needed if r not in roles]
            if missing:
                raise ArgumentError("checkpoint", f"{prefix}{joint}{first} has no {prefix}{joint}{missing[0]}",
                                    actual=prefix, expected=", ".join(names[:3]))
            for name in roles.values():
                grouped[name] = roles
        for state in (n for n in source.names if n.endswith(BNB_STATE)):
            weight = state[: -len(BNB_STATE)]
            roles = {"weight": weight, "state": state, **{role: f"{weight}.{role}" for role in BNB_ROLES
                                                          if f"{weight}.{role}" in source.entries}}
            missing = [r for r in ("weight", "absmax", "quant_map") if roles.get(r) not in source.entries]
            if missing:
                raise ArgumentError("checkpoint", f"{state} has no {roles.get(missing[0], missing[0])}",
                                    actual=weight, expected=", ".join(BNB_ROLES[:2]))
            grouped.update(dict.fromkeys(roles.values(), roles))
        for scale in (n for n in source.names if n.endswith(FP8_SCALE)):
            stem = scale[: -len(FP8_SCALE)]
            codes = source.entries.get(f"{stem}.weight")
            if codes is not None and codes.code in _FP8_CODES and f"{stem}{NVFP4_SCALE}" not in source.entries:
                roles = {role: f"{stem}.{role}" for role in ("weight", "weight_scale", "input_scale")
                         if f"{stem}.{role}" in source.entries}
                grouped.update(dict.fromkeys(roles.values(), roles))
        for second in (n for n in source.names if n.endswith(NVFP4_SCALE)):
            stem = second[: -len(NVFP4_SCALE)]
            roles = {role: f"{stem}.{role}" for role in ("weight", "weight_scale", "weight_scale_2", "input_scale")
                     if f"{stem}.{role}" in source.entries}
            if "weight" in roles:
                grouped.update(dict.fromkeys(roles.values(), roles))
        items, seen = [], set()
        for name in source.names:
            roles = grouped.get(name, {})
            anchor = roles.get("state", roles.get("weight_scale_2", roles.get("weight_scale") if "weight" in roles
                                                  else None))
            if anchor is not None:  # one item a bitsandbytes, NVFP4 or FP8 weight, named as its weight
                if anchor not in seen:
                    seen.add(anchor)
                    items.append(Item(grouped[name]["weight"], source, config, grouped[name]))
            elif name not in grouped:
                items.append(Item(name, source, config))
            elif grouped[name][first] not in seen:
                seen.add(grouped[name][first])
                stem = grouped[name][first][: -len(first) - 1]
                items.append(Item(stem if first == "blocks" else stem + ".weight", source, config, grouped[name]))
    except BaseException:
        source.close()
        raise
    return Checkpoint(source, config, items)
