"""The energy observer without a GPU: the worker's energy phase on a stand-in GPU with
scripted power and an NVML-like energy counter, NVML's side behind a fake pynvml, and the
observer's keys in a spec."""

import shutil
import sys
import tomllib
import types

import pytest

from ksweep import load_spec, spec_from_dict
from ksweep.errors import EnvironmentProblem, SpecError
from ksweep.kernel.backend import FakeBackend
from ksweep.kernel.worker import EnergyUnavailable, Worker
from ksweep.run.gpu_state import FakeMonitor, GpuSample, NvmlMonitor, summarize
from ksweep.store.sqlite import Store

from conftest import KERNELS, vadd_kernel_spec

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
ENERGY = KERNELS / "fake_energy.py"
PROFILE = {64: (4.0, 100.0), 128: (2.0, 150.0), 256: (1.0, 400.0), 512: (1.5, 500.0)}  # fake_energy's ms, W


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
    from ksweep.api import run_sweep
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
    from ksweep.api import mode_for
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
