meta:
  id: nf4
  title: Hurray quantization scheme 0x04, NF4 (NormalFloat4)
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of scheme 0x04 after the 4-byte quantization header: 12 bytes, so the whole
  fixed encoding is 4 + 4 + 4 + 4 = 16 bytes (HQ-NF4-01). uint4 codes index the fixed NF4
  table and are scaled by one f32 absmax per block of block_size elements along `axis`.

  Parse from offset 4 of the quantization payload, passing the header's flags. The checks
  that need the tensor (axis < rank, block_size <= shape[axis], placement and sizes) are not
  bytes-level rules.
doc-ref:
  - ../shared/spec/hurray/DIGEST.md § 3.5
params:
  - id: flags
    type: u2
    doc: The header's flags field (offset 2 of the payload); no bits are defined.
seq:
  - id: fits_fixed_length
    size: 0
    -checks: length
    valid:
      expr: _io.size - _io.pos >= 12
    doc: |
      The payload holds the whole fixed encoding, 16 bytes, header included (HQ-HDR-04,
      HQ-NF4-01). Checked before any scheme field is interpreted.
  - id: reserved_flags
    size: 0
    -checks: flags
    valid:
      expr: flags == 0
    doc: No flags are defined for 0x04; every set bit of flags is refused (HQ-HDR-13).
  - id: axis
    type: u4
    doc: Index of the quantized axis, offset 4; must be < rank (a tensor-level check).
  - id: block_size
    type: u4
    valid:
      expr: _ >= 8 and (_ & (_ - 1)) == 0
    doc: |
      Logical elements per block along axis, offset 8. A power of two (HQ-NF4-03), at least 8
      (HQ-NF4-04); 64 or 128 recommended. The upper bound shape[axis] is a tensor-level check.
  - id: scale_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the f32 absmax array, offset 12. NONE32 (0xFFFFFFFF) is never a
      buffer index and is refused at decode as out of range (HQ-BUF-01, DIGEST HD-04).
