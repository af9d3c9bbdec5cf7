meta:
  id: per_block_affine
  title: Hurray quantization scheme 0x03, per-block affine
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of scheme 0x03 after the 4-byte quantization header: 20 bytes, so the whole
  fixed encoding is 4 + 4 + 4 + 4 + 4 + 1 + 3 = 24 bytes (HQ-PB-01). One scale (and, unless
  SYMMETRIC, one i32 zero point) per block of block_size consecutive elements along `axis`.

  Parse from offset 4 of the quantization payload, passing the header's flags. The checks
  that need the tensor (axis < rank, block_size <= shape[axis], placement and sizes) are not
  bytes-level rules.
doc-ref:
  - ../shared/spec/hurray/per-block-affine.txt
  - ../shared/spec/hurray/DIGEST.md § 3.4
params:
  - id: flags
    type: u2
    doc: The header's flags field (offset 2 of the payload); bit 0 is SYMMETRIC.
seq:
  - id: fits_fixed_length
    size: 0
    -checks: length
    valid:
      expr: _io.size - _io.pos >= 20
    doc: |
      The payload holds the whole fixed encoding, 24 bytes, header included (HQ-HDR-04,
      HQ-PB-01). Checked before any scheme field is interpreted.
  - id: reserved_flags
    size: 0
    -checks: flags
    valid:
      expr: (flags & 0xfffe) == 0
    doc: Flags bits 1-15 are reserved; a set reserved bit is refused (HQ-HDR-13).
  - id: axis
    type: u4
    doc: Index of the quantized axis, offset 4; must be < rank (a tensor-level check).
  - id: block_size
    type: u4
    valid:
      expr: _ >= 2 and (_ & (_ - 1)) == 0
    doc: |
      Logical elements per block along axis, offset 8. A power of two (HQ-PB-03), at least 2
      (HQ-PB-04); 2^31 is the largest. The upper bound shape[axis] is a tensor-level check.
  - id: scale_buffer_index
    type: u4
    doc: Buffer-table index of the scale array, offset 12 (checked in scale_index_not_none).
  - id: zero_point_buffer_index
    type: u4
    doc: |
      Buffer-table index of the i32 zero-point array, offset 16; NONE32 (0xFFFFFFFF) exactly
      when SYMMETRIC is set (checked by symmetric_zero_point below).
  - id: scale_type_tag
    type: u1
    enum: scale_type
    valid:
      in-enum: true
    doc: Type of the scale values, offset 20; one of 0x01, 0x02, 0x03 (HQ-PB-08).
  - id: reserved
    -orig-id: _reserved
    size: 3
    valid: '[0x00, 0x00, 0x00]'
    doc: Offsets 21-23, all 0x00; a non-zero byte is refused (HQ-PB-09).
  - id: scale_index_not_none
    size: 0
    -checks: scale_buffer_index
    valid:
      expr: scale_buffer_index != 0xffffffff
    doc: |
      After the reserved bytes (DIGEST Appendix A): NONE32 (0xFFFFFFFF) is never a buffer
      index and is refused at decode as out of range (HQ-BUF-01, DIGEST HD-04).
  - id: symmetric_zero_point
    size: 0
    -checks: zero_point_buffer_index
    valid:
      expr: symmetric == (zero_point_buffer_index == 0xffffffff)
    doc: |
      SYMMETRIC set requires zero_point_buffer_index 0xFFFFFFFF (HQ-PB-10); SYMMETRIC clear
      refuses 0xFFFFFFFF (HQ-PB-11). A cross-field rule, checked after the fixed fields.
instances:
  symmetric:
    value: (flags & 0x0001) != 0
    doc: Flags bit 0, SYMMETRIC; all zero points are 0 and there is no zero-point buffer.
enums:
  scale_type:
    0x01:
      id: float16
      doc: IEEE binary16, 2 bytes per scale; widened exactly to f32.
    0x02:
      id: bfloat16
      doc: bfloat16 (the top half of an f32), 2 bytes per scale; widened exactly to f32.
    0x03:
      id: float32
      doc: IEEE binary32, 4 bytes per scale.
