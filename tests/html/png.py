"""A small PNG reader for the screenshot tests: 8-bit RGB or RGBA, not interlaced (what Chromium writes)."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type -> samples per pixel


class Image:
    def __init__(self, width: int, height: int, channels: int, pixels: bytes) -> None:
        self.width, self.height, self.channels, self.pixels = width, height, channels, pixels

    def rgb(self, x: int, y: int) -> tuple[int, int, int]:
        at = (y * self.width + x) * self.channels
        return tuple(self.pixels[at:at + 3])  # type: ignore[return-value]


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def decode(data: bytes) -> Image:
    if data[:8] != SIGNATURE:
        raise ValueError("not a PNG")
    position, idat, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack_from(">I4s", data, position)
        body = data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = CHANNELS[colour]
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + previous[i]) // 2) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                c = previous[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(a, previous[i], c)) & 0xFF
        elif kind != 0:
            raise ValueError(f"unknown PNG filter {kind} on line {y}")
        out[y * stride:(y + 1) * stride] = line
        previous = line
    return Image(width, height, bpp, bytes(out))
