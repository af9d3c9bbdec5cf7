"""Valid onnx-light inputs of every profile, ORT layout and compact form, and rule-labelled mutants.

Everything here is built from a :class:`Source` of choices, so the same builders serve the
Hypothesis strategies (:mod:`hurray_decl.onnx_light.strategies`, which draw the choices and shrink
them), the bundled example corpus (:mod:`hurray_decl.onnx_light.corpus`, a seeded
:class:`RandomSource`) and the fuzz harness.

* :func:`valid_value` encodes an array with a plan drawn for any profile (portable: block sizes,
  scales, zero points, learned tables, permutation, transform, outliers, mixed bit widths; ORT:
  K, N, block size, source dtype and the three zero-point storages); :func:`compact_model`
  declares a parameter set and holds a compact value of it (:mod:`.valid`).
* :data:`MUTANTS` maps every OL reader rule a file can break to a generator of inputs that
  break that rule and no other; each :class:`Case` says which field it changed. Byte positions
  inside ``raw_data`` come from the dump of the valid input (its rows are named by the payload
  declaration), never from offsets written here. The catalogue and the helpers are in
  :mod:`.base`; the mutants by area: the portable wire form (:mod:`.wire`), the ORT layouts
  (:mod:`.ort`), parameter sets, compact values and operator attributes (:mod:`.parameters`).
* :data:`EXCLUDED` lists the OL reader rules without a mutant, each with the reason.
"""

from __future__ import annotations

from hurray_decl.onnx_light.mutants import ort, parameters, wire
from hurray_decl.onnx_light.mutants.base import EXCLUDED, MUTANTS, Mutant, mutant
from hurray_decl.onnx_light.mutants.valid import (
    ORT,
    PORTABLE,
    Case,
    RandomSource,
    Source,
    catalogue_model,
    compact_model,
    ort_value,
    valid_case,
    valid_value,
)

__all__ = [
    "EXCLUDED",
    "MUTANTS",
    "ORT",
    "PORTABLE",
    "Case",
    "Mutant",
    "RandomSource",
    "Source",
    "catalogue_model",
    "compact_model",
    "mutant",
    "ort_value",
    "valid_case",
    "valid_value",
]
AREAS = (wire, ort, parameters)
"""The modules that register mutants (each as it is imported), in the catalogue's order: the
portable wire form, the ORT layouts, then parameter sets and compact values."""


def _in_area_order() -> None:
    """:data:`MUTANTS` by area, each area in its source order (the corpus manifest lists them so)."""
    rank = {area.__name__: i for i, area in enumerate(AREAS)}
    ordered = sorted(MUTANTS.values(), key=lambda m: rank[m.build.__module__])
    MUTANTS.clear()
    MUTANTS.update((m.rule, m) for m in ordered)


_in_area_order()
