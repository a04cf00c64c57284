"""``ksweep replay``: a search strategy run against recorded tuning results, no GPU: each config
it asks for is answered with its recorded time (``replay/``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..strategies import DEFAULT, STRATEGIES

__all__ = ["DEFAULT", "STRATEGIES", "Replayed", "replay"]


@dataclass(frozen=True)
class Replayed:
    dataset: Any  # replay.Dataset: the recorded configs
    prior: Any  # warm.prior.Prior of the warm-start sources, or None
    outcome: Any  # replay.search's: what the search found, and when


def replay(path: str, strategy: str = DEFAULT, *, seed: int = 0, max_evals: int | None = 100,
           time_limit: float | None = None, patience: int | None = None, batch: int = 1,
           warm_start: Sequence[str] = ()) -> Replayed:
    """Search the dataset at ``path`` with ``strategy``, started from the recorded results of
    ``warm_start`` (datasets or ksweep databases of the same kernel; parameters matched by name)."""
    from ..replay import load_dataset
    from ..replay.search import replay_search

    dataset = load_dataset(path)
    prior = None
    for source in warm_start:
        from ..warm.prior import Prior
        from ..warm.sources import load_prior

        prior = Prior((*(prior.sources if prior else ()), *load_prior(source, names=dataset.names).sources))
    out = replay_search(dataset, strategy, seed=seed, max_evals=max_evals, time_limit=time_limit, patience=patience,
                        batch=batch, prior=prior)
    return Replayed(dataset, prior, out)
