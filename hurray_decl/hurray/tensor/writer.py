"""Writing a tensor descriptor: the reader's declaration (:mod:`.descriptor`), built instead of
parsed, after the same context checks, so that nothing the reader refuses is ever emitted."""

from __future__ import annotations

from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.tensor.buffers import MAX_BUFFERS
from hurray_decl.hurray.tensor.descriptor import build
from hurray_decl.hurray.tensor.layouts import PrivateLayout
from hurray_decl.hurray.tensor.model import TensorDescriptor


def write_tensor_descriptor(descriptor: TensorDescriptor, *, permissive: bool = False,
                            writer_rules: bool = False) -> bytes:
    """Encode ``descriptor`` byte-exactly, refusing anything :func:`read_tensor_descriptor` refuses.

    Whatever the reader accepts in a mode, the writer writes back byte for byte in that mode:
    a newer minor version with its trailing bytes, writer padding, over-sized sparse arrays.
    ``permissive=True`` is needed to write back a descriptor read in permissive mode (an
    unrecognised layout, scheme or private id); its opaque parts are written as they were read.

    ``writer_rules=True`` also applies the rules RULES.md gives writers alone, for a descriptor
    you made rather than read: version 1.0 (HT-HDR-03), component arrays sized exactly
    (HT-LAY-61, HT-LAY-92) and the u64 block table for more than 2^32 pages (HT-LAY-62).
    """
    if not isinstance(descriptor, TensorDescriptor):
        raise RuleViolation("HT-HDR-02", "write_tensor_descriptor takes a TensorDescriptor", path="descriptor",
                            actual=type(descriptor).__name__, expected="TensorDescriptor")
    # A descriptor made by model_construct / model_copy(update=...) is validated again; one the
    # reader or a constructor returned (immutable, validated in full) is not (FrozenModel.checked).
    d = descriptor.checked()
    if len(d.buffers) > MAX_BUFFERS:
        raise RuleViolation("HT-BUFT-11", "more than 255 buffers: split the data across descriptors",
                            path="descriptor -> buffer_count", actual=len(d.buffers), expected=f"<= {MAX_BUFFERS}")
    if d.version_minor == 0 and d.trailing:
        raise RuleViolation("HT-HDR-09", "a version 1.0 descriptor has no bytes after its sections",
                            path="descriptor -> trailing", actual=len(d.trailing), expected=0)
    if d.version_minor != 0 and writer_rules:
        raise RuleViolation("HT-HDR-03", "writers emit version 1.0", path="descriptor -> version_minor",
                            actual=d.version_minor, expected=0)
    if isinstance(d.layout, PrivateLayout) and not d.layout.registered and not permissive:
        raise RuleViolation("HT-LAY-86", "a private layout is written only under an agreed extension_layout_id",
                            path="descriptor -> layout -> extension_layout_id",
                            actual=d.layout.extension_layout_id, expected="a registered id")
    return build(d, permissive=permissive, writer_rules=writer_rules)
