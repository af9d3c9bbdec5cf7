"""Hypothesis strategies for Hurray descriptors: valid ones, their buffers, and rule-labelled
mutants (needs the ``hypothesis`` package).

Valid descriptors
    ``quantization_descriptors(scheme)`` draws quantization descriptor models of one scheme (all
    built-in schemes when ``scheme`` is None); ``quantization_payloads`` their encodings,
    optionally followed by writer padding. ``tensor_descriptors(...)`` draws whole tensor
    descriptors: every public layout, the five schemes, each optional section, and buffer tables
    whose sizes, placement and parameter buffers are consistent. ``buffers_for(descriptor)``
    draws buffer contents that also satisfy the rules that read data (scales finite and
    non-zero, zero points in range, zeroed padding, sparse and block-table invariants).

Mutants
    ``invalid_tensor_descriptors(rule=None)`` draws ``(bytes, rule_id)``: a valid descriptor,
    encoded, then changed in the field that ``rule_id`` governs so that a reader must refuse it
    with that rule. There is one generator per *reader rule* of the HQ-*, HT-* and HE-* areas
    (role ``reader`` or ``both``, needs without ``data``); :data:`MUTANTS` holds them, keyed by
    rule ID. ``invalid_buffers(rule=None)`` draws ``(descriptor bytes, buffers, rule_id)`` for
    the data rules (:data:`DATA_MUTANTS`): a valid descriptor whose buffer contents, drawn by
    ``buffers_for`` and then changed in one value, break the rule (parameter values, sparse and
    block-table invariants, padding bits, float8_e8m0 data). ``validate_buffers`` refuses them.

    Rules of role ``writer`` or ``codec`` are never mutant targets (a reader cannot refuse them).
    The reader rules without a generator are listed in :data:`NOT_REFUSABLE` with the reason:
    acceptance rules (they say what is *accepted*), wire-layout rules whose breach only shows as
    another rule (a short section is HT-HDR-08/HQ-HDR-04, a long one HT-HDR-09 or writer
    padding), and rules that this reader has no way to break from bytes. Data rules without a
    generator are in :data:`DATA_NOT_GENERATED`.

Every flag is drawn next to the field it gates and each mutant changes one field of a drawn
valid descriptor written by :func:`~hurray_decl.hurray.tensor.write_tensor_descriptor`, located by
its path in the reader's trace and packed to the width its declaration gives it
(:mod:`.patching`); the few that change the structure itself (rank, buffer count, a section
added) build the parts from their own declarations. No offset is written by hand. Shrinking
stays local: a failing case shrinks to a small descriptor with the smallest offending value.
Where changing the field necessarily disturbs a later check too
(a CSF tensor of rank 2 cannot keep the 2 x 3 + 1 buffers of rank 3), the rule the mutant is
labelled with is the one a reader meets first in the order of DIGEST Appendix A.

Valid descriptors never use a private layout (no reader knows one without an agreement made
out of band); ``tensor_descriptors(private_layout_id=ID)`` adds them for an ID the caller has
registered. Private element types and private device tags (accepted, HD-23) are drawn.

Modules
    Each scheme (``schemes/<row name>.py``, found through its registry row), each layout family
    (``layouts/dense.py``, ``tiled.py``, ``curves.py``, ``sparse.py``, ``paged.py``,
    ``composite.py``, ``private.py``, ``ranks.py``), the header (``header.py``), the buffer table
    (``buffers.py``), the sections (``sections.py``) and element storage (``elements.py``) own
    their valid strategies and their mutants; ``tensor.py`` composes the valid descriptors,
    ``mutants.py`` holds the tables. This package gathers them.
"""


from __future__ import annotations

from hurray_decl.hurray.strategies import buffers, elements, header, sections  # noqa: F401  (each registers its mutants)
from hurray_decl.hurray.strategies.coverage import DATA_NOT_GENERATED, NOT_REFUSABLE
from hurray_decl.hurray.strategies.layouts import composite, curves, dense, paged, private, ranks, sparse, tiled  # noqa: F401
from hurray_decl.hurray.strategies.mutants import (
    DATA_MUTANTS,
    MUTANTS,
    data_rules,
    invalid_buffers,
    invalid_tensor_descriptors,
    reader_rules,
)
from hurray_decl.hurray.strategies.quantization import (
    ROWS,
    SCHEME_NAMES,
    quantization_descriptors,
    quantization_payloads,
    strategy,
)
from hurray_decl.hurray.strategies.tensor import (
    LAYOUT_KINDS,
    LAYOUT_STRATEGIES,
    buffers_for,
    placements,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import float32s

for _row in ROWS:  # each scheme's module, found through its row, registers its mutants
    strategy(_row)
_missing = set(LAYOUT_KINDS) - set(LAYOUT_STRATEGIES)
if _missing:
    raise ImportError(f"layout rows without a strategy: {sorted(_missing)}")

__all__ = [
    "DATA_MUTANTS",
    "DATA_NOT_GENERATED",
    "LAYOUT_KINDS",
    "MUTANTS",
    "NOT_REFUSABLE",
    "SCHEME_NAMES",
    "buffers_for",
    "data_rules",
    "float32s",
    "invalid_buffers",
    "invalid_tensor_descriptors",
    "placements",
    "quantization_descriptors",
    "quantization_payloads",
    "reader_rules",
    "tensor_descriptors",
]
