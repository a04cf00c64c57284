"""ksweep export (issue 16, item 5): the C/C++ header compiles and selects each shape's best
config (gcc, g++, nvcc), --cover ships the fewest configs, T4 files validate against the
schema Kernel Tuner ships, and Kernel Tuner caches replay (ksweep replay, Kernel Tuner's
simulation mode) to the database's best config and value."""

import itertools
import json
import random
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from ksweep.cli.main import main
from ksweep.job import config_id
from ksweep.export.cover import _greedy, cover
from ksweep.export.selection import select as select_of
from ksweep.spec.model import Objective
from ksweep.store.standings import standings_of
from ksweep.result import Measurement, Result
from ksweep.status import Status
from ksweep.store.sqlite import Store

from conftest import GCC_BUILD

def select(rows, metric, direction, measurements=(), **options):
    """What an export ships of rows (and confirmation runs) read from a store."""
    return select_of(standings_of(list(rows), list(measurements), Objective(metric, direction)), **options)


H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
needs_gcc = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="no gcc/g++")


# -- databases ---------------------------------------------------------------------------

def row(shape, bm, stages, ms=None, status=Status.OK, gpu=H100, variant="base", **metrics):
    params = {"BM": bm, "STAGES": stages, "VEC": "uint4"}
    argv = ("nvcc", "-O3", f"-DK_BM={bm}", f"-DSTAGES={stages}", "-DVEC=uint4", f"-DSHAPE_ID={len(shape)}",
            "-o", "{binary}", "k.cu")
    return Result(variant, shape, params, status, metrics={"ms": ms, **metrics} if ms is not None else metrics,
                  gpu_name=None if status.build_failure or status is Status.PRUNED else gpu, build_argv=argv, build_seconds=0.4,
                  run_seconds=0.1, finished=1.7e9, cache_key=f"key-{variant}-{shape}-{bm}-{stages}")


def make_db(path, rows, objective=("ms", "min"), measurements=(), name="sgemm"):
    with Store(path) as store:
        store.set_meta("objective", {"metric": objective[0], "direction": objective[1]})
        store.set_meta("spec_name", name)
        store.put_many(rows)
        for m in measurements:
            store.put_measurement(m)
    return str(path)


def planted(seed=0, shapes=("square", "tall k", "wide-n"), gpu=H100, variant="base", bms=(32, 64, 128)):
    """Every config of a small grid on each shape, with random times: the test's own oracle
    (the least time per shape) says which config is best."""
    rng = random.Random(seed)
    rows = []
    for shape in shapes:
        for bm, stages in itertools.product(bms, (2, 3, 4)):
            rows.append(row(shape, bm, stages, round(rng.uniform(1.0, 2.0), 4), gpu=gpu, variant=variant))
        rows.append(row(shape, 256, 4, status=Status.COMPILE_ERROR))
        rows.append(row(shape, 256, 8, status=Status.PRUNED))
    return rows


def oracle_best(rows, shape, gpu=None):
    ok = [r for r in rows if r.shape == shape and r.status is Status.OK and (gpu is None or r.gpu_name == gpu)]
    return min(ok, key=lambda r: r.metrics["ms"])


def export(capsys, *argv):
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the set cover -----------------------------------------------------------------------

def brute_force(losses, universe):
    """(fewest candidates, least total loss among covers of that size), by trying every subset."""
    names = list(losses)
    for k in range(1, len(names) + 1):
        best = None
        for combo in itertools.combinations(names, k):
            if all(any(e in losses[c] for c in combo) for e in universe):
                total = sum(min(losses[c][e] for c in combo if e in losses[c]) for e in universe)
                best = total if best is None else min(best, total)
        if best is not None:
            return k, best
    raise AssertionError("no cover")


def test_the_cover_beats_greedy_where_greedy_is_not_minimal():
    losses = {"wide": {1: 0, 2: 0, 4: 0, 5: 0}, "left": {1: 0, 2: 0, 3: 0}, "right": {4: 0, 5: 0, 6: 0}}
    assert len(_greedy(losses, [1, 2, 3, 4, 5, 6])) == 3  # takes "wide" first, then needs both others
    found = cover(losses, [1, 2, 3, 4, 5, 6])
    assert found.chosen == ("left", "right") and found.exact


def test_of_the_fewest_configs_the_cover_loses_least():
    losses = {"a": {1: 0.04, 2: 0.0}, "b": {3: 0.0, 4: 0.04}, "c": {1: 0.0, 3: 0.01}, "d": {2: 0.01, 4: 0.0}}
    found = cover(losses, [1, 2, 3, 4])
    assert set(found.chosen) == {"c", "d"} and found.loss == pytest.approx(0.02)
    assert found.assignment == {1: "c", 2: "d", 3: "c", 4: "d"}


@pytest.mark.parametrize("seed", range(40))
def test_the_cover_is_the_minimum_that_trying_every_subset_finds(seed):
    rng = random.Random(seed)
    universe = list(range(rng.randint(1, 7)))
    losses = {f"c{i}": {e: round(rng.random() / 10, 3) for e in universe if rng.random() < 0.4}
              for i in range(rng.randint(1, 9))}
    for e in universe:  # every element has its own best
        losses.setdefault(f"own{e}", {})[e] = 0.0
    found = cover(losses, universe)
    k, least = brute_force(losses, universe)
    assert found.exact and len(found.chosen) == k and found.loss == pytest.approx(least)
    assert all(e in losses[found.assignment[e]] and found.assignment[e] in found.chosen for e in universe)


def test_a_search_out_of_nodes_says_so_and_still_covers():
    losses = {f"c{i}": {e: 0.0 for e in range(12) if (e + i) % 3} for i in range(12)}
    found = cover(losses, range(12), node_limit=1)
    assert not found.exact
    assert all(e in losses[found.assignment[e]] for e in range(12))


def test_an_element_no_candidate_serves_is_refused():
    with pytest.raises(ValueError, match="no candidate serves 2"):
        cover({"a": {1: 0.0}}, [1, 2])


# -- what is shipped ---------------------------------------------------------------------

def test_each_shape_ships_its_best_and_a_cover_the_fewest_within_the_tolerance():
    rows = planted(seed=3)
    shapes = ["square", "tall k", "wide-n"]
    sel = select(rows, "ms", "min")
    assert [e.shape for e in sel.entries] == shapes
    for e in sel.entries:
        assert e.result is oracle_best(rows, e.shape) and e.loss == 0.0 and e.gpu == H100
    for pct in (0, 5, 20, 60):
        sel = select(rows, "ms", "min", cover_pct=pct)
        ms = {(r.shape, config_id(r.params)): r.metrics["ms"] for r in rows if r.status is Status.OK}
        best = {s: oracle_best(rows, s).metrics["ms"] for s in shapes}
        configs = {cid for _, cid in ms}
        fewest = next(k for k in range(1, 4) for combo in itertools.combinations(sorted(configs), k)
                      if all(any(ms.get((s, c), 1e9) <= best[s] * (1 + pct / 100) for c in combo) for s in shapes))
        assert len(sel.configs) == fewest and sel.exact
        for e in sel.entries:
            assert e.loss == pytest.approx(e.value / best[e.shape] - 1) and e.loss <= pct / 100 + 1e-9


def test_a_maximised_objective_loses_by_the_ratio_of_best_to_value():
    rows = [Result("v", s, {"A": a}, Status.OK, metrics={"gflops": g})
            for s, a, g in (("s1", 1, 100.0), ("s1", 2, 95.0), ("s2", 1, 50.0), ("s2", 2, 80.0))]
    sel = select(rows, "gflops", "max", cover_pct=10)
    assert [e.result.params["A"] for e in sel.entries] == [2, 2]
    assert sel.entries[0].loss == pytest.approx(100 / 95 - 1)


def confirmed_rows():
    """Config A won the sweep by a single measurement; the confirmation's medians put B
    first; C failed a confirmation run."""
    rows = [row("s", 32, 2, 1.00), row("s", 64, 2, 1.01), row("s", 128, 2, 1.005), row("s", 32, 3, 1.30)]
    runs = [(rows[0], [1.04, 1.03, 1.05]), (rows[1], [1.01, 1.02, 1.00]), (rows[2], [1.0, None, 1.0])]
    measurements = [
        Measurement(r.variant, r.shape, dict(r.params), r.cache_key, i, Status.OK if v else Status.CRASH, v,
                    gpu_name=H100)
        for r, values in runs for i, v in enumerate(values)]
    return rows, measurements


def test_the_confirmed_best_is_shipped_and_a_flaky_config_never(tmp_path, capsys):
    rows, measurements = confirmed_rows()
    db = make_db(tmp_path / "c.db", rows, measurements=measurements)
    code, out, _ = export(capsys, db, "--format", "json")
    doc = json.loads(out)
    (entry,) = doc["entries"]
    assert code == 0 and entry["params"]["BM"] == 64 and entry["confirmed"] and entry["value"] == 1.01
    assert entry["result"]["confirmation"]["mark"] == "BEST"
    # the flaky config (BM=128: 1.0 twice, one crash) is within 1% but is never shipped
    code, out, _ = export(capsys, db, "--format", "json", "--cover", "1")
    assert {e["params"]["BM"] for e in json.loads(out)["entries"]} == {64}


# -- the header --------------------------------------------------------------------------

def build(tmp_path, source, name, compiler, *flags):
    path = tmp_path / name
    path.write_text(source)
    exe = tmp_path / (name + ".out")
    done = subprocess.run([compiler, *flags, str(path), "-o", str(exe)], capture_output=True, text=True)
    if done.returncode != 0:
        return done.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


SHOW = """#include <stdio.h>
#include "tuned.h"
#define TEXT2(x) #x
#define TEXT(x) TEXT2(x)
int main(void) {
#ifdef K_BM
    printf("K_BM=%s STAGES=%s VEC=%s SHAPE_ID=%s index=%d\\n", TEXT(K_BM), TEXT(STAGES), TEXT(VEC), TEXT(SHAPE_ID),
           SGEMM_CONFIG_INDEX);
#endif
    for (int i = 0; i < SGEMM_CONFIG_COUNT; ++i)
        printf("%s|%s|%s|%lld|%lld|%s|%d|%.17g\\n", sgemm_configs[i].variant, sgemm_configs[i].gpu,
               sgemm_configs[i].shape, sgemm_configs[i].param_BM, sgemm_configs[i].param_STAGES,
               sgemm_configs[i].param_VEC, sgemm_configs[i].config, sgemm_configs[i].value);
    return 0;
}
"""


def selected(output: str) -> dict:
    line = next(ln for ln in output.splitlines() if ln.startswith("K_BM="))
    return dict(kv.split("=") for kv in line.split())


@needs_gcc
def test_the_header_selects_each_shapes_best_in_cpp_and_c(tmp_path, capsys):
    rows = planted(seed=11)
    db = make_db(tmp_path / "p.db", rows)
    code, out, _ = export(capsys, db, "--format", "header", "-o", str(tmp_path / "tuned.h"))
    assert code == 0 and "wrote" in out
    header = (tmp_path / "tuned.h").read_text()
    for name in re.findall(r"#define (\S+)", header) + re.findall(r"defined\((\w+)\)", header):
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name), name
    shapes = {"square": "KSWEEP_SHAPE_square", "tall k": "KSWEEP_SHAPE_tall_k", "wide-n": "KSWEEP_SHAPE_wide_n"}
    # shapes whose best is one config share its number (two of these three do)
    distinct = list(dict.fromkeys(config_id(oracle_best(rows, s).params) for s in shapes))
    for shape, macro in shapes.items():
        best = oracle_best(rows, shape)
        checks = "".join(
            f'static_assert(sgemm_find_config("{s}", nullptr, nullptr)->param_BM == {oracle_best(rows, s).params["BM"]}'
            f' && sgemm_find_config("{s}", "{H100}", "base")->param_STAGES == {oracle_best(rows, s).params["STAGES"]},'
            f' "constexpr lookup");\n' for s in shapes)
        checks += 'static_assert(sgemm_find_config("no such shape", nullptr, nullptr) == nullptr, "");\n'
        out = build(tmp_path, SHOW + checks, "show.cpp", "g++", "-std=c++17", "-Wall", "-Wextra", "-Werror",
                    "-pedantic", f"-D{macro}", f"-I{tmp_path}")
        got = selected(out)
        assert got == {"K_BM": str(best.params["BM"]), "STAGES": str(best.params["STAGES"]), "VEC": "uint4",
                       "SHAPE_ID": str(len(shape)), "index": str(distinct.index(config_id(best.params)))}
        table = [ln.split("|") for ln in out.splitlines() if "|" in ln]
        assert [t[6] for t in table if t[2] == shape] == [got["index"]]  # the table's config field
        assert [(t[2], int(t[3]), int(t[4]), float(t[7])) for t in table] == [
            (s, oracle_best(rows, s).params["BM"], oracle_best(rows, s).params["STAGES"],
             oracle_best(rows, s).metrics["ms"]) for s in shapes]
    out = build(tmp_path, SHOW, "show.c", "gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                "-DKSWEEP_SHAPE_wide_n", f"-I{tmp_path}")
    assert selected(out)["K_BM"] == str(oracle_best(rows, "wide-n").params["BM"])
    # no shape chosen: the table alone, no macros
    out = build(tmp_path, SHOW, "none.c", "gcc", "-std=c99", "-Wall", "-Werror", f"-I{tmp_path}")
    assert "K_BM=" not in out and len([ln for ln in out.splitlines() if "|" in ln]) == 3
    err = build(tmp_path, SHOW, "two.c", "gcc", "-DKSWEEP_SHAPE_square", "-DKSWEEP_SHAPE_wide_n", f"-I{tmp_path}")
    assert "define one shape macro, not several" in err


@needs_gcc
def test_several_gpu_models_and_variants_are_chosen_by_macro(tmp_path, capsys):
    # one row per (variant, shape, config): the A100 measured other configs of the same shape
    stored = planted(seed=1, gpu=H100) + planted(seed=2, shapes=("square",), gpu=A100, bms=(16, 48, 96)) + \
        planted(seed=4, shapes=("square",), variant="split k")
    db = make_db(tmp_path / "g.db", stored)
    code, _, err = export(capsys, db, "--format", "header", "-o", str(tmp_path / "tuned.h"))
    assert code == 0, err
    header = (tmp_path / "tuned.h").read_text()
    assert "KSWEEP_GPU_H100_80GB_HBM3" in header and "KSWEEP_GPU_A100_SXM4_80GB" in header
    assert "KSWEEP_VARIANT_split_k" in header
    for gpu, macro in ((H100, "KSWEEP_GPU_H100_80GB_HBM3"), (A100, "KSWEEP_GPU_A100_SXM4_80GB")):
        best = oracle_best([r for r in stored if r.variant == "base"], "square", gpu)
        out = build(tmp_path, SHOW, "gpu.c", "gcc", "-DKSWEEP_SHAPE_square", f"-D{macro}",
                    "-DKSWEEP_VARIANT_base", f"-I{tmp_path}")
        assert selected(out)["K_BM"] == str(best.params["BM"]) and selected(out)["STAGES"] == str(best.params["STAGES"])
    best = oracle_best([r for r in stored if r.variant == "split k"], "square")
    out = build(tmp_path, SHOW, "variant.c", "gcc", "-DKSWEEP_SHAPE_square", "-DKSWEEP_GPU_H100_80GB_HBM3",
                "-DKSWEEP_VARIANT_split_k", f"-I{tmp_path}")
    assert selected(out)["K_BM"] == str(best.params["BM"])
    err = build(tmp_path, SHOW, "nogpu.c", "gcc", "-DKSWEEP_SHAPE_square", f"-I{tmp_path}")
    assert "no tuned config for this shape" in err and "KSWEEP_GPU_A100_SXM4_80GB" in err
    # --gpu keeps one model: its guard is then the default
    code, _, err = export(capsys, db, "--format", "header", "--gpu", "a100", "--variant", "base",
                          "-o", str(tmp_path / "tuned.h"), "--force")
    assert code == 0, err
    out = build(tmp_path, SHOW, "only.c", "gcc", "-DKSWEEP_SHAPE_square", f"-I{tmp_path}")
    assert selected(out)["K_BM"] == str(oracle_best(stored, "square", A100).params["BM"])


@needs_gcc
def test_awkward_names_become_distinct_identifiers(tmp_path, capsys):
    shapes = ["a-b", "a b", "x*/y", "4k", "ünï"]
    rows = [row(s, 32 * (i + 1), 2, 1.0 + i, gpu="Tesla (R) T4") for i, s in enumerate(shapes)]
    db = make_db(tmp_path / "n.db", rows, name="my kernel-2")
    code, _, err = export(capsys, db, "--format", "header", "-o", str(tmp_path / "tuned.h"))
    assert code == 0, err
    header = (tmp_path / "tuned.h").read_text()
    macros = re.findall(r"^#(?:el)?if defined\((KSWEEP_SHAPE_\w+)\)$", header, re.M)
    assert len(set(macros)) == len(shapes)
    source = SHOW.replace("sgemm_", "my_kernel_2_").replace("SGEMM_", "MY_KERNEL_2_")
    for i, macro in enumerate(macros):
        out = build(tmp_path, source, "n.c", "gcc", "-Wall", "-Werror", f"-D{macro}", f"-I{tmp_path}")
        assert selected(out)["K_BM"] == str(32 * (i + 1))
    assert [ln.split("|")[2] for ln in out.splitlines() if "|" in ln] == shapes


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_header_builds_device_and_host_code_with_nvcc(tmp_path, capsys):
    rows = planted(seed=5)
    db = make_db(tmp_path / "p.db", rows)
    assert export(capsys, db, "--format", "header", "-o", str(tmp_path / "tuned.h"))[0] == 0
    best = oracle_best(rows, "tall k")
    (tmp_path / "k.cu").write_text("""#define KSWEEP_SHAPE_tall_k
#include "tuned.h"
__global__ void k(int *out) { out[threadIdx.x] = K_BM * STAGES; }
static_assert(K_BM * STAGES == %d, "the macros of the chosen shape, in device code");
static_assert(sgemm_find_config("tall k", nullptr, nullptr)->param_BM == K_BM, "host table agrees");
int main() { int *out = 0; k<<<1, K_BM>>>(out); return sgemm_configs[SGEMM_CONFIG_INDEX].config; }
""" % (best.params["BM"] * best.params["STAGES"]))
    done = subprocess.run(["nvcc", "-arch=sm_90a", "-std=c++17", "-c", "k.cu", "-o", "k.o"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@needs_gcc
def test_the_cover_header_ships_the_chosen_configs_and_prints_each_shapes_loss(tmp_path, capsys):
    rows = planted(seed=7, shapes=("s1", "s2", "s3", "s4"))
    db = make_db(tmp_path / "p.db", rows)
    code, out, _ = export(capsys, db, "--format", "header", "--cover", "15%", "-o", str(tmp_path / "tuned.h"))
    assert code == 0
    sel = select(rows, "ms", "min", cover_pct=15)
    assert f"{len(sel.configs)} distinct config" in out and "the fewest keeping every shape within 15%" in out
    for e in sel.entries:
        best = oracle_best(rows, e.shape).metrics["ms"]
        line = next(ln for ln in out.splitlines() if ln.split()[:1] == [e.shape])
        assert f"loss {100 * (e.result.metrics['ms'] / best - 1):5.2f}%" in line
        got = selected(build(tmp_path, SHOW, "c.c", "gcc", f"-DKSWEEP_SHAPE_{e.shape}", f"-I{tmp_path}"))
        assert (int(got["K_BM"]), int(got["STAGES"])) == (e.result.params["BM"], e.result.params["STAGES"])
        assert e.result.metrics["ms"] <= best * 1.15


@needs_gcc
def test_the_config_index_macro_numbers_distinct_configs_as_the_table_does(tmp_path, capsys):
    """A cover of 4 shapes by 2 configs: <SWEEP>_CONFIG_INDEX is the distinct config (the
    table's `config`, the summary's and the comment's), not the entry's row, which is
    <SWEEP>_ENTRY_INDEX."""
    fast = {"s1": 32, "s2": 32, "s3": 64, "s4": 64}
    rows = [row(shape, bm, 2, 1.0 if bm == fast[shape] else 2.0) for shape in fast for bm in (32, 64)]
    db = make_db(tmp_path / "c.db", rows)
    code, out, err = export(capsys, db, "--format", "header", "--cover", "5", "-o", str(tmp_path / "tuned.h"))
    assert code == 0, err
    header = (tmp_path / "tuned.h").read_text()
    show = """#include <stdio.h>
#include "tuned.h"
#define TEXT2(x) #x
#define TEXT(x) TEXT2(x)
int main(void) {
    printf("%d %d %s\\n", SGEMM_CONFIG_INDEX, sgemm_find_config(TEXT(SHAPE), 0, 0)->config, TEXT(SGEMM_ENTRY_INDEX));
    return 0;
}
"""
    printed = {shape: build(tmp_path, show, "i.c", "gcc", "-Wall", "-Werror", f"-DSHAPE={shape}",
                            f"-DKSWEEP_SHAPE_{shape}", f"-I{tmp_path}").split() for shape in fast}
    assert {shape: index for shape, (index, _, _) in printed.items()} == \
        {shape: table_config for shape, (_, table_config, _) in printed.items()}
    got = {shape: int(index) for shape, (index, _, _) in printed.items()}
    assert got["s1"] == got["s2"] != got["s3"] == got["s4"] and set(got.values()) == {0, 1}
    for shape, (index, _, entry) in printed.items():
        assert entry == str(list(fast).index(shape))  # the row of sgemm_configs
        # the summary and the header's comment give each shape the same number
        assert f"base / {H100} / {shape}: config {index}," in header
    summary = {ln.split()[0]: ln.split()[1:3] for ln in out.splitlines() if ln.split()[:1] in ([s] for s in fast)}
    assert summary == {shape: ["config", str(index)] for shape, index in got.items()}


@needs_gcc
def test_a_real_sweep_exports_the_macros_its_compiler_saw(program_dir, capsys):
    """Through gcc: T reaches the program as X (define = "X"), each shape has its own values
    of T and its own SIZE define; the header gives each shape its best T as X."""
    spec = program_dir(f"""
        [sweep]
        name = "toy"
        objective = "ms"
        [params]
        T = {{ values = [3, 1, 2], define = "X" }}
        [shapes.small]
        defines = {{ SIZE = 10 }}
        [shapes.big]
        defines = {{ SIZE = 20 }}
        params = {{ T = {{ values = [4, 5, 2], define = "X" }} }}
        {GCC_BUILD}
        [run]
        timeout = 10
    """)
    db = program_dir.dir / "toy.db"
    assert main(["run", str(spec), "--db", str(db), "-q", "--confirm", "2,2"]) == 0
    capsys.readouterr()
    code, _, err = export(capsys, str(db), "--format", "header", "-o", str(program_dir.dir / "tuned.h"))
    assert code == 0, err
    for shape, size, best in (("small", 10, 1), ("big", 20, 2)):
        out = build(program_dir.dir, '#include <stdio.h>\n#include "tuned.h"\n'
                    'int main(void) { printf("%d %d\\n", X, SIZE); return 0; }\n', "x.c", "gcc",
                    f"-DKSWEEP_SHAPE_{shape}", f"-I{program_dir.dir}")
        assert out.split() == [str(best), str(size)]


# -- T4 and Kernel Tuner caches ----------------------------------------------------------

def replayed(capsys, path) -> dict:
    assert main(["replay", str(path), "--strategy", "grid", "--max-evals", "1000", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def t4_schema():
    kernel_tuner = pytest.importorskip("kernel_tuner", reason="Kernel Tuner ships the T4 schema (the test extra)")
    path = Path(kernel_tuner.__file__).parent / "schema" / "T4" / "1.0.0" / "results-schema.json"
    return json.loads(path.read_text())


def test_a_t4_file_validates_against_the_schema_and_replays_to_the_best(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema", reason="the test extra installs jsonschema")
    rows = planted(seed=9) + [row("wide-n", 512, 2, status=Status.HANG), row("wide-n", 512, 3, 0.9, status=Status.CHECKSUM_MISMATCH)]
    db = make_db(tmp_path / "p.db", rows)
    path = tmp_path / "wide.t4.json"
    code, out, _ = export(capsys, db, "--format", "t4", "--shape", "wide-n", "-o", str(path))
    assert code == 0
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, t4_schema())
    assert {r["invalidity"] for r in doc["results"]} == {"correct", "compile", "constraints", "timeout", "correctness"}
    best = oracle_best(rows, "wide-n")
    got = replayed(capsys, path)
    assert got["best_config"] == dict(best.params) and got["best_value"] == best.metrics["ms"]
    bad = dict(doc, results=[dict(doc["results"][0], invalidity="flaky")])
    with pytest.raises(jsonschema.ValidationError):  # the schema does check what it is given
        jsonschema.validate(bad, t4_schema())


def test_a_kernel_tuner_cache_replays_to_the_best_in_ksweep(tmp_path, capsys):
    rows = planted(seed=13)
    db = make_db(tmp_path / "p.db", rows)
    for shape in ("square", "tall k"):
        path = tmp_path / f"{shape}.json"
        code, out, _ = export(capsys, db, "--format", "kt-cache", "--shape", shape, "-o", str(path))
        assert code == 0 and "kt-cache: 11 configs" in out
        best = oracle_best(rows, shape)
        got = replayed(capsys, path)
        assert got["best_config"] == dict(best.params) and got["best_value"] == best.metrics["ms"]
        assert got["evaluations"] == 10  # 9 measured, 1 failed build; the pruned config is left out


def kt_tune(path, full_space: bool):
    kernel_tuner = pytest.importorskip("kernel_tuner", reason="Kernel Tuner is in the test extra")
    from kernel_tuner.interface import tune_cache

    doc = json.loads(Path(path).read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no block-size parameters: Kernel Tuner warns
        if full_space:
            _, env = kernel_tuner.tune_kernel(doc["kernel_name"], "", doc["problem_size"], [], doc["tune_params"],
                                              cache=str(path), simulation_mode=True, strategy="brute_force",
                                              quiet=True)
        else:
            _, env = tune_cache(str(path), strategy="brute_force", quiet=True)
    return env["best_config"]


def test_a_kernel_tuner_cache_replays_to_the_best_in_kernel_tuners_simulation_mode(tmp_path, capsys):
    # every config of the parameters' product is in the cache, as tune_kernel's simulation needs
    rows = [r for r in planted(seed=17) if r.params["BM"] != 256]
    rows = [r if (r.params["BM"], r.params["STAGES"]) != (128, 4) else row(r.shape, 128, 4, status=Status.SPILLS)
            for r in rows]
    db = make_db(tmp_path / "p.db", rows)
    path = tmp_path / "cache.json"
    assert export(capsys, db, "--format", "kt-cache", "--shape", "wide-n", "-o", str(path))[0] == 0
    before = path.read_text()
    best = oracle_best(rows, "wide-n")
    for full_space in (True, False):
        got = kt_tune(path, full_space)
        assert {k: got[k] for k in best.params} == dict(best.params) and got["time"] == best.metrics["ms"]
    assert path.read_text().strip() == before.strip()  # simulation mode leaves the cache as it was


def test_a_cache_of_a_partial_sweep_replays_in_kernel_tuner_through_tune_cache(tmp_path, capsys):
    rows = [r for r in planted(seed=19) if r.shape == "square"][::2]  # some configs never evaluated
    db = make_db(tmp_path / "p.db", rows)
    path = tmp_path / "cache.json"
    assert export(capsys, db, "--format", "kt-cache", "-o", str(path))[0] == 0
    best = oracle_best(rows, "square")
    got = kt_tune(path, full_space=False)
    assert {k: got[k] for k in best.params} == dict(best.params) and got["time"] == best.metrics["ms"]


def test_the_cache_records_confirmed_medians_and_flaky_configs_as_failed_runs(tmp_path, capsys):
    rows, measurements = confirmed_rows()
    db = make_db(tmp_path / "c.db", rows, measurements=measurements)
    path = tmp_path / "c.json"
    code, out, err = export(capsys, db, "--format", "kt-cache", "-o", str(path))
    assert code == 0 and "note" not in out
    cache = json.loads(path.read_text())["cache"]
    assert [cache[k]["time"] for k in ("32,2,uint4", "64,2,uint4", "128,2,uint4", "32,3,uint4")] == [
        1.04, 1.01, "RuntimeFailedConfig", 1.30]
    got = replayed(capsys, path)
    assert got["best_config"]["BM"] == 64 and got["best_value"] == 1.01


def test_a_replay_that_would_find_another_best_is_said(tmp_path, capsys):
    """The confirmation's medians all came out slower than an unconfirmed single measurement."""
    rows, measurements = confirmed_rows()
    rows.append(row("s", 128, 4, 1.002))
    db = make_db(tmp_path / "c.db", rows, measurements=measurements)
    code, out, _ = export(capsys, db, "--format", "t4", "-o", str(tmp_path / "c.t4.json"))
    assert code == 0
    assert "note: the least time recorded, 1.002 ms (BM=128 STAGES=4 VEC=uint4), is not the database's best " \
           "(BM=64 STAGES=2 VEC=uint4)" in out


def test_a_maximised_objective_records_the_time_metric(tmp_path, capsys):
    rows = [row("s", bm, 2, ms, gflops=1000 / ms) for bm, ms in ((32, 2.0), (64, 1.5), (128, 1.8))]
    db = make_db(tmp_path / "g.db", rows, objective=("gflops", "max"))
    path = tmp_path / "g.json"
    assert export(capsys, db, "--format", "kt-cache", "-o", str(path))[0] == 0
    got = replayed(capsys, path)
    assert got["best_config"]["BM"] == 64 and got["best_value"] == 1.5
    db = make_db(tmp_path / "score.db", [Result("v", "s", {"A": 1}, Status.OK, metrics={"score": 3.0})],
                 objective=("score", "max"))
    code, _, err = export(capsys, db, "--format", "t4")
    assert code == 2 and "the objective 'score' is not a time to minimise" in err and len(err.splitlines()) == 1


def test_user_mistakes_are_one_line_and_exit_2(tmp_path, capsys):
    db = make_db(tmp_path / "p.db", planted(seed=0))
    cases = [
        (["--format", "kt-cache"], "holds one shape of one variant; the database has 3: choose with --shape"),
        (["--format", "t4", "--shape", "square", "--cover", "5"], "--cover applies to --format header and json"),
        (["--format", "header", "--shape", "sqare"], "--shape sqare: no such shape in the database — did you mean square?"),
        (["--format", "header", "--gpu", "V100"], "--gpu 'V100': no GPU model of the database matches"),
        (["--format", "header", "-o", str(tmp_path / "no" / "such" / "dir" / "x.h")], "does not exist; make it (mkdir -p"),
    ]
    for argv, said in cases:
        code, out, err = export(capsys, db, *argv)
        assert code == 2 and said in err and len(err.splitlines()) == 1, (argv, err)
    with pytest.raises(SystemExit) as stop:
        main(["export", db, "--format", "header", "--cover", "-3"])
    assert stop.value.code == 2 and "--cover" in capsys.readouterr().err
    code, _, err = export(capsys, str(tmp_path / "missing.db"), "--format", "json")
    assert code == 2 and "no such results database" in err


def test_a_shape_with_no_ok_config_is_said_to_be_left_out(tmp_path, capsys):
    """A shape whose every config failed has no entry: the header must not drop it silently."""
    rows = planted(seed=0, shapes=("square",)) + [row("broken", 32, 2, status=Status.RUN_ERROR),
                                                   row("broken", 64, 2, status=Status.COMPILE_ERROR)]
    db = make_db(tmp_path / "p.db", rows)
    for fmt in ("header", "json"):
        code, out, err = export(capsys, db, "--format", fmt, "-o", str(tmp_path / f"x.{fmt}"))
        assert code == 0, err
        notes = [line for line in out.splitlines() if "broken" in line]
        assert len(notes) == 1 and notes[0].startswith("note: shape broken (variant base): no config ran OK"), out
        assert "square" not in " ".join(notes)
    assert "KSWEEP_SHAPE_broken" not in (tmp_path / "x.header").read_text()


def test_odd_cover_values(tmp_path, capsys):
    """-0 is a cover of 0% (it printed 'within -0%'); a negative, NaN or infinite one is one line
    naming --cover and what to give, as the other commands' percentages are."""
    db = make_db(tmp_path / "p.db", planted(seed=0))
    code, out, err = export(capsys, db, "--format", "header", "--cover", "-0", "-o", str(tmp_path / "x.h"))
    # the output names the written file, whose folder may hold "-0" (pytest-0): only the cover line is read
    assert code == 0 and "within 0% of its own best" in out and "within -0" not in out, out + err
    for bad in ("-1", "nan", "inf", "abc", ""):
        with pytest.raises(SystemExit) as stop:
            main(["export", db, "--format", "header", "--cover", bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert stop.value.code == 2 and len(err) == 1 and f"--cover {bad}: give a percentage, 0 or more" in err[0], err


def test_superseded_results_left_out_are_said(tmp_path, capsys):
    """Results superseded (another source, or a --rerun all killed before it measured them
    again) are not ranked by export: it chose among the rest and said nothing of them."""
    db = make_db(tmp_path / "p.db", planted(seed=3))
    code, out, _ = export(capsys, db, "--format", "header", "--shape", "square", "-o", str(tmp_path / "a.h"))
    assert code == 0 and "superseded results left out" not in out
    with Store(db) as store:
        square = [config_id(r.params) for r in store.results() if r.shape == "square"]
        store.supersede("base", "square", square[:4], [])
        store.supersede("base", "tall k", [config_id(r.params) for r in store.results() if r.shape == "tall k"][:1], [])
    code, out, _ = export(capsys, db, "--format", "header", "--shape", "square", "-o", str(tmp_path / "b.h"))
    assert code == 0 and "note: 4 superseded results left out" in out and "--superseded lists them" in out, out
    code, out, _ = export(capsys, db, "--format", "header", "-o", str(tmp_path / "c.h"))
    assert code == 0 and "note: 5 superseded results left out" in out, out
    # with another GPU model's results beside them, --gpu counts only the model's own
    with Store(db) as store:
        store.put_many(planted(seed=4, shapes=("square",), gpu=A100, bms=(16, 48, 96)))
    code, out, _ = export(capsys, db, "--format", "header", "--gpu", "A100", "-o", str(tmp_path / "d.h"))
    assert code == 0 and "superseded results left out" not in out, out  # they are the H100's
    code, out, _ = export(capsys, db, "--format", "header", "--gpu", "H100", "-o", str(tmp_path / "e.h"))
    assert code == 0 and "note: 5 superseded results left out" in out, out
