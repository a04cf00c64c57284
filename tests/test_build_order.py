"""Which queued build starts next (sweep/build_order.py): the order asked, or, while a GPU
slot has nothing to run, the config expected to build soonest from the builds seen."""

from ksweep.status import Status
from ksweep.sweep.build_order import BuildCosts, next_build
from ksweep.testing import FakeExecutor
from ksweep.testing.fake_executor import Planned

from test_driver import Recording, sweep, toy


def test_the_expected_build_time_adds_up_each_values_distance_from_the_mean():
    costs = BuildCosts()
    assert costs.expected({"S": 4}) is None
    for stages, tile, seconds in ((2, 64, 40.0), (4, 64, 60.0), (2, 128, 60.0), (4, 128, 80.0)):
        costs.see({"STAGES": stages, "TILE": tile}, seconds)
    # mean 60; STAGES=2 builds 10 s below it, TILE=128 10 s above
    assert costs.expected({"STAGES": 2, "TILE": 128}) == 60.0
    assert costs.expected({"STAGES": 2, "TILE": 64}) == 40.0
    assert costs.expected({"STAGES": 8, "TILE": 64}) == 50.0  # a value never built: no change for it
    assert costs.expected({"STAGES": [1, 2], "TILE": 64}) == 50.0  # list values are keys too


def test_the_order_asked_unless_a_gpu_waits_then_the_cheapest_first_asked():
    costs = BuildCosts()
    queued = [{"A": 1}, {"A": 0}, {"A": 2}, {"A": 0}]
    assert next_build(queued, costs, starving=True) == 0  # nothing seen: the order asked
    for seconds in (10.0, 10.4):
        costs.see({"A": 1}, seconds)
        costs.see({"A": 0}, seconds / 10)
    assert next_build(queued, costs, starving=False) == 0
    assert next_build(queued, costs, starving=True) == 1  # A=0 (expected 1 s), the first of two
    # builds that differ by their noise only (gcc builds of 0.11 and 0.10 s) keep the order asked
    even = BuildCosts()
    for seconds in (0.11, 0.10):
        even.see({"A": 1}, seconds)
        even.see({"A": 0}, 0.21 - seconds)
    assert next_build(queued, even, starving=True) == 0


def test_one_build_of_a_value_moves_no_order():
    """A grid sweep of one build at a time, interrupted: its first three builds (one X each) took
    0.40, 0.15 and 0.15 s on a loaded machine, the first slow as a sweep's first build is. Each
    X's distance from the mean came from one build, and (MODE=1, X=2) looked 35% cheaper than
    (MODE=0, X=4), whose X was never built: a hanging MODE=1 config ran before the last MODE=0
    one, which Ctrl-C then never let finish."""
    costs = BuildCosts()
    for x, seconds in ((1, 0.40), (2, 0.15), (3, 0.15)):
        costs.see({"MODE": 0, "X": x}, seconds)
    queued = [{"MODE": 0, "X": 4}, {"MODE": 1, "X": 1}, {"MODE": 1, "X": 2}, {"MODE": 1, "X": 3}]
    assert next_build(queued, costs, starving=True) == 0
    costs.see({"MODE": 1, "X": 2}, 0.15)  # a second build of X=2, and a first of MODE=1
    assert costs.expected({"MODE": 1, "X": 2}) < costs.expected({"MODE": 0, "X": 4})


def test_a_gpu_without_work_gets_the_cheapest_build_next_and_the_strategy_hears_the_order_asked(tmp_path):
    """One build slot, one GPU: each time the GPU has nothing to run, the build started is the
    cheapest queued one (A=0 builds in 1 s, A=1 in 11 s, ... A=3 in 31 s) rather than the next
    asked; the results are told in the order asked whatever order they were built in."""
    spec = toy(tmp_path, a=[3, 2, 1, 0], b=range(8))

    def planned(job):
        return Planned(Status.OK, Status.OK, {"ms": 1.0 + job.params["A"]}, build_seconds=1.0 + 10 * job.params["A"])

    record: list[Recording] = []
    fake = FakeExecutor(planned, build_jobs=1)
    sweep(spec, tmp_path / "r.db", fake, record, strategy="random", lookahead=8)
    built = [j.params["A"] for j in fake.builds if not j.is_harness]
    asked = [c["A"] for c in record[0].asked]
    assert sorted(built) == sorted(asked) and len(built) == 32
    # the seconds of building, summed over the builds in the order each was started: what the
    # GPU waits for (the order asked: the random one)
    def waited(order):
        return sum(sum(1.0 + 10 * a for a in order[:i + 1]) for i in range(len(order)))

    assert built != asked and waited(built) < waited(asked), (built, asked)
    assert [c for c, _ in record[0].told] == record[0].asked



def test_only_a_build_that_made_its_program_teaches_the_costs():
    """A build that failed fast gives the GPU nothing to run, and a cached one cost nothing to
    build: neither makes its values look cheap."""
    from ksweep.build.builder import BuildResult

    costs = BuildCosts()
    costs.learn({"A": 0}, BuildResult(Status.COMPILE_ERROR, seconds=0.5))
    costs.learn({"A": 0}, BuildResult(Status.OK, seconds=0.01, cached=True))
    assert costs.expected({"A": 0}) is None
    costs.learn({"A": 1}, BuildResult(Status.OK, seconds=10.0))
    costs.learn({"A": 0}, BuildResult(Status.REGS_LIMIT, seconds=0.5))  # ptxas said no: no program to run
    assert costs.expected({"A": 0}) == 10.0 and costs.count == 1


def test_a_config_whose_build_is_under_way_waits_for_it_without_a_build_slot(tmp_path):
    """B is read by the run only: the four configs of one A share a build. While A=1's build
    runs (held here), its three siblings are not sent to build beside it (each would hold a
    build slot, waiting on the cache's lock); the other A's builds and runs go on, and the
    siblings come once it is done."""
    from test_driver import _finish, _hold_the_first_build, _sweep_in_a_thread

    (tmp_path / "toy.c").write_text("int main(void) { return 0; }\n")
    spec = tmp_path / "toy.toml"
    spec.write_text('[sweep]\nname = "toy"\nobjective = "ms"\n[params]\nA = [1, 2, 3]\n'
                    'B = { values = [1, 2, 3, 4], define = false }\n'
                    '[build]\nsources = ["toy.c"]\ncommand = ["true", "{defines}", "-o", "{binary}", "toy.c"]\n'
                    '[run]\ncommand = ["{binary}", "{B}"]\n')
    from ksweep import load_spec

    def planned(job):
        return Status.OK, Status.OK, {"ms": 1.0 + job.params["A"] + job.params["B"] / 10}

    fake = FakeExecutor(planned, build_jobs=2, completion="manual")
    thread, done = _sweep_in_a_thread(load_spec(spec), tmp_path / "r.db", fake, None, lookahead=8)
    first = _hold_the_first_build(fake, lambda: len(fake.runs) >= 6)
    ones = [j.params["B"] for j in fake.builds if not j.is_harness and j.params["A"] == 1]
    assert not first.done() and len(fake.runs) >= 6 and ones == [1], (ones, len(fake.runs))
    _finish(fake, thread, done)
    assert sorted(j.params["B"] for j in fake.builds if j.params["A"] == 1) == [1, 2, 3, 4]
