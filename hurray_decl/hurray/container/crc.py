"""The index checksum: CRC-32C (Castagnoli), FILE-FORMAT.md § 8 (HF-DATA-18).

Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF; the check value of
b"123456789" is 0xE3069283. Computed by the ``crc32c`` package (hardware instruction where
the CPU has one, its own table otherwise).
"""

from __future__ import annotations

from typing import Any

import crc32c as _crc32c

CHECK_VALUE = 0xE3069283
"""CRC-32C of b"123456789"."""


def crc32c(data: Any) -> int:
    """The CRC-32C of a bytes-like object."""
    return _crc32c.crc32c(data)
