"""The ``@@RESULT key=value ...`` protocol (pure).

A program prints one or more result lines; values are numbers. A line may name its
shape with ``shape=NAME`` (the one non-numeric value allowed), so that one program
can report several shapes. For a run of one shape, the lines tagged with that shape
are used, else the untagged ones; later lines override earlier keys.

A value must be a finite number (``nan`` and ``inf`` parse as floats but rank as
nothing), and a time-like metric (``ms``, ``us``, ``time_ms``, ...) must not be
negative: ``parse_results`` names the first such problem.
"""

from __future__ import annotations

import math

from ..result import time_unit_ms

PREFIX = "@@RESULT"


class ProtocolError(ValueError):
    pass


def parse_line(line: str) -> dict[str, float | str]:
    out: dict[str, float | str] = {}
    for token in line[len(PREFIX):].split():
        if "=" not in token:
            raise ProtocolError(f"'{token}' is not key=value")
        key, _, raw = token.partition("=")
        if key == "shape":
            out["shape"] = raw
            continue
        try:
            value = float(raw)
        except ValueError:
            raise ProtocolError(f"{key}={raw!r} is not a number") from None
        out[key] = value
    return out


def parse_results(stdout: str, shape: str | None = None) -> tuple[dict[str, float] | None, str | None]:
    """(metrics, problem): metrics merged from the relevant lines, or None if there are none."""
    tagged: dict[str, float] = {}
    untagged: dict[str, float] = {}
    found = False
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith(PREFIX + " ") and line != PREFIX:
            continue
        try:
            values = parse_line(line)
        except ProtocolError as exc:
            return None, f"malformed {PREFIX} line: {exc}"
        found = True
        line_shape = values.pop("shape", None)
        if line_shape is None:
            untagged.update(values)
        elif line_shape == shape:
            tagged.update(values)
    if not found:
        return None, None
    metrics = tagged or untagged
    if not metrics:
        return None, f"no {PREFIX} line for shape {shape}"
    problems = [p for p in (value_problem(k, v) for k, v in metrics.items()) if p]
    if problems:
        return metrics, "; ".join(problems)
    return metrics, None


def is_time_metric(key: str) -> bool:
    """A metric that measures a duration: ms, us, ns, s, sec, seconds, time, *_ms, *_us,
    *_ns, *_s, time_* (whatever the case)."""
    return time_unit_ms(key) is not None


def value_problem(key: str, value: float) -> str | None:
    """Why a metric's value cannot be trusted, or None: not finite, or a negative time."""
    if not math.isfinite(value):
        return f"{key}={value:g} is not a finite number"
    if value < 0 and is_time_metric(key):
        return f"{key}={value:g}: a negative time"
    return None
