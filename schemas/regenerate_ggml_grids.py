"""Write ``hurray_decl/convert/ggml_grids.py``: ggml's codebook grids as data.

The IQ types of GGUF take their element values from fixed grids (``iq2xxs_grid`` ... ``iq1s_grid``
in ggml's ``ggml-common.h``): each grid entry is a row of small integers. These are facts of the
format, read here once from the installed gguf-py (``gguf.quants``, which holds the same grids)
and written as hexadecimal rows of int8 values, one string per grid. The library reads only the
written module; ``tests/convert/test_ggml_codebook.py`` checks it against the installed gguf-py.

    python schemas/regenerate_ggml_grids.py          # rewrite the module
    python schemas/regenerate_ggml_grids.py --check  # exit 1 when it differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "hurray_decl" / "convert" / "ggml_grids.py"
GRIDS = ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S")
"""The GGML types whose grid is written (IQ1_M shares IQ1_S's)."""
WIDTH = 64
"""Hex characters per source line."""


def grid_values(name: str):
    """The grid of ``name`` as an int8 array (entries x values per entry), from gguf-py."""
    import gguf.quants
    import numpy as np

    quant = getattr(gguf.quants, name)
    quant.init_grid()
    grid = np.asarray(quant.grid, np.float32).reshape(quant.grid_shape)
    values = grid.astype(np.int8)
    if not np.array_equal(values.astype(np.float32), grid):
        raise SystemExit(f"{name}: grid values are not small integers")
    return values


def render() -> str:
    lines = ['"""ggml\'s codebook grids (``ggml-common.h``), as data: written by',
             "``schemas/regenerate_ggml_grids.py``; do not edit.",
             "",
             "``GRIDS[type]`` is (entries, values per entry, hex): the entries' int8 values in row order.",
             '"""',
             "",
             "GRIDS: dict[str, tuple[int, int, str]] = {"]
    for name in GRIDS:
        values = grid_values(name)
        text = values.tobytes().hex()
        lines.append(f'    "{name}": ({values.shape[0]}, {values.shape[1]}, (')
        lines += [f'        "{text[i:i + WIDTH]}"' for i in range(0, len(text), WIDTH)]
        lines.append("    )),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the written module differs")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        same = TARGET.exists() and TARGET.read_text() == text
        print(f"{TARGET.relative_to(ROOT)}: {'current' if same else 'stale'}")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
