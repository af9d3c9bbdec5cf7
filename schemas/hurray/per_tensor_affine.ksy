meta:
  id: per_tensor_affine
  title: Hurray quantization scheme 0x01, per-tensor affine
  license: MIT
  ks-version: '0.11'
  endian: le
doc: |
  The fields of scheme 0x01 after the 4-byte quantization header: 12 bytes, so the whole
  fixed encoding is 4 + 4 + 4 + 4 = 16 bytes (HQ-PT-01). One scale and one zero point for the
  whole tensor, stored inline; the scheme references no buffer. A symmetric descriptor stores
  zero_point 0 and no flag records it (HQ-PT-06).

  Parse from offset 4 of the quantization payload, passing the header's flags. The zero-point
  range check (HQ-PT-04) needs the storage type and is not a bytes-level rule.
doc-ref:
  - ../shared/spec/hurray/DIGEST.md § 3.2
params:
  - id: flags
    type: u2
    doc: The header's flags field (offset 2 of the payload).
seq:
  - id: fits_fixed_length
    size: 0
    -checks: length
    valid:
      expr: _io.size - _io.pos >= 12
    doc: |
      The payload holds the whole fixed encoding, 16 bytes, header included (HQ-HDR-04,
      HQ-PT-01). Checked before any scheme field is interpreted.
  - id: reserved_flags
    size: 0
    -checks: flags
    valid:
      expr: flags == 0
    doc: No flags are defined for 0x01; every set bit of flags is refused (HQ-HDR-13).
  - id: scale
    type: f4
    doc: f32 scale, offset 4; checked after the reserved bytes (scale_finite_nonzero).
  - id: zero_point
    type: s4
    doc: i32 zero point, offset 8; 0 for symmetric quantization (HQ-PT-06).
  - id: reserved
    -orig-id: _reserved
    size: 4
    valid: '[0x00, 0x00, 0x00, 0x00]'
    doc: Offsets 12-15, all 0x00; a non-zero byte is refused (HQ-PT-05), before the scale.
  - id: scale_finite_nonzero
    size: 0
    -checks: scale
    valid:
      expr: scale == scale and scale != 0 and scale >= -3.4028234663852886e38 and scale <= 3.4028234663852886e38
    doc: |
      The scale, after the reserved bytes (DIGEST Appendix A): finite and non-zero. +0 and -0
      are refused (HQ-PT-02), NaN and +/-infinity are refused (HQ-PT-03). Negative and
      subnormal values are allowed.
