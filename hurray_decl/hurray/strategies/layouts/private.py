"""Private extension layouts (0xF0-0xFE): an agreed extension_layout_id and opaque bytes."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import mutant
from hurray_decl.hurray.strategies.tensor import (
    PRIVATE_VALUES,
    LayoutStrategy,
    Part,
    Request,
    register_layout,
    shapes,
    tensor_descriptors,
)
from hurray_decl.hurray.tensor import PrivateLayout, write_tensor_descriptor
from hurray_decl.hurray.tensor.layouts import PRIVATE_LAYOUTS


def _private(draw: st.DrawFn, want: Request) -> Part:
    if want.private_layout_id is None:
        raise ValueError("the private layout is drawn only for a registered private_layout_id")
    layout = PrivateLayout(extension_layout_id=want.private_layout_id, extension_data=draw(st.binary(max_size=12)))
    return Part(draw(shapes(1, 2)), layout, (draw(st.integers(0, 64)),), layout_tag=draw(PRIVATE_VALUES))


register_layout(LayoutStrategy("private", _private))


@mutant("HT-LAY-85")
@st.composite
def _private_layout(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="row_major", quantized=False, shard=False).filter(lambda d: d.rank > 0))
    ident = draw(st.integers(0, 2**64 - 1).filter(lambda v: v not in PRIVATE_LAYOUTS))
    layout = PrivateLayout(extension_layout_id=ident, extension_data=draw(st.binary(max_size=12)))
    # the permissive writer writes an id nobody agreed on, which a strict reader refuses
    return write_tensor_descriptor(d.replace(layout=layout, layout_tag=draw(PRIVATE_VALUES)), permissive=True)
