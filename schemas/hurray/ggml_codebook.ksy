meta:
  id: ggml_codebook
  title: Private quantization scheme 0xF1 of hurray_decl, ggml codebook blocks (GGUF's IQ, TQ, NVFP4)
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of the project's private scheme 0xF1 after the 4-byte quantization header: 28
  bytes, so the whole fixed encoding is 4 + 7 * 4 = 32 bytes. A private tag: its meaning is
  agreed out of band (HQ-EXT-03), here by hurray_decl/hurray/schemes/ggml_codebook.py, and
  quantization.ksy does not dispatch to it. Along the last axis, super-blocks of super_block
  elements split into sub-blocks of sub_block; one f16 d per super-block, one i1 scale code per
  sub-block; the stored codes q are the codebook values themselves; x = ((d * sc) * 2^exponent)
  * q in float32. ggml_type is the GGML type id the codes come from.

  Parse from offset 4 of the quantization payload, passing the header's flags. The checks
  that need the tensor or the project's table of GGML types (the last axis, whole super-blocks
  of whole sub-blocks, super_block, sub_block, exponent and storage type those of ggml_type,
  parameter sizes) are not bytes-level rules.
doc-ref:
  - hurray_decl/hurray/schemes/ggml_codebook.py
params:
  - id: flags
    type: u2
    doc: The header's flags field (offset 2 of the payload); no bit is defined.
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
      expr: flags == 0
    doc: Every flags bit is reserved, and a set reserved bit is refused (HQ-HDR-13).
  - id: axis
    type: u4
    doc: Index of the quantized axis, offset 4; must be the last one (a tensor-level check).
  - id: ggml_type
    type: u4
    doc: The GGML type id the codes come from, offset 8 (GGUF's ggml_type; a tensor-level check).
  - id: super_block
    type: u4
    doc: Elements per super-block along axis, offset 12 (one f16 d each).
  - id: sub_block
    type: u4
    doc: Elements per sub-block, offset 16 (one i1 scale code each); divides super_block.
  - id: exponent
    type: s4
    doc: The power of two every value is multiplied by, offset 20.
  - id: d_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the f16 d array, offset 24. NONE32 (0xFFFFFFFF) is never a buffer
      index and is refused at decode as out of range (HQ-BUF-01).
  - id: scale_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the i1 sub-block scale codes, offset 28. NONE32 is refused as out
      of range (HQ-BUF-01).
