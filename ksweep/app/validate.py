"""``ksweep select DB --validate SIZES``: the selector's choice measured at sizes never tuned.

At each size set the spec's shape the choice came from is swept anew at those sizes (its
defines and run arguments written with them: export/sizes.py's ``shape_of``), into a
database of its own in a temporary folder (the build cache beside DB is shared): the chosen
config first, then a small local search around it (strategies/local.py: the neighbours of
the best so far, until none is better or ``budget`` configs are measured), confirmed as a
sweep confirms its leaders. The regret is how much worse the choice is than the best found
(store/standings.py's best and values).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import KsweepError
from ..export.robust import loss
from ..export.sizes import parse_sizes, text
from ..job import config_id
from ..store import standings as standings_of
from ..store.sqlite import Store
from ..strategies.local import LocalSearch
from ..sweep.options import SweepOptions
from .select import at_sizes, choose, selector
from .sweep import run_sweep
from .target import open_target
from .wiring import cache_folder


@dataclass(frozen=True)
class Validated:
    sizes: dict[str, float]
    choice: Any  # app/select.py's Selected
    value: float | None  # the chosen config's value at these sizes (None: it did not run OK)
    best: dict[str, Any] | None  # the best config found
    best_value: float | None
    evaluations: int
    message: str = ""  # why the choice has no value

    @property
    def regret(self) -> float | None:
        """How much worse the choice is than the best found (0.03: 3%); None without both."""
        if self.value is None or self.best_value is None:
            return None
        return loss(self.value, self.best_value, self.direction)

    direction: str = "min"

    def as_json(self) -> dict:
        return {"sizes": self.sizes, "config": self.choice.params, "from_shape": self.choice.choice.entry.shape,
                "extrapolated": list(self.choice.choice.extrapolated), "value": self.value, "best": self.best,
                "best_value": self.best_value, "regret": self.regret, "evaluations": self.evaluations,
                "message": self.message}


def validate(db: str, size_sets: Sequence[str], *, budget: int = 20, spec: str | None = None,
             gpu: str | None = None, arch: str | None = None, variant: str | None = None,
             cover: float | None = None, robust: bool = False, gpus: list[int] | None = None,
             progress=None) -> list[Validated]:
    """Measure the selector's choice at each size set of ``size_sets`` (``M=1024,N=2048``)
    against the best of a local search around it of at most ``budget`` configs.
    ``progress(text)`` is told what is measured."""
    if budget < 1:
        raise KsweepError(f"--budget {budget}: give a whole number of at least 1")
    asked = [parse_sizes([s], option="--validate") for s in size_sets]
    found, notes = selector(db, cover=cover, robust=robust)
    target = open_target(db, spec)
    out = []
    with tempfile.TemporaryDirectory(prefix="ksweep-validate-") as folder:
        for i, sizes in enumerate(asked):
            chosen = choose(found, sizes, gpu=gpu, arch=arch, variant=variant, notes=notes)
            entry = chosen.choice.entry
            at = at_sizes(target.spec, found, chosen)
            if at is None:
                raise KsweepError(f"{db}: the selector chose shape {entry.shape}'s config, but the spec "
                                  f"{target.spec.label} has no shape {entry.shape} to measure it as")
            if progress is not None:
                progress(f"{text(chosen.sizes)}: {_words(chosen.params)} (from shape {entry.shape}) and a local "
                         f"search around it, at most {budget} configs")
            path = Path(folder) / f"{i}-{re.sub(r'[^A-Za-z0-9_]+', '_', entry.shape)}.db"
            start = dict(chosen.params)
            run_sweep(at, db=path, options=SweepOptions(max_evals=budget, variants=(entry.variant,)),
                      gpus=gpus, cache=cache_folder(db, None),
                      strategy_factory=lambda name, space, seed, max_evals: LocalSearch(space, start))
            out.append(_measured(path, chosen, entry.variant, target.spec.objective.direction))
    return out


def _measured(path: Path, chosen, variant: str, direction: str) -> Validated:
    with Store(path, create=False) as store:
        shape = store.names("shape")[0] if store.names("shape") else chosen.choice.entry.shape
        standing = standings_of.standing(store, variant, shape)
        ran = [r for r in standing.results if r.phase != "default"]
        mine = next((r for r in standing.results if config_id(r.params) == config_id(chosen.params)), None)
    value = standing.value(mine, singles=True) if mine is not None else None
    best = standing.best()
    best_value = standing.value(best, singles=True) if best is not None else None
    message = "" if value is not None else (
        "the chosen config is not valid at these sizes (a constraint of the spec excludes it)" if mine is None
        else f"the chosen config did not run OK: {mine.status.value}" + (f" ({mine.message})" if mine.message else ""))
    return Validated(chosen.sizes, chosen, value.value if value is not None else None,
                     dict(best.params) if best is not None else None,
                     best_value.value if best_value is not None else None, len(ran), message, direction)


def _words(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())
