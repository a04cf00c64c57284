"""Correctness checks of a run's metrics (pure)."""

from __future__ import annotations

import math
from typing import Mapping

from .spec.model import Check


def close(value: float, expected: float, rtol: float, atol: float) -> bool:
    return math.isfinite(value) and abs(value - expected) <= atol + rtol * abs(expected)


def verify(metrics: Mapping[str, float], check: Check,
           reference: Mapping[str, float] | None = None) -> str | None:
    """None when the metrics pass the check, else the reason for CHECKSUM_MISMATCH."""
    for key, bound in check.max_keys.items():
        if key not in metrics:
            return f"{key} missing from the result (bound {key} <= {bound:g})"
        if not (metrics[key] <= bound):  # NaN fails too
            return f"{key} = {metrics[key]:g} > {bound:g}"
    targets = dict(check.expected)
    if check.reference == "defaults" and reference is not None:
        for key in check.keys:
            if key in reference and key not in targets:
                targets[key] = reference[key]
    for key, expected in targets.items():
        if key not in metrics:
            return f"{key} missing from the result (expected {expected:g})"
        if not close(metrics[key], expected, check.rtol, check.atol):
            return f"{key} = {metrics[key]:.10g}, expected {expected:.10g} (rtol {check.rtol:g}, atol {check.atol:g})"
    return None
