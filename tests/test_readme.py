"""The README's generated table and examples stay true."""

from pathlib import Path

import hurray_decl as hd
from hurray_decl.engine import scheme_table

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_scheme_table_is_current():
    table = README.split("<!-- schemes -->\n", 1)[1].split("\n<!-- /schemes -->", 1)[0]
    assert table == scheme_table(), "README scheme table is stale: paste `hurray-decl schemes`"


def test_readme_error_example():
    try:
        hd.decode_quantization(bytes.fromhex("03010000000000000600000001000000ffffffff03000000"))
    except hd.HurrayDeclError as err:
        assert (err.code, err.offset, err.path) == ("HQ-PB-03", 8, "descriptor -> block_size")
    else:
        raise AssertionError("the README's invalid example decoded")
