"""Mutants of the rank a layout row requires (its ``rank_ok`` and ``rank_code``): CSR and CSC
are rank 2, CSF rank 3 or more, block-paged rank 3."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import mutant
from hurray_decl.hurray.strategies.patching import assembled
from hurray_decl.hurray.strategies.tensor import tensor_descriptors
from hurray_decl.hurray.tensor.layouts import LAYOUTS

RANKS = range(1, 6)
"""The ranks a wrong-rank mutant is drawn from."""


def wrong_rank(row: Any) -> Callable[[], st.SearchStrategy[bytes]]:
    """A valid descriptor of ``row``'s layout given a rank the row refuses. The rank changes the
    shape and every rank-sized field, so the parts are built again from their declarations."""
    ranks = [r for r in RANKS if not row.rank_ok(r)]

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=row.name, quantized=False, shard=False))
        rank = draw(st.sampled_from(ranks))  # the dimensions the buffer sizes use are kept where the new rank has them
        shape = tuple(d.shape[k] if k < d.rank else draw(st.integers(0, 4)) for k in range(rank))
        layout = d.layout
        if "mode_order" in type(layout).model_fields:  # one entry per dimension
            layout = layout.model_copy(update={"mode_order": tuple(draw(st.permutations(range(rank))))})
        return assembled(d.replace(shape=shape, layout=layout))
    return build


for _row in LAYOUTS:
    if _row.rank_ok is not None:
        mutant(_row.rank_code)(wrong_rank(_row))
