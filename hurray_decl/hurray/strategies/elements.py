"""Data mutants of element storage (DIGEST § 4.4, § 4.5): non-zero padding bits in the last
packing unit of a sub-byte type, and the two float8_e8m0 codes no value has."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import assume, reject, strategies as st

from hurray_decl.hurray.strategies.mutants import data_mutant
from hurray_decl.hurray.strategies.patching import resized
from hurray_decl.hurray.strategies.tensor import buffers_for, contiguous, tensor_descriptors
from hurray_decl.hurray.tables.element_types import BY_NAME, ELEMENT_TYPES
from hurray_decl.hurray.tables.storage import byte_size, packing
from hurray_decl.hurray.tensor import TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.context import TensorContext
from hurray_decl.hurray.tensor.validate import PADDING_BIT_RULES

E8M0 = "float8_e8m0"
E8M0_NO_VALUE = (0x00, 0xFF)


def element_data(type_names: Sequence[str], keep: Callable[[TensorDescriptor, int, int], bool],
                 change: Callable[[st.DrawFn, bytearray, int, int, int], None]):
    """A contiguous tensor of one of ``type_names``; ``change(draw, data, start, count, bits)``."""
    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        name = draw(st.sampled_from(list(type_names)))
        tag = BY_NAME[name].tag
        d = draw(tensor_descriptors(layout=contiguous(), quantized=False, private_type=False,
                                    shard=False).map(lambda d: d.model_copy(update={"type_tag": tag})))
        count = TensorContext(d).element_count()
        if count is None:  # a DYNAMIC dimension: no elements to change
            reject()
        need = d.byte_offset + byte_size(name, count)
        assume(need <= d.buffers[0].byte_size and keep(d, count, BY_NAME[name].bits))
        if d.buffers[0].byte_size != need:
            d = d.model_copy(update={"buffers": (resized(d.buffers[0], need),) + d.buffers[1:]})
        contents = list(draw(buffers_for(d)))
        data = bytearray(contents[0])
        change(draw, data, d.byte_offset, count, BY_NAME[name].bits)
        contents[0] = bytes(data)
        return write_tensor_descriptor(d), tuple(contents)
    return build


def _e8m0_no_value(draw: st.DrawFn, data: bytearray, start: int, count: int, bits: int) -> None:
    data[start + draw(st.integers(0, count - 1))] = draw(st.sampled_from(E8M0_NO_VALUE))


def _padding_bits(draw: st.DrawFn, data: bytearray, start: int, count: int, bits: int) -> None:
    """Set some of the unused bits of the last, partial packing unit."""
    unit = packing(bits)
    first = start + unit.byte_of(count)
    used = (count % unit.elements) * bits
    word = int.from_bytes(data[first:first + unit.size], "little")
    word |= draw(st.integers(1, (1 << (8 * unit.size - used)) - 1)) << used
    data[first:first + unit.size] = word.to_bytes(unit.size, "little")


def _partial_unit(d: TensorDescriptor, count: int, bits: int) -> bool:
    return count > 0 and count % packing(bits).elements != 0


data_mutant("HE-26", element_data([E8M0], lambda d, n, b: n > 0, _e8m0_no_value))
for _bits, _rule in PADDING_BIT_RULES.items():
    data_mutant(_rule, element_data([t.name for t in ELEMENT_TYPES if t.bits == _bits], _partial_unit, _padding_bits))
