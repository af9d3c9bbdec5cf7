"""Parse speed: ``read_tensor_descriptor``, ``write_tensor_descriptor`` and ``decode_quantization``
over the bundled examples and, in a source checkout, the conformance descriptors
(``tests/conformance/hurray/descriptors/``), each as a ratio to the Kaitai-generated reader
(``generated/hurray``) on the same bytes, from one run.

Run as ``python -m hurray_decl.hurray.parse_bench [--repeat N]`` (the ``bench --parse`` hook calls
:func:`run`). The Kaitai readers are the repository's ``generated/hurray/``, shipped in the package
as ``hurray_decl.hurray._generated`` (see :func:`kaitai_readers`), with the ``kaitaistruct``
runtime a dependency: the benchmark runs from a plain install as from a checkout.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from hurray_decl.errors import ArgumentError, HurrayDeclError

KAITAI_PACKAGE = "generated.hurray"
"""The package the Kaitai readers import each other from (``from generated.hurray import nf4``)."""
SHIPPED = "hurray_decl.hurray._generated"
"""The Kaitai readers as the package ships them: links to ``generated/hurray/`` in a checkout,
their contents in a wheel (as ``hurray_decl.onnx_light._generated`` for the protobuf modules)."""


def kaitai_readers() -> tuple[Any, Any]:
    """The Kaitai TensorDescriptor and Quantization readers: from the checkout's ``generated/``
    when it is importable, else from the shipped copy, registered under the package name their
    imports use (nothing of that name is installed, so nothing else is shadowed)."""
    import importlib
    import sys
    import types

    try:
        tensor = importlib.import_module(f"{KAITAI_PACKAGE}.tensor_descriptor")
    except ImportError:
        shipped = importlib.import_module(SHIPPED)
        root = KAITAI_PACKAGE.split(".")[0]
        if root not in sys.modules:  # a package with no folder: only the alias below is found under it
            sys.modules[root] = types.ModuleType(root)
            sys.modules[root].__path__ = []
        sys.modules[KAITAI_PACKAGE] = shipped
        try:
            tensor = importlib.import_module(f"{KAITAI_PACKAGE}.tensor_descriptor")
        except ImportError as exc:  # the kaitaistruct runtime, a dependency, is missing
            raise ArgumentError("--parse", "the Kaitai readers cannot be imported", actual=str(exc),
                                expected="the kaitaistruct runtime (a dependency)") from exc
    quantization = importlib.import_module(f"{KAITAI_PACKAGE}.quantization")
    return tensor.TensorDescriptor, quantization.Quantization


def inputs() -> list[bytes]:
    """Every descriptor the reader accepts among the conformance vectors (in a source checkout)
    and the bundled examples."""
    from hurray_decl.hurray.examples import bundled, checkout_conformance_descriptors
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    found = []
    for path in checkout_conformance_descriptors() + sorted(bundled().glob("*.bin")):
        data = path.read_bytes()
        try:
            read_tensor_descriptor(data)
        except HurrayDeclError:
            continue
        found.append(data)
    return found


def _best(repeat: int, rounds: int, works: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Seconds per round of each work, the best of ``repeat`` batches of ``rounds``. The batches
    take turns (one of each work, then again), so a change of load on a shared machine
    disturbs every work alike rather than whichever ran at that moment."""
    best = dict.fromkeys(works, float("inf"))
    for _ in range(repeat):
        for name, work in works.items():
            start = time.perf_counter()
            for _ in range(rounds):
                work()
            best[name] = min(best[name], (time.perf_counter() - start) / rounds)
    return best


def run(repeat: int = 5, rounds: int = 20, out: TextIO | None = None) -> dict[str, float]:
    """Time the three entry points and their Kaitai baselines; returns the ratios."""
    KaitaiTensor, KaitaiQuantization = kaitai_readers()
    from hurray_decl.hurray.quantization import decode_quantization
    from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor
    from hurray_decl.hurray.tensor.reader import field_positions

    data = inputs()
    models = [read_tensor_descriptor(d) for d in data]
    payloads = []
    for d, m in zip(data, models):
        if m.quantization is not None:
            positions = field_positions(d)
            start, prefix = positions["descriptor -> quantization"], positions["descriptor -> quantization_length"]
            payloads.append(d[start:start + int.from_bytes(d[prefix:prefix + 4], "little")])
    timed = _best(repeat, rounds, {
        "kaitai read": lambda: [KaitaiTensor.from_bytes(d) for d in data],
        "read_tensor_descriptor": lambda: [read_tensor_descriptor(d) for d in data],
        "write_tensor_descriptor": lambda: [write_tensor_descriptor(m) for m in models],
        "kaitai payload": lambda: [KaitaiQuantization.from_bytes(p) for p in payloads],
        "decode_quantization": lambda: [decode_quantization(p) for p in payloads],
    })
    ratios = {
        "read_tensor_descriptor": timed["read_tensor_descriptor"] / timed["kaitai read"],
        "write_tensor_descriptor": timed["write_tensor_descriptor"] / timed["kaitai read"],
        "decode_quantization": timed["decode_quantization"] / timed["kaitai payload"] if payloads else float("nan"),
    }
    if out is not None:
        out.write(f"{len(data)} descriptors, {len(payloads)} quantization payloads; best of {repeat} x {rounds}\n")
        counts = {"kaitai payload": len(payloads), "decode_quantization": len(payloads)}
        for name, seconds in timed.items():
            each = seconds / max(counts.get(name, len(data)), 1)
            out.write(f"  {name:<26} {each * 1e6:9.1f} us each\n")
        for name, ratio in ratios.items():
            base = "Kaitai payload reader" if name == "decode_quantization" else "Kaitai reader"
            out.write(f"  {name:<26} {ratio:6.2f}x the {base}\n")
    return ratios


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hurray-decl bench --parse", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="batches per measurement, best kept (default: 5)")
    parser.add_argument("--rounds", type=int, default=20, help="passes over the inputs per batch (default: 20)")
    args = parser.parse_args(argv)
    try:
        run(repeat=args.repeat, rounds=args.rounds, out=sys.stdout)
    except ArgumentError as err:
        sys.stderr.write(f"hurray-decl: {err}\n")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
