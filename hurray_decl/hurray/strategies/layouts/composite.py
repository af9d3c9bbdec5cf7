"""The composite head (0x0B): a virtual tensor made of the descriptors that follow."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import field_mutant, layout_field, mutant, reserved_field
from hurray_decl.hurray.strategies.patching import assembled
from hurray_decl.hurray.strategies.quantization import quantization_descriptors
from hurray_decl.hurray.strategies.tensor import (
    LayoutStrategy,
    Part,
    Request,
    layout_as,
    register_layout,
    shapes,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import other_than
from hurray_decl.hurray.tables.codes import OVERLAY_OPS, CombineOp, CompositionRule
from hurray_decl.hurray.tables.tags import PRIVATE_TAGS
from hurray_decl.hurray.tensor import CompositeHead
from hurray_decl.hurray.tensor.layouts import OPEN_COMPOSITE

RULES = CompositionRule.codes()
OVERLAY = CompositionRule.OVERLAY
BYTE = st.integers(0, 255)


def _head(draw: st.DrawFn, want: Request) -> Part:
    rule = draw(st.sampled_from(RULES))
    op = draw(st.sampled_from([int(op) for op in OVERLAY_OPS])) if rule == OVERLAY else int(CombineOp.NONE)
    head = CompositeHead(composition_rule=rule, combine_op=op,
                         member_count=draw(st.integers(1 if rule == OVERLAY else 0, OPEN_COMPOSITE - 1)))
    return Part(draw(shapes(1, 3)), head, ())


register_layout(LayoutStrategy("composite_head", _head))

HEADS = tensor_descriptors(layout="composite_head")
_NOT_OVERLAY = HEADS.filter(lambda d: layout_as(d, CompositeHead).composition_rule != OVERLAY)
_OVERLAY = HEADS.filter(lambda d: layout_as(d, CompositeHead).composition_rule == OVERLAY)


@mutant("HT-LAY-69")
def _composition_bad() -> st.SearchStrategy[bytes]:
    return layout_field("composite_head", "composition_rule",
                        st.sampled_from([v for v in range(256) if v not in RULES and v not in PRIVATE_TAGS]))


@mutant("HT-LAY-70")
def _composition_private() -> st.SearchStrategy[bytes]:
    return layout_field("composite_head", "composition_rule", st.sampled_from(PRIVATE_TAGS))


@mutant("HT-LAY-71")
def _combine_partition() -> st.SearchStrategy[bytes]:
    return field_mutant(_NOT_OVERLAY, "layout.combine_op", lambda draw, d: draw(other_than(BYTE, CombineOp.NONE)))


@mutant("HT-LAY-72")
def _combine_overlay() -> st.SearchStrategy[bytes]:
    return field_mutant(_OVERLAY, "layout.combine_op", lambda draw, d: draw(other_than(BYTE, *OVERLAY_OPS)))


@mutant("HT-LAY-73")
def _head_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(HEADS, "layout.reserved")


@mutant("HT-LAY-74")
def _head_open() -> st.SearchStrategy[bytes]:
    return layout_field("composite_head", "member_count", st.just(OPEN_COMPOSITE))


@mutant("HT-LAY-75")
def _overlay_empty() -> st.SearchStrategy[bytes]:
    return field_mutant(_OVERLAY, "layout.member_count", lambda draw, d: 0)


@mutant("HT-LAY-76")
@st.composite
def _head_quantized(draw: st.DrawFn) -> bytes:
    d = draw(HEADS)  # a whole section added: it is sliced before the rule
    return assembled(d.replace(quantization=draw(quantization_descriptors())))
