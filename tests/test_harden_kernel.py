"""Kernel mode's hardening without a GPU, on the stand-in backend: the check audited before it
judges (kernel/audit.py, and the worker's answers that carry it), the outputs' digest the
confirmation compares, and the further inputs of kernel/harden_one.py catching planted
cheats (outputs kept by their inputs' addresses, saturating sums, an all-zero input skipped)."""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import KERNELS

from ksweep.kernel.audit import audit
from ksweep.kernel.backend import FakeBackend
from ksweep.kernel.harden_one import OTHER_ADDRESSES, SAME_ADDRESSES, Checks
from ksweep.run.handle import WorkerHandle
from ksweep.status import Status
from ksweep.verify.sanitizer import inputs_verdict

FAKE = KERNELS / "fake_harden.py"


def setup(**over):
    base = {"op": "setup", "args": "vadd_args.py:make_args", "root": str(KERNELS), "sizes": {"N": 4096}, "seed": 0,
            "outputs": [0], "reference": "vadd_args.py:reference", "atol": 1e-5, "rtol": 1e-5,
            "timing": {"warmup_ms": 1, "budget_ms": 2, "min_reps": 3, "max_reps": 5, "flush_l2": False}}
    return {**base, **over}


# -- the audit -----------------------------------------------------------------------------------
def test_the_audit_passes_a_check_that_tells_right_from_wrong():
    rng = np.random.default_rng(1)
    first, second = [rng.standard_normal(1000).astype(np.float32)], [rng.standard_normal(1000).astype(np.float32)]
    assert audit(first, second, 1e-5, 1e-5) is None


@pytest.mark.parametrize("case, fragment", [
    ("loose", "outputs of all zeros pass the comparison (atol 10, rtol 0: lower atol below"),
    ("zeros", ": the expected outputs are all zero"),
    ("same", "the reference gives the same outputs for both input draws"),
    ("wide", "the outputs of the other input draw pass as this draw's"),
    ("relative", "rtol 1: lower rtol below 1"),
    ("nan", "a tile of 256 elements left unwritten pass"),
])
def test_the_audit_says_how_a_check_is_blind(case, fragment):
    rng = np.random.default_rng(2)
    a, b = rng.uniform(1, 2, 1000).astype(np.float32), rng.uniform(1, 2, 1000).astype(np.float32)
    atol, rtol = 1e-5, 1e-5
    if case == "loose":  # a tolerance larger than the outputs
        atol, rtol = 10.0, 0.0
    elif case == "zeros":
        a, b = np.zeros_like(a), np.ones_like(b)
    elif case == "same":  # a reference that ignores its inputs
        b = a.copy()
    elif case == "wide":  # outputs near 10.5 that differ by less than atol from one draw to the other
        a, b, atol = a + 9.0, b + 9.0, 1.5
    elif case == "relative":  # rtol 100%: zeros pass whatever the outputs
        rtol = 1.0
    elif case == "nan":
        a[:300] = np.nan
    said = audit([a], [b], atol, rtol)
    assert said is not None and said.startswith("the check is blind: ") and fragment in said, said


def test_the_worker_audits_its_check_at_setup_and_at_capture_and_digests_when_asked(tmp_path):
    cubin = tmp_path / "fake.cubin"
    cubin.write_bytes(b"not really")
    req = {"op": "eval", "cubin": str(cubin), "entry": "vadd", "grid": [1, 1, 1], "block": [256, 1, 1], "smem": 0,
           "params": {}}
    blind = WorkerHandle(f"fake:{FAKE}", setup=setup(atol=100.0))
    try:
        answer = blind.request({**req, "digest": True}, timeout=30)
        assert answer.data["outputs"] == "matched"
        assert blind.setup_answer["audit"].startswith("the check is blind: outputs of all zeros pass")
        first = answer.data["metrics"]["outputs_digest"]
        again = blind.request({**req, "digest": True}, timeout=30).data["metrics"]["outputs_digest"]
        assert first == again and first == int(first) and 0 < first < 2 ** 48  # 48 bits, exact in a float
        assert "outputs_digest" not in blind.request(req, timeout=30).data["metrics"]  # only when asked
    finally:
        blind.close()
    # a reference config's outputs, captured: audited then (no Python reference to audit at setup)
    captured = WorkerHandle(f"fake:{FAKE}", setup=setup(reference=None, atol=100.0))
    try:
        answer = captured.request({**req, "capture": str(tmp_path / "ref.npz")}, timeout=30)
        assert answer.data["outputs"] == "captured" and captured.setup_answer["audit"] is None
        assert answer.data["audit"].startswith("the check is blind: outputs of all zeros pass")
    finally:
        captured.close()


# -- the further inputs --------------------------------------------------------------------------
def harden_request(cheat=None, checks="inputs", reference_launch=None, **over):
    launch = {"cubin": str(FAKE), "entry": "vadd", "grid": [1, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": {"CHEAT": cheat}}
    return {"setup": setup(**over), "launch": launch, "reference": reference_launch, "checks": checks,
            "special": ["zeros", "ones", "large"]}


@pytest.mark.parametrize("cheat, failed", [
    (None, None),
    ("rounding", None),  # an honest kernel's rounding grows with large inputs: no finding (the matmul's was)
    ("saturate", "large inputs: output 0: max abs error"),
    ("zero_skip", "zeros inputs: output 0: 4096 elements not written"),
])
def test_the_further_inputs_catch_what_two_draws_do_not(cheat, failed):
    answer = Checks(FakeBackend(str(FAKE)), harden_request(cheat)).run()
    if failed is None:
        assert answer == {"ok": True, "failed": None, "skipped": [],
                          "checked": ["the check inputs", SAME_ADDRESSES, OTHER_ADDRESSES, "zeros inputs",
                                      "ones inputs", "large inputs"]}
    else:
        assert answer["failed"].startswith(failed), answer
        assert "the check inputs" in answer["checked"]  # right on the usual draw


def test_a_special_sets_tolerance_grows_with_its_outputs_but_never_past_its_inputs_squared():
    """The large set's outputs 1e4 times the usual: atol 1e4 times; an output near zero on the
    usual draw does not make it unbounded (at most the inputs' growth squared, 1e8); the ones
    set, whose inputs are no larger than the usual draw's, keeps the usual atol."""
    from ksweep.kernel.harden_one import largest, scale

    usual_in, large_in, ones_in = largest([np.full(4, 3.0)]), largest([np.full(4, 3e4), 7]), largest([np.ones(4)])
    assert scale(largest([np.array([6e6])]), 600.0, large_in, usual_in) == pytest.approx(1e4)
    assert scale(2e4, 1e-30, large_in, usual_in) == pytest.approx(1e8)
    assert scale(4096.0, 60.0, ones_in, usual_in) == 1.0
    assert largest([None, np.array([5.0, np.nan]), np.array([9], np.int32)]) == 5.0  # floats, finite values only
    assert scale(5.0, 1.0, usual_in, usual_in) == 1.0


def test_without_a_python_reference_the_reference_configs_launches_give_the_expected_outputs():
    honest = {"cubin": str(FAKE), "entry": "vadd", "grid": [1, 1, 1], "block": [256, 1, 1], "smem": 0, "params": {}}
    answer = Checks(FakeBackend(str(FAKE)), harden_request("saturate", reference_launch=honest, reference=None)).run()
    assert answer["failed"].startswith("large inputs: output 0: max abs error"), answer
    # under a sanitizer: one launch, compared only with a Python reference
    one = Checks(FakeBackend(str(FAKE)), harden_request(None, checks="sanitize", reference_launch=honest,
                                                         reference=None)).run()
    assert one == {"ok": True, "failed": None, "checked": [], "skipped": ["the check inputs"]}


def test_outputs_kept_by_address_fail_in_a_fresh_process_and_kernel_mode_runs_it(tmp_path):
    """The whole path: KernelMode.harden_program writes the request and names the fresh process
    (here on the stand-in backend), whose answer verify/sanitizer.inputs_verdict judges."""
    from ksweep.kernel.mode import KernelMode
    from ksweep.spec.load import spec_from_dict

    for f in ("vadd_args.py",):
        (tmp_path / f).write_text((KERNELS / f).read_text())
    (tmp_path / "vadd.cu").write_text("// the stand-in backend runs fake_harden.py's vadd\n")
    spec = spec_from_dict({"params": {"CHEAT": ["address"]}, "shapes": {"s": {"defines": {"N": 4096}}},
                           "kernel": {"source": "vadd.cu", "name": "vadd", "grid": "1", "block": "256",
                                      "args": "vadd_args.py:make_args", "outputs": [0],
                                      "reference": "vadd_args.py:reference", "atol": 1e-5, "rtol": 1e-5}},
                          path=tmp_path / "k.toml")
    job = SimpleNamespace(shape="s", params={"CHEAT": "address"}, launch={"grid": [1, 1, 1], "block": [256, 1, 1],
                                                                          "smem": 0})
    build = SimpleNamespace(binary=FAKE, report=SimpleNamespace(kernels=[SimpleNamespace(name="vadd")]))
    argv = KernelMode(f"fake:{FAKE}").harden_program(spec, job, build, tmp_path, checks="inputs")
    assert argv[1:4] == ["-m", "ksweep.kernel.harden_one", "--backend"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    said, status, message = inputs_verdict(done.returncode, done.stdout)
    assert done.returncode == 1 and said == "failed" and status is Status.CHECKSUM_MISMATCH, done.stderr
    assert message.startswith(f"hardening: {SAME_ADDRESSES}: output 0: max abs error"), message
    request = json.loads((tmp_path / "harden-inputs.json").read_text())
    assert request["special"] == ["zeros", "ones", "large"] and request["setup"]["energy"] is None


def test_an_answer_that_is_no_verdict_is_incomplete():
    assert inputs_verdict(None, "", timed_out=True, timeout=5) == ("incomplete", None, "no answer within 5 s")
    assert inputs_verdict(-11, "") == ("incomplete", None, "no answer (exit -11)")
    err = json.dumps({"ok": False, "error": "CUDA_ERROR_ILLEGAL_ADDRESS in cuLaunchKernel"})
    assert inputs_verdict(2, err) == ("incomplete", None, "CUDA_ERROR_ILLEGAL_ADDRESS in cuLaunchKernel")
    assert inputs_verdict(0, json.dumps({"ok": True, "failed": None, "checked": ["a"], "skipped": ["b"]}))[2] == \
        "passed: a; not compared (no reference): b"


def kernel_spec(tmp_path, monkeypatch, params: str, harden: str) -> Path:
    """k.toml in ``tmp_path``: vadd on the stand-in backend (its cubins made by a stand-in
    compiler) at N=4096 with ``params`` and ``[harden]``; the stand-in compute-sanitizer first
    on the PATH: the log of its calls."""
    from conftest import PROGRAMS

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "compute-sanitizer").symlink_to(PROGRAMS / "fake_compute_sanitizer.py")
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    log = tmp_path / "sanitizer.log"
    monkeypatch.setenv("FAKE_SANITIZER_LOG", str(log))
    (tmp_path / "vadd_args.py").write_text((KERNELS / "vadd_args.py").read_text())
    (tmp_path / "vadd.cu").write_text("// the stand-in backend runs fake_harden.py's vadd\n")
    (tmp_path / "k.toml").write_text(f"""
[sweep]
arch = "sm_90a"
[params]
{params}
[shapes.s]
defines = {{ N = 4096 }}
[build]
command = ["{sys.executable}", "{PROGRAMS / 'fake_cubin.py'}", "{{defines}}", "-o", "{{binary}}", "{{kernel_wrapper}}"]
[kernel]
source = "vadd.cu"
name = "vadd"
grid = "1"
block = "256"
args = "vadd_args.py:make_args"
outputs = [0]
reference = "vadd_args.py:reference"
atol = 1e-5
rtol = 1e-5
timing = {{ warmup_ms = 1, budget_ms = 5, min_reps = 3, max_reps = 5, flush_l2 = false }}
[harden]
{harden}
""")
    return log


def kernel_sweep(tmp_path):
    """k.toml swept on the stand-in backend, every config, the two best confirmed in 2 rounds:
    (summary, database)."""
    from ksweep import load_spec
    from ksweep.app.sweep import run_sweep
    from ksweep.sweep.options import SweepOptions
    from ksweep.verify.confirm import Confirmation

    options = SweepOptions(strategy="grid", confirm=Confirmation(k=2, rounds=2, within=None))
    return run_sweep(load_spec(tmp_path / "k.toml"), options=options, kernel_backend=f"fake:{FAKE}")


def test_a_kernel_mode_sweep_hardens_its_leaders_and_checks_an_edge_size(tmp_path, monkeypatch):
    """End to end on the stand-in backend, its cubins made by a stand-in compiler: the faster
    config's kernel has a fault racecheck finds and writes whole tiles only (wrong at the edge
    size N=4099): UNSAFE, never BEST; the default config passes everything."""
    from ksweep.app.sweep import best_result
    from ksweep.store.sqlite import Store

    log = kernel_spec(tmp_path, monkeypatch, """
MS = [3, 1]
FAULT = [0, 2]
TILES = [0, 1]
[[constraints]]
name = "the_fast_one_is_wrong"
expr = "(MS == 3) == (FAULT == 0) and FAULT * 1 == TILES * 2"
""", """
tools = ["racecheck"]
special = ["zeros"]
edge = { N = 4099 }
""")
    summary, db = kernel_sweep(tmp_path)
    with Store(db) as store:
        by_ms = {r.params["MS"]: r for r in store.results() if r.status is not Status.PRUNED}
        kinds = {(h.params["MS"], h.kind): h for h in store.hardenings()}
    fast = by_ms[1]
    assert fast.status is Status.UNSAFE and fast.message.startswith("racecheck: Race reported between"), fast.message
    assert kinds[(1, "edge")].verdict == "failed"
    assert kinds[(1, "edge")].detail.startswith("hardening: edge size N=4099: the check inputs: output 0: 3 elements "
                                                "not written"), kinds[(1, "edge")].detail
    assert kinds[(1, "inputs")].verdict == "passed"  # right on the shape's own size
    assert by_ms[3].status is Status.OK and best_result(db).params["MS"] == 3
    assert {kind: h.verdict for (ms, kind), h in kinds.items() if ms == 3} == {
        "sanitizer": "clean", "inputs": "passed", "edge": "passed", "determinism": "deterministic"}
    assert summary.hardened == ["s/base: hardened 2 leader(s) (racecheck): 1 UNSAFE, 1 clean; first finding: "
                                + fast.message]
    # the tool checks the config's own kernel only, its first launch (not the reference's nor ksweep's)
    assert log.read_text().split("\n")[:-1] == ["racecheck racecheck kne=vadd:1"] * 2


def test_harden_sizes_run_the_sanitizers_at_a_smaller_size_and_the_further_inputs_at_the_shapes(
        tmp_path, monkeypatch):
    """``[harden] sizes``: racecheck of one launch of a large shape may not finish (a 4096²
    matmul took over 120 s); each leader is built at the sizes given and the tools run it
    there, the further inputs at the shape's own size. A config the spec's constraints refuse
    at those sizes is sanitized at its shape's, and says so."""
    from ksweep.store.sqlite import Store

    sizes = tmp_path / "sizes.log"
    monkeypatch.setenv("FAKE_SANITIZER_SIZES_LOG", str(sizes))
    kernel_spec(tmp_path, monkeypatch, """
MS = [3, 1]
STEP = [1, 2048]
[[constraints]]
name = "steps"
expr = "N % STEP == 0 and (MS == 3) == (STEP == 1)"
""", """
tools = ["racecheck"]
special = []
sizes = { N = 1024 }
""")
    summary, db = kernel_sweep(tmp_path)
    with Store(db) as store:
        kinds = {(h.params["MS"], h.kind): h for h in store.hardenings()}
    assert kinds[(3, "sanitizer")].verdict == "clean"
    assert kinds[(3, "sanitizer")].detail == "clean: racecheck (at N=1024)"
    # STEP=2048 divides 4096, not 1024
    assert kinds[(1, "sanitizer")].detail == ("clean: racecheck (at the shape: the spec's constraints refuse it "
                                              "at N=1024: at the shape's sizes)")
    assert sorted(json.loads(ln)["N"] for ln in sizes.read_text().splitlines()) == [1024, 4096]
    assert {kinds[(ms, "inputs")].verdict for ms in (1, 3)} == {"passed"}
    # ksweep harden builds and runs them the same way
    from ksweep.app.harden import harden

    sizes.unlink()
    said = {d.params["MS"]: d.message for d in harden(str(db), kernel_backend=f"fake:{FAKE}", echo=lambda *a: None)}
    assert said[3].startswith("clean: racecheck (at N=1024)") and "refuse it at N=1024" in said[1]
    assert sorted(json.loads(ln)["N"] for ln in sizes.read_text().splitlines()) == [1024, 4096]


def test_initcheck_checks_the_whole_program_the_others_the_configs_kernels():
    """initcheck follows initialisation through every kernel: a filter would make the inputs a
    harness kernel wrote look unwritten (every SGEMM leader had "16284 errors")."""
    from types import SimpleNamespace

    from ksweep.build.ptxas import KernelResources, PtxasReport
    from ksweep.run.sanitize import own_entries, tool_argv

    build = SimpleNamespace(report=PtxasReport((KernelResources("_Z4vaddPfi"), KernelResources("fill", judged=False))))
    kernels = own_entries(build)
    assert kernels == ("_Z4vaddPfi",)
    for tool in ("memcheck", "racecheck", "synccheck"):
        argv = tool_argv("cs", tool, ["./p"], kernels)
        assert argv[argv.index("--kernel-name") + 1] == "kne=_Z4vaddPfi" and argv[-3:] == ["--launch-count", "1", "./p"]
    assert "--kernel-name" not in tool_argv("cs", "initcheck", ["./p"], kernels)
    assert "--launch-count" not in tool_argv("cs", "initcheck", ["./p"], kernels)
    assert own_entries(SimpleNamespace(report=PtxasReport((KernelResources("a,b"),)))) == ()
    # two kernels: compute-sanitizer counts launches over all filters, so every launch of both
    argv = tool_argv("cs", "racecheck", ["./p"], ("_Z1av", "_Z1bv"))
    assert argv.count("--kernel-name") == 2 and "--launch-count" not in argv


def test_a_stop_while_the_tools_run_at_once_kills_them(tmp_path):
    """Ctrl-C (here: one run's KeyboardInterrupt) while a leader's tools run together: the
    others' processes are killed through the registry and it is raised (``ksweep harden``
    passed no registry: Ctrl-C waited for each tool's timeout)."""
    import threading

    from ksweep.process import ProcessRegistry, run_process
    from ksweep.run.base import Here
    from ksweep.sweep.hardening import each_at_once

    here = Here(None, ProcessRegistry(), tmp_path)
    said = []

    def one(item):
        if item == "stop":
            raise KeyboardInterrupt
        return run_process(["sleep", "600"], cwd=tmp_path, timeout=600, registry=here.registry)

    def call():
        try:
            each_at_once(one, ["sleep", "stop"], 2, here)
        except KeyboardInterrupt:
            said.append("stopped")

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(120)  # a bound on a hang, not a time raced
    assert not thread.is_alive() and said == ["stopped"]
