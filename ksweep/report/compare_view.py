"""``ksweep compare``'s text: two configs side by side (``profile/diff.py``'s rows), each
section with its rows' values and changes, the metrics grouped by Nsight Compute section."""

from __future__ import annotations

import math

from ..profile.diff import Comparison, Row


def render(c: Comparison, *, only_changed: bool = False) -> str:
    lines = [f"A: {c.a_label}", f"B: {c.b_label}"]
    if any(c.kernel):
        lines.append(f"kernels: A {c.kernel[0]}   B {c.kernel[1]}")
    for title, rows in (("parameters", c.params), ("derived values", c.derived), ("ptxas resources", c.resources),
                        ("Nsight Compute metrics", c.metrics), ("SASS instruction mix (static counts)", c.sass)):
        if not rows:
            continue
        shown = [r for r in rows if r.differs] if only_changed or title in ("parameters", "derived values") else rows
        if not shown:
            lines += ["", f"{title}: the same"]
            continue
        lines.append("")
        lines.append(f"{title}:" if title != "Nsight Compute metrics" else title + " (B against A):")
        width = min(max(len(r.name) for r in shown), 70)
        section = None
        for r in shown:
            if title == "Nsight Compute metrics" and r.section != section:
                section = r.section
                lines.append(f"  [{section}]")
            lines.append(f"    {r.name:<{width}}  {_fmt(r.a):>14}  {_fmt(r.b):>14}  {_change(r):>9}"
                         + (f"  {r.unit}" if r.unit else ""))
    for n in c.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)


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
    c = r.change
    if c is None:
        return "" if not r.differs else "differs"
    if c == 0:
        return "="
    if not math.isfinite(c):
        return "new" if c > 0 else "-inf"
    return f"{c:+.1%}"
