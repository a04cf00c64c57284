"""Which asked config's build starts next (pure): the first asked, or, while a GPU slot has
nothing to run, the one expected to build soonest, so that the GPUs wait on the compiler as
little as they can while the builds are uneven (a CUTLASS config's build takes 55-76 CPU
seconds, another's twice that).

A config's build time is expected from the builds of the search that finished (built, not
served from the cache): the mean, plus for each of its parameter values how far the builds
with that value were from the mean (an additive model, as the build times of tile sizes,
stages and code paths add up roughly), counted once at least ``MIN_SEEN`` builds had that
value: one build's time is no evidence (the first of a sweep pays the compiler's cold start,
and a loaded machine makes any one slow); failed and cached builds teach it nothing. With no
build finished yet, the order asked. A time-limited sweep that ends with builds still queued
leaves out more of the configs expected to build slowly than the order asked would."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..status import Status


class BuildCosts:
    """The build seconds seen so far, by parameter value."""

    def __init__(self):
        self.total = 0.0
        self.count = 0
        self._by: dict[tuple[str, Any], list[float]] = {}  # (name, value) -> [seconds, builds]

    def see(self, params: Mapping[str, Any], seconds: float) -> None:
        self.total += seconds
        self.count += 1
        for name, value in params.items():
            seen = self._by.setdefault((name, _key(value)), [0.0, 0])
            seen[0] += seconds
            seen[1] += 1

    def learn(self, params: Mapping[str, Any], build) -> None:
        """What a finished build (``BuildResult``) says: its seconds, where it made its program
        (not a failure, which gives the GPU nothing to run, nor a build served from the cache)."""
        if build.status is Status.OK and not build.cached and build.seconds > 0:
            self.see(params, build.seconds)

    def expected(self, params: Mapping[str, Any]) -> float | None:
        """The seconds a config's build is expected to take (None: no build seen yet)."""
        if not self.count:
            return None
        mean = self.total / self.count
        out = mean
        for name, value in params.items():
            seen = self._by.get((name, _key(value)))
            if seen is not None and seen[1] >= MIN_SEEN:
                out += seen[0] / seen[1] - mean
        return max(0.0, out)


MARGIN = 0.25  # the cheapest goes first when it is expected this much sooner than the first asked
MIN_SEEN = 2  # builds of a value before its distance from the mean counts


def next_build(queued: Sequence[Mapping[str, Any]], costs: BuildCosts, starving: bool) -> int:
    """The index in ``queued`` (configs in the order asked) of the build to start next: the
    first, or, when ``starving`` (a GPU slot has nothing to run) and builds were seen, the one
    expected soonest (the first asked of those) where it is expected MARGIN sooner than the first."""
    if not starving or len(queued) < 2 or not costs.count:
        return 0
    expected = [costs.expected(p) for p in queued]
    cheapest = min(range(len(queued)), key=lambda i: (expected[i], i))
    # a difference within the builds' own noise keeps the order asked
    return cheapest if expected[cheapest] < (1.0 - MARGIN) * expected[0] else 0


def _key(value: Any) -> Any:
    """A parameter value as a dictionary key (a list value as a tuple)."""
    return tuple(value) if isinstance(value, list) else value
