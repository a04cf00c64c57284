"""A confirmation that began is owed, and the next run completes it (store/owed.py,
sweep/confirmation.py): stopped by Ctrl-C or killed at any point, then run again, a sweep
ends with the verdict of a sweep that was never stopped. On the fake executor: the
runs' times are a fixed function of the config and how often it ran, so the two sweeps
measure the same numbers."""

import random
from collections import Counter

import pytest

from ksweep.verify.confirm import Confirmation
from ksweep.errors import Interrupted
from ksweep.job import config_id
from ksweep.result import Measurement, Result
from ksweep.status import Status
from ksweep.store import owed, standings
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.testing import FakeExecutor

from ksweep.spec.load import load_spec

# A=8 is the default; the search (a grid of 6) never reaches it, so the confirmation
# evaluates it first. Its single run is as fast as the leaders': chosen again from the
# stored results, it would take a leader's place.
BASE = {1: 1.00, 2: 1.01, 3: 1.02, 4: 1.03, 5: 1.30, 6: 1.60, 7: 1.7, 8: 1.005}


class Killed(BaseException):
    """kill -9, in process: nothing after it runs but the interpreter's own unwinding."""


class Noisy(FakeExecutor):
    """Runs whose times depend on the config and its count of finished runs; the
    ``stop_at``-th run of the confirmation (the default's evaluation included) does not
    finish: Ctrl-C (``KeyboardInterrupt``) or a kill (``Killed``) comes first."""

    def __init__(self, counts: Counter, stop_at: int | None = None, how: type = KeyboardInterrupt):
        super().__init__(self.answer)
        self.counts, self.stop_at, self.how, self.confirming, self.running = counts, stop_at, how, 0, False

    def answer(self, job):  # asked at the build (its metrics unused) and at the run, which counts
        a = job.params["A"]
        n = self.counts[a]
        self.counts[a] += self.running
        noise = random.Random(a * 1000 + n).gauss(0.0, 0.01)
        first_lucky = 0.7 if (a == 5 and n == 0) else 1.0  # A=5 once fast, slow after
        return Status.OK, Status.OK, {"ms": BASE[a] * first_lucky * (1 + noise)}

    def submit_run(self, job, build):
        if job.phase in ("confirm", "default"):
            self.confirming += 1
            if self.confirming == self.stop_at:
                raise self.how()
        self.running = True
        try:
            return super().submit_run(job, build)
        finally:
            self.running = False


OPTIONS = SweepOptions(strategy="grid", max_evals=6, confirm=Confirmation(3, 3, 0.05))


def verdict(db):
    with Store(db, create=False) as store:
        s = standings.standing(store, "base", "default")
        conf = s.confirmation
        marks = {cid: (v.mark, v.interval.n, round(v.interval.median, 9)) for cid, v in conf.verdicts.items()}
        rounds = Counter((config_id(m.params), m.round) for m in store.measurements())
        return marks, dict(rounds), config_id(s.best().params), owed.owed(store, "base", "default")


def toy_spec(tmp_path):
    """The spec of A in BASE, default 8 (its commands never run: the fake answers)."""
    (tmp_path / "toy.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "toy.toml").write_text(f"""
[sweep]
name = "toy"
[params]
A = {{ values = {list(BASE)}, default = 8 }}
[build]
sources = ["toy.c"]
command = ["gcc", "{{defines}}", "-o", "{{binary}}", "toy.c"]
[run]
command = ["{{binary}}"]
""")
    return load_spec(tmp_path / "toy.toml")


def sweep(tmp_path, db, executor, options=OPTIONS, strategy_factory=None):
    with Store(db) as store:
        return Sweep(toy_spec(tmp_path), store, executor, options, strategy_factory=strategy_factory).run()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("whole")
    db = tmp / "whole.db"
    sweep(tmp, db, Noisy(Counter()))
    return verdict(db)


def test_the_uninterrupted_confirmation_measures_the_leaders_and_the_default(uninterrupted):
    marks, rounds, best, left = uninterrupted
    assert left is None  # nothing owed
    assert len(marks) == 4  # the 3 best of the search and the default
    assert all(n == 3 for n in Counter(c for c, _ in rounds).values())
    assert best in marks


@pytest.mark.parametrize("how", [KeyboardInterrupt, Killed], ids=["sigint", "kill-9"])
@pytest.mark.parametrize("stop_at", [1, 2, 3, 4, 6, 7, 9, 12, 13])
def test_a_stopped_confirmation_is_completed_by_the_next_run_with_the_same_verdict(tmp_path, uninterrupted,
                                                                                    how, stop_at):
    db = tmp_path / "cut.db"
    counts = Counter()
    with pytest.raises(Interrupted if how is KeyboardInterrupt else Killed):
        sweep(tmp_path, db, Noisy(counts, stop_at, how))
    summary = sweep(tmp_path, db, Noisy(counts))
    assert summary.evaluated == 0  # the search had ended: only the confirmation was owed
    assert verdict(db) == uninterrupted


def test_a_plan_is_dropped_when_a_config_no_longer_stands(tmp_path):
    """A store alone: the plan stands while each config's result has the key it began with,
    and counts the runs taken under that key since the result (and, for a config measured
    again with new ones, since the plan began)."""
    with Store(tmp_path / "o.db") as store:
        r = {c: Result("base", "s", {"A": c}, Status.OK, metrics={"ms": 1.0}, cache_key=f"k{c}", finished=10.0)
             for c in (1, 2)}
        store.put_many(r.values())
        ids = {c: config_id(r[c].params) for c in r}
        plan = owed.OwedConfirmation("base", "s", (ids[1], ids[2]), {ids[1]: "k1", ids[2]: "k2"}, 2, since=20.0,
                                     fresh=frozenset({ids[2]}))
        owed.begin(store, plan)
        assert owed.owed(store, "base", "s") == plan
        results = {ids[c]: store.get("base", "s", ids[c]) for c in r}
        assert plan.stands(results)
        runs = [Measurement("base", "s", {"A": 1}, "k1", 0, Status.OK, 1.0, finished=15.0),
                Measurement("base", "s", {"A": 2}, "k2", 0, Status.OK, 1.0, finished=15.0),  # before: not this one's
                Measurement("base", "s", {"A": 2}, "k2", 1, Status.OK, 1.0, finished=25.0),
                Measurement("base", "s", {"A": 1}, "old", 1, Status.OK, 1.0, finished=25.0)]  # another key
        assert plan.done(runs, results) == {(ids[1], 0), (ids[2], 1)}
        assert not plan.finished(runs, results)
        store.put(Result("base", "s", {"A": 2}, Status.OK, metrics={"ms": 1.0}, cache_key="k2-edited", finished=30.0))
        assert not plan.stands({ids[c]: store.get("base", "s", ids[c]) for c in r})
        owed.end(store, "base", "s")
        assert owed.owed(store, "base", "s") is None


def _sweep_with(tmp_path, db, executor, confirm, strategy_factory=None, **options):
    return sweep(tmp_path, db, executor, SweepOptions(**{"strategy": "grid", "max_evals": 6, "confirm": confirm,
                                                         **options}), strategy_factory)


def _measured_since(db, since):
    with Store(db, create=False) as store:
        return sorted({m.params["A"] for m in store.measurements() if m.finished is not None and m.finished >= since})


def test_a_plan_owed_under_other_settings_is_chosen_anew(tmp_path):
    """Stopped under --confirm 1,3, run again with --confirm 5,3: the 5 leaders and the default
    are confirmed, not the plan of 1."""
    import time

    db, counts = tmp_path / "k.db", Counter()
    with pytest.raises(Interrupted):
        _sweep_with(tmp_path, db, Noisy(counts, stop_at=3), Confirmation(1, 3, None))
    since = time.time()
    _sweep_with(tmp_path, db, Noisy(counts), Confirmation(5, 3, None))
    assert len(_measured_since(db, since)) == 6


def test_rerun_all_chooses_its_leaders_from_the_results_it_measures_again(tmp_path):
    """A plan owed from before a --rerun all was chosen from the results it measures anew: A=5,
    once lucky and a leader then, is slow now and no longer confirmed."""
    import time

    db, counts = tmp_path / "r.db", Counter()
    with pytest.raises(Interrupted):
        _sweep_with(tmp_path, db, Noisy(counts, stop_at=4), Confirmation(3, 3, 0.05))
    with Store(db, create=False) as store:
        assert 5 in {store.get("base", "default", c).params["A"] for c in owed.owed(store, "base", "default").configs}
    since = time.time()
    _sweep_with(tmp_path, db, Noisy(counts), Confirmation(3, 3, 0.05), rerun="all")
    assert 5 not in _measured_since(db, since)


@pytest.mark.parametrize("rounds", [3, 2])
def test_a_check_neither_takes_over_nor_ends_a_sweeps_owed_plan(tmp_path, rounds):
    """ksweep check measures its configs again with a confirmation that owes nothing: a sweep's
    owed plan is left for the next run (with the same rounds or others)."""
    import time

    from ksweep.strategies.listed import ListedStrategy

    db, counts = tmp_path / "c.db", Counter()
    with pytest.raises(Interrupted):
        _sweep_with(tmp_path, db, Noisy(counts, stop_at=4), Confirmation(3, 3, 0.05))
    with Store(db, create=False) as store:
        before = owed.owed(store, "base", "default")
    configs = [{"A": 1}, {"A": 8}]
    since = time.time()
    _sweep_with(tmp_path, db, Noisy(counts), Confirmation(k=2, rounds=rounds, within=None, owed=False),
                rerun="all", rerun_supersedes=False, record_pruned=False, max_evals=2, warm_between_shapes=False,
                strategy_factory=lambda name, space, seed, max_evals: ListedStrategy(space, configs))
    assert _measured_since(db, since) == [1, 8]
    with Store(db, create=False) as store:
        assert owed.owed(store, "base", "default") == before
