"""The bundled example corpus: valid descriptors of every scheme and layout, and invalid ones,
each breaking one named rule.

The corpus is generated here, deterministically, and shipped in ``hurray_decl/hurray/examples/``
(``<name>.bin`` files plus ``manifest.json`` with the expected verdict of each); a test keeps
the shipped copy equal to this generator. ``hurray-decl audit`` with no folder audits it.
Regenerate with ``python -m hurray_decl.hurray.examples``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hurray_decl.hurray.tables.element_types import BY_NAME
from hurray_decl.hurray.tensor import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    BufferHandle,
    ColumnMajor,
    CompositeHead,
    Hilbert,
    Morton,
    RowMajor,
    Strided,
    TensorDescriptor,
    Tiled,
    write_tensor_descriptor,
)

FOLDER = "examples"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Example:
    name: str
    description: str
    data: bytes
    expect: str | None  # the rule code a reader must report, None for a valid descriptor


def _handles(*sizes: int) -> tuple[BufferHandle, ...]:
    return tuple(BufferHandle(byte_size=size) for size in sizes)


def _float32(shape: tuple[int, ...], layout, *sizes: int) -> bytes:
    return write_tensor_descriptor(TensorDescriptor(type_tag=BY_NAME["float32"].tag, shape=shape, layout=layout,
                                                    buffers=_handles(*sizes)))


LAYOUT_EXAMPLES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "row_major": ("float32 [3, 4], row-major", lambda: _float32((3, 4), RowMajor(), 48)),
    "column_major": ("float32 [3, 4], column-major", lambda: _float32((3, 4), ColumnMajor(), 48)),
    "strided": ("float32 [3, 4], strides (1, 3)", lambda: _float32((3, 4), Strided(strides=(1, 3)), 48)),
    "tiled": ("float32 [4, 4] in 2x2 tiles", lambda: _float32((4, 4), Tiled(tile_shape=(2, 2)), 64)),
    "morton": ("float32 [4, 4], Morton order", lambda: _float32((4, 4), Morton(morton_bits=(2, 2)), 64)),
    "coo": ("float32 [4, 4], COO with 3 values", lambda: _float32((4, 4), COO(nnz=3), 12, 48)),
    "csr": ("float32 [3, 3], CSR with 3 values", lambda: _float32((3, 3), CSR(nnz=3), 12, 24, 32)),
    "csc": ("float32 [3, 3], CSC with 3 values", lambda: _float32((3, 3), CSC(nnz=3), 12, 24, 32)),
    "csf": ("float32 [2, 3, 2], CSF with 2 values",
            lambda: _float32((2, 3, 2), CSF(nnz=2, mode_order=(0, 1, 2)), 8, 16, 16, 16, 16, 16, 16)),
    "block_paged": ("float32 KV cache, 3 pages of 4 tokens, 2 sequences",
                    lambda: _float32((8, 2, 8), BlockPaged(page_size=4, num_pages=3, num_seqs=2), 768, 12, 12)),
    "composite_head": ("composite head of 2 partition members",
                       lambda: _float32((4, 4), CompositeHead(composition_rule=1, member_count=2))),
    "hilbert": ("float32 [4, 4], Hilbert order 2",
                lambda: _float32((4, 4), Hilbert(hilbert_order=2, hilbert_rank=2), 64)),
}
"""One unquantized descriptor per layout."""

SCHEME_EXAMPLES: dict[str, tuple[str, dict]] = {
    "per_tensor_affine_int8": ("per-tensor affine, int8, symmetric", {"scheme_name": "per_tensor_affine"}),
    "per_tensor_affine_uint4": ("per-tensor affine, uint4, asymmetric",
                                {"scheme_name": "per_tensor_affine", "storage": "uint4", "symmetric": False}),
    "per_channel_affine_int16": ("per-channel affine along axis 0, int16",
                                 {"scheme_name": "per_channel_affine", "storage": "int16"}),
    "per_channel_affine_uint8": ("per-channel affine along axis 1, uint8, asymmetric",
                                 {"scheme_name": "per_channel_affine", "axis": 1, "symmetric": False}),
    "per_block_affine_int4_f16": ("per-block affine, int4, block 32, float16 scales",
                                  {"scheme_name": "per_block_affine", "storage": "int4", "scale_type": "float16"}),
    "per_block_affine_uint2_partial": ("per-block affine, uint2, block 2 along 3 rows (a partial block)",
                                       {"scheme_name": "per_block_affine", "storage": "uint2", "axis": 0,
                                        "block_size": 2, "symmetric": False, "scale_type": "bfloat16",
                                        "rows": 3}),
    "nf4_block64": ("NF4, block 64", {"scheme_name": "nf4"}),
    "mxfp8_e4m3": ("MXFP, float8_e4m3, block 32", {"scheme_name": "mxfp"}),
    "mxfp4": ("MXFP, float4_e2m1, block 32", {"scheme_name": "mxfp", "storage": "float4_e2m1"}),
}
"""One quantized row-major descriptor per scheme (and a few storage types)."""


def _quantized(options: dict) -> bytes:
    import numpy as np

    from hurray_decl.hurray.numerics import quantize  # imported here: auditing the shipped corpus needs no numerics

    options = dict(options)
    rows = options.pop("rows", 4)
    matrix = np.linspace(-4.0, 4.0, 4 * 64, dtype=np.float32).reshape(4, 64)
    descriptor, _ = quantize(matrix[:rows], **options)
    return write_tensor_descriptor(descriptor)


def _invalid(valid: dict[str, bytes]) -> list[Example]:
    from hurray_decl.hurray.tensor.fields import with_field  # the fields by name, through the reader's declaration

    row, block = valid["row_major"], valid["per_block_affine_int4_f16"]
    cases = [
        ("bad_magic", "magic is not HRRY", with_field(row, "magic", b"HRRX"), "HT-HDR-04"),
        ("newer_major", "version_major 2", with_field(row, "version_major", 2), "HT-HDR-05"),
        ("short_length", "descriptor_length below 20", with_field(row, "descriptor_length", 19), "HT-HDR-07"),
        ("truncated", "the input ends before descriptor_length", row[:-3], "HT-HDR-08"),
        ("reserved_flag", "a reserved header flag bit", with_field(row, "flags", 1 << 7), "HT-HDR-12"),
        ("invalid_layout_tag", "layout_tag 0xFF", with_field(row, "layout_tag", 0xFF), "HT-HDR-15"),
        ("bad_alignment", "alignment 48, not a power of two", with_field(row, "buffers.0.alignment", 48),
         "HT-BUFT-12"),
        ("invalid_scheme_tag", "scheme_tag 0x00", with_field(block, "quantization.scheme_tag", 0x00), "HQ-HDR-07"),
        ("reserved_scheme_tag", "scheme_tag 0x61 (reserved for nested schemes)",
         with_field(block, "quantization.scheme_tag", 0x61), "HQ-HDR-09"),
        ("block_size_not_power_of_two", "per-block block_size 24", with_field(block, "quantization.block_size", 24),
         "HQ-PB-03"),
        ("scale_index_out_of_range", "scale_buffer_index 5 of 2 buffers",
         with_field(block, "quantization.scale_buffer_index", 5), "HQ-BUF-01"),
        ("scale_index_aliases_data", "scale_buffer_index 0 (the data buffer)",
         with_field(block, "quantization.scale_buffer_index", 0), "HQ-BUF-02"),
        ("quantization_reserved_byte", "a non-zero reserved byte",
         with_field(block, "quantization.reserved", b"\x00\x01\x00"), "HQ-PB-09"),
        ("axis_out_of_range", "axis 2 of a rank-2 tensor", with_field(block, "quantization.axis", 2), "HQ-PB-02"),
    ]
    return [Example(name, description, data, code) for name, description, data, code in cases]


def examples() -> list[Example]:
    """The whole corpus, in a stable order."""
    valid = {name: build() for name, (_, build) in LAYOUT_EXAMPLES.items()}
    valid.update({name: _quantized(options) for name, (_, options) in SCHEME_EXAMPLES.items()})
    descriptions = {**{k: v[0] for k, v in LAYOUT_EXAMPLES.items()}, **{k: v[0] for k, v in SCHEME_EXAMPLES.items()}}
    corpus = [Example(f"valid_{name}", descriptions[name], data, None) for name, data in valid.items()]
    return corpus + [Example(f"invalid_{e.name}", e.description, e.data, e.expect) for e in _invalid(valid)]


def manifest(corpus: list[Example]) -> dict:
    return {"descriptors": [{"file": f"{e.name}.bin", "description": e.description, "expect": e.expect}
                            for e in corpus]}


def bundled() -> Path:
    """The folder the package ships the corpus in."""
    return Path(str(resources.files("hurray_decl.hurray").joinpath(FOLDER)))


def checkout_conformance_descriptors(folder: str = "descriptors", pattern: str = "*.bin") -> list[Path]:
    """The golden conformance descriptors of a source checkout (the repository's
    ``tests/conformance/hurray/descriptors/``; ``files/`` with ``*.hrry`` for its containers), or
    none when the package runs from an install, which carries the bundled corpus but not the test
    suite's."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        return []
    return sorted((root / "tests" / "conformance" / "hurray" / folder).glob(pattern))


def write(folder: Path) -> None:
    """Write the corpus and its manifest into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = examples()
    for example in corpus:
        (folder / f"{example.name}.bin").write_bytes(example.data)
    (folder / MANIFEST).write_text(json.dumps(manifest(corpus), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write(bundled())
    print(f"wrote {len(examples())} descriptors to {bundled()}")
