"""The reader rules without a mutant generator, each with the reason, and the data rules without
a data mutant: together with :data:`~hurray_decl.hurray.strategies.MUTANTS` and
:data:`~hurray_decl.hurray.strategies.DATA_MUTANTS` they cover every reader rule of the Hurray areas
(a test checks it)."""

from __future__ import annotations

NOT_REFUSABLE: dict[str, str] = {
    **{rule: "acceptance rule: it says what a reader accepts; the valid strategies exercise it"
       for rule in ("HQ-HDR-05", "HQ-PB-06", "HQ-PB-16", "HQ-PB-20", "HQ-NF4-06", "HQ-EXT-01", "HT-HDR-10",
                    "HT-HDR-11", "HT-HDR-14", "HT-HDR-18", "HT-HDR-22", "HT-LAY-04", "HT-LAY-45", "HT-SEC-12",
                    "HE-09")},
    **{rule: "wire layout (byte order, field order and widths): bytes that do not follow it are read as "
             "other values or are cut short, and are refused under the rule of those values or under "
             "HQ-HDR-04 / HT-HDR-08 / HT-HDR-09"
       for rule in ("HQ-HDR-01", "HQ-HDR-02", "HQ-PT-01", "HQ-PC-01", "HQ-PB-01", "HQ-NF4-01", "HQ-MX-01",
                    "HT-HDR-01", "HT-HDR-02", "HT-HDR-03", "HT-LAY-01", "HT-LAY-02", "HT-LAY-03", "HT-LAY-07",
                    "HT-LAY-16", "HT-LAY-26", "HT-LAY-34", "HT-LAY-42", "HT-LAY-68", "HT-LAY-77", "HT-LAY-84",
                    "HT-BUFT-01", "HT-SEC-01", "HT-SEC-03",
                    "HT-SEC-35")},
    "HQ-HDR-06": "dispatch on byte 0: a reader reads the scheme the tag names, so the tag and the fields "
                 "never disagree in bytes (HQ-HDR-06 is raised only by parsing one scheme's bytes as another's)",
    "HQ-HDR-14": "an implementation requirement (every Tier 1 scheme is implemented), not a property of input",
    "HT-SEC-02": "hurray_decl implements quantization, so no descriptor is refused for carrying it",
    "HT-BUFT-16": "project decision HD-23: private device tags are accepted (with STANDARD or an agreed "
                  "private memory class); the refusals this rule implies are HT-BUFT-21 and HT-BUFT-22",
}
"""Reader rules of the Hurray areas with no mutant generator, each with the reason."""

DATA_NOT_GENERATED: dict[str, str] = {
    **{rule: "statement about what is never read or decided (no input breaks it)"
       for rule in ("HQ-EXT-02", "HT-HDR-17", "HT-SEC-13", "HE-01", "HE-04", "HE-08")},
    **{rule: "not generated yet: the CSF tree invariants (validate_buffers covers them in "
             "tests/hurray/test_tensor_data.py); buffers_for draws CSF contents that satisfy them"
       for rule in ("HT-LAY-46", "HT-LAY-47", "HT-LAY-48", "HT-LAY-49", "HT-LAY-50", "HT-LAY-51")},
}
"""Data rules (role reader or both, needs data) without a generator in :data:`DATA_MUTANTS`."""
