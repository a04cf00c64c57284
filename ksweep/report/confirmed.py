"""What the stored confirmation runs say, per shape × variant (pure): BEST, TIE, median and
interval per confirmed config, and the best's speed-up over the default (ksweep/confirm.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..confirm import Interval, Verdict, speedup_over, verdicts
from ..job import config_id
from ..result import Measurement, Result
from ..status import Status


ROUND_GAP = 60.0  # seconds: a longer pause between two runs (and than 3 typical ones) ends a round


def rounds_together(ms: Sequence[Measurement]) -> list[int]:
    """For one shape × variant's measurements in stored order, the index of the round each
    was run in: a new one when the round number changes, when the GPU model changes, or
    after a pause longer than ``ROUND_GAP`` and than three times the typical one (a resumed
    sweep). A run that built nothing has no GPU and breaks no round. On several GPUs of one
    model, a round's runs may go to different boards: their difference is then part of the
    per-round factors' spread."""
    gaps = sorted(abs(b.finished - a.finished) for a, b in zip(ms, ms[1:])
                  if a.finished is not None and b.finished is not None)
    limit = max(ROUND_GAP, 3 * gaps[len(gaps) // 2]) if gaps else ROUND_GAP
    out: list[int] = []
    n, gpu, before = 0, None, None
    for m in ms:
        if before is not None and (m.round != before.round or (m.gpu_name and gpu and m.gpu_name != gpu) or (
                m.finished is not None and before.finished is not None and abs(m.finished - before.finished) > limit)):
            n, gpu = n + 1, None
        gpu = gpu or m.gpu_name
        out.append(n)
        before = m
    return out


@dataclass(frozen=True)
class Confirmed:
    """The confirmation of one shape × variant."""

    verdicts: Mapping[str, Verdict] = field(default_factory=dict)  # config_id -> verdict
    default: str | None = None  # config_id of the default config, when it was confirmed
    speedup: Interval | None = None  # the best over the default (confirm.speedup_over)
    rounds: int = 0

    @property
    def best(self) -> str | None:
        return next((c for c, v in self.verdicts.items() if v.mark == "BEST"), None)


def confirmed(results: Iterable[Result], measurements: Iterable[Measurement], direction: str,
              defaults: Mapping[tuple[str, str], str] | None = None) -> dict[tuple[str, str], Confirmed]:
    """(variant, shape) -> Confirmed, from the measurements taken under each result's own
    key (those of an older experiment are not counted). ``measurements``: in the order they
    were taken (the store's). ``defaults``: (variant, shape) -> the default config's id (the
    store's meta ``default:<variant>:<shape>``).

    Two configs are compared round by round (``confirm.paired``) over the rounds they ran in
    together (``rounds_together``): the rounds of a later confirmation (a sweep extended, its
    new leaders measured in rounds 0, 1, 2 again; a round cut short and finished by a
    resumed sweep) never pair with an earlier one's, taken minutes or days apart."""
    key_of = {(r.variant, r.shape, config_id(r.params)): r.cache_key for r in results}
    defaults = defaults or {}
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    value_rounds: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    failures: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rounds: dict[tuple, set] = defaultdict(set)
    counted: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in measurements:
        if key_of.get((m.variant, m.shape, config_id(m.params))) == m.result_key:
            counted[(m.variant, m.shape)].append(m)
    for group, ms in counted.items():
        for m, together in zip(ms, rounds_together(ms)):
            cid = config_id(m.params)
            rounds[group].add(m.round)
            if m.status is Status.OK and m.value is not None:
                values[group][cid].append(m.value)
                value_rounds[group][cid].append(together)
            else:
                failures[group][cid] += 1
                values[group].setdefault(cid, [])
    out = {}
    for group, per_config in values.items():
        at = value_rounds[group]
        v = verdicts(per_config, failures[group], direction, at)
        default = defaults.get(group)
        best = next((c for c, x in v.items() if x.mark == "BEST"), None)
        up = None
        if best is not None and default is not None and default in v and v[default].interval.n:
            up = speedup_over(per_config, at, best, default, direction)
        out[group] = Confirmed(v, default, up, len(rounds[group]))
    return out
