"""What ``ksweep insights`` says of one shape × variant, and the headlines of a database.

``analyse(table)`` runs the three analyses (``rules.py``, ``importance.py``, ``risk.py``);
``headlines`` picks the one or two findings worth a line at the end of a sweep: a failure
rule that would have saved the most builds, a knob with no measurable effect, a winner
that another config would often beat when measured again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .importance import DEAD, Importance, importance
from .risk import Risk, risk
from .rules import Rule, negate, rules
from .table import Table

RISKY = 0.25  # a winner another config beats in this share of resamples makes a headline


@dataclass(frozen=True)
class Insight:
    table: Table
    rules: tuple[Rule, ...]
    importance: Importance | None
    risk: Risk

    def to_json(self) -> dict:
        t = self.table
        ok = int(t.ok.sum())
        return {
            "variant": t.variant, "shape": t.shape, "objective": t.metric, "direction": t.direction,
            "configs": len(t), "ok": ok, "failures": t.failures(),
            "rules": [{
                "status": r.status, "failed": r.failed, "explained": r.explained, "ok_pruned": r.ok,
                "exact": r.exact, "rule": r.text,
                "terms": [{"expr": x.text, "failed": x.failed, "matched": x.matched, "ok": x.ok,
                           "constraint": negate(x.text), "atoms": x.atoms} for x in r.terms],
            } for r in self.rules],
            **(self.importance.to_json() if self.importance else {"importance": {}}),
            "risk": self.risk.to_json(t),
        }


def analyse(table: Table, *, find_rules: bool = True) -> Insight:
    return Insight(table, tuple(rules(table)) if find_rules else (), importance(table), risk(table))


def headlines(found: Sequence[Insight], command: str = "ksweep insights") -> list[str]:
    """At most two lines: the failure rule that explains the most failed configs, then a
    knob with no measurable effect, else a winner at risk."""
    out: list[str] = []
    several = len(found) > 1
    best_rule = max(((i, r) for i in found for r in i.rules if r.terms), key=lambda ir: ir[1].explained,
                    default=None)
    if best_rule is not None:
        i, r = best_rule
        where = f" of {i.table.label}" if several else ""
        exceptions = "no OK config pruned" if r.ok == 0 else f"{r.ok} OK config{'s' * (r.ok != 1)} pruned"
        first = r.terms[0].text + (f" (and {len(r.terms) - 1} more term{'s' * (len(r.terms) > 2)})"
                                   if len(r.terms) > 1 else "")
        out.append(f"insights: {r.explained} of the {r.failed} {r.status} configs{where} follow {first}; "
                   f"as constraints they would have saved {r.explained} builds ({exceptions}): "
                   f"{command} --constraints")
    dead = [(i, k) for i in found if i.importance for k in i.importance.dead]
    if dead:
        i, _ = dead[0]
        knobs = [k for j, k in dead if j is i]
        where = f" on {i.table.label}" if several else ""
        shrink = f": fixing {'it' if len(knobs) == 1 else 'them'} shrinks the space {i.importance.trim_factor:,}×" \
            if i.importance.trim_factor > 1 else ""
        out.append(f"insights: {', '.join(knobs)} {'has' if len(knobs) == 1 else 'have'} no measurable effect on "
                   f"{i.table.metric}{where} (under {DEAD:.0%} of its variance){shrink}: {command}")
    elif len(out) < 2:
        risky = [i for i in found if i.risk.change is not None and i.risk.change >= RISKY]
        if risky:
            i = max(risky, key=lambda x: x.risk.change)
            where = f" of {i.table.label}" if several else ""
            out.append(f"insights: BEST{where} is within noise of {i.risk.within} other config"
                       f"{'s' * (i.risk.within != 1)}; measured again, another would win "
                       f"{i.risk.change:.0%} of the time: {command}")
    return out[:2]
