import json
from pathlib import Path

import pytest

import ksweep
from ksweep.gpu.limits import builtin_limits
from ksweep.space.plan import make_plan
from ksweep.space.space import Space

from conftest import ksweep_cli

SPECS = Path(__file__).parent / "specs"
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.parametrize("name", ["seed000_expr.toml", "seed000_python.toml"])
def test_seed000_tier1_both_ways(name):
    plan = make_plan(ksweep.load_spec(SPECS / name))
    assert plan.total == 108
    assert plan.valid == 69
    assert sum(plan.pruned.values()) == 39
    split = plan.pruned.get("split_cols_per_thread", plan.pruned.get("split"))
    smem = plan.pruned.get("smem", plan.pruned.get("is_valid"))
    assert (split, smem) == (27, 12)


def test_both_ways_give_the_same_configs():
    a = Space.from_spec(ksweep.load_spec(SPECS / "seed000_expr.toml"))
    b = Space.from_spec(ksweep.load_spec(SPECS / "seed000_python.toml"))
    assert sorted(map(str, a)) == sorted(map(str, b))


def test_reason_template_and_first_failed_constraint():
    space = Space.from_spec(ksweep.load_spec(SPECS / "seed000_expr.toml"))
    v = space.explain({"TN": 256, "N_STAGES": 5, "NUM_EPI_WARPS": 5, "PHASE2_UNROLL": 8, "STAGING_ROW_PAD": 0})
    assert v.constraint == "smem" and v.reason.startswith("SMEM ") and v.reason.endswith("> 228KB")
    v = Space.from_spec(ksweep.load_spec(SPECS / "seed000_python.toml")).explain(
        {"TN": 256, "N_STAGES": 5, "NUM_EPI_WARPS": 4, "PHASE2_UNROLL": 8, "STAGING_ROW_PAD": 32})
    assert v.constraint == "is_valid" and v.reason == "SMEM 233600 > 228KB"


def test_full_seed000_example():
    spec = ksweep.load_spec(EXAMPLES / "megakernel" / "megakernel.toml")
    tiers = {p.name: p.tier for p in spec.params}
    assert tiers["TN"] == 1 and tiers["SNAKE_ORDER"] == 2
    snake = next(p for p in spec.params if p.name == "SNAKE_ORDER")
    assert snake.defines(True) == ("-DSNAKE_ORDER",) and snake.defines(False) == ()
    assert [v.name for v in spec.variants] == ["cta2", "cta1"]
    plan = make_plan(spec)
    by = {(e.shape, e.variant): e for e in plan.entries}
    assert by[("patch_embed", "cta2")].valid == 69 * 32
    assert by[("fc2", "cta2")].total == 108 * 32 * 3  # SPLIT_K only for fc2
    assert "split_k" not in by[("fc1", "cta1")].pruned
    assert [d.name for d in spec.derived if d.define] == ["STAGE_BYTES", "TMA_BYTES", "TMEM_COLS", "TILES_N"]
    assert spec.limits["tmem_cols"] == 512


def test_spec_from_python_objects():
    spec = ksweep.Spec(
        params=(ksweep.Param("A", (1, 2, 4)), ksweep.Param("B", (1, 2))),
        constraints=(ksweep.Constraint("small", expr=ksweep.spec.expr.parse("A * B <= 4")),),
        limits=builtin_limits("sm_90a"),
    )
    assert make_plan(spec).valid == 5
    assert len(Space.from_spec(spec)) == 5


def test_limits_table_and_override(tmp_path):
    for arch in ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120"]:
        limits = builtin_limits(arch)
        assert limits["threads_per_block"] == 1024 and limits["smem_per_block"] > 48 * 1024
    assert builtin_limits("sm_90a")["smem_per_block"] == 227 * 1024
    f = tmp_path / "s.toml"
    f.write_text('[sweep]\narch = "sm_90a"\n[limits]\nsmem_per_block = 1000\n[params]\nA = [500, 1500]\n'
                 '[[constraints]]\nname = "fits"\nexpr = "A <= MAX_SMEM_PER_BLOCK"\n')
    assert make_plan(ksweep.load_spec(f)).valid == 1


BAD = {
    "malformed": ("[params\nA = [1]", "invalid TOML"),
    "unknown_top": ("[parms]\nA = [1]", "parms: unknown key — did you mean 'params'?"),
    "unknown_key": ('[params]\nA = [1]\n[build]\ncommnd = ["x"]', "build.commnd: unknown key — did you mean 'command'?"),
    "empty": ("[params]\nA = []", "params.A: the value list is empty"),
    "dup_name": ("[params]\nA = [1]\n[constants]\nA = 3", "duplicate name A"),
    "dup_constraint": ('[params]\nA = [1]\n[[constraints]]\nname = "x"\nexpr = "A > 0"\n[[constraints]]\nname = "x"\nexpr = "A > 1"', "duplicate constraint name 'x'"),
    "self_ref": ('[params]\nA = [1]\n[derived]\nB = "B + A"', "derived.B: refers to itself"),
    "later_ref": ('[params]\nA = [1]\n[derived]\nB = "C + A"\nC = "A"', "derived.B: uses C, which is defined later"),
    "typo": ('[params]\nA = [1]\n[derived]\nSTAGE_BYTES = "A"\n[[constraints]]\nname = "s"\nexpr = "STAGE_BYTE < 3"', "constraint 's': unknown name STAGE_BYTE — did you mean STAGE_BYTES?"),
    "case_typo": ('[params]\nBM = [64]\n[[constraints]]\nname = "t"\nexpr = "bm <= 128"', "constraint 't': unknown name bm — did you mean BM?"),
    "div_zero": ('[params]\nA = [0, 1]\n[[constraints]]\nname = "d"\nexpr = "4 % A == 0"', "constraint 'd': division by zero"),
    "no_file": ('[params]\nA = [1]\n[[constraints]]\nname = "p"\npython = "nope.py:f"', "Python constraint file 'nope.py' does not exist"),
    "attr": ('[params]\nA = [1]\n[[constraints]]\nname = "a"\nexpr = "A.real > 0"', "attribute access"),
    "bad_default": ("[params]\nA = { values = [1, 2], default = 3 }", "default 3 is not one of the values"),
    "bad_arch": ('[sweep]\narch = "sm_91"\n[params]\nA = [1]', "unknown arch 'sm_91'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2(tmp_path, case):
    text, fragment = BAD[case]
    f = tmp_path / "bad.toml"
    f.write_text(text)
    r = ksweep_cli("plan", f)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ksweep: error: bad.toml: ")
    assert fragment in lines[0]


def test_missing_spec_file(tmp_path):
    r = ksweep_cli("plan", tmp_path / "x.toml")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_plan_json_cli():
    r = ksweep_cli("plan", SPECS / "seed000_expr.toml", "--json", "--show", "3")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["total"] == 108 and data["valid"] == 69
    assert data["pruned"]["smem"] == 12 and data["pruned"]["split_cols_per_thread"] == 27
    entry = data["entries"][0]
    assert len(entry["examples"]) == 3 and "SMEM_TOTAL" in entry["examples"][0]["derived"]


def test_plan_table_cli():
    r = ksweep_cli("plan", SPECS / "seed000_expr.toml", "--show", "2")
    assert r.returncode == 0, r.stderr
    assert "108 raw → 69 valid" in r.stdout and "split_cols_per_thread" in r.stdout and "SMEM_TOTAL" in r.stdout


def test_huge_spec_plans(tmp_path):
    params = "\n".join(f"P{i} = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]" for i in range(13))
    f = tmp_path / "huge.toml"
    f.write_text(f"[params]\n{params}\n[[constraints]]\nname = \"c\"\nexpr = \"P0 + P1 + P2 <= 10\"\n")
    plan = make_plan(ksweep.load_spec(f))
    assert plan.total == 10**13
    assert plan.valid == 120 * 10**10
    assert plan.pruned == {"c": 10**13 - 120 * 10**10}


def test_a_spec_made_from_a_dict_keeps_the_folder_it_was_made_in(tmp_path, monkeypatch):
    """A spec from spec_from_dict looked for its sources in whatever folder was current when
    it was used, not the one its sources were checked in."""
    from ksweep.spec.load import spec_from_dict

    (tmp_path / "k.c").write_text("int main(void) { return 0; }\n")
    monkeypatch.chdir(tmp_path)
    spec = spec_from_dict({"params": {"A": [1, 2]}, "build": {"sources": ["k.c"], "command": ["true"]}})
    monkeypatch.chdir(tmp_path.parent)
    assert spec.root == tmp_path and (spec.root / spec.build.sources[0]).is_file()
