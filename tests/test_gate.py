"""The start gate: run starts on one host at least ``gap`` seconds apart, across threads,
processes and a whole sweep on two (pretend) GPUs."""

import subprocess
import sys
import threading

import pytest

from ksweep import Status, SpecError, load_spec
from ksweep.run.executor import LocalExecutor
from ksweep.run.gate import DEFAULT_GAP, StartGate, auto_gap
from ksweep.sweep.local import make_builder, workspace

from test_multigpu import DEVICES, TWO_GPUS, devices_spec, sweep_with

GAP = 0.15


def assert_spaced(stamps, gap):
    stamps = sorted(stamps)
    assert all(b - a >= gap - 1e-6 for a, b in zip(stamps, stamps[1:])), stamps


def test_threads_take_turns(tmp_path):
    gate = StartGate(GAP, tmp_path / "gate")
    stamps, lock = [], threading.Lock()

    def starts():
        for _ in range(3):
            stamp = gate.wait()
            with lock:
                stamps.append(stamp)

    threads = [threading.Thread(target=starts) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stamps) == 9
    assert_spaced(stamps, GAP)


def test_processes_take_turns(tmp_path):
    code = ("import sys; from ksweep.run.gate import StartGate; g = StartGate(float(sys.argv[1]), sys.argv[2]); "
            "print(*(g.wait() for _ in range(3)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(GAP), str(tmp_path / "gate")],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    stamps = [float(v) for p in procs for v in p.communicate()[0].split()]
    assert all(p.returncode == 0 for p in procs)
    assert len(stamps) == 6
    assert_spaced(stamps, GAP)


def test_a_bad_or_future_stamp_delays_at_most_one_gap(tmp_path):
    import time

    path = tmp_path / "gate"
    path.write_text("not a number")
    first = StartGate(GAP, path).wait()  # unreadable: no wait needed
    assert float(path.read_text()) == first
    path.write_text(f"{time.monotonic() + 1e6:.6f}")  # e.g. a stamp of an earlier boot
    before = time.monotonic()
    stamp = StartGate(GAP, path).wait()
    assert stamp - before < 1e5  # not a million seconds later


def test_an_unusable_gate_file_means_no_gate(tmp_path):
    (tmp_path / "gate").mkdir()  # cannot be opened as a file (like another user's file of that name)
    assert StartGate(GAP, tmp_path / "gate").wait() is None


def test_no_gate_without_a_gap(tmp_path):
    assert StartGate(0.0, tmp_path / "gate").wait() is None
    assert not (tmp_path / "gate").exists()
    with pytest.raises(ValueError):
        StartGate(-1.0)


def test_the_gap_by_default_only_where_a_host_has_several_gpus(tmp_path):
    assert (auto_gap(0), auto_gap(1), auto_gap(2), auto_gap(8)) == (0.0, 0.0, DEFAULT_GAP, DEFAULT_GAP)
    spec = load_spec(devices_spec(tmp_path))
    scratch = workspace(spec) / "scratch"
    executors = [LocalExecutor(make_builder(spec), TWO_GPUS, scratch),
                 LocalExecutor(make_builder(spec), TWO_GPUS[:1], scratch),
                 LocalExecutor(make_builder(spec), TWO_GPUS, scratch, start_gap=0.0),
                 LocalExecutor(make_builder(spec), TWO_GPUS[:1], scratch, start_gap=0.5)]
    try:
        assert [e.start_gap for e in executors] == [DEFAULT_GAP, 0.0, 0.0, 0.5]
        assert [e.gate is not None for e in executors] == [True, False, False, True]
    finally:
        for e in executors:
            e.shutdown()


def test_run_start_gap_in_the_spec(tmp_path):
    assert load_spec(devices_spec(tmp_path)).run.start_gap is None  # automatic
    with_gap = DEVICES.replace("timeout = 120", "timeout = 120\nstart_gap = 0.4")
    assert load_spec(devices_spec(tmp_path, with_gap, "gap.toml")).run.start_gap == 0.4
    bad = DEVICES.replace("timeout = 120", "timeout = 120\nstart_gap = -1")
    with pytest.raises(SpecError, match="run.start_gap"):
        load_spec(devices_spec(tmp_path, bad, "bad.toml"))


class RecordingGate(StartGate):
    """A start gate that keeps the start times it allowed."""

    def __init__(self, gap: float, path):
        super().__init__(gap, path)
        self.allowed: list[float] = []

    def wait(self) -> float | None:
        stamp = super().wait()
        self.allowed.append(stamp)
        return stamp


def test_a_sweep_on_two_gpus_spaces_its_starts(tmp_path):
    """Every run of a sweep on two GPUs starts through the gate, and the gate let no two
    start within the gap of each other. (When each program's main() then begins is not the
    gate's to say: on a loaded machine two execs may take a tenth of a second apart.)"""
    gap = 0.3
    spec = load_spec(devices_spec(tmp_path, DEVICES.replace('env = { RENDEZVOUS_DIR = "RDIR" }', "")))
    executor = LocalExecutor(make_builder(spec), TWO_GPUS, workspace(spec) / "scratch", build_jobs=2,
                             start_gap=gap)
    assert executor.gate is not None and executor.gate.gap == gap
    executor.gate = gate = RecordingGate(gap, tmp_path / "gate")
    try:
        _, results = sweep_with(spec, executor, tmp_path / "r.db")
    finally:
        executor.shutdown()
    assert [r.status for r in results] == [Status.OK] * 6
    assert {r.gpu_index for r in results} == {0, 1}
    assert len(gate.allowed) == 6 and None not in gate.allowed
    assert_spaced(gate.allowed, gap)
    # each program began after its start was allowed (one clock for every process of the host):
    # then the k-th program to begin did so after the k-th start allowed
    began = sorted(r.metrics["start"] for r in results)
    assert all(b >= a for a, b in zip(sorted(gate.allowed), began)), (gate.allowed, began)
