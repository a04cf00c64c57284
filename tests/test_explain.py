"""ksweep explain, profile and compare without a GPU: the occupancy arithmetic against
hand-worked cases, constraint margins, explain on every example spec, Nsight Compute CSV
(recorded on an H100) parsed and compared, a SASS diff of two real nvcc cubins, and the
profile pipeline through a stand-in ncu."""

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ksweep.build.ptxas import parse_ptxas
from ksweep.gpu.limits import builtin_limits
from ksweep.gpu.occupancy import occupancy
from ksweep.errors import KsweepError
from ksweep.profile.diff import metric_rows
from ksweep.profile.ncu import parse_csv, profile_argv
from ksweep.report.compare_view import render
from ksweep.report.explain import comparisons
from ksweep.store.sqlite import Store

from conftest import GCC_BUILD, ksweep_cli

ROOT = Path(__file__).parent.parent
NCU = Path(__file__).parent / "data" / "ncu"
H100 = builtin_limits("sm_90a")


def cli(*args, cwd=None):
    return ksweep_cli(*args, cwd=cwd)  # in this process (tests/conftest.py)


# -- occupancy: hand-worked cases (sm_90: 65536 registers in 4 sub-partitions, 64 warps, 32 blocks,
# 228 KB of shared memory, 1 KB reserved per block, 256-register and 128-byte allocation units) --
def test_registers_bind_when_a_warp_needs_4096_of_them():
    # 128 regs x 32 = 4096 per warp; 16384 per sub-partition -> 4 warps each, 16 per SM; 8-warp blocks -> 2
    o = occupancy(H100, threads=256, registers=128)
    assert (o.blocks_per_sm, o.binding, o.active_warps, o.occupancy) == (2, ("registers",), 16, 0.25)
    assert o.by_limit == {"registers": 2, "shared memory": 228, "warps": 8, "blocks": 32}


def test_register_allocation_rounds_up_per_warp():
    # 211 x 32 = 6752 -> 6912 (27 units of 256): 2 warps per sub-partition, 8 per SM, 2 blocks of 4 warps
    o = occupancy(H100, threads=128, registers=211, dynamic_smem=16384)
    assert (o.regs_per_warp, o.blocks_per_sm, o.binding) == (6912, 2, ("registers",))
    # shared memory alone: 16384 + 1024 reserved = 17408 per block; 233472 // 17408 = 13
    assert o.by_limit["shared memory"] == 13


def test_shared_memory_binds_with_its_reserved_kilobyte_and_rounding():
    # 16384 static: 17408 per block -> 13 blocks; 32 regs, 4 warps: 16 blocks by registers and by warps
    o = occupancy(H100, threads=128, registers=32, static_smem=16384)
    assert (o.blocks_per_sm, o.binding, o.smem_per_block) == (13, ("shared memory",), 17408)
    # 100 bytes dynamic is rounded with the reserved 1 KB to 1152 (9 x 128)
    assert occupancy(H100, threads=32, registers=16, dynamic_smem=100).smem_per_block == 1152


def test_warps_and_blocks_tie():
    o = occupancy(H100, threads=64, registers=16)
    assert (o.blocks_per_sm, o.binding) == (32, ("warps", "blocks"))


def test_a_block_over_the_register_file_does_not_launch():
    # 255 regs -> 8192 per warp; 32 warps need 262144 > 65536 registers per block
    o = occupancy(H100, threads=1024, registers=255)
    assert o.blocks_per_sm == 0 and "registers per block" in o.problem


def test_seed_004_static_versus_dynamic_shared_memory():
    """Seed 004: BLOCK_M=64 takes 41,344 bytes (fits 48 KB); BLOCK_M=128 takes 115,456 bytes,
    which no static array may hold and a dynamic one only after opting in."""
    small = occupancy(H100, threads=128, registers=64, static_smem=41344)
    assert small.blocks_per_sm == 5 and small.problem is None  # (41344 + 1024) -> 42368 per block; 233472 // 42368
    static = occupancy(H100, threads=256, registers=64, static_smem=115456)
    assert static.blocks_per_sm == 0 and "static shared memory" in static.problem
    no_opt_in = occupancy(H100, threads=256, registers=64, dynamic_smem=115456, opt_in=False)
    assert no_opt_in.blocks_per_sm == 0 and "without opting in" in no_opt_in.problem
    opted = occupancy(H100, threads=256, registers=64, dynamic_smem=115456)
    assert (opted.blocks_per_sm, opted.binding) == (2, ("shared memory",))  # 116480 per block


def test_ptxas_constant_memory_of_older_nvcc():
    report = parse_ptxas(textwrap.dedent("""\
        ptxas info    : Compiling entry function '_Z1kPf' for 'sm_80'
        ptxas info    : Function properties for _Z1kPf
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 10 registers, 4096 bytes smem, 368 bytes cmem[0], 8 bytes cmem[2]
        """))
    (k,) = report.kernels
    assert (k.registers, k.smem, k.cmem) == (10, 4096, 376)


# -- constraints and explain ------------------------------------------------------------------------
def test_explain_says_a_value_that_is_not_one_of_the_parameters_values(program_dir, capsys):
    """TILE=48 where 48 is not one of TILE's values said 'valid: passes every constraint'."""
    from ksweep.cli.main import main
    from ksweep.space.space import Space

    spec = program_dir(GCC_BUILD + textwrap.dedent("""
        [params]
        MODE = [0]
        TILE = [16, 32, 64, 128]
        [[constraints]]
        name = "small"
        expr = "TILE < 100"
        """))
    assert main(["explain", str(spec), "TILE=48"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "NOT IN THE SPACE: TILE=48 is not one of TILE's values (16, 32, 64, 128)" in lines
    assert "valid: passes every constraint" not in lines
    assert main(["explain", str(spec), "TILE=48", "--json"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["valid"] is False and e["not_in_space"] == {"TILE": [16, 32, 64, 128]} and e["pruned_by"] is None
    # what the space's membership check says, and a pruned value outside the space too
    assert {"MODE": 0, "TILE": 48} not in Space({"MODE": [0], "TILE": [16, 32, 64, 128]})
    assert main(["explain", str(spec), "TILE=256"]) == 0
    out = capsys.readouterr().out
    assert "TILE=256 is not one of TILE's values" in out and "PRUNED by constraint 'small'" in out
    assert main(["explain", str(spec), "TILE=32"]) == 0  # one of its values: as before
    out = capsys.readouterr().out
    assert "valid: passes every constraint" in out and "NOT IN THE SPACE" not in out


def test_comparisons_split_and_chains_and_keep_the_source_text():
    assert comparisons("(BM // WM) * WN <= LIMIT and 0 < X <= 8") == [
        ("(BM // WM) * WN <= LIMIT", "(BM // WM) * WN", "<=", "LIMIT"),
        ("0 < X", "0", "<", "X"), ("X <= 8", "X", "<=", "8")]


def test_explain_gives_margins_and_the_failing_constraint(program_dir):
    spec = program_dir(GCC_BUILD + textwrap.dedent("""
        [params]
        MODE = [0]
        X = [8, 4]
        [constants]
        BUDGET = 40
        [derived]
        SMEM_BYTES = "X * 4096"
        [[constraints]]
        name = "smem"
        expr = "SMEM_BYTES <= MAX_SMEM_PER_BLOCK and X * 4 <= BUDGET"
        [[constraints]]
        name = "small"
        expr = "X < 6"
        reason = "X={X} is too large"
        [sweep]
        arch = "sm_90a"
        """))
    r = cli("explain", str(spec), "X=8", "--json")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)
    assert e["derived"] == {"SMEM_BYTES": 32768} and e["pruned_by"] == "small" and not e["valid"]
    smem, small = e["constraints"]
    assert smem["passed"] is True and small["passed"] is False and small["reason"] == "X=8 is too large"
    assert [(t["text"], t["margin"]) for t in smem["terms"]] == [
        ("SMEM_BYTES <= MAX_SMEM_PER_BLOCK", 227 * 1024 - 32768), ("X * 4 <= BUDGET", 8)]
    assert e["limits"] == {"MAX_SMEM_PER_BLOCK": 227 * 1024}  # BUDGET is a constant, not a limit
    text = cli("explain", str(spec), "X=8").stdout
    assert "PRUNED by constraint 'small'" in text and "199680 (195.0 KB) to spare" in text
    assert cli("explain", str(spec), "Y=8").stderr.strip().startswith("ksweep: error: 'Y' is not a parameter")


@pytest.mark.parametrize("spec", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*/*.toml")))
def test_explain_every_example_spec(spec, tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree((ROOT / spec).parent, folder)
    r = cli("explain", str(folder / Path(spec).name), "default", "--json")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)
    assert e["constraints"] and all(c["passed"] is not None for c in e["constraints"])
    assert e["params"] and set(e["defaulted"]) == set(e["params"])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_explain_builds_a_kernel_mode_config_for_its_resources_and_occupancy(tmp_path):
    folder = tmp_path / "km"
    shutil.copytree(ROOT / "examples" / "kernel_mode", folder)
    r = cli("explain", str(folder / "matmul.toml"), "block_size_x=32", "block_size_y=8", "tile_size_y=4",
            "--build", "--json")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)
    (k,) = e["kernels"]
    assert k["name"] == "matmul_kernel" and k["registers"] > 0 and k["smem"] == 8192  # 2 static tiles of 32x32 floats
    (occ,) = e["occupancy"]
    assert e["launch"]["threads"] == 256 and occ["threads"] == 256
    want = occupancy(H100, threads=256, registers=k["registers"], static_smem=8192)
    assert occ["blocks_per_sm"] == want.blocks_per_sm and occ["binding"] == list(want.binding)


# -- Nsight Compute CSV, recorded on an H100 (bench/profile_examples.sh) ------------------------------
def test_the_raw_page_of_a_profile_parses_into_metrics_and_units():
    (p,) = parse_csv((NCU / "sgemm_best.raw.csv").read_text())
    assert p.kernel == "sgemm_warptiling"
    d = p.metrics["gpu__time_duration.sum"]
    assert (d.value, d.unit, d.section) == (3.304352, "ms", "Duration")
    assert p.metrics["launch__registers_per_thread"].value == 127.0
    assert p.metrics["launch__occupancy_limit_registers"].value == 2.0
    assert not [m for m in p.metrics if m.startswith(("device__attribute", "profiler__"))]
    assert any(m.startswith("smsp__average_warps_issue_stalled_") for m in p.metrics)


def test_the_details_page_parses_too_with_sections_of_our_own_for_command_line_metrics():
    (p,) = parse_csv((NCU / "flash_best.details.csv").read_text())
    assert p.kernel.startswith("void flash_attn_fwd<0>")
    assert p.metrics["dram__bytes.sum"].unit == "Mbyte" and p.metrics["dram__bytes.sum"].section == "Memory"


def test_compare_two_exports_sorts_each_section_by_the_size_of_the_change():
    a, b = (parse_csv((NCU / f).read_text())[0] for f in ("sgemm_best.raw.csv", "sgemm_default.raw.csv"))
    rows = metric_rows(a, b)
    sections = [r.section for r in rows]
    assert sections.index("Duration") < sections.index("Occupancy")
    for s in set(sections):
        sizes = [abs(r.change) for r in rows if r.section == s and r.change is not None]
        assert sizes == sorted(sizes, reverse=True)
    dur = next(r for r in rows if r.name == "gpu__time_duration.sum")
    assert (round(dur.a, 3), round(dur.b, 3)) == (3.304, 3.965) and round(dur.change, 2) == 0.2


def test_compare_cli_on_two_csv_files():
    r = cli("compare", str(NCU / "flash_best.details.csv"), str(NCU / "flash_worst.details.csv"), "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)["metrics"]}
    assert rows["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["b"] > 1000 * rows[
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["a"]
    text = cli("compare", str(NCU / "flash_best.details.csv"), str(NCU / "flash_worst.details.csv")).stdout
    assert "[Shared memory]" in text and "+397.3%" in text  # 138.7 us -> 689.9 us


def test_compare_refuses_a_csv_that_is_not_an_ncu_export(tmp_path, capsys):
    """ksweep's own sweep CSV was compared as if its columns were Nsight Compute metrics."""
    from ksweep.cli.main import main
    from ksweep.result import Result
    from ksweep.status import Status

    with Store(tmp_path / "s.db") as store:
        store.put(Result("base", "s", {"X": 1}, Status.OK, metrics={"ms": 1.5}))
    assert main(["report", str(tmp_path / "s.db"), "--format", "csv"]) == 0
    sweep_csv = tmp_path / "sweep.csv"
    sweep_csv.write_text(capsys.readouterr().out)
    other = tmp_path / "ids.csv"  # an ID column alone is not ncu's header
    other.write_text('"ID","ms"\n"0","1.5"\n')
    real = str(NCU / "sgemm_best.raw.csv")
    for a, b, bad in ((str(sweep_csv), real, sweep_csv), (real, str(sweep_csv), sweep_csv), (real, str(other), other)):
        assert main(["compare", a, b]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert err.startswith(f"ksweep: error: {bad}: not an Nsight Compute CSV export")
    with pytest.raises(Exception, match="not an Nsight Compute CSV export"):
        parse_csv(sweep_csv.read_text())
    # ncu's own output around its CSV (==PROF== lines) still parses
    assert parse_csv("==PROF== Disconnected\n" + (NCU / "sgemm_best.raw.csv").read_text())[0].kernel == "sgemm_warptiling"


def test_compare_of_a_csv_that_is_not_there_is_one_line(tmp_path, capsys):
    from ksweep.cli.main import main

    real = str(NCU / "sgemm_best.raw.csv")
    for missing in (tmp_path / "missing.csv", tmp_path):  # a file that is not there, a folder
        assert main(["compare", real, str(missing)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"ksweep: error: {missing}: ")


# -- SASS instruction mix of two real cubins -------------------------------------------------------
KERNEL = """
extern "C" __global__ void k(float *a, const float *b) {
  float acc = 0.f;
#pragma unroll PRAGMA
  for (int i = 0; i < 64; ++i) acc = fmaf(acc, b[i], 1.0f);
  a[threadIdx.x] = acc;
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_sass_mix_of_two_cubins_built_by_nvcc(tmp_path):
    from ksweep.build.sass import disassemble
    from ksweep.profile.diff import sass_rows

    mixes = []
    for unroll in (1, 64):
        (tmp_path / f"k{unroll}.cu").write_text(KERNEL.replace("PRAGMA", str(unroll)))
        out = tmp_path / f"k{unroll}.cubin"
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-o", str(out), str(tmp_path / f"k{unroll}.cu")],
                       check=True, capture_output=True)
        mixes.append(disassemble(out))
    rolled, unrolled = mixes
    assert list(rolled.functions) == ["k"]
    assert unrolled.classes["fp32"] >= 64 > rolled.classes["fp32"]  # 64 FFMAs once unrolled
    rows = {r.name: r for r in sass_rows(rolled.classes, unrolled.classes)}
    assert rows["fp32"].change > 1 and rows["total"].b > rows["total"].a


# -- profile through a stand-in ncu -------------------------------------------------------------------
FAKE_NCU = """#!{python}
import os, shutil, subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 0.0 (stand-in)"); sys.exit(0)
if os.environ.get("FAKE_NCU_DENY"):
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
if "--import" in args:
    print(open({csv!r}).read()); sys.exit(0)
report = args[args.index("--export") + 1]
i = args.index("--metrics") + 2 if "--metrics" in args else args.index("full") + 1
if "--log-file" in args:
    i = max(i, args.index("--log-file") + 2)
rc = subprocess.call(args[i:])
open(report + ".ncu-rep", "w").write("report")
open(os.environ["FAKE_NCU_LOG"], "a").write(" ".join(args) + "\\n")
sys.exit(rc)
"""


@pytest.fixture
def swept(program_dir, tmp_path):
    spec = program_dir(GCC_BUILD + textwrap.dedent("""
        [sweep]
        objective = "ms"
        [params]
        MODE = [7]
        X = [3, 1, 2]
        [run]
        timeout = 10
        [profile]
        kernel = "sgemm"
        """))
    r = cli("run", str(spec), "--strategy", "grid", "--no-confirm", "-q", "--db", str(tmp_path / "s.db"))
    assert r.returncode == 0, r.stderr
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, csv=str(NCU / "sgemm_best.raw.csv")))
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    return tmp_path / "s.db", ncu


def test_profile_stores_metrics_that_explain_and_report_show(swept, tmp_path, monkeypatch):
    db, ncu = swept
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "ncu.log"))
    r = cli("profile", str(db), "--top", "1", "--ncu", str(ncu))
    assert r.returncode == 0, r.stderr
    assert "2 of 2 configs profiled" in r.stdout  # the best (X=1) and the default (X=3)
    calls = (tmp_path / "ncu.log").read_text().splitlines()
    assert len(calls) == 2 and all("--kernel-name regex:sgemm" in c and "--clock-control none" in c for c in calls)
    with Store(db, create=False) as store:
        stored = {p["params"]["X"]: p for p in store.profiles()}
    assert set(stored) == {1, 3}
    launch = stored[1]["launches"][0]
    assert launch["metrics"]["gpu__time_duration.sum"] == {"value": 3.304352, "unit": "ms", "section": "Duration"}
    shown = cli("explain", str(db), "best")
    assert "profile (Nsight Compute):" in shown.stdout and "3.304 ms" in shown.stdout
    assert "achieved occupancy" in cli("report", str(db)).stdout
    c = cli("compare", str(db), "best", "default", "--no-sass", "--json")
    assert c.returncode == 0, c.stderr
    assert json.loads(c.stdout)["metrics"] and "X=1" in json.loads(c.stdout)["a"]


def test_a_profiler_without_permission_is_one_line_and_changes_nothing(swept, tmp_path, monkeypatch):
    db, ncu = swept
    before = db.read_bytes()
    monkeypatch.setenv("FAKE_NCU_DENY", "1")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "ncu.log"))
    r = cli("profile", str(db), "--ncu", str(ncu))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "permission to read the GPU's performance counters" in r.stderr
    with Store(db, create=False) as store:
        assert store.profiles() == [] and len(store.results()) == 3
    r = cli("profile", str(db), "--ncu", str(tmp_path / "missing-ncu"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_an_ncu_that_is_not_there_is_one_line_saying_so(swept, tmp_path, monkeypatch, capsys):
    """--ncu naming no executable file said 'Nsight Compute exited with None: no output'."""
    from ksweep.cli.main import main

    db, ncu = swept
    before = db.read_bytes()
    plain = tmp_path / "plain-file"
    plain.write_text("not a program\n")
    for missing in (tmp_path / "missing-ncu", plain, tmp_path):
        assert main(["profile", str(db), "--ncu", str(missing)]) == 2
        err = capsys.readouterr().err
        assert err == f"ksweep: error: Nsight Compute (ncu) was not found: --ncu {missing} is not an executable file\n"
    assert main(["profile", str(db), "--ncu", "no-such-ncu-program"]) == 2
    assert "--ncu no-such-ncu-program is not an executable file on the PATH" in capsys.readouterr().err
    assert db.read_bytes() == before
    # a path relative to the current folder is found, though ncu runs in a folder of its own
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "ncu.log"))
    monkeypatch.chdir(tmp_path)
    assert main(["profile", str(db), "--top", "1", "--ncu", os.path.join(".", ncu.name)]) == 0
    assert "2 of 2 configs profiled" in capsys.readouterr().out


def test_compare_shows_a_failed_configs_status_and_a_confirmed_configs_median(swept, capsys):
    """A CHECKSUM_MISMATCH config was shown as [ms=1.287] like a good one, a PRUNED one with
    no word of it, and a confirmed config by its single sweep run, not the confirmation's
    median that report, explain and export use."""
    from dataclasses import replace as changed

    from ksweep.cli.main import main
    from ksweep.job import config_id
    from ksweep.result import Measurement, Result
    from ksweep.status import Status

    db, _ = swept
    with Store(db) as store:
        by_x = {r.params["X"]: r for r in store.results()}
        best = by_x[1]
        store.put(changed(by_x[2], status=Status.CHECKSUM_MISMATCH, message="checksum=7 expected 6",
                          metrics={**by_x[2].metrics, "ms": 1.287}))
        store.put(Result(best.variant, best.shape, dict(by_x[3].params), Status.PRUNED, "X * 2 <= 4"))
        for i, v in enumerate((5.0, 6.0, 7.0)):  # the confirmation: median 6, not the sweep's run
            store.put_measurement(Measurement(best.variant, best.shape, dict(best.params), best.cache_key, i,
                                              Status.OK, v, finished=(best.finished or 0) + 1 + i))
        store.set_meta(f"default:{best.variant}:{best.shape}", config_id(by_x[3].params))
    assert best.metrics["ms"] != 6.0

    assert main(["compare", str(db), "best", "MODE=7,X=2", "--no-sass"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("A: #") and "X=1" in out[0]
    assert out[0].endswith("[ms=6: median of 3 confirmation runs, BEST]")
    assert out[1].startswith("B: #") and out[1].endswith("X=2  [CHECKSUM_MISMATCH: ms=1.287, not ranked]")
    assert main(["compare", str(db), "default", "X=2", "--no-sass", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["a"].endswith("X=3  [PRUNED: never built or run (X * 2 <= 4)]")
    # explain says the same median of the same config
    assert main(["explain", str(db), "best", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["confirmation"]["median"] == 6.0


def test_compare_shows_the_result_metrics_first_and_knobs_as_changed(tmp_path, capsys):
    """MODE 1 → 0 was shown as -100.0%, and the objective only in the A/B lines."""
    from ksweep.cli.main import main
    from ksweep.result import Result
    from ksweep.spec.model import Objective
    from ksweep.status import Status

    (tmp_path / "toy.c").write_text("int main(void) { return 0; }\n")
    spec = tmp_path / "cmp.toml"
    spec.write_text(textwrap.dedent("""
        [sweep]
        name = "cmp"
        objective = "ms"
        [params]
        A = [1, 2]
        [switches]
        MODE = [1, 0]
        [build]
        sources = ["toy.c"]
        command = ["gcc", "{defines}", "-o", "{binary}", "toy.c"]
        """))
    db = tmp_path / "cmp.db"
    with Store(db) as store:
        store.set_objectives([Objective("ms", "min")])
        store.set_meta("spec", str(spec))
        for mode, ms, gflops in ((1, 2.5, 10.0), (0, 1.0, 25.0)):
            store.put(Result("base", "default", {"A": 1, "MODE": mode}, Status.OK,
                             metrics={"ms": ms, "gflops": gflops, "checksum": 1.0}, gpu_name="none",
                             cache_key=f"m{mode}"))
    assert main(["compare", str(db), "MODE=1", "MODE=0", "--no-sass"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3] == "result metrics (B against A):"
    assert out[4].split()[:3] == ["ms", "(objective,", "min)"] and out[4].endswith("2.5× faster (-60.0%)")
    assert out[5].split()[0] == "gflops" and out[5].endswith("2.5× higher (+150.0%)")
    assert out[6].split()[0] == "checksum" and out[6].endswith("=")
    params = out[out.index("parameters:") + 1:]
    assert params[0].split() == ["MODE", "1", "→", "0"] and "%" not in params[0]
    assert main(["compare", str(db), "MODE=1", "MODE=0", "--no-sass", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    ms = shown["results"][0]
    assert (ms["name"], ms["ratio"], ms["change"], ms["better"]) == ("ms", 0.4, -0.6, True)
    (mode,) = [p for p in shown["params"] if p["name"] == "MODE"]
    assert mode["knob"] and mode["change"] is None and (mode["a"], mode["b"]) == (1, 0)


def test_profile_argv_chooses_launches_and_metric_sets(tmp_path):
    argv = profile_argv("ncu", tmp_path / "r", ["./prog", "1"], kernel="gemm", launch_skip=2, launch_count=1,
                        metrics="full")
    assert argv[-2:] == ["./prog", "1"] and "--set" in argv and argv[argv.index("--launch-skip") + 1] == "2"
    custom = profile_argv("ncu", tmp_path / "r", ["p"], metrics=["a.sum", "b.avg"])
    assert custom[custom.index("--metrics") + 1] == "a.sum,b.avg"


def test_explain_a_gcc_built_result_says_no_gpu_or_kernel_plainly(swept):
    """A host program's result: no 'on none', no empty occupancy heading, and not 'no build
    of it is stored' for a config that was built."""
    from dataclasses import replace

    from ksweep.status import Status

    db, _ = swept
    text = cli("explain", str(db), "best").stdout
    assert "result #" in text and " on none" not in text
    assert "theoretical occupancy" not in text
    assert "its build reported no CUDA kernel" in text and "no build of it is stored" not in text
    with Store(db) as store:  # a config whose build failed is not said to have built without kernels
        (r,) = [r for r in store.results() if r.params["X"] == 2]
        store.put(replace(r, status=Status.COMPILE_ERROR, message="error: x", metrics={}))
    text = cli("explain", str(db), "MODE=7", "X=2").stdout
    assert "COMPILE_ERROR" in text and "its build reported no CUDA kernel" not in text


def test_convergence_is_the_best_so_far_in_evaluation_order(swept, tmp_path):
    pytest.importorskip("matplotlib")
    from ksweep.report.plot import convergence

    db, _ = swept
    with Store(db, create=False) as store:
        results = store.results()
    series = convergence(results, "ms", "min")
    done = [r.metrics["ms"] for r in results]  # in the order they finished (X = 3, 1, 2 run at once)
    assert sorted(done) == [1.0, 2.0, 3.0]
    assert series == {("base", "default"): [min(done[:i + 1]) for i in range(3)]}
    from ksweep.result import Result
    from ksweep.status import Status

    mixed = [Result("v", "s", {"X": 1}, Status.PRUNED), Result("v", "s", {"X": 2}, Status.CRASH),
             Result("v", "s", {"X": 3}, Status.OK, metrics={"ms": 5.0}),
             Result("v", "s", {"X": 4}, Status.OK, metrics={"ms": 7.0})]
    assert convergence(mixed, "ms", "min") == {("v", "s"): [None, 5.0, 5.0]}
    assert convergence(mixed, "ms", "max") == {("v", "s"): [None, 5.0, 7.0]}
    out = tmp_path / "c.png"
    r = cli("plot", "convergence", str(db), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plan_and_the_summary_say_how_many_configs_spilled(program_dir, tmp_path):
    from types import SimpleNamespace

    from ksweep.report.progress import summary_line
    from ksweep.result import Result
    from ksweep.status import Status

    spec = program_dir(GCC_BUILD + textwrap.dedent("""
        [params]
        MODE = [0]
        X = [1, 2, 3]
        """))
    db = tmp_path / "s.db"
    with Store(db) as store:
        # X=9 spilled in a sweep of an older spec: not a config of this one, so not counted
        for x, status in ((1, Status.SPILLS), (2, Status.SPILLS), (3, Status.OK), (9, Status.SPILLS)):
            store.put(Result("base", "default", {"MODE": 0, "X": x}, status, metrics={"ms": 1.0}))
    said = "2 configs not run because their kernels spill registers ([build] allow_spills = false; true runs them)"
    r = cli("plan", str(spec), "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert f"{said}, as the last sweep found (the database)" in r.stdout
    assert json.loads(cli("plan", str(spec), "--db", str(db), "--json").stdout)["spilled"] == [
        {"variant": "base", "shape": "default", "configs": 2, "will_run": False}]
    assert "spill" not in cli("plan", str(spec), "--db", str(tmp_path / "none.db")).stdout
    summary = SimpleNamespace(evaluated=3, resumed=0, wall_seconds=1.0, build_cpu_seconds=1.0, gpu_seconds=0.5,
                              has_gpu=False, gpu_idle_share=0.0, configs_per_minute=180.0,
                              counts={"OK": 1, "SPILLS": 2})
    assert said in summary_line(summary)  # the run's summary says it in the same words
    summary.counts = {"OK": 3}
    assert "spill" not in summary_line(summary)
    # allowed now: the next sweep runs them, and plan says so instead
    spec.write_text(spec.read_text().replace("timeout = 60", "timeout = 60\nallow_spills = true"))
    r = cli("plan", str(spec), "--db", str(db))
    assert "2 configs stored as SPILLS by an earlier sweep will run ([build] allow_spills = true)" in r.stdout
    assert "not run because" not in r.stdout


def test_kernel_mode_profile_sets_up_the_worker_as_the_sweep_does_cmem_included(tmp_path):
    import numpy as np

    from ksweep.app import profile, target
    from ksweep.app.kernel import kernel_tuning_spec
    from ksweep.build.builder import BuildResult
    from ksweep.build.ptxas import KernelResources, PtxasReport
    from ksweep.kernel.executor import setup_request, shape_sizes
    from ksweep.status import Status

    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float *y) {}\n')
    spec = kernel_tuning_spec("k", tmp_path / "k.cu", {"N": 8}, [np.zeros(8, np.float32)], {"B": [32]},
                              grid=["1"], block=["B"], outputs=[0], reference=None,
                              cmem={"d_c": np.ones(2, np.float32)})
    job = target._factory(spec, None, None).make({"B": 32})
    built = BuildResult(Status.OK, binary=tmp_path / "k.cubin", report=PtxasReport((KernelResources("k"),)))
    argv, kernel = profile._kernel_mode_program(spec, job, built, tmp_path)
    request = json.loads((tmp_path / "request.json").read_text())
    assert kernel == "^k$" and argv[-1] == str(tmp_path / "request.json")
    assert request["setup"]["cmem"] == spec.kernel.cmem and request["setup"]["cmem"].startswith("npz:")
    assert request["setup"] == json.loads(json.dumps(setup_request(spec.kernel, spec.root,
                                                                   shape_sizes(spec, spec.shape_list()[0]))))
    assert request["launch"]["block"] == list(job.launch["block"])
