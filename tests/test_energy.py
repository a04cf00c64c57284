"""The energy observer and multi-objective sweeps without a GPU: the worker's energy phase on
a stand-in GPU with scripted power and an NVML-like energy counter, NVML's side behind a
fake pynvml, the objectives of a spec, the Pareto front, and `ksweep run --objectives
time,energy` in kernel mode end to end."""

import csv
import functools
import io
import shutil
import sys
import tomllib
import types

import pytest

from ksweep import Status, load_spec, spec_from_dict
from ksweep.errors import EnvironmentProblem, KsweepError, SpecError
from ksweep.gpu.physics import Work, with_efficiency
from ksweep.kernel.backend import FakeBackend
from ksweep.kernel.worker import EnergyUnavailable, Worker
from ksweep.report.pareto import front_ids, fronts, nondominated
from ksweep.result import Result
from ksweep.run.gpu_state import FakeMonitor, GpuSample, NvmlMonitor, summarize
from ksweep.spec.model import Objective
from ksweep.spec.objectives import parse_objective, parse_objectives, resolve
from ksweep.store.sqlite import Store
from ksweep.verify.checks import judge

from conftest import KERNELS, vadd_kernel_spec
from kernels.fake_energy import PROFILE  # the stand-in GPU's ms and W by BLOCK

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
ENERGY = KERNELS / "fake_energy.py"


def setup_request(energy_ms=200.0):
    return {"op": "setup", "args": "vadd_args.py:make_args", "root": str(KERNELS), "sizes": {"N": 4096}, "seed": 0,
            "outputs": [0], "reference": "vadd_args.py:reference", "atol": 1e-6, "rtol": 1e-6,
            "timing": {"warmup_ms": 1, "budget_ms": 10, "min_reps": 3, "max_reps": 20, "flush_l2": True},
            "energy": {"duration_ms": energy_ms} if energy_ms else None}


def evaluate(worker, block, tmp_path):
    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"not really")
    return worker.evaluate({"op": "eval", "cubin": str(cubin), "entry": "vadd", "grid": [1, 1, 1],
                            "block": [block, 1, 1], "smem": 0, "params": {"BLOCK": block}})


# -- the worker's energy phase -------------------------------------------------------------------
def test_the_energy_phase_finds_the_scripted_power_and_energy_per_launch(tmp_path):
    """The stand-in GPU draws POWER_W for LAUNCH_MS per launch and its counter changes every
    20 ms: the phase recovers both within the half-read error at each end of its window."""
    worker = Worker(FakeBackend(str(ENERGY)))
    worker.setup(setup_request(energy_ms=200.0))
    for block, (ms, watts) in PROFILE.items():
        answer = evaluate(worker, block, tmp_path)
        m = answer["metrics"]
        assert answer["outputs"] == "matched" and m["ms"] == pytest.approx(ms)
        assert m["power_w"] == pytest.approx(watts, rel=0.01)
        assert m["energy_mj"] == pytest.approx(watts * ms, rel=0.01)  # W x ms = mJ
        assert m["energy_window_s"] >= 0.2 and m["energy_launches"] == pytest.approx(m["energy_window_s"] * 1e3 / ms,
                                                                                       rel=0.05)


def test_without_the_observer_nothing_but_time_is_measured(tmp_path):
    worker = Worker(FakeBackend(str(ENERGY)))
    worker.setup(setup_request(energy_ms=None))
    assert not {"power_w", "energy_mj"} & set(evaluate(worker, 128, tmp_path)["metrics"])


class _ScriptedNvml(FakeBackend):
    """The stand-in GPU, with another NVML: a counter scripted by the test."""

    def __init__(self, counter):
        super().__init__(str(ENERGY))
        self._scripted = counter

    def monitor(self):
        return FakeMonitor(lambda index, n: None, energy=self._scripted)


def test_a_counter_that_never_changes_or_stops_answering_is_said_in_the_hosts_words(tmp_path):
    from ksweep.run.environment import host_failure

    worker = Worker(_ScriptedNvml(lambda device, n: 5000.0))
    worker.setup(setup_request(energy_ms=100.0))
    with pytest.raises(EnergyUnavailable, match="changed 0 times in 3.1 s of launches") as caught:
        evaluate(worker, 256, tmp_path)
    assert host_failure(str(caught.value)).startswith("NVML cannot measure energy on this GPU: its energy counter")
    worker = Worker(_ScriptedNvml(lambda device, n: 1000.0 * n if n < 3 else None))
    worker.setup(setup_request(energy_ms=100.0))
    with pytest.raises(EnergyUnavailable, match="stopped answering"):
        evaluate(worker, 256, tmp_path)


def test_a_gpu_without_an_energy_counter_fails_the_setup(tmp_path):
    worker = Worker(FakeBackend(str(KERNELS / "fake_vadd.py")))  # no power model: no NVML to read
    with pytest.raises(EnergyUnavailable, match="^NVML cannot measure energy on this GPU: no NVML"):
        worker.setup(setup_request())


@nvcc
def test_a_sweep_that_cannot_measure_energy_stops_with_one_line(tmp_path):
    from ksweep.app.sweep import run_sweep
    from ksweep.sweep.driver import SweepOptions

    spec = load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128, 256]\nELEMS = [1]", 4096, 'observers = ["energy"]'))
    with pytest.raises(EnvironmentProblem) as caught:
        run_sweep(spec, options=SweepOptions(strategy="grid", confirm=None), jobs=2,
                  kernel_backend=f"fake:{KERNELS / 'fake_vadd.py'}")
    assert "NVML cannot measure energy on this GPU" in str(caught.value) and "\n" not in str(caught.value)
    with Store(tmp_path / ".ksweep" / "k.db") as store:
        assert not store.results()  # a failure of the host is no config's result


# -- NVML's side, through a fake pynvml -------------------------------------------------------
def test_nvml_reads_the_energy_counter_of_the_gpu_named_by_its_pci_bus_id(monkeypatch):
    calls = []
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByPciBusId=lambda bus: calls.append(("pci", bus)) or f"h:{bus}",
        nvmlDeviceGetHandleByIndex=lambda i: calls.append(("index", i)) or f"h:{i}",
        nvmlDeviceGetTotalEnergyConsumption=lambda h: {"h:0000:3B:00.0": 123456, "h:1": 7}[h],
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monitor = NvmlMonitor()
    assert monitor.energy_mj("0000:3B:00.0") == 123456.0 and monitor.energy_mj(1) == 7.0
    assert monitor.energy_mj("0000:3B:00.0") == 123456.0
    assert calls == [("pci", "0000:3B:00.0"), ("index", 1)]  # handles are looked up once

    def not_supported(handle):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")  # a GPU before Volta

    fake.nvmlDeviceGetTotalEnergyConsumption = not_supported
    assert NvmlMonitor().energy_mj(1) is None


def test_the_gpu_state_of_a_run_has_its_mean_power():
    samples = [GpuSample(power_w=w) for w in (100.0, 300.0, 350.0)]
    state = summarize(samples)
    assert state["power_max_w"] == 350.0 and state["power_mean_w"] == 250.0


# -- the energy observer in a spec ---------------------------------------------------------------
def _kernel_spec(tmp_path, sweep: str, extra_kernel: str = "", physics: str = ""):
    path = vadd_kernel_spec(tmp_path, "BLOCK = [128, 256]\nELEMS = [1]", 4096, extra_kernel)
    path.write_text(path.read_text().replace("[sweep]\n", f"[sweep]\n{sweep}\n") + physics)
    return path


@pytest.mark.parametrize("extra, fragment", [
    ('observers = ["power"]', "kernel.observers: unknown observer 'power' (known: energy)"),
    ('observers = "energy"', "kernel.observers: expected a list of strings"),
    ("timing = { energy_ms = 0 }", "kernel.timing.energy_ms: expected a positive number, got 0"),
    ("timing = { energy_ms = inf }", "kernel.timing.energy_ms: expected a positive finite number, got inf"),
])
def test_observer_mistakes_are_one_line(tmp_path, extra, fragment):
    path = _kernel_spec(tmp_path, "", extra)
    with pytest.raises(SpecError) as caught:
        spec_from_dict(tomllib.loads(path.read_text()), path=path)
    assert str(caught.value).startswith(f"k.toml: {fragment}")


def test_the_energy_observer_keys_results_only_when_it_is_on(tmp_path):
    """A sweep without the observer keeps the result keys it had before the observer existed
    (its settings are left out), and turning it on evaluates every config again."""
    from ksweep.app.wiring import mode_for
    from ksweep.space.space import Space
    from ksweep.sweep.jobs import JobFactory

    def key(sweep="", extra=""):
        spec = load_spec(_kernel_spec(tmp_path, sweep, extra))
        factory = JobFactory(spec, spec.shape(None), spec.variant(None), Space.from_spec(spec), mode_for(spec))
        return factory.make({"BLOCK": 128, "ELEMS": 1}).cache_key

    plain = key()
    assert key(extra="timing = { energy_ms = 500 }") == plain
    on = key(extra='observers = ["energy"]')
    assert on != plain and key(extra='observers = ["energy"]\ntiming = { energy_ms = 500 }') != on


def test_the_evaluation_timeout_makes_room_for_the_energy_phase(tmp_path):
    from ksweep.kernel.executor import eval_timeout
    from ksweep.kernel.worker import ENERGY_EDGE_S

    assert eval_timeout(load_spec(_kernel_spec(tmp_path, "", "timeout = 4.0")).kernel) == 4.0
    on = load_spec(_kernel_spec(tmp_path, "", 'timeout = 4.0\nobservers = ["energy"]\ntiming = { energy_ms = 2000 }'))
    assert eval_timeout(on.kernel) == 4.0 + 2.0 + ENERGY_EDGE_S


# -- objectives in a spec --------------------------------------------------------------------------
def test_objective_names_and_their_directions():
    assert parse_objective("time") == Objective("time", "min")
    assert parse_objective("gflops_per_watt") == Objective("gflops_per_watt", "max")
    assert parse_objective("tflops:max") == Objective("tflops", "max")
    assert parse_objective("tflops", direction="max") == Objective("tflops", "max")
    assert parse_objective("us") == Objective("us", "min")
    named = parse_objectives(["time", "energy", "power", "gflops_per_watt", "tflops:max"])
    # kernel mode's names are its metrics; in program mode a name is the program's own metric
    assert [(o.metric, o.direction) for o in resolve(named, kernel_mode=True)] == [
        ("ms", "min"), ("energy_mj", "min"), ("power_w", "min"), ("gflops_per_watt", "max"), ("tflops", "max")]
    assert resolve(named, kernel_mode=False) == named
    # a database whose results have a metric named time (recorded Kernel Tuner data) keeps it
    assert resolve(named[:2], True, metrics={"time", "energy_mj"}) == (Objective("time", "min"),
                                                                        Objective("energy_mj", "min"))
    for bad, words in (("tflops:up", "the direction is min or max, got 'up'"), ("time:", "give a metric name"),
                       (3, "expected a metric name")):
        with pytest.raises(ValueError, match=words):
            parse_objective(bad)
    # what kernel mode measures has its direction; in program mode the same names are the program's
    for bad, words in (("energy:max", "energy is minimised; drop 'max'"),
                       ("gflops_per_watt:min", "gflops_per_watt is maximised; drop 'min'")):
        with pytest.raises(ValueError, match=words):
            resolve([parse_objective(bad)], kernel_mode=True)
        assert resolve([parse_objective(bad)], kernel_mode=False) == (parse_objective(bad),)
    with pytest.raises(ValueError, match="time is already an objective"):
        parse_objectives(["time", "time"])


def test_a_program_keeps_its_own_metric_named_time(program_dir):
    from conftest import GCC_BUILD

    spec = load_spec(program_dir('[sweep]\nobjectives = ["time", "energy"]\n' + GCC_BUILD + "[params]\nMODE = [0]\n"))
    assert spec.objective_list() == (Objective("time", "min"), Objective("energy", "min"))
    assert spec.kernel is None
    # a program's metric named power may be maximised (kernel mode's power, measured by ksweep, may not)
    spec = load_spec(program_dir('[sweep]\nobjective = "power"\ndirection = "max"\n' + GCC_BUILD
                                 + "[params]\nMODE = [0]\n"))
    assert spec.objective_list() == (Objective("power", "max"),)


def test_an_energy_objective_turns_the_energy_observer_on(tmp_path):
    spec = load_spec(_kernel_spec(tmp_path, 'objectives = ["time", "energy"]'))
    assert spec.objective == Objective("ms", "min") and spec.objective_list()[1] == Objective("energy_mj", "min")
    assert spec.kernel.observers == ("energy",)
    spec = load_spec(_kernel_spec(tmp_path, 'objective = "gflops_per_watt"', physics='[physics]\nflops = "N"\n'))
    assert spec.objective == Objective("gflops_per_watt", "max") and spec.objectives == ()
    assert spec.kernel.observers == ("energy",)
    plain = load_spec(_kernel_spec(tmp_path, 'objective = "ms"', 'observers = ["energy"]'))
    assert plain.kernel.observers == ("energy",) and plain.objective_list() == (Objective("ms", "min"),)
    assert load_spec(_kernel_spec(tmp_path, "")).kernel.observers == ()


@pytest.mark.parametrize("sweep, fragment", [
    ('objectives = ["time", "energy:max"]', "sweep.objectives: energy is minimised"),
    ('objectives = "time,energy"', "sweep.objectives: expected a list such as"),
    ('objectives = ["time", "ms"]', "sweep.objectives: ms is named twice (time is ms in kernel mode)"),
    ('objectives = ["time"]\nobjective = "ms"', "sweep.objectives: give either objectives"),
    ('objectives = ["time", "gflops_per_watt"]', "sweep.objectives: gflops_per_watt needs the FLOP count"),
    ('objective = "gflops_per_watt"', "sweep.objective: gflops_per_watt needs the FLOP count"),
    ('objective = "energy"\ndirection = "max"', "sweep.objective: energy is minimised"),
])
def test_objective_mistakes_are_one_line(tmp_path, sweep, fragment):
    path = _kernel_spec(tmp_path, sweep)
    with pytest.raises(SpecError) as caught:
        spec_from_dict(tomllib.loads(path.read_text()), path=path)
    assert str(caught.value).startswith(f"k.toml: {fragment}")


def test_several_objectives_are_part_of_the_result_key(tmp_path):
    from ksweep.app.wiring import mode_for
    from ksweep.space.space import Space
    from ksweep.sweep.jobs import JobFactory

    def key(sweep):
        spec = load_spec(_kernel_spec(tmp_path, sweep, 'observers = ["energy"]'))
        factory = JobFactory(spec, spec.shape(None), spec.variant(None), Space.from_spec(spec), mode_for(spec))
        return factory.make({"BLOCK": 128, "ELEMS": 1}).cache_key

    assert key('objective = "time"') == key("")  # one objective: the key it always had
    assert key('objectives = ["time", "energy"]') != key("")  # every objective must be measured


def test_every_objective_must_be_measured_and_gflops_per_watt_comes_from_the_flops():
    assert judge({"ms": 1.0, "energy_mj": 2.0}, ["ms", "energy_mj"], spec_from_dict({"params": {"X": [1]}}).check,
                 None, False, outputs_checked=True) == (Status.OK, "", True)
    status, message, _ = judge({"ms": 1.0}, ["ms", "energy_mj"], spec_from_dict({"params": {"X": [1]}}).check,
                               None, False)
    assert status is Status.NO_RESULT and message.startswith("objective 'energy_mj' missing")
    # 2e12 flop in 4 J (4000 mJ) per launch: 500 GFLOP per joule, i.e. GFLOP/s per watt
    assert with_efficiency({"energy_mj": 4000.0}, Work(flops=2e12))["gflops_per_watt"] == pytest.approx(500.0)
    assert "gflops_per_watt" not in with_efficiency({"energy_mj": 4000.0}, None)
    assert "gflops_per_watt" not in with_efficiency({"ms": 1.0}, Work(flops=2e12))


# -- the Pareto front -------------------------------------------------------------------------------
def test_nondominated_points_by_hand():
    # (time, energy), both minimised: (3, 3) is beaten by (2, 2); (2, 2) twice: both stay
    points = [(1, 5), (2, 2), (3, 3), (4, 1), (2, 2), (5, 5)]
    assert nondominated(points, [False, False]) == [True, True, False, True, True, False]
    # (time, gflops_per_watt): the second maximised, so (2, 2) is now beaten by (1, 5)
    assert nondominated(points, [False, True]) == [True, False, False, False, False, False]
    # three objectives: (3, 3, 0) survives on the third
    assert nondominated([(1, 1, 5), (3, 3, 0), (2, 2, 6)], [False, False, False]) == [True, True, False]
    assert nondominated([], [False, False]) == []


def _result(shape, block, status=Status.OK, gpu=None, **metrics):
    return Result("base", shape, {"BLOCK": block}, status, metrics=metrics, gpu_name=gpu)


def test_fronts_per_shape_and_gpu_model_over_valid_configs_only():
    time_energy = (Objective("ms", "min"), Objective("energy_mj", "min"))
    rows = [_result("a", 64, ms=4.0, energy_mj=400.0), _result("a", 128, ms=2.0, energy_mj=300.0),
            _result("a", 256, ms=1.0, energy_mj=400.0), _result("a", 512, ms=1.5, energy_mj=750.0),
            _result("a", 32, Status.CHECKSUM_MISMATCH, ms=0.1, energy_mj=1.0),  # wrong: never on a front
            _result("a", 16, ms=0.5),  # no energy: not compared
            _result("a", 8, ms=0.4, energy_mj=float("nan")),
            _result("b", 64, ms=9.0, energy_mj=9.0)]
    found = fronts(rows, time_energy)
    assert {k[:2]: [r.params["BLOCK"] for r in v] for k, v in found.items()} == {("base", "a"): [256, 128],
                                                                               ("base", "b"): [64]}
    assert front_ids(rows, time_energy) == {("base", "a", '{"BLOCK":128}'), ("base", "a", '{"BLOCK":256}'),
                                            ("base", "b", '{"BLOCK":64}')}
    gpus = [_result("a", 64, gpu="H100", ms=1.0, energy_mj=1.0), _result("a", 128, gpu="A100", ms=2.0, energy_mj=2.0)]
    assert sorted(len(v) for v in fronts(gpus, time_energy).values()) == [1, 1]  # never compared across GPUs


# -- a multi-objective sweep from the command line --------------------------------------------------
@nvcc
def test_run_with_objectives_time_energy_reports_the_pareto_front(tmp_path, monkeypatch, capsys):
    import ksweep.app.sweep as app_sweep
    from ksweep.cli.main import main

    monkeypatch.setattr(app_sweep, "run_sweep", functools.partial(app_sweep.run_sweep, kernel_backend=f"fake:{ENERGY}"))
    path = vadd_kernel_spec(tmp_path, "BLOCK = [64, 128, 256, 512]\nELEMS = [1]", 4096,
                            "timing = { warmup_ms = 1, budget_ms = 10, min_reps = 3, max_reps = 20, energy_ms = 200 }")
    assert main(["run", str(path), "-j", "2", "--no-confirm", "-q", "--objectives", "time,energy"]) == 0
    out = capsys.readouterr().out
    front = out[out.index("Pareto front over ms (min), energy_mj (min)"):]
    assert "2 of 4 ok configs" in front.splitlines()[0]
    table = front.split("\n\n")[0].splitlines()
    assert table[1].split() == ["BLOCK", "ELEMS", "MS", "ENERGY_MJ", "POWER_W"]
    rows = [line.split() for line in table[2:]]
    assert [r[0] for r in rows] == ["256", "128"]  # the fastest, then the least energy; 64 and 512 are beaten
    db = tmp_path / ".ksweep" / "k.db"
    with Store(db) as store:
        stored = {r.params["BLOCK"]: r for r in store.results()}
        assert store.get_meta("objectives") == [{"metric": "ms", "direction": "min"},
                                                {"metric": "energy_mj", "direction": "min"}]
    for block, (ms, watts) in PROFILE.items():
        assert stored[block].metrics["power_w"] == pytest.approx(watts, rel=0.01)
        assert stored[block].metrics["energy_mj"] == pytest.approx(ms * watts, rel=0.01)
    marks = {int(r["BLOCK"]): r["pareto"] for r in csv.DictReader(io.StringIO(db.with_suffix(".csv").read_text()))}
    assert marks == {64: "0", 128: "1", 256: "1", 512: "0"}
    # the report shows it again (the fronts computed once), and over other metrics on request
    import ksweep.report.pareto as pareto

    computed = []
    monkeypatch.setattr(pareto, "fronts", lambda *a, real=pareto.fronts: computed.append(a) or real(*a))
    assert main(["report", str(db)]) == 0
    assert "Pareto front over ms (min), energy_mj (min)" in capsys.readouterr().out
    assert len(computed) == 1
    assert main(["report", str(db), "--objectives", "time,power", "--format", "csv"]) == 0
    marks = {int(r["BLOCK"]): r["pareto"] for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert marks == {64: "1", 128: "1", 256: "1", 512: "0"}  # by power, the slow 64 is the frugal end
    assert main(["report", str(db), "--objectives", "time,energy:max"]) == 2
    assert capsys.readouterr().err == "ksweep: error: --objectives time,energy:max: energy is minimised; drop 'max'\n"


def test_a_search_guided_by_the_first_objective_says_so_in_the_summary():
    from ksweep.report.progress import summary_line

    summary = types.SimpleNamespace(evaluated=3, resumed=0, wall_seconds=1.0, build_cpu_seconds=1.0,
                                    gpu_seconds=0.5, has_gpu=True, gpu_idle_share=0.5, configs_per_minute=180.0,
                                    counts={"OK": 3}, searched_by={"surrogate": "ms"})
    assert ("surrogate searched by ms alone (the first objective): the Pareto front is over the configs it "
            "evaluated") in summary_line(summary)
    summary.searched_by = {}
    assert "searched by" not in summary_line(summary)


def test_objectives_option_mistakes_are_one_line(tmp_path, capsys):
    from ksweep.cli.main import main

    path = vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096)
    assert main(["run", str(path), "--objectives", "time,,energy"]) == 2
    assert "--objectives time,,energy: '': give a metric name" in capsys.readouterr().err
    assert main(["run", str(path), "--objectives", "time,gflops_per_watt"]) == 2
    assert "k.toml: --objectives: gflops_per_watt needs the FLOP count" in capsys.readouterr().err


def test_parse_errors_are_ksweep_errors():
    from ksweep.app.report import objectives_option

    with pytest.raises(KsweepError, match="--objectives a,a: 'a': a is already an objective"):
        objectives_option("a,a")



def test_a_spec_keeps_its_ranking_objective_first_among_its_objectives():
    """objective and objectives say the same thing twice: a spec whose objectives do not start
    with its ranking objective is refused when made, not ranked by one and fronted by another."""
    from dataclasses import replace

    spec = spec_from_dict({"params": {"A": [1, 2]}, "sweep": {"objectives": ["ms", "energy_mj"]}})
    assert spec.objectives[0] == spec.objective == Objective("ms", "min")
    with pytest.raises(ValueError, match="is not the ranking objective"):
        replace(spec, objective=Objective("gflops", "max"))
    assert replace(spec, objective=Objective("gflops", "max"), objectives=()).objective_list() == (
        Objective("gflops", "max"),)
