"""Composites in a file: a head (layout 0x0B) binds the next ``member_count`` tensors in write
order, pre-order for nested heads (FILE-FORMAT.md § 4.7; layouts/composite.md § Validation).

:class:`CompositeWalk` is fed tensors in write order and keeps one frame per open head, so a
claimed member_count costs a counter, never an allocation. It refuses nesting deeper than 8
heads (HF-DATA-17), runs each composite's own checks once its N-th member is located
(HF-DATA-16) and, at :meth:`finish`, refuses a head still waiting for members (HF-DATA-15).
The reader and the writer both use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.container.declarations import MAX_COMPOSITE_DEPTH
from hurray_decl.hurray.tables.codes import CompositionRule, MemberRole
from hurray_decl.hurray.tensor import TensorDescriptor
from hurray_decl.hurray.tensor.layouts import CompositeHead


@dataclass
class _Frame:
    name: str
    head: TensorDescriptor
    layout: CompositeHead  # the head's
    remaining: int
    members: list[tuple[str, TensorDescriptor]] = field(default_factory=list)


FILE_RULES = ("HF-DATA-16", "HF-DATA-17", "HF-DATA-15")
"""The container's rules for (a member or close-time check, nesting too deep, a torn composite)."""


def _in_file(name: str) -> str:
    return f"file -> tensor {name!r}"


class CompositeWalk:
    """Composite structure over tensors given in write order. ``locate(name)`` is the byte
    offset errors about that tensor carry (None when there is no file yet); ``rules`` are the
    codes of (member or close-time check, depth, torn) and ``where(name)`` the error path, so that
    another framing of the same composites (a stream) reports under its own rules."""

    def __init__(self, locate: Callable[[str], int | None] = lambda name: None, *,
                 max_depth: int = MAX_COMPOSITE_DEPTH, rules: tuple[str, str, str] = FILE_RULES,
                 where: Callable[[str], str] = _in_file) -> None:
        self.locate = locate
        self.max_depth = max_depth
        self.member_rule, self.depth_rule, self.torn_rule = rules
        self.where = where
        self.stack: list[_Frame] = []
        self.started = False

    @property
    def closed(self) -> bool:
        """True once the first head given and all it binds are complete."""
        return self.started and not self.stack

    def _fail(self, code: str, message: str, name: str, actual: object = None,
              expected: object = None) -> RuleViolation:
        return RuleViolation(code, message, path=self.where(name), offset=self.locate(name),
                             actual=actual, expected=expected)

    def item(self, name: str, descriptor: TensorDescriptor) -> None:
        """A tensor in write order: :meth:`arrive`, then :meth:`settle`."""
        self.arrive(name, descriptor)
        self.settle()

    def arrive(self, name: str, descriptor: TensorDescriptor) -> None:
        """A tensor's descriptor: the open head's member checks; a head is pushed (depth checked)."""
        self.started = True
        if self.stack:
            top = self.stack[-1]
            self._member(top, name, descriptor)
            top.remaining -= 1
            if top.layout.composition_rule == CompositionRule.PARTITION:
                top.members.append((name, descriptor))
        if isinstance(descriptor.layout, CompositeHead):
            depth = len(self.stack) + 1
            if depth > self.max_depth:
                raise self._fail(self.depth_rule, "composite nesting deeper than 8 heads", name, depth,
                                 f"<= {self.max_depth}")
            self.stack.append(_Frame(name, descriptor, descriptor.layout, descriptor.layout.member_count))

    def settle(self) -> None:
        """After a tensor is complete (its buffers too): close every head whose members are all there."""
        while self.stack and self.stack[-1].remaining == 0:
            self._close(self.stack.pop())

    def finish(self) -> None:
        if self.stack:
            frame = self.stack[-1]  # the innermost head still waiting
            raise self._fail(self.torn_rule, "a torn composite: the tensor region ends before its members",
                             frame.name, f"{frame.layout.member_count - frame.remaining} members",
                             f"{frame.layout.member_count} members")

    # ------------------------------------------------------------ the composite's own checks

    def _member(self, frame: _Frame, name: str, d: TensorDescriptor) -> None:
        """Per-member checks (composite.md § Validation, immediate)."""
        head = frame.head
        rule = frame.layout.composition_rule
        position = frame.layout.member_count - frame.remaining
        shard = d.shard
        if rule in (CompositionRule.PARTITION, CompositionRule.OVERLAY):
            if shard is None or tuple(shard.parent_shape) != tuple(head.shape):
                raise self._fail(self.member_rule, "a partition or overlay member carries a shard of the head's shape",
                                 name, None if shard is None else list(shard.parent_shape), list(head.shape))
            if any(o + n > p for o, n, p in zip(shard.shard_offset, d.shape, head.shape)):
                raise self._fail(self.member_rule, "a member's box reaches outside the head's index space", name,
                                 list(shard.shard_offset), f"offset + shape <= {list(head.shape)}")
            if d.quantization is None and d.type_tag != head.type_tag and not isinstance(d.layout, CompositeHead):
                raise self._fail(self.member_rule, "a member's element type differs from the head's", name,
                                 f"0x{d.type_tag:02X}", f"0x{head.type_tag:02X}")
        if rule == CompositionRule.OVERLAY:
            role = None if d.composite_member is None else d.composite_member.member_role
            wanted = int(MemberRole.BASE if position == 0 else MemberRole.CORRECTION)
            if role != wanted:
                raise self._fail(self.member_rule, "an overlay's first member is its base, the others corrections",
                                 name, role, wanted)
            moved = any(shard.shard_offset) if shard is not None else False
            if position == 0 and (moved or tuple(d.shape) != tuple(head.shape)):
                raise self._fail(self.member_rule, "an overlay's base spans the whole index space", name,
                                 list(d.shape), list(head.shape))
        elif d.composite_member is not None:
            raise self._fail(self.member_rule, "only overlay members carry a composite member section", name,
                             "HAS_COMPOSITE_MEMBER", "clear")

    def _close(self, frame: _Frame) -> None:
        """Close-time checks at the N-th member: a partition covers its index space exactly."""
        if frame.layout.composition_rule != CompositionRule.PARTITION:
            return
        boxes = [(tuple(d.shard.shard_offset) if d.shard is not None else (), tuple(d.shape), name)
                 for name, d in frame.members]  # every member has a shard (_member)
        volume = 1
        for n in frame.head.shape:
            volume *= n
        covered = 0
        for k, (offset, shape, name) in enumerate(boxes):
            size = 1
            for n in shape:
                size *= n
            covered += size
            for other, other_shape, other_name in boxes[:k]:
                if size and all(a < b + m and b < a + n for a, n, b, m in zip(offset, shape, other, other_shape)):
                    raise self._fail(self.member_rule, "two partition members overlap", name, list(offset),
                                     f"no overlap with {other_name!r}")
        if covered != volume:
            raise self._fail(self.member_rule, "the partition members do not cover the head's index space",
                             frame.name, f"{covered} elements", f"{volume} elements")
