"""Two configs side by side (pure): Nsight Compute metrics, ptxas resources, derived values
and the SASS instruction mix, each with its change: the rows ``ksweep compare`` prints
(``report/compare_view.py`` renders them).

Metrics are grouped by section and, within one, sorted by the size of the relative change;
a value that is not a number is shown and compared as text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..result import time_unit_ms
from .ncu import SECTION_ORDER, LaunchProfile, section_of


# the units of a duration, as ksweep's metrics and Nsight Compute name them
_TIME_UNITS = {"s", "ms", "us", "ns", "second", "msecond", "usecond", "nsecond"}


@dataclass(frozen=True)
class Row:
    section: str
    name: str
    a: Any
    b: Any
    unit: str = ""
    knob: bool = False  # a parameter: a setting that changed, never a quantity that grew or shrank
    direction: str = ""  # "min" or "max" for an objective: which way is better
    time: bool = False  # a duration: less is faster

    @property
    def change(self) -> float | None:
        """(b - a) / |a|; None for a knob, when either is not a number, or a is 0 and b is not."""
        if self.knob or not all(_number(v) for v in (self.a, self.b)):
            return None
        if self.a == self.b:
            return 0.0
        if self.a == 0:
            return math.inf if self.b > 0 else -math.inf
        return (self.b - self.a) / abs(self.a)

    @property
    def ratio(self) -> float | None:
        """b / a when both are numbers of one sign, neither 0 (not for a knob)."""
        if self.knob or not all(_number(v) for v in (self.a, self.b)) or self.a == 0 or self.b == 0:
            return None
        r = self.b / self.a
        return r if r > 0 and math.isfinite(r) else None

    @property
    def better(self) -> bool | None:
        """Whether B is better than A, for an objective (None otherwise, or unchanged)."""
        c = self.change
        if not self.direction or c is None or c == 0:
            return None
        return (c < 0) == (self.direction == "min")

    @property
    def differs(self) -> bool:
        return self.a != self.b

    def to_json(self) -> dict:
        c, r = self.change, self.ratio
        out = {"section": self.section, "name": self.name, "a": self.a, "b": self.b, "unit": self.unit,
               "change": None if c is None or not math.isfinite(c) else round(c, 6),
               "ratio": None if r is None else round(r, 6)}
        if self.knob:
            out["knob"] = True
        if self.direction:
            out["direction"], out["better"] = self.direction, self.better
        return out


def _number(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return not isinstance(v, float) or math.isfinite(v)


def is_time(name: str, unit: str = "") -> bool:
    """A duration, by its unit (Nsight Compute's ``msecond``…) or its metric name (``ms``,
    ``time``, ``kernel_us``: ``result.time_unit_ms``)."""
    return unit.lower() in _TIME_UNITS or (not unit and time_unit_ms(name) is not None)


@dataclass(frozen=True)
class Comparison:
    a_label: str
    b_label: str
    metrics: tuple[Row, ...] = ()
    resources: tuple[Row, ...] = ()
    derived: tuple[Row, ...] = ()
    sass: tuple[Row, ...] = ()
    notes: tuple[str, ...] = ()
    params: tuple[Row, ...] = ()
    kernel: tuple[str, str] = ("", "")
    results: tuple[Row, ...] = ()  # the objective, then every other metric the runs reported

    def to_json(self) -> dict:
        return {"a": self.a_label, "b": self.b_label, "kernels": list(self.kernel),
                "results": [r.to_json() for r in self.results],
                "params": [r.to_json() for r in self.params], "metrics": [r.to_json() for r in self.metrics],
                "resources": [r.to_json() for r in self.resources], "derived": [r.to_json() for r in self.derived],
                "sass": [r.to_json() for r in self.sass], "notes": list(self.notes)}


def _size(r: Row) -> float:
    c = r.change
    if c is None:
        return 1.0 if r.differs else 0.0
    return math.inf if not math.isfinite(c) else abs(c)


def metric_rows(a: LaunchProfile, b: LaunchProfile) -> tuple[Row, ...]:
    """Every metric of either launch, grouped by section (``SECTION_ORDER``, then those of a
    details export in the order they appear), the largest relative change first within one."""
    names = list(dict.fromkeys([*a.metrics, *b.metrics]))
    rows = []
    for n in names:
        ma, mb = a.metrics.get(n), b.metrics.get(n)
        section = (ma or mb).section or section_of(n)
        unit = (ma or mb).unit
        rows.append(Row(section, n, ma.value if ma else None, mb.value if mb else None, unit,
                        time=unit.lower() in _TIME_UNITS))
    order = {s: i for i, s in enumerate(dict.fromkeys([*SECTION_ORDER, *(r.section for r in rows)]))}
    return tuple(sorted(rows, key=lambda r: (order[r.section], -_size(r), r.name)))


def mapping_rows(section: str, a: Mapping[str, Any], b: Mapping[str, Any], knob: bool = False) -> tuple[Row, ...]:
    """A row per name of either mapping (``knob``: parameters, shown as changed, ``1 → 0``)."""
    names = list(dict.fromkeys([*a, *b]))
    return tuple(Row(section, n, a.get(n), b.get(n), knob=knob) for n in names)


def result_rows(a: Mapping[str, Any], b: Mapping[str, Any], objectives: Sequence[tuple[str, str]]) -> tuple[Row, ...]:
    """The metrics two runs reported: the objectives first (``(name, direction)``, each with
    the direction that is better), then every other metric in the order the runs gave them."""
    directions = dict(objectives)
    names = [n for n, _ in objectives if n in a or n in b]
    names += [n for n in dict.fromkeys([*a, *b]) if n not in directions]
    return tuple(Row("result", n, a.get(n), b.get(n), direction=directions.get(n, ""), time=is_time(n))
                 for n in names)


_RESOURCE_KEYS = ("registers", "spill_stores", "spill_loads", "stack_frame", "smem", "cmem", "barriers")


def resource_rows(a: Sequence[dict], b: Sequence[dict], pattern: str | None = None) -> tuple[Row, ...]:
    """ptxas resources of the tuned kernels (those ``pattern`` matches, else the judged ones),
    paired by name (by position when there is one on each side), each key a row."""
    def chosen(ks):
        judged = [k for k in ks if k.get("judged", True)]
        if pattern:
            judged = [k for k in ks if re.search(pattern, str(k.get("name", "")))] or judged
        return judged

    ja, jb = chosen(a), chosen(b)
    if len(ja) == 1 and len(jb) == 1:
        pairs = [(ja[0], jb[0])]
    else:
        by_name = {k.get("name"): k for k in jb}
        pairs = [(k, by_name[k.get("name")]) for k in ja if k.get("name") in by_name]
    rows = []
    for ka, kb in pairs:
        prefix = "" if len(pairs) == 1 else f"{ka.get('name')}: "
        for key in _RESOURCE_KEYS:
            if ka.get(key) is None and kb.get(key) is None:
                continue
            rows.append(Row("ptxas", prefix + key, ka.get(key), kb.get(key), "bytes" if key not in (
                "registers", "barriers") else ""))
    return tuple(rows)


def sass_rows(a: Counter, b: Counter) -> tuple[Row, ...]:
    """Instruction counts per class, the largest change first."""
    names = set(a) | set(b)
    rows = [Row("SASS instruction mix", n, a.get(n, 0), b.get(n, 0)) for n in names]
    rows.append(Row("SASS instruction mix", "total", sum(a.values()), sum(b.values())))
    return tuple(sorted(rows, key=lambda r: (r.name != "total", -_size(r), r.name)))


def pair_launches(a: Sequence[LaunchProfile], b: Sequence[LaunchProfile]) -> tuple[LaunchProfile, LaunchProfile] | None:
    """The launches to compare: the first of each (the tuned kernel's first profiled launch)."""
    if not a or not b:
        return None
    return a[0], b[0]
