"""``ksweep insights``' text: per shape × variant, the failures as rules, the knobs'
importance, the winner's risk; and ``--constraints``' ``[[constraints]]`` blocks."""

from __future__ import annotations

import json
from typing import Any, Sequence

BAR = 24  # characters of a full share's bar


def render(done) -> str:
    """The text of an ``app.insights.Insights``."""
    lines = [f"{done.source}: {len(done.found)} shape × variant{'s' * (len(done.found) != 1)} "
             f"({'a ksweep database' if done.kind == 'database' else 'a recorded dataset'})"]
    for i in done.found:
        lines += [""] + target_lines(i, done.source)
    heads = done.headlines()
    if heads:
        lines += [""] + heads
    return "\n".join(lines)


def target_lines(i, source: str) -> list[str]:
    """One shape × variant's findings (``ksweep insights`` prints them, the HTML page shows them)."""
    t = i.table
    failures = t.failures()
    counts = ", ".join([f"{int(t.ok.sum()):,} OK"] + [f"{n:,} {s}" for s, n in failures.items()])
    lines = [f"== {t.label}: {len(t):,} configs evaluated ({counts}); objective {t.metric} ({t.direction})"]
    lines += _rules(i, source)
    lines += _importance(i)
    lines += _risk(i)
    return lines


def _rules(i, source: str) -> list[str]:
    if not i.rules:
        return ["failures: none"]
    lines = ["failures as rules (each term: failed with the status / evaluated configs it covers / OK among them):"]
    for r in i.rules:
        if not r.terms:
            lines.append(f"  {r.status} ({r.failed:,} configs): no term covers two of them without covering "
                         f"more OK configs than it may")
            continue
        exact = "exact" if r.exact else f"{r.ok} OK config{'s' * (r.ok != 1)} pruned"
        lines.append(f"  {r.status} ({r.failed:,} configs): {r.explained:,} explained by {len(r.terms)} "
                     f"term{'s' * (len(r.terms) != 1)}, {exact}")
        for x in r.terms:
            lines.append(f"    {x.failed:>6,} / {x.matched:<6,} OK {x.ok:<4} {x.text}")
    lines.append(f"  as [[constraints]] to append to the spec: ksweep insights {source} --constraints")
    return lines


def _importance(i) -> list[str]:
    imp = i.importance
    t = i.table
    if imp is None:
        return ["knob importance: too few OK configs (or an objective that does not vary)"]
    scale = f"log {t.metric}" if imp.log else t.metric
    lines = [f"knob importance (share of the variance of {scale} over {imp.configs:,} OK configs; an additive "
             f"model explains {imp.explained:.0%}):"]
    width = max(len(k) for k in imp.shares) if imp.shares else 0
    for k, s in imp.shares.items():
        lines.append(f"  {k:<{width}}  {s:6.3f}  {'█' * int(round(s * BAR))}")
    if imp.pairs:
        lines.append("  strongest pairs (beyond their own effects): "
                     + ", ".join(f"{a} × {b} {s:.3f}" for a, b, s in imp.pairs))
    if imp.fixed:
        lines.append(f"  one value over the OK configs: {', '.join(imp.fixed)}")
    if imp.dead:
        lines.append(f"  no measurable effect: {', '.join(imp.dead)}")
        if imp.trim:
            fixed = ", ".join(f"{k} = {_value(v)}" for k, v in imp.trim.items())
            whose = "its value" if len(imp.trim) == 1 else "their values"
            lines.append(f"  trimmed spec: fix {fixed} ({whose} in BEST): {imp.trim_factor:,}× fewer configs")
    return lines


def _risk(i) -> list[str]:
    r, t = i.risk, i.table
    if r.best is None:
        return ["the winner's risk: no config has a value"]
    config = " ".join(f"{k}={_value(v)}" for k, v in t.config(r.best).items())
    behind = f"median of {r.runs} runs" if r.source == "confirmation runs" and r.runs > 1 else (
        f"mean of {r.runs} recorded repeats" if r.runs > 1 else "a single measurement")
    lines = [f"the winner's risk: BEST {t.metric}={r.value:.6g} ({behind})  {config}"]
    if r.noise is None:
        lines.append("  noise: not measured (no config was measured twice: ksweep run --confirm measures the "
                     "leaders again)")
        return lines
    lines.append(f"  noise: {r.noise:.2%} of a value per measurement ({r.source or 'other shapes’ confirmation runs'})")
    lines.append(f"  within noise of BEST: {r.within} other config{'s' * (r.within != 1)}")
    for row in r.within_rows[:3]:
        v = t.contest.values.get(row)
        lines.append(f"    {t.metric}={v:.6g}  " + " ".join(f"{k}={_value(x)}" for k, x in t.config(row).items()))
    lines.append(f"  measured again, another config would win in {r.change:.0%} of {r.resamples:,} resamples"
                 + (": most often " + ", ".join(
                     " ".join(f"{k}={_value(x)}" for k, x in t.config(row).items()) + f" ({s:.0%})"
                     for row, s in r.challengers[:2]) if r.challengers else ""))
    return lines


def _value(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def constraints_toml(blocks: Sequence[dict], source: str) -> str:
    """``[[constraints]]`` blocks ready to append to a spec, with a header saying where they
    come from."""
    if not blocks:
        return f"# ksweep insights {source}: no failure follows a rule: no constraint to suggest\n"
    lines = [f"# suggested by ksweep insights {source}: each prunes configs that failed, its reason counts them"]
    for b in blocks:
        lines += ["", "[[constraints]]", f"name = {_toml(b['name'])}", f"expr = {_toml(b['expr'])}",
                  f"reason = {_toml(b['reason'].replace('{', '{{').replace('}', '}}'))}"]
        for key in ("shapes", "variants"):
            if key in b:
                lines.append(f"{key} = [{', '.join(_toml(x) for x in b[key])}]")
    return "\n".join(lines) + "\n"


def _toml(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's
