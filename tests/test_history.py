"""History per source revision and the regression gate: three revisions of a gcc program in
a temporary git repository, the second with a planted regression."""

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from ksweep.build.revision import source_revision
from ksweep.job import config_id
from ksweep.store.sqlite import SCHEMA_VERSION, Store
from ksweep.result import Result
from ksweep.status import Status

from conftest import ksweep_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("gcc") is None,
                                reason="needs git and gcc")

PROGRAM = """#include <stdio.h>
#ifndef X
#define X 1
#endif
#define COST {cost}
#define SLOW_X1 {slow}
int main(void) {{ printf("@@RESULT ms=%d\\n", COST * X + 10 + (X == 1 ? SLOW_X1 : 0)); return 0; }}
"""

SPEC = """
[sweep]
objective = "ms"
[params]
X = [2, 1, 3]
[build]
sources = ["prog.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "prog.c"]
[run]
timeout = 20
"""


def cli(*args, cwd):
    return ksweep_cli(*args, cwd=cwd)


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def revise(repo, cost: int, message: str, slow: int = 0) -> None:
    (repo / "prog.c").write_text(PROGRAM.format(cost=cost, slow=slow))
    git(repo, "add", "prog.c")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "sweep.toml").write_text(textwrap.dedent(SPEC))
    (repo / ".gitignore").write_text(".ksweep/\n")
    git(repo, "add", "sweep.toml", ".gitignore")
    revise(repo, 10, "v1")
    return repo


def test_the_gate_confirms_the_best_known_config_even_when_the_default_now_beats_it(repo):
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0  # best X=1: 20 ms
    revise(repo, 10, "X=1 alone gets slower", slow=25)  # X=1: 45 ms, the default X=2: 30 ms
    r = cli("check", "sweep.toml", "--repeats", "2", "--json", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    (v,) = json.loads(r.stdout)
    assert (v["verdict"], v["params"], v["now"], v["beyond_noise"]) == ("REGRESSED", {"X": 1}, 45.0, True)


def test_three_revisions_a_planted_regression_and_its_fix(repo, tmp_path):
    # v1: the best (X=1) takes 20 ms
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    # v2 (planted regression: COST 10 -> 14, best 24 ms): the gate fails before and after it is recorded
    revise(repo, 14, "v2: slower")
    r = cli("check", "sweep.toml", "--repeats", "2", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSED" in r.stdout and "0.833x" in r.stdout and "beyond noise" in r.stdout
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        assert {h.revision for h in store.history()} == {_head(repo, 1)}  # check left the history alone
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    # v3: fixed (COST 8: 18 ms), against v2's 24 ms the gate passes
    revise(repo, 8, "v3: fixed")
    r = cli("check", "sweep.toml", "--repeats", "2", "--update", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "faster" in r.stdout
    h = cli("history", ".ksweep/sweep.db", "--json", cwd=repo)
    assert h.returncode == 0, h.stderr
    (line,) = json.loads(h.stdout)
    points = line["points"]
    assert [p["revision"] for p in points] == [_head(repo, 3), _head(repo, 2), _head(repo, 1)][::-1]
    assert [p["value"] for p in points] == [20.0, 24.0, 18.0]
    assert [p["params"] for p in points] == [{"X": 1}] * 3
    assert points[1]["regression"] and points[1]["beyond_noise"] and round(points[1]["speedup"], 3) == 0.833
    assert not points[2]["regression"] and round(points[2]["speedup"], 3) == 1.333
    text = cli("history", ".ksweep/sweep.db", cwd=repo).stdout
    assert text.count("REGRESSION") == 1 and "0.83x" in text
    pytest.importorskip("matplotlib")
    out = tmp_path / "timeline.png"
    assert cli("history", ".ksweep/sweep.db", "--plot", str(out), cwd=repo).returncode == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_timeline_plot_takes_a_median_outside_its_interval(tmp_path):
    """A deterministic program's confirmed runs: an interval of zero width around the mean,
    which a rounding puts beside the median; the plot drew a negative error bar (a ValueError)."""
    pytest.importorskip("matplotlib")
    from ksweep.verify.confirm import Interval
    from ksweep.report.history import Point, plot

    points = [Point("a", 1.0, 0.1, {"X": 1}, Interval(0.1, 0.1000001, 0.1000001, 3)),  # the median below it
              Point("b", 2.0, 0.2, {"X": 1}, Interval(0.2, 0.19, 0.21, 3))]
    out = tmp_path / "t.png"
    plot({("base", "s"): points}, "ms", out)
    assert out.read_bytes()[:4] == b"\x89PNG"


def _head(repo, n_from_first: int) -> str:
    commits = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "HEAD"], capture_output=True,
                             text=True).stdout.split()
    return commits[n_from_first - 1][:12]


def test_an_uncommitted_edit_is_a_revision_of_its_own(repo):
    clean = source_revision(repo, [repo / "prog.c"])
    assert clean == _head(repo, 1)
    (repo / "prog.c").write_text(PROGRAM.format(cost=11, slow=0))
    edited = source_revision(repo, [repo / "prog.c"])
    assert edited.startswith(clean + "+") and edited == source_revision(repo, [repo / "prog.c"])
    (repo / "notes.db").write_text("a results database beside the spec is not a source")
    assert source_revision(repo, [repo / "prog.c"]) == edited


def test_outside_git_the_revision_is_a_digest_of_the_sources(tmp_path):
    (tmp_path / "a.c").write_text("int main(){return 0;}")
    first = source_revision(tmp_path, [tmp_path / "a.c"])
    assert first.startswith("sha:") and first == source_revision(tmp_path, [tmp_path / "a.c"])
    (tmp_path / "a.c").write_text("int main(){return 1;}")
    assert source_revision(tmp_path, [tmp_path / "a.c"]) != first


def test_history_is_append_only_and_an_older_database_is_migrated_with_a_message(tmp_path, capsys):
    path = tmp_path / "old.db"
    with Store(path) as store:
        store.revision = "r1"
        store.put(Result("v", "s", {"A": 1}, Status.OK, metrics={"ms": 2.0}))
        store.revision = "r2"
        store.put(Result("v", "s", {"A": 1}, Status.OK, metrics={"ms": 1.5}))
        store.put(Result("v", "s", {"A": 9}, Status.PRUNED, "too big"))
        assert [r.metrics["ms"] for r in store.results() if r.status is Status.OK] == [1.5]  # the current view
        assert [(h.revision, h.metrics["ms"]) for h in store.history()] == [("r1", 2.0), ("r2", 1.5)]
    db = sqlite3.connect(str(path))  # as schema 5 wrote it: no history, no revision column
    db.execute("DROP TABLE history")
    db.execute("ALTER TABLE results DROP COLUMN revision")
    db.execute("UPDATE meta SET value = '\"5\"' WHERE key = 'schema'")
    db.commit()
    db.close()
    with Store(path, create=False) as store:
        assert store.get_meta("schema") == SCHEMA_VERSION == "7"
        assert [(h.revision, h.metrics["ms"]) for h in store.history()] == [(None, 1.5)]
        assert "migrated from schema 5 to 7" in store.migrated
    assert "ksweep: " in capsys.readouterr().err


def test_the_superseded_table_is_made_by_the_first_mark_and_a_reader_never_writes(tmp_path):
    path = tmp_path / "six.db"
    with Store(path) as store:
        store.put(Result("v", "s", {"A": 1}, Status.OK, metrics={"ms": 2.0}))
        store.put(Result("v", "s", {"A": 2}, Status.OK, metrics={"ms": 3.0}))
        store.supersede("v", "s", [], ['{"A":1}'])  # nothing to mark: no table
    path.chmod(0o444)  # a database a reader may not write (a shared one, an archive)
    with Store(path, create=False) as store:
        assert [r.params["A"] for r in store.results()] == [1, 2] and store.superseded() == set()
    path.chmod(0o644)
    with sqlite3.connect(str(path)) as c:  # (root may write a 0444 file: ask the file itself)
        assert c.execute("SELECT name FROM sqlite_master WHERE name = 'superseded'").fetchall() == []
    with Store(path) as store:
        store.supersede("v", "s", ['{"A":2}'], [])
        assert [r.params["A"] for r in store.results()] == [1]
        assert [r.params["A"] for r in store.results(superseded=True)] == [1, 2]
        assert store.superseded() == {("v", "s", '{"A":2}')}
        store.supersede("v", "s", ['{"A":1}'], [])  # a config not judged keeps its mark
        assert store.superseded() == {("v", "s", '{"A":1}'), ("v", "s", '{"A":2}')}
        store.supersede("v", "s", [], ['{"A":1}'])
        store.put(Result("v", "s", {"A": 2}, Status.OK, metrics={"ms": 1.0}))  # measured again: current
        assert [r.params["A"] for r in store.results()] == [1, 2] and store.superseded() == set()
        assert store.get_meta("schema") == SCHEMA_VERSION == "7"


def test_after_check_update_a_result_of_the_older_source_is_not_ranked(repo):
    """v1: X=1 20 ms (best), X=2 30 (default), X=3 40. v2 makes everything slower (X=1 65,
    X=2 60, X=3 85). ``check --update`` measures X=1 and the default on v2; X=3's 40 ms is v1's
    and must not be ranked against them (it was BEST: the newcomer's finding)."""
    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 0
    revise(repo, 25, "v2: slower", slow=30)
    r = cli("check", "sweep.toml", "--repeats", "2", "--update", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    out = cli("report", ".ksweep/sweep.db", "--format", "json", cwd=repo)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert sorted((x["params"]["X"], x["metrics"]["ms"]) for x in rows) == [(1, 65.0), (2, 60.0)]
    text = cli("report", ".ksweep/sweep.db", cwd=repo)
    assert "1 superseded result is not shown: measured on another source or spec" in text.stdout, text.stdout
    old = cli("report", ".ksweep/sweep.db", "--format", "json", "--superseded", cwd=repo)
    assert sorted((x["params"]["X"], x["superseded"]) for x in json.loads(old.stdout)) == \
        [(1, False), (2, False), (3, True)]
    best = cli("explain", "sweep.toml", "best", cwd=repo)
    assert best.returncode == 0 and "X=2" in best.stdout, best.stdout + best.stderr
    # measured again on v2, X=3 is current again and ranked with the others
    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 0
    rows = json.loads(cli("report", ".ksweep/sweep.db", "--format", "json", cwd=repo).stdout)
    assert sorted((x["params"]["X"], x["metrics"]["ms"]) for x in rows) == [(1, 65.0), (2, 60.0), (3, 85.0)]


def test_check_update_on_an_unchanged_source_leaves_the_other_configs_results_standing(repo):
    """check --update measures the best and the default again (a --rerun all of those two):
    the other configs' results, of the same source, were marked superseded and left out of
    every report."""
    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 0
    r = cli("check", "sweep.toml", "--repeats", "1", "--update", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(cli("report", ".ksweep/sweep.db", "--format", "json", cwd=repo).stdout)
    assert sorted(x["params"]["X"] for x in rows) == [1, 2, 3]
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        assert store.superseded() == set()


def test_the_results_a_rerun_all_killed_left_out_are_not_said_to_be_of_another_source(repo):
    """After a --rerun all killed outright (it marks every result superseded as it starts,
    and a cut-short one puts back those it did not reach), report and explain said the
    results it had not reached were measured on another source or spec (found out of
    date): they are of this source."""
    assert cli("run", "sweep.toml", "-q", "--no-confirm", cwd=repo).returncode == 0
    r = cli("run", "sweep.toml", "-q", "--no-confirm", "--rerun", "all", "--max-evals", "1", "--strategy", "grid",
            cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        assert store.superseded() == set()  # cut short, not killed: nothing left out
        fresh = config_id(max(store.results(), key=lambda x: x.finished).params)
        # what a kill -9 after its first result leaves: the marks it set as it began
        store.supersede("base", "default", [config_id(x.params) for x in store.results()
                                            if config_id(x.params) != fresh], [])
    text = cli("report", ".ksweep/sweep.db", cwd=repo).stdout
    assert "2 superseded results are not shown" in text and "not measured again yet by a --rerun all" in text, text
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        left = sorted(c for _, _, c in store.superseded())
    assert len(left) == 2
    x = json.loads(left[0])["X"]
    out = cli("explain", "sweep.toml", f"X={x}", cwd=repo).stdout
    assert "not measured again yet by a --rerun all" in out, out


def test_a_source_put_back_makes_its_results_current_again_without_rerunning(repo):
    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 0
    revise(repo, 25, "v2")
    assert cli("check", "sweep.toml", "--repeats", "1", "--update", cwd=repo).returncode == 1
    revise(repo, 10, "v3 = v1 again")
    r = cli("run", "sweep.toml", "-q", cwd=repo)
    assert r.returncode == 0, r.stderr
    rows = json.loads(cli("report", ".ksweep/sweep.db", "--format", "json", cwd=repo).stdout)
    assert sorted((x["params"]["X"], x["metrics"]["ms"]) for x in rows) == [(1, 20.0), (2, 30.0), (3, 40.0)]
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        assert store.superseded() == set()
        # X=3's result of v1 stands again: it was not measured again (X=1 and 2: v1, v2, v1 again)
        assert sorted(h.params["X"] for h in store.history()) == [1, 1, 1, 2, 2, 2, 3]


def test_a_sweep_over_a_narrowed_space_keeps_an_old_source_result_out_of_the_ranking(repo):
    """The review's case: v1 swept; v2 (slower) with X=1 superseded; then X=1 taken out of
    the space: its v1 result (20 ms) must not come back as BEST against v2's 60 and 85."""
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    revise(repo, 25, "v2", slow=30)
    assert cli("run", "sweep.toml", "--no-confirm", "-q", "--max-evals", "2", cwd=repo).returncode == 0
    spec = repo / "sweep.toml"
    spec.write_text(spec.read_text().replace("X = [2, 1, 3]", "X = [2, 3]"))
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    rows = json.loads(cli("report", ".ksweep/sweep.db", "--format", "json", cwd=repo).stdout)
    assert sorted((x["params"]["X"], x["metrics"]["ms"]) for x in rows) == [(2, 60.0), (3, 85.0)]
    best = cli("explain", "sweep.toml", "best", cwd=repo)
    assert "X=2" in best.stdout, best.stdout + best.stderr


def test_another_gpu_models_results_are_not_judged_by_this_hosts_keys(repo):
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    db = repo / ".ksweep" / "sweep.db"
    with sqlite3.connect(str(db)) as c:  # as if measured on another host's GPU, with its own compiler
        c.execute("UPDATE results SET gpu_name = 'NVIDIA H100 80GB HBM3', cache_key = 'elsewhere'")
    revise(repo, 25, "v2")
    assert cli("run", "sweep.toml", "--no-confirm", "-q", "--max-evals", "1", cwd=repo).returncode == 0
    with Store(db, create=False) as store:
        assert store.superseded() == set()
        # one row per config: the run's X=2 replaced its row; X=1 and X=3 are the other model's
        assert sorted(r.gpu_name for r in store.results()) == ["NVIDIA H100 80GB HBM3"] * 2 + ["none"]


def test_a_source_edited_since_the_results_is_said_by_report_export_and_explain(repo):
    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 0
    (repo / "prog.c").write_text(PROGRAM.format(cost=25, slow=0))  # edited, not swept again
    text = cli("report", ".ksweep/sweep.db", cwd=repo).stdout
    assert "prog.c changed since all results shown were measured" in text, text
    header = cli("export", ".ksweep/sweep.db", "--format", "header", cwd=repo)
    assert header.returncode == 0 and "note: default/base: prog.c changed since all results" in header.stderr
    best = cli("explain", "sweep.toml", "best", cwd=repo).stdout
    assert "prog.c changed since its stored result was measured" in best, best
    (repo / "prog.c").write_text(PROGRAM.format(cost=10, slow=0))  # put back: no note
    assert "changed since" not in cli("report", ".ksweep/sweep.db", cwd=repo).stdout


def test_check_gates_the_config_export_ships_even_when_it_was_resumed_from_an_earlier_revision(repo):
    """Swept in two runs across a commit (ms = 50 - 10 X): X=2 and X=3 (20 ms, the best)
    measured in the first, X=1 (40) alone in the second. The history's latest revision holds
    only X=1; report and export show X=3, and check must measure that one."""
    (repo / "prog.c").write_text('#include <stdio.h>\nint main(void) { printf("@@RESULT ms=%d\\n", '
                                 '50 - 10 * X); return 0; }\n')
    git(repo, "commit", "-qam", "ms = 50 - 10 X")
    assert cli("run", "sweep.toml", "--max-evals", "2", "--no-confirm", "-q", cwd=repo).returncode == 0
    (repo / "README").write_text("notes\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "a README: a new revision, the same source")
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        assert [h.params["X"] for h in store.history() if h.revision == _head(repo, 3)] == [1]
    r = cli("check", "sweep.toml", "--repeats", "1", "--json", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    (v,) = json.loads(r.stdout)
    assert (v["params"], v["baseline"], v["verdict"]) == ({"X": 3}, 20.0, "ok")


def one_value_spec(folder, param: str, extra: str = "") -> None:
    """s.toml: one config of p.c, built by gcc."""
    (folder / "s.toml").write_text("\n".join([
        "[sweep]", 'objective = "ms"', "[params]", param, "[build]", 'sources = ["p.c"]',
        'command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "p.c"]', extra, ""]))


NOISY = """#include <stdio.h>
#include <stdlib.h>
int main(void) {  /* 0, 20, 40 ms above BASE, in turn: a wide interval */
  const char *path = getenv("COUNTER"); int n = 0; FILE *f = fopen(path, "r");
  if (f) { if (fscanf(f, "%d", &n) != 1) n = 0; fclose(f); }
  f = fopen(path, "w"); fprintf(f, "%d\\n", n + 1); fclose(f);
  printf("@@RESULT ms=%d\\n", BASE + 20 * (n % 3)); return 0;
}
"""


def test_slower_beyond_the_tolerance_but_within_noise_is_inconclusive_not_ok(tmp_path):
    (tmp_path / "p.c").write_text(NOISY)
    one_value_spec(tmp_path, "BASE = [10]", f'[run]\nenv = {{ COUNTER = "{tmp_path / "counter"}" }}')
    assert cli("run", "s.toml", "--confirm", "1,3", "-q", cwd=tmp_path).returncode == 0  # 10, 30, 50 ms
    (tmp_path / "p.c").write_text(NOISY.replace("BASE + 20", "BASE + 15 + 20"))  # 15 ms slower
    r = cli("check", "s.toml", "--repeats", "3", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "inconclusive: ms 30 (±" in r.stdout and "within noise" in r.stdout, r.stdout
    assert "1 of 1 shapes slower beyond the tolerance but within noise" in r.stdout
    # outside git the baseline is its stored figures, whose interval no run of today narrows: the
    # rounds stop at --repeats, and the line says what would decide
    assert "the baseline was not rebuilt: its sources were not in a git repository" in r.stdout, r.stdout
    assert "commit the sources and sweep them" in r.stdout and "3 rounds against its stored figures" in r.stdout
    (v,) = json.loads(cli("check", "s.toml", "--repeats", "3", "--json", cwd=tmp_path).stdout)
    assert v["verdict"] == "inconclusive" and v["baseline_ci95"][0] < 30 < v["baseline_ci95"][1]
    assert v["rounds"] == 3 and v["speedup_ci95"][0] < 0.95 < v["speedup_ci95"][1]
    strict = cli("check", "s.toml", "--repeats", "3", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and "inconclusive: failed, --strict" in strict.stdout, strict.stdout


def test_the_workspace_keeps_out_of_git_status(repo):
    (repo / ".gitignore").unlink()  # no rule of the user's own
    git(repo, "rm", "-q", "--cached", ".gitignore")
    git(repo, "commit", "-qm", "no .gitignore")
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == "", status.stdout


def test_explain_gives_the_confirmed_median_report_and_export_use(repo):
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    out = cli("explain", "sweep.toml", "best", cwd=repo).stdout
    assert "confirmed (BEST): median 20 over 2 runs, 95% interval 20–20" in out, out
    j = json.loads(cli("explain", "sweep.toml", "best", "--json", cwd=repo).stdout)
    assert j["confirmation"] == {"mark": "BEST", "median": 20.0, "ci95": [20.0, 20.0], "n": 2, "failed_runs": 0}
    assert json.loads(cli("explain", "sweep.toml", "X=3", "--json", cwd=repo).stdout)["confirmation"] is None


def test_check_takes_its_baseline_on_its_own_gpu_model_and_in_the_space(repo):
    """The review's cases: another host's results (another GPU model, 4x faster) are not this
    machine's baseline; a best config outside a narrowed space is not one check can measure."""
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    db = repo / ".ksweep" / "sweep.db"
    with sqlite3.connect(str(db)) as c:  # every result as if measured on an H100 elsewhere, 4x faster
        c.execute("UPDATE results SET gpu_name = 'NVIDIA H100 80GB HBM3', cache_key = 'elsewhere', "
                  "metrics = json_set(metrics, '$.ms', json_extract(metrics, '$.ms') / 4.0)")
    (repo / "README").write_text("notes\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "readme")
    assert cli("run", "sweep.toml", "--no-confirm", "-q", "--max-evals", "2", cwd=repo).returncode == 0
    r = cli("check", "sweep.toml", "--repeats", "1", "--json", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    (v,) = json.loads(r.stdout)
    assert (v["verdict"], v["params"], v["baseline"]) == ("ok", {"X": 2}, 30.0)  # this machine's best of 2
    spec = repo / "sweep.toml"
    spec.write_text(spec.read_text().replace("X = [2, 1, 3]", "X = [1, 3]"))  # X=2 stands, but out of the space
    (v,) = json.loads(cli("check", "sweep.toml", "--repeats", "1", "--json", cwd=repo).stdout)
    assert (v["verdict"], v["params"], v["baseline"]) == ("ok", {"X": 3}, 40.0)  # X=1: the H100's only


def test_check_judges_its_own_runs_not_the_sweeps_rounds_under_the_same_key(tmp_path):
    """The program reads its extra time from a file the build does not see: the key is the
    same after the change, and the sweep's five rounds must not count as "now"."""
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { int extra = 0; FILE *f = fopen("'
                                  + str(tmp_path / "slow.txt") + '", "r"); if (f) { if (fscanf(f, "%d", &extra) '
                                  '!= 1) extra = 0; fclose(f); } printf("@@RESULT ms=%d\\n", 20 + extra); return 0; }\n')
    one_value_spec(tmp_path, "X = [1]")
    assert cli("run", "s.toml", "--confirm", "1,5", "-q", cwd=tmp_path).returncode == 0
    (tmp_path / "slow.txt").write_text("30\n")
    r = cli("check", "s.toml", "--repeats", "2", "--json", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    (v,) = json.loads(r.stdout)
    assert (v["verdict"], v["now"]) == ("REGRESSED", 50.0)


def test_a_dask_run_does_not_judge_another_gpu_models_results(repo, dask_cluster):
    # on the session's Dask cluster (tests/conftest.py): its GPU models are known when its runs tell them
    assert cli("run", "sweep.toml", "--no-confirm", "-q", cwd=repo).returncode == 0
    db = repo / ".ksweep" / "sweep.db"
    with sqlite3.connect(str(db)) as c:  # as if measured on another host's GPU, with its own compiler
        c.execute("UPDATE results SET gpu_name = 'NVIDIA H100 80GB HBM3', cache_key = 'elsewhere'")
    r = cli("run", "sweep.toml", "--no-confirm", "-q", "--max-evals", "1", "--cluster",
            dask_cluster[0].scheduler_address, cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    with Store(db, create=False) as store:
        assert store.superseded() == set()
        assert sum(r.gpu_name == "NVIDIA H100 80GB HBM3" for r in store.results()) == 2


def test_a_dask_run_supersedes_its_own_gpu_models_old_source_results(repo, dask_cluster):
    dask = ["--no-confirm", "-q", "--cluster", dask_cluster[0].scheduler_address]  # the session's cluster
    assert cli("run", "sweep.toml", *dask, cwd=repo).returncode == 0
    revise(repo, 25, "v2")
    assert cli("run", "sweep.toml", *dask, "--max-evals", "1", cwd=repo).returncode == 0
    with Store(repo / ".ksweep" / "sweep.db", create=False) as store:
        assert len(store.superseded()) == 2 and len(store.results()) == 1


def test_a_header_edit_confirms_again_and_the_best_follows_the_new_runs(tmp_path):
    """The result key covers the listed sources, not the headers a build read: after a header
    edit every config was measured again, but the confirmation runs of the old header still
    counted under the same key, so none ran, BEST stayed on the old header's figures and
    export shipped it."""
    (tmp_path / "prog.c").write_text('#include <stdio.h>\n#include "cost.h"\n#ifndef X\n#define X 1\n#endif\n'
                                     'int main(void) { printf("@@RESULT ms=%d\\n", MS_OF(X)); return 0; }\n')
    (tmp_path / "cost.h").write_text("#define MS_OF(x) (10 * (x))\n")  # X = 1 fastest
    (tmp_path / "sweep.toml").write_text(textwrap.dedent(SPEC).replace("X = [2, 1, 3]", "X = [1, 2, 3, 4]"))
    first = cli("run", "sweep.toml", "--confirm", "3,2,all", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    (tmp_path / "cost.h").write_text("#define MS_OF(x) ((x) == 2 ? 5 : 10 * (x))\n")  # now X = 2
    again = cli("run", "sweep.toml", "--confirm", "3,2,all", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "confirmation runs" in again.stdout + again.stderr
    with Store(tmp_path / ".ksweep" / "sweep.db") as store:
        from ksweep.verify.confirm import confirmed

        results = store.results()
        conf = confirmed(results, store.measurements(), "min", store.default_configs())[("base", "default")]
        assert conf.best == '{"X":2}'
        best = conf.verdicts[conf.best]
        assert best.interval.median == 5.0 and best.interval.n == 2  # this version's runs only
    header = cli("export", ".ksweep/sweep.db", "--format", "header", cwd=tmp_path)
    assert "#define X 2" in header.stdout, header.stdout


def test_a_revision_counts_only_its_own_confirmation_runs():
    """A header edit keeps the result key: the older revision's best counted the newer one's
    confirmation runs too (taken after its result), and a 20% slowdown read "1.00x within
    noise"."""
    from ksweep.report.history import timeline
    from ksweep.result import Measurement

    def res(ms, rev, t, a):
        return Result("v", "s", {"A": a}, Status.OK, metrics={"ms": ms}, cache_key="k", finished=t, revision=rev)

    history = [res(1.00, "r1", 100, 1), res(2.0, "r1", 101, 2), res(1.20, "r2", 200, 1), res(2.0, "r2", 201, 2)]
    runs = []
    for start, value in ((150, 1.00), (250, 1.20)):  # each revision's confirmation, after its results
        for r in range(3):
            runs += [Measurement("v", "s", {"A": 1}, "k", r, Status.OK, value=value + 0.001 * r, finished=start + r),
                     Measurement("v", "s", {"A": 2}, "k", r, Status.OK, value=2.0, finished=start + r + 0.5)]
    first, second = timeline(history, runs, "ms", "min")[("v", "s")]
    assert first.value == pytest.approx(1.001) and second.value == pytest.approx(1.201)
    assert second.regression and second.speedup == pytest.approx(1.001 / 1.201)


def test_an_edit_undone_is_its_revision_again_with_its_own_confirmation_runs():
    """r1, a header edit r2, then the edit undone (r1 again): each confirmation run belongs to
    the revision of its config's latest row measured before it."""
    from ksweep.report.history import timeline
    from ksweep.result import Measurement

    def res(ms, rev, t, a):
        return Result("v", "s", {"A": a}, Status.OK, metrics={"ms": ms}, cache_key="k", finished=t, revision=rev)

    history = [res(1.00, "r1", 100, 1), res(2.0, "r1", 101, 2), res(1.20, "r2", 200, 1), res(2.0, "r2", 201, 2),
               res(1.00, "r1", 300, 1), res(2.0, "r1", 301, 2)]
    runs = []
    for start, value in ((150, 1.00), (250, 1.20), (350, 1.00)):
        for r in range(3):
            runs += [Measurement("v", "s", {"A": 1}, "k", r, Status.OK, value=value + 0.001 * r, finished=start + r),
                     Measurement("v", "s", {"A": 2}, "k", r, Status.OK, value=2.0, finished=start + r + 0.5)]
    r1, r2, again = timeline(history, runs, "ms", "min")[("v", "s")]
    assert r2.value == pytest.approx(1.201) and r2.interval.n == 3  # its own 3 runs, not the undone edit's too
    assert r1.confirmed and r1.value == pytest.approx(1.001) and r1.interval.n == 3
    # measured again after r2, r1 is a point of its own, the last: the timeline ends where the
    # sources are now (it ended on r2's REGRESSION, r1's new runs folded into its first point)
    assert (again.revision, again.occurrence, again.label) == ("r1", 2, "r1 (again)")
    assert again.value == pytest.approx(1.001) and again.interval.n == 3 and again.first_seen == 300
    assert r2.regression and not again.regression and again.speedup == pytest.approx(1.201 / 1.001)


def test_a_revision_again_keeps_its_results_not_measured_again_and_takes_its_own_confirmation_runs():
    """r1 (A=2 the leader), a partial sweep of r2 (A=1 alone), r1 again (A=1 measured, A=2
    resumed): A=2's new confirmation runs went to r1's first point (a median of both times)
    and r1 (again) knew only A=1."""
    from ksweep.report.history import timeline
    from ksweep.result import Measurement

    def res(ms, rev, t, a):
        return Result("v", "s", {"A": a}, Status.OK, metrics={"ms": ms}, cache_key="k", finished=t, revision=rev)

    history = [res(1.0, "r1", 100, 1), res(0.9, "r1", 101, 2), res(1.2, "r2", 200, 1), res(1.0, "r1", 300, 1)]
    runs = []
    for start, lead in ((150, 0.9), (350, 0.8)):
        for r in range(3):
            runs += [Measurement("v", "s", {"A": 2}, "k", r, Status.OK, value=lead + 0.001 * r, finished=start + r),
                     Measurement("v", "s", {"A": 1}, "k", r, Status.OK, value=1.0, finished=start + r + 0.5)]
    first, r2, again = timeline(history, runs, "ms", "min")[("v", "s")]
    assert (first.value, first.interval.n, first.params) == (pytest.approx(0.901), 3, {"A": 2})
    assert r2.value == 1.2 and not r2.confirmed and r2.regression
    assert again.label == "r1 (again)" and again.evaluated == 1  # A=1 measured then; A=2's result stands
    assert (again.value, again.interval.n, again.params) == (pytest.approx(0.801), 3, {"A": 2})


def test_again_is_counted_over_every_shape_so_the_shared_axis_keeps_time_order():
    """Shape a swept on r1; shape b on r2, then on r1: b's r1 was labelled "r1" like a's, and on
    the shared axis (r1, r2) its line went back from r2 to r1."""
    from ksweep.report.history import revision_axis, timeline

    def res(shape, rev, t):
        return Result("v", shape, {"A": 1}, Status.OK, metrics={"ms": 1.0}, cache_key="k", finished=t, revision=rev)

    lines = timeline([res("a", "r1", 100), res("b", "r2", 200), res("b", "r1", 300)], [], "ms", "min")
    assert [p.label for p in lines[("v", "a")]] == ["r1"]
    assert [p.label for p in lines[("v", "b")]] == ["r2", "r1 (again)"]
    assert revision_axis(lines) == ["r1", "r2", "r1 (again)"]


def test_an_uncommitted_edit_undone_and_swept_again_ends_the_history_where_the_source_is(repo):
    """v1 swept; an uncommitted edit (slower) swept; the edit undone and swept again: the
    history's last line is v1 again, faster than the edit, not the edit's REGRESSION."""
    assert cli("run", "sweep.toml", "-q", "--no-confirm", cwd=repo).returncode == 0
    (repo / "prog.c").write_text(PROGRAM.format(cost=14, slow=0))  # best 24 ms, was 20
    assert cli("run", "sweep.toml", "-q", "--no-confirm", cwd=repo).returncode == 0
    git(repo, "checkout", "-q", "--", "prog.c")
    assert cli("run", "sweep.toml", "-q", "--no-confirm", cwd=repo).returncode == 0
    h = cli("history", ".ksweep/sweep.db", "--json", cwd=repo)
    assert h.returncode == 0, h.stderr
    (line,) = json.loads(h.stdout)
    points = line["points"]
    v1 = _head(repo, 1)
    assert [(p["revision"], p["occurrence"]) for p in points] == [(v1, 1), (points[1]["revision"], 1), (v1, 2)]
    assert points[1]["revision"].startswith(v1 + "+")
    assert [p["value"] for p in points] == [20.0, 24.0, 20.0]
    assert points[1]["regression"] and not points[2]["regression"] and round(points[2]["speedup"], 3) == 1.2
    assert [p["evaluated"] for p in points] == [3, 3, 3]
    text = cli("history", ".ksweep/sweep.db", cwd=repo).stdout
    last = text.strip().splitlines()[-1]
    assert f"{v1} (again)" in last and "1.20x" in last and "REGRESSION" not in last


def test_check_refuses_a_shape_or_variant_the_spec_lacks_in_one_line(tmp_path):
    """`check --shape nope` printed nothing and exited 0: a CI gate with a typo passed."""
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { printf("@@RESULT ms=%d\\n", 10 * X); '
                                  'return 0; }\n')
    one_value_spec(tmp_path, "X = [1]")
    assert cli("run", "s.toml", "--no-confirm", "-q", cwd=tmp_path).returncode == 0
    for option, name, what in (("--shape", "defualt", "shape"), ("--variant", "nope", "variant")):
        r = cli("check", "s.toml", option, name, cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
        (line,) = r.stderr.splitlines()
        assert f"{option} {name}: the spec has no such {what}" in line, line
    assert "did you mean default?" in cli("check", "s.toml", "--shape", "defualt", cwd=tmp_path).stderr
    assert cli("check", "s.toml", "--shape", "default", "--repeats", "1", cwd=tmp_path).returncode == 0
    from ksweep.errors import KsweepError
    from ksweep.app.check import check
    from ksweep.spec.load import load_spec

    with pytest.raises(KsweepError, match="variant 'nope': the spec has no such variant"):  # the library's call
        check(load_spec(str(tmp_path / "s.toml")), variants=["nope"])


def test_check_refuses_gpus_that_are_not_indices_in_one_line(tmp_path):
    """`check --gpus abc` ended in a traceback; it is refused as `run --gpus abc` is, before
    anything is built."""
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { printf("@@RESULT ms=%d\\n", 10 * X); '
                                  'return 0; }\n')
    one_value_spec(tmp_path, "X = [1]")
    for gpus in ("abc", "0,x", "-1"):
        r = cli("check", "s.toml", "--gpus", gpus, cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
        assert r.stderr.splitlines() == [f"ksweep: error: --gpus {gpus}: give GPU indices separated by commas, "
                                         "e.g. --gpus 0,1 (nvidia-smi lists them)"], r.stderr
        assert cli("run", "s.toml", "--gpus", gpus, cwd=tmp_path).stderr == r.stderr
    assert not (tmp_path / ".ksweep").exists()


def test_check_refuses_a_negative_tolerance_or_repeats_in_one_line(tmp_path):
    """`--tolerance -2` made a result 1.7% faster REGRESSED (exit 1); `--repeats -1` was
    zero rounds, a verdict of unknown noise. Both are refused as run's numbers are."""
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { printf("@@RESULT ms=%d\\n", 10 * X); '
                                  'return 0; }\n')
    one_value_spec(tmp_path, "X = [1]")
    assert cli("run", "s.toml", "--no-confirm", "-q", cwd=tmp_path).returncode == 0
    for argv, rule in ((["--tolerance", "-2"], "--tolerance -2: give a percentage, 0 or more"),
                       (["--tolerance", "nan"], "--tolerance nan: give a percentage, 0 or more"),
                       (["--repeats", "-1"], "--repeats -1: give a whole number from 0 to 100"),
                       (["--budget", "-1"], "--budget -1: give a number of seconds, 0 or more")):
        r = cli("check", "s.toml", *argv, cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
        assert r.stderr.splitlines() == [f"ksweep: error: check: {rule} (see ksweep check --help)"], r.stderr
    ok = cli("check", "s.toml", "--tolerance", "0", "--repeats", "0", "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr  # no rounds after the first: the noise is not known
    (v,) = json.loads(ok.stdout)
    assert (v["verdict"], v["beyond_noise"]) == ("ok", None)
    from ksweep.errors import KsweepError
    from ksweep.app.check import check
    from ksweep.spec.load import load_spec

    for bad in ({"tolerance": -0.02}, {"repeats": -1}, {"budget": -1.0}, {"budget": float("nan")}):  # the library's
        with pytest.raises(KsweepError, match="give a"):
            check(load_spec(str(tmp_path / "s.toml")), **bad)
    # history's --tolerance too: a negative one called an improvement of 1% a REGRESSION
    h = cli("history", ".ksweep/s.db", "--tolerance", "-2", cwd=tmp_path)
    assert h.returncode == 2 and h.stdout == "", h.stdout + h.stderr
    assert h.stderr.splitlines() == ["ksweep: error: history: --tolerance -2: give a percentage, 0 or more "
                                     "(see ksweep history --help)"], h.stderr


def test_the_timeline_plot_puts_every_point_above_its_own_revision(tmp_path, monkeypatch):
    """Shapes with different revisions: each shape's points were drawn at its own index
    (0, 1, ...) under the labels of the shape with the most revisions, so a shape measured
    on r2 and r3 alone was drawn above r1 and r2. One axis of every revision now, in time
    order, each point at its revision's place."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from ksweep.report.history import Point, plot

    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))

    def pt(rev, t, value, speedup=None):
        return Point(rev, t, value, {"X": 1}, speedup=speedup)

    lines = {("base", "all"): [pt("r1", 10.0, 1.0), pt("r2", 20.0, 1.1, 0.91), pt("r3", 30.0, 1.0, 1.1)],
             ("base", "late"): [pt("r2", 21.0, 2.0), pt("r3", 31.0, 2.2, 0.91)],
             ("base", "gap"): [pt("r0", 5.0, 3.0), pt("r3", 32.0, 3.3, 0.91)],
             ("base", "none"): [pt("r1", 11.0, None), pt("r2", 22.0, 4.0)]}  # nothing valid on r1
    plot(lines, "ms", tmp_path / "t.png")
    (fig,) = drawn
    (ax,) = fig.axes
    axis = ["r0", "r1", "r2", "r3"]
    assert [t.get_text() for t in ax.get_xticklabels()] == axis
    assert list(ax.get_xticks()) == [0, 1, 2, 3]
    xs = {line.get_label(): list(line.get_xdata()) for line in ax.lines if not line.get_label().startswith("_")}
    assert xs == {"all": [1, 2, 3], "late": [2, 3], "gap": [0, 3], "none": [2]}
    for (_, shape), points in lines.items():
        ys = {line.get_label(): list(line.get_ydata()) for line in ax.lines}[shape]
        assert ys == [p.value for p in points if p.value is not None]
    # each change's label above its own point
    changes = sorted((a.xy[0], a.xy[1], a.get_text()) for a in ax.texts)
    assert changes == [(2, 1.1, "0.91x"), (3, 1.0, "1.10x"), (3, 2.2, "0.91x"), (3, 3.3, "0.91x")]


def test_check_update_writes_the_csv_beside_the_database_again(repo):
    """`check --update` recorded its runs but left the CSV beside the database as the last
    `run` wrote it: v1's figures, and the result it superseded."""
    import csv

    def rows():
        with open(repo / ".ksweep" / "sweep.csv", newline="") as f:
            return sorted((int(r["X"]), float(r["metric.ms"])) for r in csv.DictReader(f))

    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 0
    assert rows() == [(1, 20.0), (2, 30.0), (3, 40.0)]
    revise(repo, 25, "v2: slower", slow=30)  # X=1 65 ms, X=2 60, X=3 85
    before = (repo / ".ksweep" / "sweep.csv").read_bytes()
    assert cli("check", "sweep.toml", "--repeats", "1", cwd=repo).returncode == 1
    assert (repo / ".ksweep" / "sweep.csv").read_bytes() == before  # no --update: nothing recorded
    assert cli("check", "sweep.toml", "--repeats", "1", "--update", cwd=repo).returncode == 1
    # as report shows it: X=3's v1 result is superseded, so left out
    assert rows() == [(1, 65.0), (2, 60.0)]
    report = cli("report", ".ksweep/sweep.db", "--format", "csv", cwd=repo)
    assert (repo / ".ksweep" / "sweep.csv").read_text() == report.stdout


def test_the_configs_of_a_revision_are_its_distinct_configs_not_its_runs():
    """A config measured again on one revision (a re-measure, --rerun) was counted twice: a
    revision showed `configs 59` of a space of 57 valid configs."""
    from ksweep.report.history import render, timeline

    def res(a, t, rev, status=Status.OK):
        return Result("v", "s", {"A": a}, status, metrics={"ms": float(a)} if status is Status.OK else {},
                      cache_key="k", finished=t, revision=rev)

    history = [res(1, 1, "r1"), res(2, 2, "r1"), res(3, 3, "r1", Status.RUN_ERROR),  # 3 configs
               res(1, 4, "r1"), res(2, 5, "r1"), res(3, 6, "r1", Status.RUN_ERROR),  # measured again
               res(1, 7, "r2", Status.RUN_ERROR), res(1, 8, "r2", Status.RUN_ERROR)]  # 1 config, twice, failed
    points = timeline(history, [], "ms", "min")[("v", "s")]
    assert [(p.revision, p.evaluated) for p in points] == [("r1", 3), ("r2", 1)]
    assert [p.to_json()["evaluated"] for p in points] == [3, 1]
    table = render({("v", "s"): points}, "ms").splitlines()
    assert table[2].endswith("      3  A=1") and table[3].rstrip().endswith(" 1"), table  # configs, config


def test_history_labels_every_change_with_what_the_noise_says():
    """A regression said `(beyond noise)` and a 1.00x change `within noise`, but a 1.22x
    improvement beyond noise (JSON beyond_noise: true) had no label."""
    from ksweep.verify.confirm import Interval
    from ksweep.report.history import Point, render

    def pt(rev, value, speedup=None, beyond=None, regression=False):
        return Point(rev, None, value, {"X": 1}, Interval(value, value * 0.99, value * 1.01, 3), 1, speedup,
                     beyond, regression, True)

    points = [pt("r1", 1.22), pt("r2", 1.22, 1.0, False), pt("r3", 1.0, 1.22, True),
              pt("r4", 1.25, 0.8, True, True), pt("r5", 1.25, 1.0, None),
              pt("r6", 1.26, 0.992, True)]  # slower, within the tolerance, but beyond noise
    rows = render({("base", "s"): points}, "ms").splitlines()[2:]
    notes = [row.split("X=1", 1)[1].strip() for row in rows]
    assert notes == ["", "within noise", "beyond noise", "REGRESSION (beyond noise)", "", "beyond noise"]


def test_check_takes_the_best_of_a_narrowed_space_not_the_only_confirmed_config_left_in_it(repo):
    """The confirmed BEST (X=1) is taken out of the space: the baseline is the best of the
    configs left (X=2, measured once), not the default (X=3), confirmed only as the reference."""
    spec = repo / "sweep.toml"
    spec.write_text(spec.read_text().replace("X = [2, 1, 3]", "X = { values = [2, 1, 3], default = 3 }"))
    assert cli("run", "sweep.toml", "--confirm", "1,2", "-q", cwd=repo).returncode == 0
    spec.write_text(spec.read_text().replace("values = [2, 1, 3]", "values = [2, 3]"))
    r = cli("check", "sweep.toml", "--repeats", "1", "--json", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    (v,) = json.loads(r.stdout)
    assert (v["verdict"], v["params"], v["baseline"]) == ("ok", {"X": 2}, 30.0)


def test_check_of_a_shape_whose_sweep_had_no_ok_config_does_not_ask_for_a_sweep(repo):
    """Swept, every config failed: the line says so, not 'sweep it first'."""
    (repo / "prog.c").write_text('#include <stdio.h>\nint main(void) { printf("%d\\n", X); return 3; }\n')
    assert cli("run", "sweep.toml", "-q", cwd=repo).returncode == 1
    r = cli("check", "sweep.toml", "--repeats", "1", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr  # no shape checked: the gate does not pass
    assert "no config ran OK in its sweeps" in r.stdout and "sweep it first" not in r.stdout, r.stdout
    assert "no shape was checked" in r.stdout


def test_check_refuses_a_spec_whose_objective_changed_since_the_sweep(repo):
    """The baseline was ranked by one objective and the check's runs by the spec's new one: it
    compared a value of one with a value of the other."""
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    spec = repo / "sweep.toml"
    spec.write_text(spec.read_text().replace('objective = "ms"', 'objective = "ms"\ndirection = "max"'))
    r = cli("check", "sweep.toml", "--repeats", "1", cwd=repo)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "swept for ms (min), the spec's objective is ms (max)" in r.stderr and "ksweep run" in r.stderr
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    r = cli("check", "sweep.toml", "--repeats", "1", "--json", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)[0]["params"] == {"X": 3}  # the most ms, as the spec now asks


def test_check_after_a_parameter_was_added_asks_for_a_sweep_not_fails_a_config_it_cannot_build(repo):
    """The best known config lacks the spec's new parameter: check said 'FAILED: ... was not
    measured' and exited 1, as if the source had broken it."""
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    spec = repo / "sweep.toml"
    spec.write_text(spec.read_text().replace("X = [2, 1, 3]", "X = [2, 1, 3]\nY = [0, 1]"))
    r = cli("check", "sweep.toml", "--repeats", "1", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr  # nothing measured: a gate that checked nothing fails
    assert "FAILED" not in r.stdout and "is not in the spec's space" in r.stdout and "ksweep run" in r.stdout, \
        r.stdout
    assert "no shape was checked (1 without a baseline)" in r.stdout


def test_check_refuses_another_specs_database(repo, tmp_path):
    """`check other.toml --db this.db` found none of its shapes there and passed, checking nothing."""
    assert cli("run", "sweep.toml", "--confirm", "2,2", "-q", cwd=repo).returncode == 0
    other = repo / "other.toml"
    other.write_text((repo / "sweep.toml").read_text().replace("[sweep]", '[sweep]\nname = "other"')
                     + "[shapes.big]\ndefines = { N = 1 }\n")
    r = cli("check", "other.toml", "--db", ".ksweep/sweep.db", "--repeats", "1", cwd=repo)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "holds the results of spec" in r.stderr and "not 'other'" in r.stderr, r.stderr


def test_a_check_that_checks_some_shapes_passes_and_one_that_checks_none_fails(repo):
    """A gate that measured nothing (no shape with a baseline) passed with exit 0."""
    spec = repo / "sweep.toml"
    spec.write_text(spec.read_text() + "[shapes.small]\ndefines = { N = 1 }\n[shapes.big]\ndefines = { N = 2 }\n")
    assert cli("run", "sweep.toml", "--shape", "small", "--no-confirm", "-q", cwd=repo).returncode == 0
    r = cli("check", "sweep.toml", "--repeats", "1", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr  # small is checked; big has no baseline yet
    assert "big/base: no baseline" in r.stdout and "small/base: ok" in r.stdout, r.stdout
    r = cli("check", "sweep.toml", "--shape", "big", "--repeats", "1", cwd=repo)
    assert r.returncode == 1 and "no shape was checked (1 without a baseline): nothing to pass" in r.stdout, r.stdout


def test_a_revision_far_slower_with_one_slow_run_a_side_is_a_regression_and_no_interval_goes_below_zero(tmp_path):
    """Three confirmation runs a revision, one of them slow (1.6x) on each side: a t interval
    of three runs (t = 4.30) spread so wide that a 2.4x slower revision was "within noise",
    and two runs gave an interval below 0 ms, which the plot drew. The history's interval is
    the median's (order statistics): an outlier moves it by one rank, and it stays within
    the runs."""
    from ksweep.report.history import plot, render, timeline
    from ksweep.result import Measurement

    def res(rev, t):
        return Result("v", "s", {"A": 1}, Status.OK, metrics={"ms": 1.0}, cache_key="k", finished=t, revision=rev)

    runs = {"r1": [1.00, 1.01, 1.60], "r2": [2.40, 2.42, 3.84], "r3": [1.00, 1.60]}  # r2: 2.4x slower than r1
    history, ms = [], []
    for i, (rev, values) in enumerate(runs.items()):
        start = 100.0 * (i + 1)
        history.append(res(rev, start))
        ms += [Measurement("v", "s", {"A": 1}, "k", r, Status.OK, value=v, finished=start + 1 + r)
               for r, v in enumerate(values)]
    r1, r2, r3 = timeline(history, ms, "ms", "min")[("v", "s")]
    assert (r1.interval.lo, r1.interval.median, r1.interval.hi) == (1.00, 1.01, 1.60)
    assert r2.speedup == pytest.approx(1.01 / 2.42) and r2.beyond_noise and r2.regression
    assert "REGRESSION (beyond noise)" in render({("v", "s"): [r1, r2, r3]}, "ms")
    assert r3.interval.lo == 1.00 and r3.interval.hi == 1.60  # two runs: their range, not below zero
    assert all(p.interval.lo >= 0 and p.to_json()["ci95"][0] >= 0 for p in (r1, r2, r3))
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    drawn = []
    saved = Figure.savefig
    try:
        Figure.savefig = lambda fig, *a, **k: drawn.append(fig)
        plot({("v", "s"): [r1, r2, r3]}, "ms", tmp_path / "t.png")
    finally:
        Figure.savefig = saved
    (ax,) = drawn[0].axes
    bottoms = [seg[:, 1].min() for c in ax.collections for seg in c.get_segments()]
    assert bottoms and min(bottoms) >= 1.0 - 1e-9  # every error bar ends at a run's value
