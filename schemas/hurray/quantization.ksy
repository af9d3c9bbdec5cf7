meta:
  id: quantization
  title: Hurray quantization descriptor (4-byte header and scheme dispatch)
  license: MIT
  ks-version: '0.11'
  endian: le
  imports:
    - per_tensor_affine
    - per_channel_affine
    - per_block_affine
    - nf4
    - mxfp
doc: |
  The payload of a Hurray Quantization Section: the `quantization_length` bytes that follow
  the u32 length prefix. It opens with a 4-byte header (scheme_tag, scheme_version, flags);
  scheme_tag alone selects the layout of the scheme fields that follow at offset 4. Bytes
  after the scheme's fixed fields are writer padding, kept as raw bytes and never
  interpreted. Parse exactly the `quantization_length` bytes: the reader never reads past
  them.

  Every multi-byte field is little-endian (HQ-HDR-01); the header layout is HQ-HDR-02.
  This schema is strict: only the five assigned schemes decode. Permissive mode and
  registered private schemes (0xF0-0xFE) are handled by hurray_decl, not here.
doc-ref:
  - ../shared/spec/hurray/quantization.txt § Descriptor Header, § Scheme Tag Space
  - ../shared/spec/hurray/DIGEST.md § 2
seq:
  - id: scheme_tag
    type: u1
    enum: scheme
    valid:
      in-enum: true
    doc: |
      Selects the scheme (HQ-HDR-06). Only the five assigned tags are accepted: 0x00 and
      0xFF are invalid (HQ-HDR-07); 0x06-0x5F are unassigned (HQ-HDR-08); 0x60-0x7F and
      0x80-0xEF are reserved (HQ-HDR-09, HQ-HDR-10); 0xF0-0xFE are private and need a
      registered codec (HQ-EXT-03). A strict reader refuses all of them (HQ-EXT-01).
  - id: fits_header
    size: 0
    -checks: length
    valid:
      expr: _io.size >= 4
    doc: |
      The payload holds the whole 4-byte header (HQ-HDR-02, HQ-HDR-04). Checked once the
      tag is known to be assigned and before scheme_version is interpreted.
  - id: scheme_version
    type: u1
    valid:
      min: 1
      max: 1
    doc: |
      0x01 for every scheme defined so far. Below 1 (0x00) is refused (HQ-HDR-12); above 1
      is refused (HQ-HDR-11).
  - id: flags
    type: u2
    doc: |
      Scheme-defined flag bits. Which bits are reserved depends on the scheme, so the
      reserved-bit check (HQ-HDR-13) is made by the scheme's type, after it has checked that
      the payload holds the scheme's fixed fields.
  - id: scheme_fields
    type:
      switch-on: scheme_tag
      cases:
        'scheme::per_tensor_affine': per_tensor_affine(flags)
        'scheme::per_channel_affine': per_channel_affine(flags)
        'scheme::per_block_affine': per_block_affine(flags)
        'scheme::nf4': nf4(flags)
        'scheme::mxfp': mxfp(flags)
    doc: The scheme's fields, from offset 4 (HQ-HDR-02, HQ-HDR-06).
  - id: padding
    size-eos: true
    doc: |
      Writer padding after the scheme's fixed fields, up to `quantization_length`: any
      content is allowed, kept and never interpreted (HQ-HDR-05).
enums:
  scheme:
    0x01:
      id: per_tensor_affine
      doc: Per-tensor affine (Tier 1), 16 bytes; scale and zero point inline.
    0x02:
      id: per_channel_affine
      doc: Per-channel affine (Tier 1), 20 bytes; f32 scales per index along one axis.
    0x03:
      id: per_block_affine
      doc: Per-block affine (Tier 1), 24 bytes; one scale per block of block_size elements.
    0x04:
      id: nf4
      doc: NF4 NormalFloat4 (Tier 2), 16 bytes; uint4 codes into a fixed table, f32 absmax.
    0x05:
      id: mxfp
      doc: MXFP, OCP microscaling (Tier 2), 16 bytes; one float8_e8m0 shared exponent per block.
