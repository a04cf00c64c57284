"""``ksweep compare``'s text: two configs side by side (``profile/diff.py``'s rows), each
section with its rows' values and changes, the metrics grouped by Nsight Compute section."""

from __future__ import annotations

import math

from ..profile.diff import Comparison, Row


def render(c: Comparison, *, only_changed: bool = False) -> str:
    lines = [f"A: {c.a_label}", f"B: {c.b_label}"]
    if any(c.kernel):
        lines.append(f"kernels: A {c.kernel[0]}   B {c.kernel[1]}")
    for title, rows in (("result metrics (B against A)", c.results), ("parameters", c.params),
                        ("derived values", c.derived), ("ptxas resources", c.resources),
                        ("Nsight Compute metrics", c.metrics), ("SASS instruction mix (static counts)", c.sass)):
        if not rows:
            continue
        shown = [r for r in rows if r.differs] if only_changed or title in ("parameters", "derived values") else rows
        if not shown:
            lines += ["", f"{title}: the same"]
            continue
        lines.append("")
        lines.append(f"{title}:" if title != "Nsight Compute metrics" else title + " (B against A):")
        width = min(max(len(_name(r)) for r in shown), 70)
        section = None
        for r in shown:
            if title == "Nsight Compute metrics" and r.section != section:
                section = r.section
                lines.append(f"  [{section}]")
            if r.knob:  # a setting that changed: MODE 1 → 0
                lines.append(f"    {_name(r):<{width}}  {_fmt(r.a)} → {_fmt(r.b)}")
                continue
            unit = f" {r.unit}" if r.unit else ""
            lines.append(f"    {_name(r):<{width}}  {_fmt(r.a):>14}  {_fmt(r.b):>14}{unit}  {_change(r)}".rstrip())
    for n in c.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)


def _name(r: Row) -> str:
    return f"{r.name} (objective, {r.direction})" if r.direction else r.name


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:,.4g}" if abs(v) >= 1e4 else f"{v:.4g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _change(r: Row) -> str:
    """B against A, both ways a person reads it: '2.5× faster (-60.0%)' for a duration,
    '1.3× higher, better (+30.0%)' for an objective to maximise, '1.3× lower (-23.1%)'."""
    c = r.change
    if c is None:
        return "" if not r.differs else "differs"
    if c == 0:
        return "="
    if not math.isfinite(c):
        return "new" if c > 0 else "-inf"
    ratio = r.ratio
    if ratio is None:  # a sign change, or to 0
        return f"{c:+.1%}"
    factor = ratio if ratio >= 1 else 1 / ratio
    if r.time:
        word = "faster" if ratio < 1 else "slower"
    else:
        word = "lower" if ratio < 1 else "higher"
        if r.better is not None:
            word += ", better" if r.better else ", worse"
    return f"{_factor(factor)}× {word} ({c:+.1%})"


def _factor(f: float) -> str:
    return f"{f:.3g}" if f >= 1.01 else f"{f:.4g}"
