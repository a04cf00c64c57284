"""Correctness checks of a run's metrics, and the judgement of a run that ended OK (pure)."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..spec.model import Check
from ..status import Status


def close(value: float, expected: float, rtol: float, atol: float) -> bool:
    return math.isfinite(value) and abs(value - expected) <= atol + rtol * abs(expected)


def unprinted(metrics: Mapping[str, float], check: Check) -> list[str]:
    """The [check] keys a run compared with the defaults config did not print (with
    ``reference = "defaults"``; none otherwise): a key nobody prints would check nothing."""
    return [k for k in check.keys if k not in metrics] if check.reference == "defaults" else []


def verify(metrics: Mapping[str, float], check: Check,
           reference: Mapping[str, float] | None = None) -> str | None:
    """None when the metrics pass the check, else the reason for CHECKSUM_MISMATCH."""
    for key, bound in check.max_keys.items():
        if key not in metrics:
            return f"{key} missing from the result (bound {key} <= {bound:g})"
        if not (metrics[key] <= bound):  # NaN fails too
            return f"{key} = {metrics[key]:g} > {bound:g}"
    targets = dict(check.expected)
    if check.reference == "defaults":
        # every key compared with the defaults config's must be printed, by that config too
        missing = unprinted(metrics, check)
        if missing:
            printed = ", ".join(metrics) or "no keys"
            return (f"{missing[0]} missing from the result: each config must print the [check] keys "
                    f"({', '.join(check.keys)}) to be compared with the defaults config; it printed {printed}")
        if reference is not None:
            for key in check.keys:
                if key in reference and key not in targets:
                    targets[key] = reference[key]
    for key, expected in targets.items():
        if key not in metrics:
            return f"{key} missing from the result (expected {expected:g})"
        if not close(metrics[key], expected, check.rtol, check.atol):
            return f"{key} = {metrics[key]:.10g}, expected {expected:.10g} (rtol {check.rtol:g}, atol {check.atol:g})"
    return None


UNVERIFIED = "unverified: the reference (defaults) config failed"  # the message of such an OK result


def unverified(status: Status, message: str) -> bool:
    """An OK result whose check against the reference could not run (the reference failed):
    a wrong result looks like a right one. Once the reference stands, the sweep judges it
    again from its stored metrics."""
    return status is Status.OK and message.startswith(UNVERIFIED)


def judge(metrics: Mapping[str, float], objective: str | Sequence[str], check: Check,
          reference: Mapping[str, float] | None, is_reference: bool,
          outputs_checked: bool = False, impossible: str | None = None) -> tuple[Status, str, bool]:
    """(status, message, verified) of a run that ended OK with ``metrics``.

    ``objective``: the objective's metric name (or each objective's, several), which must be
    among the metrics;
    ``reference``: the metrics of the reference (defaults) config, None when it failed or
    there is none; ``is_reference``: this run is the reference config (checked against
    ``check.expected`` and the bounds only); ``outputs_checked``: the run compared its outputs
    with the reference's itself and they matched (kernel mode, run/classify.classify_answer).

    Verified means the metrics passed a check against an expected value, a bound or the
    reference (the reference config itself passes against what it is checked against). Not
    verified: no check asked for, or a check against the reference when the reference failed
    (the message says so, as reports show it).

    ``impossible``: why the run's time is below what the hardware allows (physics.check),
    or None: such a run is ``IMPOSSIBLE`` (a wrong checksum is said first)."""
    missing = [name for name in ((objective,) if isinstance(objective, str) else objective) if name not in metrics]
    if missing:
        keys = ", ".join(metrics) or "no keys"
        return Status.NO_RESULT, f"objective '{missing[0]}' missing from @@RESULT ({keys})", False
    if not check.active:
        if impossible:
            return Status.IMPOSSIBLE, impossible, False
        return Status.OK, "", outputs_checked
    problem = verify(metrics, check, None if is_reference else reference)
    if problem:
        return Status.CHECKSUM_MISMATCH, problem, False
    if impossible:
        return Status.IMPOSSIBLE, impossible, False
    if check.reference == "defaults" and reference is None and not is_reference:
        return Status.OK, UNVERIFIED, False
    return Status.OK, "", True


def constant_checksum(by_shape: Mapping[str, Mapping[str, float]]) -> str | None:
    """Why the checksum checks nothing, when the default config printed the same one on every
    shape (``by_shape``: shape -> the metrics of the default config's OK run there; shapes
    whose inputs differ): a checksum that does not change with the inputs; None otherwise
    (fewer than two such shapes, no checksum, or one that changed)."""
    seen = {shape: m["checksum"] for shape, m in by_shape.items() if "checksum" in m}
    if len(seen) < 2 or len({repr(float(v)) for v in seen.values()}) > 1:
        return None
    value = next(iter(seen.values()))
    return (f"the default config printed checksum={value:g} on every shape ({', '.join(seen)}), whose inputs "
            "differ: a checksum that does not change with the inputs checks nothing; compute it from the outputs")
