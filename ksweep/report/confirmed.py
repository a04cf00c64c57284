"""What the stored confirmation runs say, per shape × variant (pure): BEST, TIE, median and
interval per confirmed config, and the best's speed-up over the default (ksweep/confirm.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..confirm import Interval, Verdict, paired, speedup, verdicts
from ..job import config_id
from ..result import Measurement, Result
from ..status import Status


ROUND_GAP = 60.0  # seconds between two runs of one round at most (a confirmation run takes seconds)


def _same_round(before: Measurement, m: Measurement) -> bool:
    """Whether ``m``, stored just after ``before``, belongs to the same round as it."""
    if m.round != before.round or m.gpu_uuid != before.gpu_uuid:
        return False
    return before.finished is None or m.finished is None or abs(m.finished - before.finished) <= ROUND_GAP


@dataclass(frozen=True)
class Confirmed:
    """The confirmation of one shape × variant."""

    verdicts: Mapping[str, Verdict] = field(default_factory=dict)  # config_id -> verdict
    default: str | None = None  # config_id of the default config, when it was confirmed
    speedup: Interval | None = None  # the best over the default, round by round when it can (confirm.paired)
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
    together: a round is a run of consecutive measurements with the same round number on
    the same GPU, none more than ``ROUND_GAP`` seconds after the one before. So the rounds
    of a later confirmation (a sweep extended, its new leaders measured in rounds 0, 1, 2
    again; a round cut short and finished by a resumed sweep) never pair with an earlier
    one's, taken minutes or days apart or on another board."""
    key_of = {(r.variant, r.shape, config_id(r.params)): r.cache_key for r in results}
    defaults = defaults or {}
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    value_rounds: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    failures: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rounds: dict[tuple, set] = defaultdict(set)
    together: dict[tuple, list] = {}  # group -> [the last measurement, how many rounds so far]
    for m in measurements:
        cid = config_id(m.params)
        group = (m.variant, m.shape)
        if key_of.get((*group, cid)) != m.result_key:
            continue
        rounds[group].add(m.round)
        now = together.setdefault(group, [m, 0])
        if not _same_round(now[0], m):
            now[1] += 1
        now[0] = m
        if m.status is Status.OK and m.value is not None:
            values[group][cid].append(m.value)
            value_rounds[group][cid].append(now[1])
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
            up = paired(dict(zip(at[best], per_config[best])), dict(zip(at[default], per_config[default])),
                        direction) or speedup(v[best].interval, v[default].interval, direction)
        out[group] = Confirmed(v, default, up, len(rounds[group]))
    return out
