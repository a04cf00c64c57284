"""bench/kt_examples_vs_kerneltuner.py (Kernel Tuner's convolution and pnpoly examples, tuned by
Kernel Tuner and by ksweep.kt) up to the GPU: its inputs and answers, the exact calling code it
hands to ksweep.kt.tune_kernel (NVRTC builds of stand-in kernels with the same names and
constant memory, run by the stand-in backend), the space Kernel Tuner sees, its sweep in a
process of its own, the re-measurement, the verdicts and the table; bench/compare_protocol.py;
bench/fetch_kt_examples.sh."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import KERNELS, needs_nvrtc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import compare_protocol as protocol  # noqa: E402
import kt_examples_vs_kerneltuner as bench  # noqa: E402

sys.path.insert(0, str(KERNELS))
import fake_kt_examples as fake  # noqa: E402

FAKE = f"fake:{KERNELS / 'fake_kt_examples.py'}"
STANDIN = KERNELS / "kt_examples_standin.cu"



@pytest.fixture
def on_fake(monkeypatch):
    """ksweep's side of the script on the stand-in backend: the script's own extra keywords
    plus the backend and two build jobs."""
    monkeypatch.setattr(bench, "KSWEEP_EXTRA", {**bench.KSWEEP_EXTRA, "backend": FAKE, "jobs": 2})


def small(name):
    if name == "convolution":
        return bench.convolution_data(image=(32, 32))
    if name == "matmul":
        return bench.matmul_data(n=64)
    return bench.pnpoly_data(n=3000)


# -- inputs and answers ---------------------------------------------------------------------


def test_convolution_answer_is_the_direct_correlation():
    data = bench.convolution_data(seed=3, image=(24, 20), filter_size=(5, 3))
    image = data["input"].astype(np.float64).reshape(28, 22)
    weights = data["filter"].astype(np.float64).reshape(5, 3)
    direct = np.array([[(image[y:y + 5, x:x + 3] * weights).sum() for x in range(20)] for y in range(24)])
    assert data["answer"].dtype == np.float32 and data["output"].shape == (24 * 20,) and not data["output"].any()
    np.testing.assert_allclose(data["answer"].reshape(24, 20), direct, rtol=1e-6, atol=1e-5)
    assert tuple(data["problem_size"]) == (20, 24)  # (x, y), as Kernel Tuner takes it


def test_pnpoly_answer_holds_for_every_code_path_of_the_kernel():
    """No point is near the polygon's boundary or at a vertex's y, so the kernel's four
    between_methods, two slope sources and two counting methods all give the answer."""
    data = bench.pnpoly_data(seed=5, n=2000)
    inner, outer = bench.polygon_bounds(data["vertices"].reshape(-1, 2))
    assert 0.99 < inner < outer < 1.0 + 1e-6
    r = np.hypot(*data["points"].reshape(-1, 2).astype(np.float64).T)
    assert ((r < inner - 1e-3) | (r > outer + 1e-3)).all() and 0.2 < data["answer"].mean() < 0.6
    assert not np.isin(data["points"].reshape(-1, 2)[:, 1], data["vertices"].reshape(-1, 2)[:, 1]).any()
    for method in range(4):
        for slopes in (0, 1):
            for use in (0, 1):
                got = fake.crossings(data["points"], data["vertices"], data["slopes"], method, slopes, use)
                assert (got == data["answer"]).all(), (method, slopes, use)
    # the slopes are pnpoly_host.cu's: vertex j's edge runs to vertex j - 1
    v = data["vertices"].reshape(-1, 2)
    assert data["slopes"][0] == np.float32((v[-1, 0] - v[0, 0]) / (v[-1, 1] - v[0, 1]))
    assert data["slopes"][7] == np.float32((v[6, 0] - v[7, 0]) / (v[6, 1] - v[7, 1]))


# -- the calling code: both tools' space, ksweep's side on the stand-in backend -------------


@pytest.mark.parametrize("name, full, smoke", [("convolution", 48, 6), ("pnpoly", 64, 8)])
def test_kernel_tuner_sees_the_spaces_the_docstring_says(name, full, smoke):
    from kernel_tuner.searchspace import Searchspace

    example = bench.EXAMPLES[name]
    data = small(name)
    for params, size in ((example.tune_params, full), (example.smoke_params, smoke)):
        call = bench.tune_call(example, data, "", params)
        assert Searchspace(call["tune_params"], call.get("restrictions"), 1024).size == size
    assert list(example.smoke_params) == list(example.tune_params)  # one config key for both


@pytest.mark.parametrize("name", ["convolution", "pnpoly", "matmul"])
def test_the_contenders_are_two_configs_of_the_full_space(name):
    """--contenders: the two configs the whole sweeps' picks parted on, and nothing else."""
    from kernel_tuner.searchspace import Searchspace

    example = bench.EXAMPLES[name]
    data = small(name)
    full = bench.tune_call(example, data, "", example.params("full"))
    two = bench.tune_call(example, data, "", example.params("contenders"))
    assert list(example.contenders) == list(example.tune_params)
    space = Searchspace(full["tune_params"], full.get("restrictions"), 1024)
    pair = Searchspace(two["tune_params"], two.get("restrictions"), 1024)
    assert pair.size == 2 and all(c in space.list for c in pair.list)


def test_matmul_data_and_call():
    data = bench.matmul_data(n=64)
    assert data["a"].dtype == np.float32 and -1 <= data["a"].min() and data["a"].max() < 1
    assert np.allclose(data["answer"], data["a"].astype(np.float64) @ data["b"].astype(np.float64), atol=1e-4)
    call = bench.tune_call(bench.EXAMPLES["matmul"], data, "", bench.EXAMPLES["matmul"].contenders)
    assert call["tune_params"]["WIDTH"] == [64] and call["problem_size"] == (64, 64)
    assert bench.EXAMPLES["matmul"].path(None) == ROOT / "examples" / "kernel_mode" / "matmul.cu"


@pytest.mark.parametrize("name", ["convolution", "pnpoly", "matmul"])
def test_kernel_tuner_accepts_the_argument_types(name):
    """Kernel Tuner refuses (TypeError) arguments that are not numpy arrays or scalars."""
    from kernel_tuner.util import check_argument_list

    call = bench.tune_call(bench.EXAMPLES[name], small(name), "", bench.EXAMPLES[name].smoke_params)
    check_argument_list(call["kernel_name"], STANDIN.read_text(), call["arguments"])
    assert call["lang"] == "cupy" and call["quiet"] and not call["verbose"]


@needs_nvrtc
@pytest.mark.parametrize("name", ["convolution", "pnpoly"])
def test_ksweep_takes_the_scripts_exact_call(name, tmp_path, monkeypatch, on_fake):
    """The keywords the script passes, on ksweep.kt.tune_kernel: every config of the smoke
    space is built by NVRTC, checked against the answer (through cmem) and timed; the space
    is the one Kernel Tuner sees."""
    from kernel_tuner.searchspace import Searchspace

    from ksweep.kt import tune_kernel

    monkeypatch.chdir(tmp_path)
    example = bench.EXAMPLES[name]
    call = bench.tune_call(example, small(name), STANDIN.read_text(), example.smoke_params)
    results, env = tune_kernel(**call, **bench.KSWEEP_EXTRA)
    facts = bench.sweep_facts(results, list(example.tune_params))
    space = Searchspace(call["tune_params"], call.get("restrictions"), 1024)
    assert facts["configs"] == facts["valid"] == space.size, facts["failures"]
    assert {bench.config_key(dict(zip(call["tune_params"], c)), list(call["tune_params"])) for c in space.list} == \
        set(facts["times_ms"])
    assert facts["best"] in [json.loads(k) for k in facts["times_ms"]]
    assert env["compiler"] == "nvrtc"


@needs_nvrtc
def test_a_wrong_answer_fails_every_config(tmp_path, monkeypatch, on_fake):
    from ksweep.kt import tune_kernel

    monkeypatch.chdir(tmp_path)
    example = bench.EXAMPLES["pnpoly"]
    data = small("pnpoly")
    data["answer"] = 1 - data["answer"]
    results, _ = tune_kernel(**bench.tune_call(example, data, STANDIN.read_text(), example.smoke_params),
                             **bench.KSWEEP_EXTRA)
    facts = bench.sweep_facts(results, list(example.tune_params))
    assert facts["valid"] == 0 and facts["failures"] == {"RuntimeFailedConfig": 8} and facts["best"] is None


@needs_nvrtc
@pytest.mark.slow
def test_the_ksweep_child_and_the_remeasurement(tmp_path, monkeypatch, on_fake):
    """The child sweep reads the saved inputs and writes its facts; the re-measurement
    measures each pick in sweeps of its own; the verdicts and the round's comparison."""
    example = bench.EXAMPLES["convolution"]
    data = small("convolution")
    np.savez(tmp_path / "data.npz", **data)
    folder = tmp_path / "ks"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert bench.child("ks", example, tmp_path / "data.npz", STANDIN, tmp_path / "facts.json", space="smoke") == 0
    facts = json.loads((tmp_path / "facts.json").read_text())
    assert facts["tool"] == "ks" and facts["valid"] == 6 and facts["compiler"] == "nvrtc"
    assert facts["call_wall_s"] > 0 and "ksweep_nvrtc" in facts["versions"]
    assert (folder / ".ksweep").is_dir()  # the sweep's workspace is its working directory's
    line = facts["timeline"]  # where its time went, from its database
    assert line["results"] == 6 and 0 < line["first_stored_s"] <= line["last_stored_s"] <= facts["call_wall_s"]
    assert line["build_s"]["sum"] > 0 and line["run_s"]["median"] > 0

    picks = [facts["best"], {**facts["best"], "tile_size_y": 3 - facts["best"]["tile_size_y"]}]
    measured = bench.remeasure(example, data, STANDIN, picks, protocol.fresh_folder(tmp_path / "re"), rounds=2)
    assert all(len(v) == 2 for v in measured["values_ms"].values()) and not any(measured["failures"].values())
    assert all(r == [0, 1] for r in measured["rounds"].values())  # the round of each time: compared round by round
    verdicts = bench.noise_verdicts(measured)
    assert sorted(v["mark"] for v in verdicts.values()) in (["", "BEST"], ["BEST", "TIE"])
    assert bench.compare_picks(picks[0], picks[0], verdicts, list(example.tune_params)) == "same"
    other = bench.compare_picks(picks[0], picks[1], verdicts, list(example.tune_params))
    assert other == "within noise" or other.startswith("apart: ")


@needs_nvrtc
@pytest.mark.slow
def test_the_whole_protocol_with_canned_sweeps(tmp_path, monkeypatch, on_fake):
    """main(): rounds in alternating order, a failed sweep recorded (exit 1) and the rest
    still reported, the picks re-measured (ksweep on the stand-in backend), the JSON and
    the table written."""
    import dataclasses

    for name in ("convolution", "pnpoly"):
        monkeypatch.setitem(bench.EXAMPLES, name, dataclasses.replace(bench.EXAMPLES[name],
                                                                      make_data=lambda name=name: small(name)))
    calls = []

    def canned(tool, example, data_file, source, work, tag, smoke):
        calls.append((example.name, tag, tool))
        if example.name == "pnpoly" and tool == "kt":
            raise protocol.ChildFailed("Kernel Tuner on pnpoly failed (exit 1):\nRuntimeError: verification")
        best = {k: v[0] for k, v in example.smoke_params.items()}
        if tool == "kt" and tag == "2":
            best[list(best)[-3]] = example.smoke_params[list(best)[-3]][-1]  # tile_size_y / between_method
        wall = 60.0 if tool == "kt" else 10.0
        return {"tool": tool, "process_wall_s": wall, "call_wall_s": wall - 3, "configs": 6, "valid": 6,
                "failures": {}, "times_ms": {bench.config_key(best, list(best)): 1.0}, "best": best, "best_ms": 1.0}

    monkeypatch.setattr(bench, "sweep_in_process", canned)
    monkeypatch.delenv("PYTHONPATH", raising=False)  # main() sets it for the processes it starts
    for f in ("convolution.cu", "pnpoly.cu"):
        shutil.copy(STANDIN, tmp_path / f)
    code = bench.main(["--kt-examples", str(tmp_path), "--out", str(tmp_path / "out"), "--reps", "2",
                       "--remeasure", "2"])
    assert code == 1  # Kernel Tuner failed on pnpoly
    assert os.environ["PYTHONPATH"] == str(ROOT)
    assert calls[:4] == [("convolution", "1", "kt"), ("convolution", "1", "ks"), ("convolution", "2", "ks"),
                         ("convolution", "2", "kt")]
    report = json.loads((tmp_path / "out" / "kt_examples_vs_kerneltuner.json").read_text())
    conv, pnpoly = report["examples"]
    assert [r["picks"] for r in conv["rounds"]][0] == "same" and conv["summary"]["speedup"]["median"] == 6.0
    assert len(conv["verdicts"]) == 2 and all(v["n"] == 2 for v in conv["verdicts"].values())
    assert conv["rounds"][1]["picks"] == "within noise" or conv["rounds"][1]["picks"].startswith("apart: ")
    assert pnpoly["summary"] == {"complete_rounds": 0} and len(pnpoly["errors"]) == 2
    assert len(pnpoly["verdicts"]) == 1  # ksweep's pick, measured although Kernel Tuner failed
    table = (tmp_path / "out" / "kt_examples_vs_kerneltuner.md").read_text()
    assert "### convolution (convolution.cu)" in table and "ERROR round 2 Kernel Tuner on pnpoly" not in table
    assert "ERROR round 1 Kernel Tuner: Kernel Tuner on pnpoly failed (exit 1):" in table
    assert report["kt_examples"]["pnpoly.cu"] and report["host"]["ksweep_nvrtc"].startswith("ksweep nvrtc")


# -- pure parts: facts, verdicts, the table, the arguments --------------------------------------


class RuntimeFailedConfig(str):  # Kernel Tuner's error values are str subclasses named by the failure
    pass


def test_sweep_facts_of_either_tools_results():
    names = ["a", "b"]
    results = [{"a": 1, "b": 2, "time": 2.0}, {"a": 1, "b": 3, "time": 1.5},
               {"a": 2, "b": 2, "__error__": RuntimeFailedConfig("x")},
               {"a": 2, "b": 3, "time": RuntimeFailedConfig("x")}]
    facts = bench.sweep_facts(results, names)
    assert facts["configs"] == 4 and facts["valid"] == 2 and facts["failures"] == {"RuntimeFailedConfig": 2}
    assert facts["best"] == {"a": 1, "b": 3} and facts["best_ms"] == 1.5
    # the tool's own pick (ksweep's: its confirmation's BEST), not the fastest single measurement
    picked = bench.sweep_facts(results, names, {"a": 1, "b": 2, "time": 2.0})
    assert picked["best"] == {"a": 1, "b": 2} and picked["best_ms"] == 2.0
    ks = {"times_ms": {bench.config_key(r, names): r["time"] / 2 for r in results[:2]}, "best": {"a": 1, "b": 3},
          "best_ms": 0.75}
    assert bench.timer_agreement(facts, ks) == {"median": 2.0, "min": 2.0, "max": 2.0, "n": 2, "configs": 2}
    assert bench.own_time_of_other_pick(ks, {"best": {"a": 1, "b": 2}}, names) == pytest.approx(4 / 3)


def test_compare_picks_by_their_intervals():
    names = ["a"]
    v = {'{"a": 1}': {"median_ms": 1.0, "lo_ms": 0.99, "hi_ms": 1.01, "n": 3, "mark": "BEST"},
         '{"a": 2}': {"median_ms": 1.005, "lo_ms": 1.0, "hi_ms": 1.02, "n": 3, "mark": "TIE"},
         '{"a": 3}': {"median_ms": 1.1, "lo_ms": 1.09, "hi_ms": 1.11, "n": 3, "mark": ""}}
    assert bench.compare_picks({"a": 1}, {"a": 1}, v, names) == "same"
    assert bench.compare_picks({"a": 2}, {"a": 1}, v, names) == "within noise"
    assert bench.compare_picks({"a": 3}, {"a": 1}, v, names) == \
        "apart: Kernel Tuner's pick 10.0% slower than ksweep's"
    assert bench.compare_picks({"a": 1}, {"a": 3}, v, names) == \
        "apart: ksweep's pick 10.0% slower than Kernel Tuner's"
    assert bench.compare_picks({"a": 1}, {"a": 4}, v, names) == "not re-measured"
    assert bench.compare_picks(None, {"a": 1}, v, names) == "no best"


def test_picks_are_compared_round_by_round_as_the_confirmation_does():
    """Two picks re-measured in three rounds on a clock that falls from round to round, the
    second 5% slower in each: apart, though their own intervals overlap."""
    names = ["a"]
    one, two = bench.config_key({"a": 1}, names), bench.config_key({"a": 2}, names)
    measured = {"values_ms": {one: [1.0, 1.1, 1.2], two: [1.05, 1.155, 1.26]},
                "rounds": {one: [0, 1, 2], two: [0, 1, 2]}, "failures": {one: 0, two: 0}}
    v = bench.noise_verdicts(measured)
    assert (v[one]["mark"], v[two]["mark"]) == ("BEST", "")
    assert v[one]["lo_ms"] <= v[two]["hi_ms"]  # the intervals alone would say "within noise"
    assert bench.compare_picks({"a": 2}, {"a": 1}, v, names) == "apart: Kernel Tuner's pick 5.0% slower than ksweep's"
    del measured["rounds"]  # an older record, without the rounds: the intervals decide
    assert bench.compare_picks({"a": 2}, {"a": 1}, bench.noise_verdicts(measured), names) == "within noise"


def _sweep(wall, best, ms, tool):
    return {"tool": tool, "process_wall_s": wall, "call_wall_s": wall - 2, "configs": 4, "valid": 4,
            "best": best, "best_ms": ms, "times_ms": {}}


def test_the_table_and_the_summary():
    names = {"x": [1, 2], "fixed": [7]}
    rounds = [{"order": ["kt", "ks"], "kt": _sweep(60.0, {"x": 1, "fixed": 7}, 1.0, "kt"),
               "ks": _sweep(10.0, {"x": 1, "fixed": 7}, 0.98, "ks"), "speedup": 6.0, "picks": "same",
               "timers": {"median": 1.02, "min": 1.0, "max": 1.05, "configs": 4}},
              {"order": ["ks", "kt"], "kt": _sweep(66.0, {"x": 2, "fixed": 7}, 1.01, "kt"),
               "ks": _sweep(16.5, {"x": 1, "fixed": 7}, 0.99, "ks"), "speedup": 4.0, "picks": "within noise"}]
    summary = bench.summarize("convolution", rounds)
    assert summary["speedup"] == {"median": 5.0, "min": 4.0, "max": 6.0, "n": 2}
    assert summary["speedup_target_met_every_round"] is False and not summary["same_best_every_round"]
    assert summary["same_or_within_noise_every_round"]
    verdicts = {'{"x": 1, "fixed": 7}': {"median_ms": 0.99, "lo_ms": 0.98, "hi_ms": 1.0, "n": 3, "mark": "BEST"},
                '{"x": 2, "fixed": 7}': {"median_ms": 1.0, "lo_ms": 0.99, "hi_ms": 1.01, "n": 3, "mark": "TIE"}}
    report = {"examples": [{"example": "convolution", "source": "convolution.cu", "tune_params": names,
                            "rounds": rounds, "summary": summary, "verdicts": verdicts, "errors": []}]}
    table = bench.markdown(report).splitlines()
    assert "| 1 | Kernel Tuner | 60.0 s (call 58.0 s; 4/4 timed) | 10.0 s (call 8.0 s; 4/4 timed) | 6.00x | x=1 " \
           "(1.0000 ms) | x=1 (0.9800 ms) | same |" in table
    assert "| 2 | ksweep | 66.0 s (call 64.0 s; 4/4 timed) | 16.5 s (call 14.5 s; 4/4 timed) | 4.00x | x=2 " \
           "(1.0100 ms) | x=1 (0.9900 ms) | within noise |" in table
    assert any(line.startswith("Kernel Tuner median 63.0 s (range 60.0-66.0); ksweep median 13.2 s") and
               "speed-up median 5.00x (range 4.00-6.00), target >= 5x met in every round: False" in line
               for line in table)
    assert "| x=1 | Kernel Tuner r1, ksweep r1, ksweep r2 | 0.9900 | 0.9800-1.0000 | 3 | BEST |" in table
    assert "| x=2 | Kernel Tuner r2 | 1.0000 | 0.9900-1.0100 | 3 | TIE |" in table
    assert summary["same_best_rounds"] == 1
    assert "Picks over 2 rounds: Kernel Tuner x=1 1x, x=2 1x; ksweep x=1 2x; the same config in 1 of 2 rounds." \
        in table
    failed = {**report["examples"][0], "rounds": [{"order": ["kt", "ks"], "kt": None, "ks": rounds[0]["ks"]}],
              "summary": {"complete_rounds": 0}, "verdicts": {}, "errors": ["round 1 Kernel Tuner: failed (exit 1):"]}
    text = bench.markdown({"examples": [failed]})
    assert "| 1 | Kernel Tuner | failed | 10.0 s" in text and "ERROR round 1 Kernel Tuner: failed (exit 1):" in text


def test_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args([])
    assert "--kt-examples DIR is required" in capsys.readouterr().err
    (tmp_path / "convolution.cu").write_text("// stand-in\n")
    with pytest.raises(SystemExit):
        bench.parse_args(["--kt-examples", str(tmp_path)])
    assert "no pnpoly.cu" in capsys.readouterr().err
    args = bench.parse_args(["--kt-examples", str(tmp_path), "--examples", "convolution", "--smoke"])
    assert (args.examples, args.reps, args.remeasure) == (["convolution"], 1, 2)
    (tmp_path / "pnpoly.cu").write_text("// stand-in\n")
    args = bench.parse_args(["--kt-examples", str(tmp_path)])
    assert (args.examples, args.reps, args.remeasure, args.smoke) == (["convolution", "pnpoly"], 3, 3, False)
    with pytest.raises(SystemExit):
        bench.parse_args(["--kt-examples", str(tmp_path), "--examples", "gemm"])
    assert "--examples gemm: choose from convolution, pnpoly" in capsys.readouterr().err
    args = bench.parse_args(["--kt-examples", str(tmp_path), "--examples", "pnpoly,matmul", "--contenders"])
    assert (args.examples, args.space) == (["pnpoly", "matmul"], "contenders")  # matmul.cu is this repository's
    with pytest.raises(SystemExit):
        bench.parse_args(["--kt-examples", str(tmp_path), "--smoke", "--contenders"])
    assert "--smoke and --contenders: choose one" in capsys.readouterr().err
    facts = bench.source_facts(tmp_path)
    assert set(facts) == {"convolution.cu", "pnpoly.cu"} and len(facts["pnpoly.cu"]) == 64


# -- the shared protocol and the fetch helper ------------------------------------------------------


def test_protocol_rounds_and_child_processes(tmp_path):
    assert [protocol.round_order(i) for i in range(3)] == [("kt", "ks"), ("ks", "kt"), ("kt", "ks")]
    out = tmp_path / "facts.json"
    code = f"import json, os; json.dump({{'cache': os.environ['CUPY_CACHE_DIR']}}, open({str(out)!r}, 'w'))"
    env = protocol.cupy_cache_env(tmp_path, "r1")
    facts = protocol.run_child([sys.executable, "-c", code], out, env=env)
    assert facts["cache"] == str(tmp_path / "cupy-cache-r1") and facts["process_wall_s"] > 0
    (tmp_path / "cupy-cache-r1" / "stale").write_text("x")
    assert not any(Path(protocol.cupy_cache_env(tmp_path, "r1")["CUPY_CACHE_DIR"]).iterdir())
    with pytest.raises(protocol.ChildFailed, match="Kernel Tuner failed \\(exit 3\\)"):
        protocol.run_child([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], out, what="Kernel Tuner")
    assert protocol.describe([3.0, 1.0, 2.0]) == "median 2.0 s (range 1.0-3.0)"


@pytest.mark.skipif(shutil.which("git") is None, reason="git not on PATH")
def test_fetch_kt_examples_copies_the_two_files_unmodified(tmp_path):
    repo = tmp_path / "kernel_tuner"
    (repo / "examples" / "cuda").mkdir(parents=True)
    (repo / "examples" / "cuda" / "convolution.cu").write_text("// convolution\n__constant__ float d_filter[9];\n")
    (repo / "examples" / "cuda" / "pnpoly.cu").write_bytes(b"// pnpoly\r\n#define VERTICES 600\r\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "examples"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (repo / "examples" / "cuda" / "pnpoly.cu").write_text("uncommitted edit\n")
    script = ROOT / "bench" / "fetch_kt_examples.sh"
    r = subprocess.run([str(script), str(repo), str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "pnpoly.cu").read_bytes() == b"// pnpoly\r\n#define VERTICES 600\r\n"
    assert (tmp_path / "out" / "convolution.cu").read_text().startswith("// convolution")
    assert head in (tmp_path / "out" / "SOURCE.txt").read_text()
    r = subprocess.run([str(script), str(tmp_path / "out"), str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 2 and "give a Kernel Tuner checkout" in r.stderr
