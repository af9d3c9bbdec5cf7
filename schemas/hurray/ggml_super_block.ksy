meta:
  id: ggml_super_block
  title: Private quantization scheme 0xF0 of hurray_decl, ggml super-block (GGUF's K-quants)
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of the project's private scheme 0xF0 after the 4-byte quantization header: 28
  bytes, so the whole fixed encoding is 4 + 7 * 4 = 32 bytes. A private tag: its meaning is
  agreed out of band (HQ-EXT-03), here by hurray_decl/hurray/schemes/ggml_super_block.py, and
  quantization.ksy does not dispatch to it. Along the last axis, super-blocks of super_block
  elements split into sub-blocks of sub_block; one f16 d (and dmin) per super-block, one i1
  scale code (and u1 minimum code) per sub-block; x = (d * sc) * q - dmin * mn in float32, or
  + dmin * mn with flags bit 0 (Q4_1, Q5_1).

  Parse from offset 4 of the quantization payload, passing the header's flags. The checks
  that need the tensor (the last axis, whole super-blocks of whole sub-blocks, both minimum
  buffers or neither, parameter sizes) are not bytes-level rules.
doc-ref:
  - hurray_decl/hurray/schemes/ggml_super_block.py
params:
  - id: flags
    type: u2
    doc: The header's flags field (offset 2 of the payload); bit 0 is ADDED_MINIMUM.
seq:
  - id: fits_fixed_length
    size: 0
    -checks: length
    valid:
      expr: _io.size - _io.pos >= 28
    doc: |
      The payload holds the whole fixed encoding, 32 bytes, header included (HQ-HDR-04).
      Checked before any scheme field is interpreted.
  - id: reserved_flags
    size: 0
    -checks: flags
    valid:
      expr: (flags & 0xfffe) == 0
    doc: |
      Bit 0 is ADDED_MINIMUM (the minimum is added, as Q4_1 and Q5_1 add m); bits 1-15 are
      reserved, and a set reserved bit is refused (HQ-HDR-13).
  - id: axis
    type: u4
    doc: Index of the quantized axis, offset 4; must be the last one (a tensor-level check).
  - id: super_block
    type: u4
    doc: Elements per super-block along axis, offset 8 (256 for the K-quants).
  - id: sub_block
    type: u4
    doc: Elements per sub-block, offset 12; divides super_block (a tensor-level check).
  - id: d_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the f16 d array, offset 16. NONE32 (0xFFFFFFFF) is never a buffer
      index and is refused at decode as out of range (HQ-BUF-01).
  - id: scale_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the i1 sub-block scale codes, offset 20. NONE32 is refused as out
      of range (HQ-BUF-01).
  - id: dmin_buffer_index
    type: u4
    doc: Buffer-table index of the f16 dmin array, offset 24; 0xFFFFFFFF when there are no minimums.
  - id: min_buffer_index
    type: u4
    doc: Buffer-table index of the u1 sub-block minimum codes, offset 28; 0xFFFFFFFF when none.
