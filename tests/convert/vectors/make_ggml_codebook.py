"""Write ``ggml_codebook.json``: vectors of the private scheme ggml_codebook (0xF1).

For every GGML type the scheme holds, one GGUF tensor of two blocks (built as
``tests/convert/test_ggml_codebook.py`` builds llama.cpp-shaped blocks, seeded), the values
gguf-py's ``gguf.quants.dequantize`` gives them (float32 bit patterns), and the encoded tensor
descriptor and buffers of its ``.hrry`` form. ``test_ggml_codebook.py::test_the_vectors`` checks
the package against the file without gguf-py.

    PYTHONPATH=. python tests/convert/vectors/make_ggml_codebook.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> int:
    import gguf

    sys.path.insert(0, str(HERE.parents[2]))
    from hurray_decl.convert.gguf_codebook import FORMATS
    from hurray_decl.convert.hurray import from_gguf_codebook
    from hurray_decl.hurray.tensor import write_tensor_descriptor
    from tests.convert.test_ggml_codebook import codebook_blocks

    vectors = {}
    for name, form in FORMATS.items():
        rng = np.random.default_rng(form.size)
        raw = codebook_blocks(rng, name, 2)
        shape = (1, 2 * form.elements)
        values = gguf.quants.dequantize(raw.reshape(1, -1), gguf.GGMLQuantizationType[name]).reshape(-1)
        descriptor, buffers = from_gguf_codebook(raw, name, shape)
        vectors[name] = {"shape": list(shape), "blocks": raw.tobytes().hex(),
                         "values": np.ascontiguousarray(values, np.float32).view("<u4").tobytes().hex(),
                         "descriptor": write_tensor_descriptor(descriptor).hex(),
                         "buffers": [bytes(b).hex() for b in buffers]}
    (HERE / "ggml_codebook.json").write_text(json.dumps(vectors, indent=1) + "\n")
    print(f"wrote {len(vectors)} vectors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
