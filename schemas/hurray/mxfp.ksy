meta:
  id: mxfp
  title: Hurray quantization scheme 0x05, MXFP (OCP microscaling)
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of scheme 0x05 after the 4-byte quantization header: 12 bytes, so the whole
  fixed encoding is 4 + 4 + 4 + 4 = 16 bytes (HQ-MX-01). One float8_e8m0 shared exponent per
  block of block_size elements along `axis`; shape[axis] must be a positive multiple of
  block_size.

  Parse from offset 4 of the quantization payload, passing the header's flags. The checks
  that need the tensor (axis < rank, shape[axis] a positive multiple of block_size,
  placement and sizes) are not bytes-level rules.
doc-ref:
  - ../shared/spec/hurray/DIGEST.md § 3.6
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
      HQ-MX-01). Checked before any scheme field is interpreted.
  - id: reserved_flags
    size: 0
    -checks: flags
    valid:
      expr: flags == 0
    doc: No flags are defined for 0x05; every set bit of flags is refused (HQ-HDR-13).
  - id: axis
    type: u4
    doc: Index of the quantized axis, offset 4; must be < rank (a tensor-level check).
  - id: block_size
    type: u4
    valid:
      expr: _ >= 16 and _ <= 2048 and (_ & (_ - 1)) == 0
    doc: |
      Logical elements per block along axis, offset 8. A power of two (HQ-MX-03) in
      [16, 2048]: below 16 is refused (HQ-MX-04), above 2048 is refused (HQ-MX-05).
  - id: scale_buffer_index
    type: u4
    valid:
      expr: _ != 0xffffffff
    doc: |
      Buffer-table index of the float8_e8m0 scale array, offset 12. NONE32 (0xFFFFFFFF) is
      never a buffer index and is refused at decode as out of range (HQ-BUF-01, DIGEST HD-04).
