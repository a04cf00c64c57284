"""The architecture of common GPU models, by the name the driver reports: what a size
selector falls back on for a GPU model no config was tuned on (``ksweep select``, the
exported header's ``<sweep>_select``).

An architecture is the compute capability times ten (``NVIDIA H100 80GB HBM3`` -> 90,
``sm_90``); first matching row wins; None for a GPU not in the table (another vendor's).
"""

from __future__ import annotations

import re

# (pattern on the driver's GPU name, compute capability x 10). Order matters: the first match wins.
_TABLE: tuple[tuple[re.Pattern, int], ...] = tuple((re.compile(p, re.I), cc) for p, cc in (
    (r"RTX 50\d0|RTX PRO \d000 Blackwell", 120),
    (r"\bG?B[12]00\b", 100),
    (r"\bG?H[12]00\b|\bH800\b|\bH20\b", 90),
    (r"RTX 40\d0|\bL40S?\b|\bL4\b|RTX \d000 Ada", 89),
    (r"\bA100\b|\bA800\b|\bA30\b", 80),
    (r"RTX 30\d0|RTX A\d000|\bA10G?\b|\bA40\b|\bA16\b|\bA2\b", 86),
    (r"RTX 20\d0|\bT4\b|Quadro RTX|TITAN RTX", 75),
    (r"\bV100\b|TITAN V\b", 70),
    (r"\bP100\b", 60),
))


def first_match(table, gpu_name: str | None):
    """The value of the first (pattern, value) row of ``table`` whose pattern the driver's
    name ``gpu_name`` matches; None for no name or no match."""
    if not gpu_name:
        return None
    return next((value for pattern, value in table if pattern.search(gpu_name)), None)


def compute_capability(gpu_name: str | None) -> int | None:
    """The compute capability x 10 of the GPU the driver calls ``gpu_name`` (90 for an
    H100); None for a GPU not in the table."""
    return first_match(_TABLE, gpu_name)


def parse_arch(text: str) -> int | None:
    """``sm_90``, ``sm_90a``, ``90`` or ``9.0`` as 90; None when it is none of these."""
    text = text.strip().lower()
    m = re.fullmatch(r"(?:sm_?|compute_)?(\d{2,3})a?", text)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"(\d{1,2})\.(\d)", text)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None
