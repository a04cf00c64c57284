"""Kernel mode without a GPU: real cubin builds with nvcc, the worker protocol against a
stand-in backend (start, load, launch, fault, hang, restart)."""

import os
import shutil

import numpy as np
import pytest

from ksweep import Status, load_spec
from ksweep.errors import SpecError
from ksweep.kernel.args import compare, make_args, normalise, summarise
from ksweep.run.classify import classify_answer
from ksweep.run.handle import WorkerHandle
from ksweep.kernel.launch import entry_name, launch_dims, wrapper_source
from ksweep.space.space import Space
from ksweep.sweep.jobs import JobFactory
from ksweep.spec.kernel import kernel_spec_from_dict
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions
from ksweep.app.sweep import run_sweep

from conftest import KERNELS as HERE, vadd_kernel_spec

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def kspec(**over):
    base = {"source": "vadd.cu", "name": "vadd", "grid": "cdiv(N, BLOCK * ELEMS)", "block": ["BLOCK"],
            "args": "vadd_args.py:make_args", "outputs": [0], "reference": "vadd_args.py:reference"}
    base.update(over)
    return kernel_spec_from_dict(base, HERE, "t.toml")


def test_grid_block_smem_expressions():
    k = kspec(grid=["cdiv(N, BLOCK * ELEMS)", "B"], block=["BLOCK", 2], smem="BLOCK * 4 * STAGES")
    dims = launch_dims(k, {"N": 1000, "BLOCK": 128, "ELEMS": 2, "B": 3, "STAGES": 2})
    assert dims == {"grid": [4, 3, 1], "block": [128, 2, 1], "smem": 1024}
    with pytest.raises(SpecError, match="kernel.grid"):
        launch_dims(kspec(grid="N // ZERO"), {"N": 1, "ZERO": 0})


def test_kernel_spec_errors():
    with pytest.raises(SpecError, match="kernel.source: 'nope.cu' does not exist"):
        kspec(source="nope.cu")
    with pytest.raises(SpecError, match="kernel.grid"):
        kspec(grid="N.real")
    with pytest.raises(SpecError, match="kernel.colour: unknown key"):
        kspec(colour="red")


@pytest.mark.parametrize("key, value, fragment", [
    ("atol", "tight", "kernel.atol: expected a number >= 0, got 'tight'"),
    ("rtol", -1e-3, "kernel.rtol: expected a number >= 0, got -0.001"),
    ("timeout", 0, "kernel.timeout: expected a positive number, got 0"),
    ("seed", 1.5, "kernel.seed: expected an integer >= 0, got 1.5"),
    ("defines", "no", "kernel.defines: expected true or false, got 'no'"),
    ("outputs", [True], "kernel.outputs: expected a list of argument indices"),
    ("flags", "-O3", "kernel.flags: expected a list of strings"),
    ("name", 3, "kernel.name: expected a non-empty string, got 3"),
    ("reference", 3, "kernel.reference: expected \"file.py:function\""),
    ("timing", {"min_reps": "7"}, "kernel.timing.min_reps: expected an integer >= 1, got '7'"),
    ("timing", {"min_reps": 9, "max_reps": 8}, "kernel.timing.max_reps: 8 is below min_reps (9)"),
    ("timing", {"budget_ms": "40"}, "kernel.timing.budget_ms: expected a number >= 0, got '40'"),
    ("timing", {"flush_l2": 1}, "kernel.timing.flush_l2: expected true or false, got 1"),
    ("timing", {"race": 0.5}, "kernel.timing.race: 0.5: give 0 (never stop early) or a factor of at least 1, e.g. 1.5"),
    ("timing", {"race": -1}, "kernel.timing.race: -1: give 0 (never stop early) or a factor of at least 1, e.g. 1.5"),
    ("timing", {"race": float("inf")}, "kernel.timing.race: expected a finite number, got inf"),
    ("timeout", float("nan"), "kernel.timeout: expected a positive finite number, got nan"),
    ("atol", float("nan"), "kernel.atol: expected a finite number >= 0, got nan"),
    ("timing", {"stop_ci": float("inf")}, "kernel.timing.stop_ci: expected a finite number >= 0, got inf"),
    ("timing", {"race": "2"}, "kernel.timing.race: expected a number, got '2'"),
    ("timing", {"warmup": 1}, "kernel.timing.warmup: unknown key — did you mean 'warmup_ms'?"),
    ("timing", 5, "kernel.timing: expected a table, got int"),
    ("args", "vadd_args.py", "kernel.args: expected \"file.py:function\", got 'vadd_args.py'"),
    ("args", "nope.py:make_args", "kernel.args: kernel args file 'nope.py' does not exist"),
    ("reference", "nope.py:ref", "kernel.reference: kernel reference file 'nope.py' does not exist"),
])
def test_every_kernel_key_is_checked_at_load(tmp_path, key, value, fragment):
    import tomllib

    from ksweep import spec_from_dict

    path = vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 1024)
    data = tomllib.loads(path.read_text())
    data["kernel"][key] = value
    with pytest.raises(SpecError) as caught:
        spec_from_dict(data, path=path)
    assert str(caught.value).startswith(f"k.toml: {fragment}")


def test_a_check_against_the_defaults_is_the_kernel_tables_in_kernel_mode(tmp_path):
    """[check] reference compares a printed checksum, which kernel mode never prints: every
    config would fail; the spec is refused at load with the key that does it."""
    import tomllib

    from ksweep import spec_from_dict

    path = vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 1024)
    data = tomllib.loads(path.read_text())
    data["check"] = {"reference": "defaults"}
    with pytest.raises(SpecError, match=r"check.reference: kernel mode compares .* \[kernel\] reference"):
        spec_from_dict(data, path=path)
    data["check"] = {"max": {"ms": 100.0}}  # a bound is kept
    assert spec_from_dict(data, path=path).check.max_keys == {"ms": 100.0}


def test_a_tolerance_that_is_not_a_number_is_one_line(tmp_path, capsys):
    from ksweep.cli.main import main

    path = vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 1024, 'atol = "tight"')
    assert main(["plan", str(path)]) == 2
    assert capsys.readouterr().err == "ksweep: error: k.toml: kernel.atol: expected a number >= 0, got 'tight'\n"


def test_argument_marshalling_and_comparison():
    args = normalise([np.arange(4, dtype=np.float64), 7, 2.5, np.int64(3)])
    assert args[1].dtype == np.int32 and args[2].dtype == np.float32 and args[3].dtype == np.int64
    with pytest.raises(TypeError):
        normalise(["text"])
    from ksweep.kernel.args import load_function
    made = make_args(load_function("vadd_args.py:make_args", HERE), {"N": 16}, seed=1)
    assert [type(a).__name__ for a in made] == ["ndarray", "ndarray", "ndarray", "int32"]
    assert not np.array_equal(made[1], make_args(load_function("vadd_args.py:make_args", HERE), {"N": 16}, 2)[1])
    ok = [np.array([1.0, 2.0], np.float32)]
    assert compare(ok, [np.array([1.0, 2.0])], 1e-6, 0) is None
    assert "not written" in compare([np.array([np.nan, 2.0])], [np.array([1.0, 2.0])], 1e-6, 0)
    assert "max abs error" in compare([np.array([1.5, 2.0])], [np.array([1.0, 2.0])], 1e-6, 0)
    s = summarise([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["ms"] == 3.0 and s["ms_p20"] < s["ms"] < s["ms_p80"] and s["reps"] == 5


def test_wrapper_and_entry_names():
    k = kspec(name="vscale<{TILE}>")
    assert k.templated and not k.defines
    assert "&vscale<128>" in wrapper_source(k, {"TILE": 128})
    assert entry_name(["_Z6vscaleILi128EEvPfPKffi", "vadd"], k) == "_Z6vscaleILi128EEvPfPKffi"
    assert entry_name(["vadd", "_Z6vscaleILi128EEvPfPKffi"], kspec()) == "vadd"


def fake_setup(n=4096):
    return {"op": "setup", "args": "vadd_args.py:make_args", "root": str(HERE), "sizes": {"N": n}, "seed": 0,
            "outputs": [0], "reference": "vadd_args.py:reference", "atol": 1e-6, "rtol": 1e-6,
            "timing": {"warmup_ms": 2, "budget_ms": 5, "min_reps": 3, "max_reps": 20, "flush_l2": True}}


def evaluate(worker, block, cubin, timeout=5.0):
    req = {"op": "eval", "cubin": str(cubin), "entry": "vadd", "grid": [1, 1, 1], "block": [block, 1, 1],
           "smem": 0, "params": {"BLOCK": block}}
    return judged(worker.request(req, timeout=timeout), timeout)


def judged(answer, timeout):
    """A worker's answer as its run's status, message and metrics (and whether it was fatal)."""
    status, message, metrics, _ = classify_answer(answer, timeout)
    return {"status": status, "message": message, "metrics": metrics, "fatal": bool(answer.data.get("fatal"))}


def test_worker_protocol_fault_hang_restart(tmp_path):
    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"not really")
    w = WorkerHandle(f"fake:{HERE / 'fake_vadd.py'}", setup=fake_setup())
    try:
        ok = evaluate(w, 256, cubin)
        assert ok["status"] == "OK" and ok["metrics"]["reps"] >= 3 and ok["metrics"]["ms"] > 0
        assert w.restarts == 0
        bad = evaluate(w, 512, cubin)
        assert bad["status"] == "CHECKSUM_MISMATCH" and "max abs error" in bad["message"]
        half = evaluate(w, 1024, cubin)
        assert half["status"] == "CHECKSUM_MISMATCH" and "not written" in half["message"]
        assert w.restarts == 0
        fault = evaluate(w, 32, cubin)
        assert fault["status"] == "CUDA_ERROR" and "ILLEGAL_ADDRESS" in fault["message"] and fault["fatal"]
        assert evaluate(w, 256, cubin)["status"] == "OK" and w.restarts == 1  # a fresh worker took over
        hang = evaluate(w, 64, cubin, timeout=1.0)
        assert hang["status"] == "HANG"
        assert evaluate(w, 128, cubin)["status"] == "OK" and w.restarts == 2
        missing = judged(w.request({"op": "eval", "cubin": str(tmp_path / "none"), "entry": "vadd",
                                    "grid": [1, 1, 1], "block": [128, 1, 1], "smem": 0}, timeout=5), 5)
        assert missing["status"] == "CUDA_ERROR" and "FILE_NOT_FOUND" in missing["message"]
    finally:
        w.close()
    assert not w.alive()


def test_cheats_are_caught_by_two_draws_unchanged_inputs_and_a_check_after_timing(tmp_path):
    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"not really")
    w = WorkerHandle(f"fake:{HERE / 'fake_vadd.py'}", setup=fake_setup())

    def cheat(kind):
        req = {"op": "eval", "cubin": str(cubin), "entry": "vadd", "grid": [1, 1, 1], "block": [256, 1, 1],
               "smem": 0, "params": {"BLOCK": 256, "CHEAT": kind}}
        return judged(w.request(req, timeout=5.0), 5.0)

    try:
        once = cheat(1)  # right for the first draw, then the remembered answer
        assert once["status"] == "CHECKSUM_MISMATCH" and once["message"].startswith("second input draw: ")
        writes = cheat(2)
        assert writes["status"] == "CHECKSUM_MISMATCH" and "input argument 1 is not an output" in writes["message"]
        assert writes["message"].endswith("(4 of 16384 bytes)")  # a[0], one float32 of 4096
        late = cheat(3)  # right on both draws before timing, wrong afterwards
        assert late["status"] == "CHECKSUM_MISMATCH" and late["message"].startswith("after timing: ")
        assert evaluate(w, 256, cubin)["status"] == "OK"  # an honest kernel still passes all three checks
    finally:
        w.close()


def test_the_second_draw_has_another_distribution_at_the_same_scale():
    import numpy as np

    from ksweep.kernel.inputs import other_draw

    rng = np.random.default_rng(0)
    c, a, b = np.zeros(1000, np.float32), rng.normal(size=1000).astype(np.float32), np.arange(1000, dtype=np.int32)
    c2, a2, b2 = other_draw([c, a, b, 7], [0], seed=3)[:3]
    assert a2.dtype == np.float32 and not np.array_equal(a2, a)
    assert a.min() <= a2.min() and a2.max() <= a.max()  # uniform over the original's range
    assert abs(float(np.mean(np.abs(a2))) - float(np.mean(np.abs(a)))) > 0.1  # not the normal draw again
    assert np.array_equal(b2, b) and np.array_equal(c2, c)  # integers and outputs as they are
    for dtype in (np.float16, np.float32, np.float64):  # the range of the finite values, in the input's type
        odd = np.array([-3.0, np.inf, 2.0, np.nan, -np.inf, 0.5] * 100, dtype)
        (drawn,) = other_draw([odd], [], seed=1)
        assert drawn.dtype == dtype and np.isfinite(drawn).all() and drawn.min() >= -3 and drawn.max() <= 2
        assert drawn.max() - drawn.min() > 4  # spread over it
    (flat,) = other_draw([np.full(10, 5.0, np.float32)], [], seed=1)
    assert flat.min() >= 4 and flat.max() <= 6 and np.ptp(flat) > 0  # one value: widened by 1 each side


SLOW_START = """
import os, time


def __getattr__(name):  # POWER_W, looked up as the stand-in backend starts: it waits for the inputs
    if name == "POWER_W":
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["MARK"]):
            if time.monotonic() > deadline:
                os._exit(5)  # the worker did not make its inputs while its backend started
            time.sleep(0.01)
    raise AttributeError(name)
"""

MARKING_ARGS = """
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vadd_args import make_args as vadd_args

def make_args(sizes, seed):
    open(os.environ["MARK"], "a").close()
    return vadd_args(sizes, seed)
"""


def test_worker_makes_its_inputs_while_the_backend_starts(tmp_path):
    """The setup is sent without waiting for the hello, and its host part (inputs, reference)
    runs while the backend starts: this stand-in's start waits for the inputs."""
    (tmp_path / "slow_start.py").write_text(SLOW_START + (HERE / "fake_vadd.py").read_text())
    (tmp_path / "marking_args.py").write_text(MARKING_ARGS)
    shutil.copy(HERE / "vadd_args.py", tmp_path)
    setup = {**fake_setup(), "args": "marking_args.py:make_args", "root": str(tmp_path)}
    env = {"MARK": str(tmp_path / "made")}
    w = WorkerHandle(f"fake:{tmp_path / 'slow_start.py'}", env=env, setup=setup, start_timeout=120)
    try:
        answer = w.request({"op": "ping"}, timeout=30)
        assert answer.replied and answer.data == {"ok": True}, answer
        assert w.device == "fake"
    finally:
        w.close()


def test_the_setups_host_part_says_where_its_time_went():
    """host_setup times its parts (bench/kernel_timeline.py prints them): the two draws, the
    second distribution (on its thread), the cmem function and the reference of both check
    draws."""
    from ksweep.kernel.inputs import host_setup

    host = host_setup(fake_setup())
    assert set(host.parts) == {"draws", "second distribution", "cmem", "reference"}
    assert all(e is not None for e in host.expected)  # the reference ran for both check draws


def test_worker_that_cannot_start_is_reported():
    w = WorkerHandle("fake:/nonexistent/fake.py", setup=fake_setup(), start_timeout=30)
    resp = judged(w.request({"op": "ping"}, timeout=5), 5)
    assert resp["status"] == "RUN_ERROR"


@pytest.fixture(scope="module")
def vadd_folder(tmp_path_factory):
    """A folder where this module's sweeps of vadd.cu that are not about its files or its
    builds write their specs, each under a name (and so a database) of its own: they share
    the build cache beside them, so that a config's cubin is built once (by nvcc, as in a
    folder of its own; tests/kernels/fake_*.py answer the same for a cubin built earlier)."""
    return tmp_path_factory.mktemp("vadd")


def grid_of_vadd(folder, params: str, module: str, extra: str, jobs: int = 2, file: str = "k.toml"):
    """The summary and the stored results of a grid sweep of vadd.cu's spec over ``params`` on
    the stand-in GPU of tests/kernels/``module``, the spec named ``file``."""
    spec = load_spec(vadd_kernel_spec(folder, params, 4096, extra, file=file))
    summary, db = run_sweep(spec, options=SweepOptions(confirm=None, strategy="grid"), jobs=jobs,
                            kernel_backend=f"fake:{HERE / module}")
    with Store(db) as store:
        return summary, store.results()


@nvcc
@pytest.mark.slow
def test_kernel_sweep_with_real_cubins_and_stand_in_worker(vadd_folder):
    summary, stored = grid_of_vadd(vadd_folder, "BLOCK = [32, 64, 128, 256, 512]\nELEMS = [1, 2]", "fake_vadd.py",
                                   "timeout = 2.0\ntiming = { warmup_ms = 1, budget_ms = 3, min_reps = 3, max_reps = 10 }",
                                   file="cubins.toml")
    rows = {(r.params["BLOCK"], r.params["ELEMS"]): r for r in stored}
    assert len(rows) == 10
    for e in (1, 2):
        assert rows[(32, e)].status is Status.CUDA_ERROR
        assert rows[(64, e)].status is Status.HANG
        assert rows[(512, e)].status is Status.CHECKSUM_MISMATCH
        for b in (128, 256):
            r = rows[(b, e)]
            assert r.status is Status.OK and r.metrics["ms"] > 0 and "ms_p20" in r.metrics
            assert r.regs is not None and r.regs > 0  # real ptxas report of the cubin
    assert summary.counts["OK"] == 4


@nvcc
def test_templated_kernel_cubin_builds(tmp_path):
    vadd_kernel_spec(tmp_path, "TILE = [64, 128]", 1024, name="vscale<{TILE}>", grid="cdiv(N, TILE)", block="TILE",
                     reference='"defaults"')
    spec = load_spec(tmp_path / "k.toml")
    from ksweep.sweep.local import make_builder
    from ksweep.app.wiring import mode_for
    from ksweep.sweep.jobs import JobFactory

    space = Space.from_spec(spec)
    factory = JobFactory(spec, spec.shape(None), spec.variant(None), space, mode_for(spec))
    job = factory.make({"TILE": 128})
    assert "-DTILE=128" not in job.build_argv and "-DN=1024" in job.build_argv
    assert job.launch == {"grid": [8, 1, 1], "block": [128, 1, 1], "smem": 0}
    build = make_builder(spec).build(job)
    assert build.status is Status.OK and build.binary.exists()
    names = [k.name for k in build.report.kernels]
    assert entry_name(names, spec.kernel) == "_Z6vscaleILi128EEvPfPKffi"


@nvcc
def test_kernel_mode_runs_carry_the_gpu_state(vadd_folder):
    """The kernel executor watches each config's request through its GPU monitor (NVML on a
    real GPU; a fake here): clocks and throttling are stored with the result."""
    from ksweep.run.gpu_state import FakeMonitor, GpuSample
    from ksweep.run.gpus import Gpu
    from ksweep.kernel.executor import KernelExecutor
    from ksweep.sweep.local import make_builder, scratch_dir

    spec = load_spec(vadd_kernel_spec(vadd_folder, "BLOCK = [128, 256]\nELEMS = [1]", 4096,
                                      "timeout = 5.0\n"
                                      "timing = { warmup_ms = 1, budget_ms = 3, min_reps = 3, max_reps = 10 }",
                                      file="gpu_state.toml"))
    monitor = FakeMonitor(lambda index, n: GpuSample(1755, 2619, 71, 450.0, 0), {"cuda": "13.0"})
    backend = f"fake:{HERE / 'fake_vadd.py'}"
    sizes = {s.name: {**spec.constants, **s.constants, **s.defines} for s in spec.shape_list()}
    executor = KernelExecutor(make_builder(spec), [Gpu(0, "fake")], scratch_dir(spec), spec.kernel, spec.root, sizes,
                              build_jobs=2, backend=backend, monitor=monitor)
    try:
        _, db = run_sweep(spec, options=SweepOptions(confirm=None, strategy="grid"), executor=executor, kernel_backend=backend)
    finally:
        executor.shutdown()
    with Store(db) as store:
        rows = store.results()
    assert len(rows) == 2 and all(r.status is Status.OK for r in rows)
    assert all(r.gpu_state["sm_clock_mhz"] == 1755 and r.gpu_state["cuda_version"] == "13.0" for r in rows)


@nvcc
@pytest.mark.slow
def test_a_config_is_raced_against_its_own_gpu_models_best_only(vadd_folder):
    """Two GPU models on one host (fake_two_models.py: every config 1 ms on GPU 0, 10 ms on
    GPU 1): a config on the slow model is never raced against the fast model's best, so
    every config is timed in full."""
    from ksweep.kernel.executor import KernelExecutor, shape_sizes
    from ksweep.run.gpus import Gpu
    from ksweep.sweep.local import make_builder, scratch_dir

    blocks = ", ".join(str(32 * k) for k in range(1, 13))
    spec = load_spec(vadd_kernel_spec(vadd_folder, f"BLOCK = [{blocks}]\nELEMS = [1]", 4096,
                                      "timing = { warmup_ms = 1, budget_ms = 40, min_reps = 7, max_reps = 100 }",
                                      file="models.toml"))
    backend = f"fake:{HERE / 'fake_two_models.py'}"
    sizes = {s.name: shape_sizes(spec, s) for s in spec.shape_list()}
    executor = KernelExecutor(make_builder(spec), [Gpu(0, "H100"), Gpu(1, "A100")], scratch_dir(spec),
                              spec.kernel, spec.root, sizes, build_jobs=2, backend=backend, race=True)
    try:
        _, db = run_sweep(spec, options=SweepOptions(confirm=None, strategy="grid"), executor=executor, kernel_backend=backend)
    finally:
        executor.shutdown()
    with Store(db) as store:
        rows = [(round(r.metrics["ms"], 6), r.metrics["reps"], r.metrics.get("raced")) for r in store.results()]
    assert len(rows) == 12 and {ms for ms, _, _ in rows} == {1.0, 10.0}
    assert all(reps == 7 and raced is None for _, reps, raced in rows)


@nvcc
@pytest.mark.slow
def test_a_config_is_raced_against_its_own_variants_best_only(vadd_folder):
    """Two variants of one shape, swept one after the other on one GPU (fake_two_models.py: the
    variant with SLOW = 1 takes 10 ms a config, the other 1 ms): the slow variant's configs are
    not raced against the fast variant's best, so each is timed in full."""
    _, stored = grid_of_vadd(vadd_folder, "BLOCK = [64, 128, 256, 512]\nELEMS = [1]", "fake_two_models.py",
                             "timing = { warmup_ms = 1, budget_ms = 40, min_reps = 7, max_reps = 100 }\n"
                             "[variants.fast]\n[variants.slow]\nparams = { SLOW = [1] }", jobs=1, file="variants.toml")
    rows = [(r.variant, round(r.metrics["ms"], 6), r.metrics["reps"]) for r in stored]
    assert sorted({(v, ms) for v, ms, _ in rows}) == [("fast", 1.0), ("slow", 10.0)] and len(rows) == 8
    assert all(reps == 7 for _, _, reps in rows)


@pytest.mark.parametrize("nbytes", [64, 60, 6, 3])
def test_same_bytes_sees_one_changed_byte_anywhere(nbytes):
    from ksweep.kernel.args import same_bytes

    a = np.arange(nbytes, dtype=np.uint8)
    assert same_bytes(a, a.copy())
    for where in (0, nbytes // 2, nbytes - 1):
        b = a.copy()
        b[where] ^= 1
        assert not same_bytes(a, b)
    assert not same_bytes(a, a[:-1])
    f = np.linspace(0, 1, 15, dtype=np.float32)  # 60 bytes: compared as uint32
    g = f.copy()
    g[-1] = np.nextafter(g[-1], np.float32(2))
    assert same_bytes(f, f.copy()) and not same_bytes(f, g)


def test_compare_passes_fast_and_still_names_every_kind_of_failure():
    rng = np.random.default_rng(3)
    e = rng.standard_normal(3 * (1 << 20) + 5).astype(np.float32)  # several chunks and a short one
    assert compare([e.copy()], [e], 1e-6, 0) is None
    near = e * np.float32(1 + 1e-4)
    assert compare([near], [e], 0, 1e-3) is None  # within rtol everywhere
    both_nan = e.copy()
    both_nan[7] = np.nan
    assert compare([both_nan.copy()], [both_nan], 1e-6, 0) is None  # the reference's own NaN is no error
    for bad, word in ((np.inf, "not finite"), (np.nan, "not written")):
        g = e.copy()
        g[len(e) - 1] = bad
        assert word in compare([g], [e], 1e-6, 0) and f"first at {len(e) - 1}" in compare([g], [e], 1e-6, 0)
    g = e.copy()
    g[2 * (1 << 20) + 1] += 1
    assert f"element {2 * (1 << 20) + 1}" in compare([g], [e], 1e-3, 0)


def test_a_kernel_mode_result_key_is_the_same_in_every_process(tmp_path):
    """The key of a [kernel] spec's result covers its grid and block expressions by their text:
    two processes (other hash seeds, other memory addresses) make the same key, so a kernel-mode
    sweep run again resumes instead of evaluating everything again."""
    import subprocess
    import sys

    vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096)
    code = ("import sys; from ksweep import load_spec; from ksweep.app.wiring import mode_for; "
            "from ksweep.space.space import Space; from ksweep.sweep.jobs import JobFactory; "
            "spec = load_spec(sys.argv[1]); "
            "f = JobFactory(spec, spec.shape(None), spec.variant(None), Space.from_spec(spec), mode_for(spec)); "
            "print(f.make({'BLOCK': 128, 'ELEMS': 1}).cache_key)")
    keys = {subprocess.run([sys.executable, "-c", code, str(tmp_path / "k.toml")], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(keys) == 1
def test_a_reference_nan_hides_no_error_anywhere():
    """Elements whose reference is not finite are not judged, and nothing else is hidden by
    them: not in their chunk, not in a later one (the largest error is found wherever it is)."""
    e = np.linspace(-1, 1, 3 * (1 << 20), dtype=np.float32)
    e[5] = np.nan
    e[(1 << 20) + 5] = np.inf
    g = e.copy()
    assert compare([g], [e], 1e-6, 0) is None
    g[9] += 1
    g[2 * (1 << 20) + 9] += 2
    assert compare([g], [e], 1e-3, 0).startswith(f"output 0: max abs error 2 (element {2 * (1 << 20) + 9}: got ")


def test_the_warmup_looks_at_the_clock_once_its_budget_should_be_spent():
    from ksweep.kernel.worker import warmup_until

    assert warmup_until(1, 3.9, 10.0) == 2  # a 3.9 ms kernel: three launches, not four
    assert warmup_until(2, 7.8, 10.0) == 3
    assert warmup_until(1, 12.0, 10.0) is None  # a 12 ms kernel: one launch, not two
    assert warmup_until(3, 11.7, 10.0) is None
    assert warmup_until(2, 0.01, 10.0) == 4  # a short kernel: at most twice the launches so far
    assert warmup_until(1024, 9.99, 10.0) == 1026
    assert warmup_until(4, 0.0, 10.0) == 8
    # the checks' launches just before count: 6 ms of them and a 3.9 ms launch leave one more
    assert warmup_until(1, 3.9, 10.0, before_ms=6.0) == 2
    assert warmup_until(1, 3.9, 10.0, before_ms=7.0) is None
    assert warmup_until(1, 8.0, 10.0, before_ms=16.0) is None  # an 8 ms kernel checked twice: one launch


def test_median_interval_is_the_order_statistics_of_the_binomial():
    from ksweep.kernel.args import median_interval, precise_enough

    assert median_interval([1.0] * 5) is None  # below 6 values no 95% interval exists
    assert median_interval([5.0, 1.0, 4.0, 2.0, 3.0, 7.0, 6.0]) == (1.0, 7.0)  # n = 7: the range (98.4%)
    # n = 20: k = 6 (P(B <= 5) = 2.1%, P(B <= 6) = 5.8%): x(6) and x(15)
    assert median_interval([float(i) for i in range(1, 21)]) == (6.0, 15.0)
    assert precise_enough([100.0, 100.5, 100.2, 100.1, 100.3, 100.4, 100.0], 0.01)
    assert not precise_enough([100.0, 102.0, 100.2, 100.1, 100.3, 100.4, 100.0], 0.01)
    assert not precise_enough([100.0] * 7, 0.0)  # 0: the whole budget
    # past 1024 values 2^-n is no float: the interval still comes (n = 1792: k = 855, about 2 sigma below n/2)
    lo, hi = median_interval([float(i) for i in range(1, 1793)])
    assert (lo, hi) == (855.0, 938.0) and not precise_enough([1.0, 1.3] * 1000, 0.01)


def test_timing_stops_early_for_a_steady_kernel_and_times_the_budget_for_a_noisy_one(tmp_path):
    """On a stand-in clock (launch times known): a kernel whose launches agree is timed
    min_reps times, its median's interval being zero; one whose launches differ by 30% is
    timed as many times as the budget allows; stop_ci = 0 times the budget whatever."""
    from ksweep.kernel.backend import FakeBackend
    from ksweep.kernel.worker import Worker

    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"not really")

    def reps(block, stop_ci=None):
        worker = Worker(FakeBackend(str(HERE / "fake_steady.py")))
        timing = {"warmup_ms": 1, "budget_ms": 40, "min_reps": 7, "max_reps": 100, "flush_l2": True}
        worker.setup({**fake_setup(), "timing": {**timing, **({} if stop_ci is None else {"stop_ci": stop_ci})}})
        answer = worker.evaluate({"op": "eval", "cubin": str(cubin), "entry": "vadd", "grid": [1, 1, 1],
                                  "block": [block, 1, 1], "smem": 0, "params": {"BLOCK": block}})
        assert answer["outputs"] == "matched"
        return answer["metrics"]

    steady = reps(128)
    assert steady["reps"] == 7 and steady["ms"] == pytest.approx(1.0)
    noisy = reps(256)
    assert noisy["reps"] >= 30  # the budget's count: 40 ms of launches of 1.0 and 1.3 ms
    whole = reps(128, stop_ci=0.0)
    assert whole["reps"] == 40 and whole["ms"] == pytest.approx(1.0)


def test_a_config_far_behind_the_best_so_far_is_timed_no_further(tmp_path):
    """Raced (the eval request's bar_ms): after RACE_REPS launches, a config whose fastest
    launch took timing.race times the best median so far stops (reps 3, raced 1); one within
    it, one without a bar and any with race = 0 are timed as usual."""
    from ksweep.kernel.backend import FakeBackend
    from ksweep.kernel.worker import RACE_REPS, Worker

    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"not really")

    def timed(bar, **timing):
        worker = Worker(FakeBackend(str(HERE / "fake_steady.py")))  # 1.0 ms a launch
        worker.setup({**fake_setup(), "timing": {"warmup_ms": 1, "budget_ms": 40, "min_reps": 7, "max_reps": 100,
                                                  **timing}})
        answer = worker.evaluate({"op": "eval", "cubin": str(cubin), "entry": "vadd", "grid": [1, 1, 1],
                                  "block": [128, 1, 1], "smem": 0, "params": {"BLOCK": 128}, "bar_ms": bar})
        assert answer["outputs"] == "matched"
        return answer["metrics"]

    behind = timed(0.6)  # 1.0 > 1.5 x 0.6
    assert behind["reps"] == RACE_REPS == 3 and behind["raced"] == 1.0 and behind["ms"] == pytest.approx(1.0)
    for near in (timed(0.7), timed(None), timed(0.6, race=0), timed(0.96, race=1.05)):
        assert near["reps"] == 7 and "raced" not in near
    assert timed(0.96, race=1.05, stop_ci=0.0)["reps"] == 40  # not behind: the whole budget, as asked
    assert timed(0.6, stop_ci=0.0)["reps"] == 3  # behind: stopped whatever stop_ci says


@nvcc
@pytest.mark.slow
def test_a_sweep_races_its_configs_against_its_best_but_never_the_confirmation(vadd_folder):
    """On the stand-in GPU of fake_energy.py (BLOCK 256: 1.0 ms, 512: 1.5, 128: 2.0, 64: 4.0),
    swept in that order: 128 and 64 are more than 1.5 times the best so far and stop at 3
    launches; 512 is not; the confirmation's runs are timed in full. With race = 0, none
    stops early."""
    from ksweep.verify.confirm import Confirmation

    def sweep(file, race):
        spec = load_spec(vadd_kernel_spec(vadd_folder, "BLOCK = [256, 512, 128, 64]\nELEMS = [1]", 4096,
                                          "timing = { warmup_ms = 1, budget_ms = 40, min_reps = 7, max_reps = 100"
                                          + (f", race = {race}" if race is not None else "") + " }", file=file))
        _, db = run_sweep(spec, options=SweepOptions(strategy="grid", confirm=Confirmation()), jobs=1,
                          kernel_backend=f"fake:{HERE / 'fake_energy.py'}")
        with Store(db) as store:
            return ({r.params["BLOCK"]: r.metrics for r in store.results()},
                    [(m.params["BLOCK"], m.metrics["reps"]) for m in store.measurements()])

    results, measured = sweep("raced.toml", None)
    assert {b: (m["reps"], m.get("raced")) for b, m in results.items()} == \
        {256: (7, None), 512: (7, None), 128: (3, 1.0), 64: (3, 1.0)}
    assert results[64]["ms"] == pytest.approx(4.0) and results[128]["ms"] == pytest.approx(2.0)
    assert sorted(measured) == [(256, 7)] * 3 + [(512, 7)] * 3  # the leaders, in full
    results, _ = sweep("full.toml", 0)
    assert {b: m["reps"] for b, m in results.items()} == {256: 7, 512: 7, 128: 7, 64: 7}


@nvcc
def test_a_sweep_resumes_after_the_generated_wrappers_are_deleted(tmp_path):
    """A result's build read its generated wrapper (.ksweep/kernel/*.cu): a sweep makes it
    again before judging the result, so a cleaned workspace resumes and supersedes nothing."""
    import shutil as _shutil

    first, _ = grid_of_vadd(tmp_path, "BLOCK = [128, 256]\nELEMS = [1]", "fake_vadd.py", "timeout = 2.0")
    assert first.counts.get("OK") == 2
    wrappers = tmp_path / ".ksweep" / "kernel"
    assert any(wrappers.glob("*.cu"))
    _shutil.rmtree(wrappers)
    again, stored = grid_of_vadd(tmp_path, "BLOCK = [128, 256]\nELEMS = [1]", "fake_vadd.py", "timeout = 2.0")
    assert (again.evaluated, again.resumed) == (0, 2) and len(stored) == 2


@nvcc
def test_an_edited_argument_file_is_said_by_report_and_supersedes_at_the_next_sweep(tmp_path):
    """The argument and reference file (file.py:function) is an input of every result, like
    the kernel's source: a report says when it changed since, and the next sweep measures
    the configs again."""
    from ksweep.report.edited import edited_notes

    path = vadd_kernel_spec(tmp_path, "BLOCK = [128, 256]\nELEMS = [1]", 4096, "timeout = 2.0")

    def sweep():
        return run_sweep(load_spec(path), options=SweepOptions(confirm=None, strategy="grid"), jobs=2,
                         kernel_backend=f"fake:{HERE / 'fake_vadd.py'}")

    first, db = sweep()
    assert first.counts.get("OK") == 2
    with Store(db) as store:
        assert edited_notes(store.results()) == []
    args = tmp_path / "vadd_args.py"
    args.write_text(args.read_text() + "\n# edited\n")
    with Store(db) as store:
        notes = edited_notes(store.results())
    assert len(notes) == 1 and "vadd_args.py changed since all results shown were measured" in notes[0], notes
    again, _ = sweep()
    assert (again.evaluated, again.resumed) == (2, 0)
    with Store(db) as store:
        assert len(store.results()) == 2 and edited_notes(store.results()) == []


def test_a_kernel_mode_reference_of_another_default_is_another_experiment(tmp_path):
    """Kernel mode compares outputs with the reference config's on the GPU, so its stored
    verdicts cannot be judged again from metrics: a default that changes the reference
    config changes every result's key (program mode judges its stored metrics again instead)."""
    from ksweep.app.wiring import mode_for

    def key(default: int) -> str:
        spec = load_spec(vadd_kernel_spec(tmp_path, f"BLOCK = {{ values = [128, 256], default = {default} }}\n"
                                                    "ELEMS = [1]", 4096, reference='"defaults"'))
        space = Space.from_spec(spec)
        return JobFactory(spec, spec.shape(None), spec.variant(None), space, mode_for(spec)).make(
            {"BLOCK": 128, "ELEMS": 1}).cache_key

    assert key(128) != key(256)
    assert key(128) == key(128)


@nvcc
def test_tune_kernel_returns_only_its_own_configs_from_a_shared_database(tmp_path):
    """Two calls on one database: the second, with BLOCK=[128] only, returned the first call's
    BLOCK=256 as its best, and its results."""
    import ksweep

    for f in ("vadd.cu", "vadd_args.py"):
        shutil.copy(HERE / f, tmp_path / f)
    kw = dict(grid=["cdiv(N, BLOCK * ELEMS)"], block=["BLOCK"], outputs=[0],
              reference=str(tmp_path / "vadd_args.py") + ":reference", db=tmp_path / "k.db",
              backend=f"fake:{HERE / 'fake_vadd.py'}", jobs=2)
    args = str(tmp_path / "vadd_args.py") + ":make_args"
    first = ksweep.tune_kernel("vadd", tmp_path / "vadd.cu", {"N": 4096}, args, {"BLOCK": [128, 256], "ELEMS": [1]},
                               **kw)
    assert {r.params["BLOCK"] for r in first.results} == {128, 256}
    second = ksweep.tune_kernel("vadd", tmp_path / "vadd.cu", {"N": 4096}, args, {"BLOCK": [128], "ELEMS": [1]}, **kw)
    assert [r.params["BLOCK"] for r in second.results] == [128] and second.best_params == {"BLOCK": 128, "ELEMS": 1}


def test_tune_kernel_refuses_what_a_kernel_table_refuses_before_building(tmp_path, monkeypatch):
    """A relative arguments file was looked for beside the kernel source only, never checked:
    every config compiled, then each was a RUN_ERROR; atol=-1, timeout=0 or four grid
    expressions were taken, and a missing source raised FileNotFoundError."""
    import ksweep
    from ksweep.app.kernel import kernel_tuning_spec
    from ksweep.errors import SpecError

    (tmp_path / "src").mkdir()
    shutil.copy(HERE / "vadd.cu", tmp_path / "src" / "vadd.cu")
    shutil.copy(HERE / "vadd_args.py", tmp_path / "vadd_args.py")  # beside the caller, not the source
    monkeypatch.chdir(tmp_path)
    ok = dict(grid=["cdiv(N, BLOCK)"], block=["BLOCK"], outputs=[0], reference="vadd_args.py:reference")
    spec = kernel_tuning_spec("vadd", "src/vadd.cu", {"N": 64}, "vadd_args.py:make_args",
                              {"BLOCK": [128]}, **ok)
    assert spec.kernel.args == f"{tmp_path / 'vadd_args.py'}:make_args"  # read from the current folder
    for bad, said in (({"arguments": "nope.py:make_args"}, "no such file nope.py"),
                      ({"atol": -1}, "atol"), ({"timeout": 0}, "timeout"),
                      ({"grid": ["1", "1", "1", "1"]}, "1 to 3"), ({"kernel_source": "src/none.cu"}, "no such file"),
                      ({"outputs": [-1]}, "outputs")):
        call = {**ok, "kernel_source": "src/vadd.cu", "arguments": "vadd_args.py:make_args", **bad}
        with pytest.raises(SpecError, match=said):
            ksweep.tune_kernel("vadd", call.pop("kernel_source"), {"N": 64}, call.pop("arguments"), {"BLOCK": [128]},
                               db=tmp_path / "k.db", backend=f"fake:{HERE / 'fake_vadd.py'}", **call)
        assert not (tmp_path / "k.db").exists()


def test_an_unknown_name_in_the_launch_is_said_when_the_spec_loads(tmp_path):
    """`cdiv(N, BLOK)` loaded, `plan` said nothing, and the sweep failed once it had started."""
    path = vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096, grid="cdiv(N, BLOK * ELEMS)")
    with pytest.raises(SpecError, match=r"kernel.grid\[0\]: unknown name .*BLOK.*did you mean .*BLOCK"):
        load_spec(path)
