meta:
  id: per_channel_affine
  title: Hurray quantization scheme 0x02, per-channel affine
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of scheme 0x02 after the 4-byte quantization header: 16 bytes, so the whole
  fixed encoding is 4 + 4 + 4 + 4 + 1 + 3 = 20 bytes (HQ-PC-01). One f32 scale (and, unless
  SYMMETRIC, one i32 zero point) per index along `axis`, held in parameter buffers.

  Parse from offset 4 of the quantization payload, passing the header's flags. The checks
  that need the tensor (axis < rank, buffer placement and sizes) are not bytes-level rules.
doc-ref:
  - ../shared/spec/hurray/per-channel-affine.txt § Binary Encoding
  - ../shared/spec/hurray/DIGEST.md § 3.3
params:
  - id: flags
    type: u2
    doc: The header's flags field (offset 2 of the payload); bit 0 is SYMMETRIC.
seq:
  - id: fits_fixed_length
    size: 0
    -checks: length
    valid:
      expr: _io.size - _io.pos >= 16
    doc: |
      The payload holds the whole fixed encoding, 20 bytes, header included (HQ-HDR-04,
      HQ-PC-01). Checked before any scheme field is interpreted.
  - id: reserved_flags
    size: 0
    -checks: flags
    valid:
      expr: (flags & 0xfffe) == 0
    doc: Flags bits 1-15 are reserved; a set reserved bit is refused (HQ-HDR-13).
  - id: axis
    type: u4
    doc: Index of the quantized axis, offset 4; must be < rank (a tensor-level check).
  - id: scale_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the f32 scale array, offset 8. NONE32 (0xFFFFFFFF) is never a
      buffer index, since buffer_count <= 255, and is refused at decode as out of range
      (HQ-BUF-01, DIGEST HD-04).
  - id: zero_point_buffer_index
    type: u4
    doc: |
      Buffer-table index of the i32 zero-point array, offset 12; NONE32 (0xFFFFFFFF) exactly
      when SYMMETRIC is set (checked by symmetric_zero_point below).
  - id: scale_type_tag
    type: u1
    enum: scale_type
    valid:
      in-enum: true
    doc: Type of the scale values, offset 16; only 0x03 float32 in version 1 (HQ-PC-06).
  - id: reserved
    -orig-id: _reserved
    size: 3
    valid: '[0x00, 0x00, 0x00]'
    doc: Offsets 17-19, all 0x00; a non-zero byte is refused (HQ-PC-07).
  - id: symmetric_zero_point
    size: 0
    -checks: zero_point_buffer_index
    valid:
      expr: symmetric == (zero_point_buffer_index == 0xffffffff)
    doc: |
      SYMMETRIC set requires zero_point_buffer_index 0xFFFFFFFF (HQ-PC-04); SYMMETRIC clear
      refuses 0xFFFFFFFF (HQ-PC-05). A cross-field rule, checked after the fixed fields.
instances:
  symmetric:
    value: (flags & 0x0001) != 0
    doc: Flags bit 0, SYMMETRIC; all zero points are 0 and there is no zero-point buffer.
enums:
  scale_type:
    0x03:
      id: float32
      doc: IEEE binary32, 4 bytes per scale; the only scale type of version 1.
