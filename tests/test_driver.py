"""The sweep driver's own logic against ksweep.testing.FakeExecutor: no compiler, no
process, no GPU. Budgets and resume, the order results are told in, the reference run, the
harness gate, GPU models, direction, --rerun, failures of the host and Ctrl-C.

test_trust.py checks the same promises end to end with gcc-built programs."""

from __future__ import annotations

import itertools
import random
import textwrap
import time
from pathlib import Path

import pytest

from ksweep.verify.confirm import Confirmation
from ksweep.errors import EnvironmentProblem, Interrupted, KsweepError
from ksweep.job import config_id
from ksweep.spec.load import load_spec
from ksweep.status import STOPPED, Status
from ksweep.store.sqlite import Store
from ksweep.strategies import make_strategy
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.testing import FakeExecutor, Planned
from ksweep.testing.strategy_suite import synthetic_dataset

BUILD = '["true", "{defines}", "-o", "{binary}", "toy.c"]'
PHASED = """
[switches]
FAST = "flag"
"""


def toy(folder: Path, *, a=(1, 2, 3), b=(1, 2), extra: str = "", sweep: str = "", build: str = BUILD,
        run: str = '["{binary}"]', name: str = "toy.toml"):
    """A spec whose commands are never run (the fake answers for them)."""
    (folder / "toy.c").write_text("int main(void) { return 0; }\n")
    path = folder / name
    path.write_text(textwrap.dedent(f"""
        [sweep]
        name = "toy"
        objective = "ms"
        {sweep}
        [params]
        A = {list(a)}
        B = {list(b)}
        [build]
        sources = ["toy.c"]
        command = {build}
        [run]
        command = {run}
    """) + textwrap.dedent(extra))
    return load_spec(path)


def ms(params) -> float:
    """The toy's time: best at A=2, B=1; the switch FAST takes 0.5 off."""
    return 10.0 + (params["A"] - 2) ** 2 + params["B"] - 0.5 * bool(params.get("FAST"))


def timed(job):
    return Status.OK, Status.OK, {"ms": ms(job.params), "checksum": 1.0}


class Recording:
    """A strategy as the driver sees it, recording what it was asked and told."""

    def __init__(self, inner):
        self.inner = inner
        self.asked: list[dict] = []
        self.told: list[tuple[dict, float | None]] = []
        self.most_open = 0  # the most configs asked and not yet told

    def phase_of(self, config):
        return self.inner.phase_of(config)

    @property
    def label(self):
        return self.inner.label

    def ask(self, n: int = 1):
        configs = self.inner.ask(n)
        self.asked.extend(dict(c) for c in configs)
        self.most_open = max(self.most_open, len(self.asked) - len(self.told))
        return configs

    def tell(self, config, value):
        self.told.append((dict(config), value))
        self.inner.tell(config, value)

    def __getattr__(self, name):  # exhausted, best, phase_of
        return getattr(self.inner, name)


def sweep(spec, db: Path, fake: FakeExecutor, record: list | None = None, **options) -> object:
    """One sweep of ``spec`` into ``db`` on ``fake``; ``record`` collects its strategies."""
    def factory(name, space, seed, max_evals):
        s = Recording(make_strategy(name, space, seed=seed, budget_hint=max_evals))
        if record is not None:
            record.append(s)
        return s

    with Store(db) as store:
        return Sweep(spec, store, fake, SweepOptions(**{"strategy": "grid", "confirm": None, **options}),
                     strategy_factory=factory).run()


def stored(db: Path) -> dict[tuple, object]:
    with Store(db) as store:
        return {tuple(r.params.values()): r for r in store.results() if r.status is not Status.PRUNED}


# -- results -----------------------------------------------------------------------------------

def test_every_config_is_built_run_judged_and_stored_with_its_status(tmp_path):
    spec = toy(tmp_path, extra="[check]\nexpected = { checksum = 1.0 }\n")
    fake = FakeExecutor({
        (1, 1): (Status.OK, Status.OK, {"ms": 3.0, "checksum": 1.0}),
        (1, 2): (Status.COMPILE_ERROR, None),
        (2, 1): (Status.OK, Status.HANG),
        (2, 2): (Status.OK, Status.OK, {"checksum": 1.0}),  # no objective
        (3, 1): (Status.OK, Status.OK, {"ms": 1.0, "checksum": 2.0}),  # a wrong answer
        (3, 2): Planned(Status.REGS_LIMIT, None, message="k: 300 registers > 255"),
    })
    summary = sweep(spec, tmp_path / "r.db", fake)
    rows = stored(tmp_path / "r.db")
    assert {k: r.status for k, r in rows.items()} == {
        (1, 1): Status.OK, (1, 2): Status.COMPILE_ERROR, (2, 1): Status.HANG, (2, 2): Status.NO_RESULT,
        (3, 1): Status.CHECKSUM_MISMATCH, (3, 2): Status.REGS_LIMIT}
    assert rows[(3, 2)].message == "k: 300 registers > 255" and "objective 'ms'" in rows[(2, 2)].message
    assert rows[(1, 1)].gpu_name == "fake" and rows[(1, 2)].gpu_name is None  # never ran
    assert sorted(tuple(j.params.values()) for j, _ in fake.runs) == [(1, 1), (2, 1), (2, 2), (3, 1)]
    assert summary.evaluated == 6 and summary.counts["OK"] == 1
    assert summary.best[("base", "default", "fake")].params == {"A": 1, "B": 1}
    assert fake.shutdowns == []  # the caller owns the executor


def test_results_are_told_in_the_order_asked_whatever_order_they_finish(tmp_path):
    spec = toy(tmp_path, a=range(8), b=range(6))
    record: list = []
    fake = FakeExecutor(timed, gpu_models=("fake", "fake"), build_jobs=2, completion="shuffled", seed=1)
    sweep(spec, tmp_path / "r.db", fake, record, strategy="random", max_evals=30, lookahead=5)
    fake.shutdown()
    (s,) = record
    assert [c for c, _ in s.told] == s.asked and len(s.asked) == 30
    assert [v for _, v in s.told] == [ms(c) for c in s.asked]
    assert fake.most_pending <= 5  # the window: a random search's configs in flight


@pytest.mark.parametrize("strategy", ["random", "surrogate"])
def test_a_seeded_search_is_the_same_however_its_results_arrive(tmp_path, strategy):
    asked = []
    for i, completion in enumerate(["immediate", "shuffled", "shuffled"]):
        folder = tmp_path / str(i)
        folder.mkdir()
        record: list = []
        fake = FakeExecutor(timed, gpu_models=("fake",) * 3, completion=completion, seed=i)
        sweep(toy(folder, a=range(8), b=range(6)), folder / "r.db", fake, record, strategy=strategy,
              max_evals=25, seed=4, lookahead=6)
        fake.shutdown()
        asked.append(record[0].asked)
    assert asked[0] == asked[1] == asked[2]


# -- budgets and resume --------------------------------------------------------------------------

def test_max_evals_counts_what_the_store_holds(tmp_path):
    spec = toy(tmp_path, a=range(8), b=range(6))
    db = tmp_path / "r.db"
    first = sweep(spec, db, FakeExecutor(timed), strategy="surrogate", max_evals=20)
    assert first.evaluated == 20
    fake = FakeExecutor(timed)
    again = sweep(spec, db, fake, strategy="surrogate", max_evals=20)
    assert (again.evaluated, again.resumed) == (0, 20) and fake.builds == [] and fake.runs == []
    more = sweep(spec, db, FakeExecutor(timed), strategy="surrogate", max_evals=26)
    assert (more.evaluated, more.resumed) == (6, 20) and len(stored(db)) == 26


def test_max_evals_counts_per_shape_and_variant(tmp_path):
    spec = toy(tmp_path, a=range(8), b=range(6), extra="""
        [shapes.small]
        defines = { N = 1 }
        [shapes.large]
        defines = { N = 2 }
    """)
    summary = sweep(spec, tmp_path / "r.db", FakeExecutor(timed), strategy="random", max_evals=7)
    with Store(tmp_path / "r.db") as store:
        assert len(store.evaluated("base", "small")) == len(store.evaluated("base", "large")) == 7
    assert summary.evaluated == 14


@pytest.mark.parametrize("strategy", ["grid", "random", "phased", "bayes", "surrogate", "auto"])
def test_a_search_stopped_and_resumed_ends_where_an_uninterrupted_one_does(tmp_path, strategy):
    if strategy == "bayes":
        pytest.importorskip("optuna")
    extra = PHASED if strategy == "phased" else ""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    options = dict(strategy=strategy, seed=3, lookahead=4)
    sweep(toy(one, a=range(8), b=range(6), extra=extra), one / "r.db", FakeExecutor(timed), max_evals=24, **options)
    spec = toy(two, a=range(8), b=range(6), extra=extra)
    for budget in (5, 11, 24):  # stopped twice on the way
        sweep(spec, two / "r.db", FakeExecutor(timed, completion="shuffled", build_jobs=4), max_evals=budget, **options)
    assert set(stored(one / "r.db")) == set(stored(two / "r.db"))
    assert len(stored(one / "r.db")) == 24 or strategy == "phased"


class Killed(BaseException):
    """kill -9, as the driver sees it: the sweep stops where it is (not a Ctrl-C: nothing is
    flushed, nothing cancelled), with what the store holds so far."""


def killed_at(answer, at: int | None):
    """``answer``, but the ``at``-th build or run submitted (counting from 1) kills the sweep:
    what was in flight is lost. None: never."""
    count = itertools.count(1)

    def plan(job):
        if next(count) == at:
            raise Killed
        return answer(job)

    return plan


def submitted(fake: FakeExecutor) -> set[tuple]:
    """The configs a sweep built or ran (the harness's build aside)."""
    return {tuple(j.params.values()) for j in fake.builds if not j.is_harness} | \
        {tuple(j.params.values()) for j, _ in fake.runs}


@pytest.mark.parametrize("strategy", ["grid", "random", "phased", "bayes", "surrogate", "auto"])
def test_a_search_killed_at_random_moments_loses_nothing_and_ends_like_an_uninterrupted_one(tmp_path, strategy):
    """Killed again and again at random moments of each strategy's search, with results in
    flight and arriving out of order: no stored result is lost, none is built or run again,
    and the sweep ends with what an uninterrupted one stores. (A real kill -9 of a whole
    sweep, its processes and SQLite: tests/test_trust.py.)"""
    if strategy == "bayes":
        pytest.importorskip("optuna")
    rng = random.Random(12)
    extra = PHASED if strategy == "phased" else ""
    options = dict(strategy=strategy, max_evals=24, seed=5, lookahead=4, confirm=None)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    sweep(toy(one, a=range(8), b=range(6), extra=extra), one / "r.db", FakeExecutor(timed), **options)
    expected = set(stored(one / "r.db"))
    assert len(expected) == 24 or strategy == "phased"
    spec, db = toy(two, a=range(8), b=range(6), extra=extra), two / "r.db"
    committed: set = set()
    kills = 0
    for cycle in range(100):
        # killed before its 1st to 10th build or run (at most 9 get through: many kills are
        # needed), until 8 kills; then left to finish
        fake = FakeExecutor(killed_at(timed, rng.randint(1, 10) if kills < 8 else None),
                            gpu_models=("fake", "fake"), build_jobs=2, completion="shuffled", seed=cycle)
        try:
            sweep(spec, db, fake, **options)
            finished = True
        except Killed:
            kills += 1
            finished = False
        finally:
            fake.shutdown(cancel=True)
        assert not submitted(fake) & committed, "a config whose result was stored was evaluated again"
        now = set(stored(db)) if db.exists() else set()
        assert committed <= now, "a stored result was lost"
        committed = now
        if finished:
            break
    assert kills >= 4 and committed == expected


def test_a_sweep_killed_again_and_again_in_its_confirmation_loses_no_measurement(tmp_path):
    """Killed at random moments of its confirmation phase, again and again: no stored
    measurement is lost or taken again, and the resumed sweep ends with every (config,
    round) once: the 3 best and the default, 4 rounds each. (Moved here from a kill -9
    series of a gcc program in tests/test_rankings.py; the real kill -9: tests/test_trust.py.)"""
    rng = random.Random(3)
    spec, db = toy(tmp_path, a=range(6), b=[1]), tmp_path / "r.db"  # the default A=0 is not a leader
    options = dict(strategy="grid", confirm=Confirmation(3, 4, None), lookahead=2)

    def measured() -> dict:
        with Store(db) as store:
            return {(m.params["A"], m.round): m.finished for m in store.measurements()}

    seen: dict = {}
    kills = 0
    for _ in range(60):
        count = itertools.count(1)
        at = rng.randint(1, 8)

        def answer(job):  # the confirmation's builds and runs are counted: the kill comes among them
            if job.phase == "confirm" and next(count) == at:
                raise Killed
            return timed(job)

        try:
            sweep(spec, db, FakeExecutor(answer), **options)
            finished = True
        except Killed:
            kills += 1
            finished = False
        now = measured()
        assert all(now.get(k) == v for k, v in seen.items()), "a measurement was lost or taken again"
        seen = now
        if finished:
            break
    assert kills >= 3
    with Store(db) as store:
        count = len(store.measurements())
    assert count == len(seen) == 4 * 4
    assert {a for a, _ in seen} == {0, 1, 2, 3}  # the leaders A=2, 1, 3 and the default


def test_patience_stops_after_that_many_evaluations_without_improvement(tmp_path):
    spec = toy(tmp_path, a=[2, 3, 4, 5, 6, 7], b=[1])  # grid order: each worse than the last
    summary = sweep(spec, tmp_path / "r.db", FakeExecutor(timed), patience=3, lookahead=1)
    assert summary.evaluated == 4


def test_a_search_that_patience_ended_is_still_confirmed(tmp_path):
    from ksweep.verify.confirm import Confirmation

    spec = toy(tmp_path, a=[2, 3, 4, 5, 6, 7], b=[1])  # patience ends it after 4: the usual end, not a cut
    sweep(spec, tmp_path / "r.db", FakeExecutor(timed), patience=3, lookahead=1, confirm=Confirmation(2, 2))
    with Store(tmp_path / "r.db") as store:
        assert store.measurements(), "the leaders were not measured again"


def test_the_window_is_kept_for_the_target_and_reused(tmp_path):
    spec = toy(tmp_path, a=range(8), b=range(6))
    db = tmp_path / "r.db"
    record: list = []
    sweep(spec, db, FakeExecutor(timed, completion="shuffled", build_jobs=4), record, strategy="surrogate", max_evals=10,
          lookahead=3)
    with Store(db) as store:
        assert store.get_meta("window:base:default") == 3
    big = FakeExecutor(timed, gpu_models=("fake",) * 4, build_jobs=8, completion="shuffled")  # would ask 20 ahead
    sweep(spec, db, big, record, strategy="surrogate", max_evals=30)
    assert [s.most_open for s in record] == [3, 3]  # asked ahead of what it was told: it learns from each result
    again = FakeExecutor(timed, gpu_models=("fake",) * 4, build_jobs=8, completion="shuffled")
    sweep(spec, db, again, record, strategy="random", max_evals=40)
    assert again.most_pending <= 3  # a random search: in flight


def _hold_the_first_build(fake: FakeExecutor, enough, idle_steps: int = 200):
    """Release every build and run but the first build, until ``enough()`` or the sweep has
    submitted nothing more for ``idle_steps`` waits of 0.05 s; the first build's future."""
    first, idle = None, 0
    while True:  # each step waits for the sweep to submit something
        held = fake.held()
        if first is None and held:
            first = held[0]  # the first config's build: held back while the others are done
        if first is not None and not first.done() and enough():
            return first
        if len(held) <= 1:
            if idle == idle_steps:  # nothing in flight but the held build: the sweep waits on it
                return first
            idle += 1
            fake.wait_for_submission(0.05)
            continue
        idle = 0
        fake.release(len(held) - 1, newest_first=True)  # all but the oldest, the held build


def _sweep_in_a_thread(*args, **kwargs):
    import threading

    done = threading.Event()
    thread = threading.Thread(target=lambda: (sweep(*args, **kwargs), done.set()), daemon=True)
    thread.start()
    return thread, done


def _finish(fake: FakeExecutor, thread, done) -> None:
    for _ in range(2400):  # a bound on a hang: two minutes
        if done.is_set():
            break
        fake.release()
        done.wait(0.05)
    thread.join(60)
    assert done.is_set(), "the sweep did not end once everything was released"


def test_a_slow_build_does_not_hold_back_the_builds_and_runs_behind_it(tmp_path):
    """A search whose proposals do not depend on its results is asked past a build that has
    not finished: the GPU runs what was built behind it (it used to stop at the window, 3
    configs, until that build ended); the results are still told in the order asked."""
    spec = toy(tmp_path, a=range(8), b=range(6))
    record: list = []
    fake = FakeExecutor(timed, build_jobs=2, completion="manual")  # the slow build holds one of two slots
    thread, done = _sweep_in_a_thread(spec, tmp_path / "r.db", fake, record, strategy="random", max_evals=20,
                                      lookahead=3)
    first = _hold_the_first_build(fake, lambda: len(fake.runs) >= 15)
    assert len(fake.runs) >= 15 and not first.done(), f"{len(fake.runs)} runs while the first build was held"
    _finish(fake, thread, done)
    (s,) = record
    assert [c for c, _ in s.told] == s.asked and len(s.asked) == 20


def test_with_patience_a_slow_build_holds_the_search_at_the_window(tmp_path):
    """Patience counts results in the order told: a grid search is asked at most the window
    ahead of what it was told then, so a slow first build does not let it run through the
    space (it evaluated all 48 configs where patience ends it after 6)."""
    spec = toy(tmp_path, a=[2, 3, 4, 5, 6, 7], b=range(8))  # grid order: no improvement after the first
    fake = FakeExecutor(timed, build_jobs=1, completion="manual")
    thread, done = _sweep_in_a_thread(spec, tmp_path / "r.db", fake, None, patience=3, lookahead=3)
    _hold_the_first_build(fake, lambda: len(fake.builds) > 12, idle_steps=40)
    assert len(fake.builds) <= 3 + 1, f"{len(fake.builds)} configs built while the first build was held"
    _finish(fake, thread, done)
    assert len(stored(tmp_path / "r.db")) <= 3 + 3


# -- stored results that stand, and those that do not ----------------------------------------------

def test_rerun_failed_evaluates_the_failures_again_and_all_everything(tmp_path):
    spec = toy(tmp_path)
    db = tmp_path / "r.db"

    def failing_two(job):
        return (Status.COMPILE_ERROR, None) if job.params["A"] == 2 else timed(job)

    assert sweep(spec, db, FakeExecutor(failing_two)).evaluated == 6
    assert sweep(spec, db, FakeExecutor(timed)).evaluated == 0
    fake = FakeExecutor(timed)
    assert sweep(spec, db, fake, rerun="failed").evaluated == 2
    assert sorted(tuple(j.params.values()) for j in fake.builds) == [(2, 1), (2, 2)]
    assert all(r.status is Status.OK for r in stored(db).values())
    assert sweep(spec, db, FakeExecutor(timed), rerun="all").evaluated == 6


def test_rerun_all_runs_the_default_config_once_before_its_confirmation_rounds(tmp_path):
    """--rerun all evaluated the default config in the sweep, then again before confirming
    (a second history row, a hanging default's timeout twice)."""
    spec = toy(tmp_path)  # the default A=1 B=1 is not among the leaders
    db = tmp_path / "r.db"
    conf = Confirmation(1, 2)
    sweep(spec, db, FakeExecutor(timed), confirm=conf)
    fake = FakeExecutor(timed)
    assert sweep(spec, db, fake, rerun="all", confirm=conf).evaluated == 6
    default = {"A": 1, "B": 1}
    assert sum(dict(j.params) == default for j, _ in fake.runs) == 1 + 2  # evaluated, then its 2 rounds
    with Store(db) as store:
        assert sum(h.params == default for h in store.history()) == 2  # once per sweep


def test_a_reader_during_rerun_all_sees_only_what_it_measured_again(tmp_path):
    """During --rerun all, a reader (report, a plot) showed the stored results the sweep was
    measuring again beside its new ones, and so the previous sweep's confirmed BEST. They
    stand for nothing until measured again: a reader sees them once a plain run resumes."""
    from ksweep.store.standings import best as best_result
    from ksweep.observer import NullObserver

    spec = toy(tmp_path)
    db = tmp_path / "r.db"
    conf = Confirmation(1, 2)
    sweep(spec, db, FakeExecutor(timed), confirm=conf)
    with Store(db) as store:
        assert dict(best_result(store, "base", "default").params) == {"A": 2, "B": 1}

    seen = []

    class Reader(NullObserver):
        def result(self, result, *_, **__):
            with Store(db, create=False) as reader:
                best = best_result(reader, "base", "default")
                shown = reader.results()
                # whether each row shown, and the best, were measured by the rerun (A=2 B=1 may be
                # measured again first: the best then, but not the previous sweep's BEST)
                seen.append((len(shown), all(r.finished >= rerun_began for r in shown),
                             best is not None and best.finished >= rerun_began))

    def slower_two(job):  # A=2 is now the slowest, A=1 B=1 the fastest
        status, run, metrics = timed(job)
        slower = 10.0 * (job.params["A"] == 2) + 0.5 * (job.params["A"] == 3)
        return status, run, {**metrics, "ms": metrics["ms"] + slower}

    rerun_began = time.time()
    with Store(db) as store:
        Sweep(spec, store, FakeExecutor(slower_two), SweepOptions(rerun="all", confirm=conf, strategy="grid"),
              observer=Reader()).run()
    assert [n for n, _, _ in seen] == list(range(1, 7))  # the rows measured again so far, and those only
    assert all(new and best_new for _, new, best_new in seen)
    with Store(db, create=False) as store:
        assert dict(best_result(store, "base", "default").params) == {"A": 1, "B": 1}


def test_a_rerun_all_cut_short_leaves_the_configs_it_did_not_reach_standing(tmp_path):
    """A --rerun all cut short by --max-evals hid the four configs it did not reach until a
    plain run: export and check ranked the two it measured again and took A=1 B=1 for the
    best. They keep their results (a plain run resumes them anyway)."""
    from ksweep.store.standings import best as best_result

    spec = toy(tmp_path)
    db = tmp_path / "r.db"
    sweep(spec, db, FakeExecutor(timed))
    assert sweep(spec, db, FakeExecutor(timed), rerun="all", max_evals=2, strategy="grid").evaluated == 2
    assert len(stored(db)) == 6
    with Store(db) as store:
        assert store.superseded() == set() and len(store.history()) == 8
        assert dict(best_result(store, "base", "default").params) == {"A": 2, "B": 1}
    assert sweep(spec, db, FakeExecutor(timed), strategy="grid").evaluated == 0
    assert len(stored(db)) == 6


def test_a_rerun_all_stopped_by_ctrl_c_leaves_the_configs_it_did_not_reach_standing(tmp_path):
    spec = toy(tmp_path)
    db = tmp_path / "r.db"
    sweep(spec, db, FakeExecutor(timed))

    def stopped_at_2_2(job):
        return (Status.OK, STOPPED) if tuple(job.params.values()) == (2, 2) else timed(job)

    with pytest.raises(Interrupted):
        sweep(spec, db, FakeExecutor(stopped_at_2_2), rerun="all", strategy="grid", lookahead=1)
    rows = stored(db)
    assert len(rows) == 6 and rows[(2, 1)].finished > rows[(3, 1)].finished  # (2, 1) measured again, (3, 1) not
    with Store(db) as store:
        assert store.superseded() == set()


def test_a_rerun_all_stopped_in_its_reference_run_leaves_every_config_standing(tmp_path):
    """Ctrl-C while the reference config ran (before the search) left every config superseded."""
    spec = toy(tmp_path, extra='[check]\nreference = "defaults"\nkeys = ["checksum"]\n')
    db = tmp_path / "r.db"
    sweep(spec, db, FakeExecutor(timed))

    def stopped_in_the_reference(job):
        return (Status.OK, STOPPED) if job.is_reference else timed(job)

    with pytest.raises(Interrupted):
        sweep(spec, db, FakeExecutor(stopped_in_the_reference), rerun="all", strategy="grid")
    with Store(db) as store:
        assert store.superseded() == set() and len(store.results()) == 6


def test_a_rerun_all_cut_short_confirms_the_old_leaders_with_the_new(tmp_path):
    """The configs a --rerun all cut short did not reach were left out of its confirmation: the
    old best (A=2 B=1) was not measured again beside the two configs it reached."""
    spec = toy(tmp_path)
    db = tmp_path / "r.db"
    sweep(spec, db, FakeExecutor(timed))
    sweep(spec, db, FakeExecutor(timed), rerun="all", max_evals=2, strategy="grid",
          confirm=Confirmation(3, 2, None, default=False))
    with Store(db) as store:
        confirmed = {tuple(m.params.values()) for m in store.measurements("base", "default")}
    assert (2, 1) in confirmed and len(confirmed) == 3


def test_a_rerun_all_on_a_cluster_leaves_another_models_results_standing(tmp_path):
    """On a cluster (GPU models known as its runs end), --rerun all marked every stored result
    superseded, another model's too: an executor naming its models never judges those, and no
    plain run on the cluster brought them back (it resumed them, and reports left them out)."""
    spec = toy(tmp_path)
    local, db = tmp_path / "l.db", tmp_path / "r.db"
    for path in (local, db):
        sweep(spec, path, FakeExecutor(timed, gpu_models=("A100",)))
    sweep(spec, local, FakeExecutor(timed, gpu_models=("H100",)), rerun="all", max_evals=2, strategy="grid")
    cluster = FakeExecutor(timed, gpu_models=None, runs_on="H100")
    assert sweep(spec, db, cluster, rerun="all", max_evals=2, strategy="grid").evaluated == 2
    assert len(stored(local)) == 6
    assert sorted(r.gpu_name for r in stored(db).values()) == sorted(r.gpu_name for r in stored(local).values())


def test_a_plain_run_on_a_cluster_resumes_a_rerun_all_cut_short_with_the_old_results(tmp_path):
    spec = toy(tmp_path)
    db = tmp_path / "r.db"
    sweep(spec, db, FakeExecutor(timed, gpu_models=None, runs_on="A100"))
    sweep(spec, db, FakeExecutor(timed, gpu_models=None, runs_on="A100"), rerun="all", max_evals=2, strategy="grid")
    assert sweep(spec, db, FakeExecutor(timed, gpu_models=None, runs_on="A100"), strategy="grid").evaluated == 0
    assert len(stored(db)) == 6


def test_a_result_of_another_gpu_model_is_run_again(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    db = tmp_path / "r.db"
    assert sweep(spec, db, FakeExecutor(timed, gpu_models=("ModelA",))).evaluated == 2
    assert sweep(spec, db, FakeExecutor(timed, gpu_models=("ModelA", "ModelB"))).evaluated == 0
    assert sweep(spec, db, FakeExecutor(timed, gpu_models=("ModelB",))).evaluated == 2
    assert {r.gpu_name for r in stored(db).values()} == {"ModelB"}
    unknown = sweep(spec, db, FakeExecutor(timed, gpu_models=None, run_slots=2))  # a cluster: models unknown
    assert (unknown.evaluated, unknown.resumed) == (0, 2)


def test_a_sweep_without_gpus_reports_no_gpu_figures(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    assert not sweep(spec, tmp_path / "a.db", FakeExecutor(timed, gpu_models=("none",))).has_gpu
    assert sweep(spec, tmp_path / "b.db", FakeExecutor(timed, gpu_models=None)).has_gpu


# -- direction, reference, phases ------------------------------------------------------------------

def test_direction_max_ranks_the_largest_first_and_tells_it_negated(tmp_path):
    spec = toy(tmp_path, sweep='direction = "max"')
    record: list = []
    summary = sweep(spec, tmp_path / "r.db", FakeExecutor(timed), record)
    assert all(v == -ms(c) for c, v in record[0].told)
    best = summary.best[("base", "default", "fake")]
    assert best.metrics["ms"] == max(ms(c) for c, _ in record[0].told)


REFERENCE = """
[check]
keys = ["checksum"]
reference = "defaults"
"""


def test_the_reference_runs_first_and_every_other_config_is_checked_against_it(tmp_path):
    spec = toy(tmp_path, a=[2, 1, 3], extra=REFERENCE)  # the defaults: A=2, B=1

    def answer(job):
        wrong = job.params["A"] == 3 and job.params["B"] == 2
        return Status.OK, Status.OK, {"ms": ms(job.params), "checksum": 7.0 if wrong else 5.0}

    fake = FakeExecutor(answer, completion="shuffled", build_jobs=4)
    sweep(spec, tmp_path / "r.db", fake)
    fake.shutdown()
    assert dict(fake.builds[0].params) == {"A": 2, "B": 1} and fake.builds[0].is_reference
    rows = stored(tmp_path / "r.db")
    assert rows[(2, 1)].phase == "reference"
    assert rows[(3, 2)].status is Status.CHECKSUM_MISMATCH and "expected 5" in rows[(3, 2)].message
    assert all(r.status is Status.OK and r.verified for k, r in rows.items() if k != (3, 2))


def test_when_the_reference_fails_the_others_are_unverified(tmp_path):
    spec = toy(tmp_path, a=[2, 1, 3], extra=REFERENCE)
    fake = FakeExecutor(lambda job: (Status.OK, Status.CRASH) if job.is_reference else timed(job))
    sweep(spec, tmp_path / "r.db", fake)
    rows = stored(tmp_path / "r.db")
    assert rows[(2, 1)].status is Status.CRASH
    others = [r for k, r in rows.items() if k != (2, 1)]
    assert all(r.status is Status.OK and not r.verified and "unverified" in r.message for r in others)


def test_phased_with_a_reference_reaches_tier_two(tmp_path):
    spec = toy(tmp_path, a=[1, 5, 7], b=[2, 4], extra=PHASED + REFERENCE)
    sweep(spec, tmp_path / "r.db", FakeExecutor(timed), strategy="phased")
    phases = {r.phase for r in stored(tmp_path / "r.db").values()}
    assert {"reference", "tier1", "tier2"} <= phases


# -- the harness -----------------------------------------------------------------------------------

HARNESS = """
[build.harness]
command = ["true", "-o", "{harness}", "toy.c"]
"""


def test_the_harness_is_built_once_before_any_run_and_handed_to_every_run(tmp_path):
    spec = toy(tmp_path, run='["{harness}", "{binary}"]', extra=HARNESS)
    fake = FakeExecutor(timed, completion="shuffled", build_jobs=4)
    summary = sweep(spec, tmp_path / "r.db", fake)
    fake.shutdown()
    assert fake.builds[0].is_harness and sum(j.is_harness for j in fake.builds) == 1
    assert len(fake.runs) == 6 and {h for _, h in fake.runs} == {fake.runs[0][1]} and fake.runs[0][1] is not None
    assert summary.evaluated == 6


def test_a_harness_that_does_not_build_stops_the_sweep_before_any_run(tmp_path):
    spec = toy(tmp_path, run='["{harness}", "{binary}"]', extra=HARNESS)
    fake = FakeExecutor(timed, harness=Status.COMPILE_ERROR)
    with pytest.raises(KsweepError, match=r"the harness \(\[build.harness\]\) did not build"):
        sweep(spec, tmp_path / "r.db", fake)
    assert fake.runs == [] and stored(tmp_path / "r.db") == {}


def test_a_harness_linked_into_each_build_that_does_not_build_stops_the_sweep(tmp_path):
    spec = toy(tmp_path, build='["true", "{defines}", "-o", "{binary}", "toy.c", "{harness}"]', extra=HARNESS)
    fake = FakeExecutor(timed, harness=Status.COMPILE_ERROR)
    with pytest.raises(KsweepError, match="did not build"):
        sweep(spec, tmp_path / "r.db", fake)
    assert stored(tmp_path / "r.db") == {}


# -- failures of the host -------------------------------------------------------------------------

@pytest.mark.parametrize("message, said", [
    ("cannot start '/opt/runner': No such file or directory", "the run command cannot be started"),
    ("exit code 1: CUDA error: no CUDA-capable device is detected", "no CUDA GPU is visible"),
])
def test_a_run_failing_for_the_host_stops_the_sweep_and_is_not_stored(tmp_path, message, said):
    spec = toy(tmp_path)
    fake = FakeExecutor(lambda job: Planned(Status.OK, Status.RUN_ERROR, message=message))
    with pytest.raises(EnvironmentProblem, match=said):
        sweep(spec, tmp_path / "r.db", fake)
    assert stored(tmp_path / "r.db") == {}


def test_a_build_command_that_cannot_start_stops_the_sweep(tmp_path):
    spec = toy(tmp_path)
    fake = FakeExecutor(lambda job: Planned(Status.COMPILE_ERROR, None, message="cannot start 'cc': not found"))
    with pytest.raises(EnvironmentProblem, match="the build command cannot be started"):
        sweep(spec, tmp_path / "r.db", fake)
    assert stored(tmp_path / "r.db") == {}


def test_a_cuda_program_sweep_without_a_gpu_is_refused_before_building(tmp_path):
    nvcc = tmp_path / "bin" / "nvcc"  # never run: only its name says what it builds
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\nexit 1\n")
    nvcc.chmod(0o755)
    (tmp_path / "k.cu").write_text("__global__ void k() {}\nint main() { k<<<1, 1>>>(); return 0; }\n")
    spec = toy(tmp_path, build=f'["{nvcc}", "{{defines}}", "-o", "{{binary}}", "k.cu"]')
    spec_text = spec.path.read_text().replace('sources = ["toy.c"]', 'sources = ["k.cu"]')
    spec.path.write_text(spec_text)
    spec = load_spec(spec.path)
    fake = FakeExecutor(timed, gpu_models=("none",))
    with pytest.raises(EnvironmentProblem, match="no NVIDIA GPU"):
        sweep(spec, tmp_path / "r.db", fake)
    assert fake.builds == []
    assert sweep(spec, tmp_path / "r.db", FakeExecutor(timed, gpu_models=("none",)), gpu_check=False).evaluated == 6


# -- Ctrl-C ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["build", "run"])
def test_ctrl_c_keeps_what_finished_and_never_stores_a_stopped_outcome(tmp_path, stage):
    spec = toy(tmp_path)

    def answer(job):
        if tuple(job.params.values()) != (2, 2):
            return timed(job)
        return (STOPPED, None) if stage == "build" else (Status.OK, STOPPED)

    fake = FakeExecutor(answer)
    with pytest.raises(Interrupted) as caught:
        sweep(spec, tmp_path / "r.db", fake, lookahead=1)
    rows = stored(tmp_path / "r.db")
    assert set(rows) == {(1, 1), (1, 2), (2, 1)}  # asked before it, in grid order
    assert caught.value.summary.interrupted and caught.value.summary.evaluated == 3
    assert fake.shutdowns == [True]  # the driver cancelled the executor


def test_ctrl_c_after_the_sweep_ended_still_says_what_it_evaluated(tmp_path):
    """Ctrl-C while the executor shuts down after the last result: 'interrupted: 6 evaluated',
    not a bare KeyboardInterrupt that the command line reported as 0 evaluated."""
    from ksweep.sweep.local import run_with

    class StoppedOnShutdown(FakeExecutor):
        def shutdown(self, cancel=False):
            super().shutdown(cancel)
            raise KeyboardInterrupt

    spec = toy(tmp_path)
    with pytest.raises(Interrupted) as caught:
        run_with(spec, lambda: StoppedOnShutdown(timed), db=tmp_path / "r.db", options=SweepOptions(confirm=None, strategy="grid"))
    assert caught.value.summary.evaluated == 6 and len(stored(tmp_path / "r.db")) == 6


def test_a_second_ctrl_c_while_the_first_stops_the_executor_still_says_what_was_evaluated(tmp_path):
    """Ctrl-C twice (or a signal sent to ksweep and to its process group: `timeout -s INT`):
    the second one, arriving while the driver killed the programs, replaced the sweep's
    Interrupted by a bare KeyboardInterrupt, and the command line said 'interrupted: 0 evaluated'."""
    class StoppedAgainOnCancel(FakeExecutor):
        def shutdown(self, cancel=False):
            super().shutdown(cancel)
            if cancel:
                raise KeyboardInterrupt

    def answer(job):
        return (Status.OK, STOPPED) if tuple(job.params.values()) == (2, 2) else timed(job)

    class StoppedAgainAfterwards(FakeExecutor):  # ... or while the sweep's executor is closed
        def shutdown(self, cancel=False):
            super().shutdown(cancel)
            if not cancel:
                raise KeyboardInterrupt

    from ksweep.sweep.local import run_with

    spec = toy(tmp_path)
    with pytest.raises(Interrupted) as caught:
        sweep(spec, tmp_path / "r.db", StoppedAgainOnCancel(answer), lookahead=1)
    assert caught.value.summary.interrupted and caught.value.summary.evaluated == 3
    with pytest.raises(Interrupted) as caught:
        run_with(spec, lambda: StoppedAgainAfterwards(answer), db=tmp_path / "again.db",
                 options=SweepOptions(confirm=None, strategy="grid", lookahead=1))
    assert caught.value.summary.interrupted and caught.value.summary.evaluated == 3


# -- replayed data ---------------------------------------------------------------------------------

def test_a_sweep_of_recorded_results_stores_what_was_recorded(tmp_path):
    data = synthetic_dataset(a_values=10)  # every config with a >= 9 failed at run time
    path = tmp_path / "replay.toml"
    (tmp_path / "k.c").write_text("int main(void) { return 0; }\n")
    path.write_text(textwrap.dedent("""
        [sweep]
        name = "replay"
        objective = "time"
        [params]
        a = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        b = [1, 2, 4, 8, 16]
        c = [0, 1, 2]
        f = [0, 1]
        [build]
        sources = ["k.c"]
        command = ["true", "{defines}", "-o", "{binary}", "k.c"]
    """))
    fake = FakeExecutor.replaying(data, metric="time", gpu_models=("RTX",) * 2, completion="shuffled", build_jobs=4)
    summary = sweep(load_spec(path), tmp_path / "r.db", fake, strategy="surrogate", max_evals=60, seed=1)
    fake.shutdown()
    rows = list(stored(tmp_path / "r.db").values())
    assert len(rows) == 60 and summary.evaluated == 60
    for r in rows:
        i = fake_index(data, r.params)
        if r.status is Status.OK:
            assert r.metrics["time"] == pytest.approx(float(data.values[i]))
        else:
            assert r.status is Status.RUN_ERROR and r.params["a"] == 9
    assert summary.best[("base", "default", "RTX")].metrics["time"] <= 1.05 * data.optimum


def fake_index(data, params) -> int:
    from ksweep.replay import ReplaySpace

    return ReplaySpace(data).index(params)


@pytest.mark.parametrize("raw_limit", [20_000, 0])  # pruned configs recorded, or the space too large for it
def test_a_config_a_new_constraint_prunes_is_never_ranked_again(tmp_path, monkeypatch, raw_limit):
    """A constraint added after a sweep prunes its best config: the stored result stayed
    current, so report ranked it BEST, export shipped it and explain said it was pruned; and
    a constraint taken out again left the PRUNED rows with its reason."""
    from ksweep.store.ranking import rank
    from ksweep.sweep import driver

    monkeypatch.setattr(driver, "PRUNED_RECORD_LIMIT", raw_limit)
    db = tmp_path / "t.db"

    def sweep(extra: str = "", evals=None):
        spec = toy(tmp_path, extra=extra)
        with Store(db) as store:
            Sweep(spec, store, FakeExecutor(timed), SweepOptions(strategy="grid", confirm=None, max_evals=evals)).run()
            return {cid: r for cid, r in ((config_id(r.params), r) for r in store.results())}

    first = sweep()
    assert rank(list(first.values()), "ms", "min")[0].params == {"A": 2, "B": 1}
    pruned = sweep('[[constraints]]\nname = "no21"\nexpr = "not (A == 2 and B == 1)"\nreason = "wrong"\n')
    best = rank([r for r in pruned.values() if r.status is Status.OK], "ms", "min")[0]
    assert best.params != {"A": 2, "B": 1}
    if raw_limit:
        assert pruned['{"A":2,"B":1}'].status is Status.PRUNED and "no21" in pruned['{"A":2,"B":1}'].message
    else:
        assert '{"A":2,"B":1}' not in pruned  # superseded: left out of the results reports read
    again = sweep()  # the constraint taken out: the config is valid and evaluated again
    assert again['{"A":2,"B":1}'].status is Status.OK
    assert all(r.status is Status.OK for r in again.values())
    if raw_limit:  # a constraint that prunes configs, taken out and put back: their PRUNED rows stand again
        narrow = '[[constraints]]\nname = "a_le_2"\nexpr = "A <= 2"\nreason = "small"\n'
        assert sweep(narrow)['{"A":3,"B":1}'].status is Status.PRUNED
        assert '{"A":3,"B":1}' not in sweep(evals=4)  # valid again, not evaluated yet: its PRUNED row left out
        assert sweep(narrow)['{"A":3,"B":1}'].status is Status.PRUNED  # pruned again: shown as such


@pytest.mark.parametrize("runs_on, has_gpu", [("none", False), ("A100", True)])
def test_a_cluster_whose_runs_went_to_no_gpu_reports_no_gpu_figures(tmp_path, runs_on, has_gpu):
    """A CPU sweep on a Dask cluster (GPU models unknown before it runs) reported "GPU 16.9 s,
    GPU idle 4%": the summary learns from the runs where they went."""
    from ksweep.report.progress import summary_line

    spec = toy(tmp_path)
    with Store(tmp_path / "t.db") as store:
        summary = Sweep(spec, store, FakeExecutor(timed, gpu_models=None, runs_on=runs_on), SweepOptions(strategy="grid", confirm=None)).run()
    assert summary.has_gpu is has_gpu
    assert ("GPU idle" in summary_line(summary)) is has_gpu


def test_a_new_default_judges_again_every_standing_result_not_only_those_in_the_space(tmp_path):
    """The reference changed while a list was narrowed: the results outside the list were not
    judged again but the reference was recorded as applied, so once the list was widened back
    they stood with the old reference's verdicts (a fresh database gives others)."""
    times, sums = {1: 2.0, 2: 1.0, 3: 3.0}, {1: 5.0, 2: 5.0, 3: 7.0}  # A=3 disagrees with A=1 and A=2

    def run(folder, values, default):
        (folder / "toy.c").write_text("int main(void) { return 0; }\n")
        (folder / "toy.toml").write_text(textwrap.dedent(f"""
            [sweep]
            objective = "ms"
            [params]
            A = {{ values = {values}, default = {default} }}
            [build]
            sources = ["toy.c"]
            command = ["true", "{{defines}}", "-o", "{{binary}}", "toy.c"]
            [run]
            command = ["{{binary}}"]
            [check]
            reference = "defaults"
        """))
        answer = lambda job: (Status.OK, Status.OK, {"ms": times[job.params["A"]], "checksum": sums[job.params["A"]]})
        with Store(folder / "t.db") as store:
            Sweep(load_spec(folder / "toy.toml"), store, FakeExecutor(answer), SweepOptions(strategy="grid", confirm=None)).run()
            return {r.params["A"]: r.status for r in store.results()}

    run(tmp_path, [1, 2, 3], 1)
    run(tmp_path, [2, 3], 3)  # narrowed, and a new default: A=1 outside the list
    widened = run(tmp_path, [1, 2, 3], 3)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert widened == run(fresh, [1, 2, 3], 3) and widened[1] is Status.CHECKSUM_MISMATCH


def test_an_observer_without_a_method_is_said_at_once(tmp_path):
    """An observer lacking target_started failed with an AttributeError about `finished`,
    raised from the clean-up after the first error."""
    class Partial:
        def result(self, *a, **k):
            pass

        def finished(self, *a, **k):
            pass

    with Store(tmp_path / "t.db") as store, pytest.raises(KsweepError, match="no target_started, build_started"):
        Sweep(toy(tmp_path), store, FakeExecutor(timed), SweepOptions(strategy="grid", confirm=None), observer=Partial())
