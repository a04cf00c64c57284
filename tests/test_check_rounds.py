"""ksweep check's rounds: the baseline revision rebuilt from git and measured beside the
current build, round after round, until the two are told apart; gcc programs in a
temporary git repository whose "times" come from a seeded generator or a file, never from
the machine (the verdicts are the same on a busy machine and an idle one)."""

import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PROGRAMS, ksweep_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("gcc") is None,
                                reason="needs git and gcc")

SPEC = """[sweep]
objective = "ms"
[params]
X = [1, 2, 3]
[build]
sources = ["{source}"]
command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "{source}"]
[run]
timeout = 20
env = {{ NOISE_COUNTER = "{counter}", NOISE_SEED = "{seed}", SPEED_FILE = "{speed}" }}
"""

# ms = 10 X times the machine's "speed" (a file outside the repository, as a busier machine today)
STEADY = """#include <stdio.h>
#include <stdlib.h>
#ifndef X
#define X 1
#endif
#define COST 10
int main(void) { double speed = 1; FILE *f = fopen(getenv("SPEED_FILE"), "r");
  if (f) { if (fscanf(f, "%lf", &speed) != 1) speed = 1; fclose(f); }
  printf("@@RESULT ms=%g\\n", COST * X * speed); return 0; }
"""

# every other run takes twice as long: whatever the order, a round's two runs differ by 2x
FLIP = """#include <stdio.h>
#include <stdlib.h>
int main(void) { volatile int x = X; (void)x;  /* each X its own program, measured alike */
  const char *path = getenv("NOISE_COUNTER"); long n = 0; FILE *f = fopen(path, "r");
  if (f) { if (fscanf(f, "%ld", &n) != 1) n = 0; fclose(f); }
  f = fopen(path, "w"); fprintf(f, "%ld\\n", n + 1); fclose(f);
  printf("@@RESULT ms=%d\\n", 10 * (1 + (int)(n % 2))); return 0; }
"""


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}).stdout


def make_repo(tmp_path: Path, source: str, text: str, seed: int = 1) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / source).write_text(text)
    (repo / "s.toml").write_text(SPEC.format(source=source, counter=tmp_path / "counter", seed=seed,
                                             speed=tmp_path / "speed"))
    (repo / ".gitignore").write_text(".ksweep/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "v1")
    return repo


def commit(repo: Path, source: str, text: str, message: str) -> None:
    (repo / source).write_text(text)
    git(repo, "commit", "-qam", message)


def check(repo, *args):
    r = ksweep_cli("check", "s.toml", "--json", *args, cwd=repo)
    (v,) = json.loads(r.stdout)
    return r.returncode, v, r


def test_a_planted_2x_regression_of_a_noisy_program_fails_and_the_unchanged_program_passes(tmp_path):
    """One run in five 1.6x slower, the others within 3%: with the defaults, the unchanged
    source passes and a 2x slower one fails, each against the first revision rebuilt."""
    noisy = (PROGRAMS / "gate_noise.c").read_text()
    repo = make_repo(tmp_path, "gate_noise.c", noisy)
    assert ksweep_cli("run", "s.toml", "-q", cwd=repo).returncode == 0
    first = git(repo, "rev-parse", "HEAD").strip()[:12]
    commit(repo, "gate_noise.c", noisy.replace("/* A program", "/* The same program: a program"), "comment")
    code, v, r = check(repo)
    assert code == 0 and v["verdict"] == "ok", r.stdout + r.stderr
    assert v["baseline_rebuilt"] and v["baseline_revision"] == first and v["note"] == ""
    assert v["rounds"] >= 6 and v["speedup_ci95"][0] >= 0.95
    commit(repo, "gate_noise.c", noisy.replace("#define COST 10.0", "#define COST 20.0"), "2x slower")
    code, v, r = check(repo)
    assert code == 1 and v["verdict"] == "REGRESSED", r.stdout + r.stderr
    assert v["speedup_ci95"][1] < 0.95 and v["beyond_noise"]
    # every run within 3% of its cost or 1.6x it (the noise's draws follow the order the runs took)
    cost = 10.0 * (1 + 0.1 * (v["params"]["X"] - 1))  # the sweep's best: X=1, unless its noise said otherwise
    assert 0.97 * cost <= v["baseline"] <= 1.6 * cost and 2 * 0.97 * cost <= v["now"] <= 2 * 1.6 * cost
    assert 0.97 / 1.6 / 2 <= v["speedup"] <= 1.6 / 0.97 / 2
    text = ksweep_cli("check", "s.toml", cwd=repo).stdout
    assert f"rounds with {first} rebuilt" in text and "REGRESSED" in text, text
    # the temporary work tree is gone, its entry too
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "status", "--porcelain") == ""


def test_a_slower_machine_today_is_not_a_regression_and_a_real_one_is(tmp_path):
    """The machine is twice as slow as when the baseline was swept: against the stored
    figures the unchanged source would be 2x slower; against the baseline rebuilt today it
    is not, and a 1.5x slower source is caught all the same."""
    repo = make_repo(tmp_path, "p.c", STEADY)
    (tmp_path / "speed").write_text("1\n")
    assert ksweep_cli("run", "s.toml", "-q", cwd=repo).returncode == 0  # the best: X=1, 10 ms
    (tmp_path / "speed").write_text("2\n")
    (repo / "README").write_text("notes\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "readme")
    code, v, r = check(repo, "--repeats", "3")
    assert (code, v["verdict"], v["speedup"], v["stored_baseline"], v["baseline"]) == (0, "ok", 1.0, 10.0, 20.0), \
        r.stdout + r.stderr
    commit(repo, "p.c", STEADY.replace("#define COST 10", "#define COST 15"), "1.5x slower")
    code, v, r = check(repo, "--repeats", "3")
    assert (code, v["verdict"], v["baseline"], v["now"]) == (1, "REGRESSED", 20.0, 30.0), r.stdout + r.stderr
    # --repeats 0: no rounds, the one run against the stored figures (10 ms then)
    code, v, r = check(repo, "--repeats", "0")
    assert (code, v["verdict"], v["baseline_rebuilt"], v["rounds"], v["now"]) == (1, "REGRESSED", False, 0, 30.0)


def test_rounds_that_cannot_tell_are_inconclusive_within_the_budget_and_strict_fails_them(tmp_path):
    repo = make_repo(tmp_path, "p.c", FLIP)
    assert ksweep_cli("run", "s.toml", "-q", cwd=repo).returncode == 0
    commit(repo, "p.c", FLIP.replace("int main", "/* v2 */ int main"), "v2")
    code, v, r = check(repo, "--repeats", "4", "--budget", "0")
    assert (code, v["verdict"], v["rounds"], v["baseline_rebuilt"]) == (0, "inconclusive", 4, True), \
        r.stdout + r.stderr
    assert v["speedup_ci95"] == [0.5, 2.0]
    text = ksweep_cli("check", "s.toml", "--repeats", "4", "--budget", "0", cwd=repo)
    assert text.returncode == 0
    assert "give the check more time (--budget)" in text.stdout and "(--strict fails it)" in text.stdout, text.stdout
    assert "1 of 1 shapes slower beyond the tolerance but within noise, or too noisy to tell (inconclusive: " \
           "not failed; --strict fails them)" in text.stdout
    strict = ksweep_cli("check", "s.toml", "--repeats", "4", "--budget", "0", "--strict", cwd=repo)
    assert strict.returncode == 1 and "inconclusive: failed, --strict" in strict.stdout, strict.stdout
    # a budget goes on past the fewest rounds: more of them, still undecided
    code, v, r = check(repo, "--repeats", "2", "--budget", "0.5")
    assert v["verdict"] == "inconclusive" and v["rounds"] > 2 and v["seconds"] >= 0.5


def test_a_baseline_that_cannot_be_rebuilt_is_compared_by_its_stored_figures_and_the_line_says_why(tmp_path):
    repo = make_repo(tmp_path, "p.c", STEADY)
    (repo / "p.c").write_text(STEADY.replace("#define COST 10", "#define COST 11"))  # swept uncommitted
    assert ksweep_cli("run", "s.toml", "-q", cwd=repo).returncode == 0
    code, v, r = check(repo, "--repeats", "2")
    assert (code, v["verdict"], v["baseline_rebuilt"]) == (0, "ok", False), r.stdout + r.stderr
    assert "swept from uncommitted changes" in v["note"] and "commit the sources" in v["note"]
    db = repo / ".ksweep" / "s.db"
    with sqlite3.connect(str(db)) as c:  # a commit this clone does not have
        for table in ("results", "history"):
            c.execute(f"UPDATE {table} SET revision = '0123456789ab'")
    code, v, r = check(repo, "--repeats", "2")
    assert (code, v["verdict"], v["baseline_rebuilt"]) == (0, "ok", False), r.stdout + r.stderr
    assert v["note"].startswith("commit 0123456789ab is not in the repository at")
    text = ksweep_cli("check", "s.toml", "--repeats", "2", cwd=repo).stdout
    assert "\n  the baseline was not rebuilt: commit 0123456789ab is not in the repository" in text, text
    assert "2 rounds against its stored figures" in text
    # a baseline revision whose sources do not build without a file git does not keep (a
    # generated header): its stored figures
    (repo / ".gitignore").write_text(".ksweep/\ncost.h\n")
    (repo / "cost.h").write_text("#define COST 11\n")
    (repo / "p.c").write_text(STEADY.replace("#define COST 10", '#include "cost.h"'))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "v2: the cost from a generated header")
    assert ksweep_cli("run", "s.toml", "-q", "--rerun", "all", cwd=repo).returncode == 0  # measured on v2
    head = git(repo, "rev-parse", "HEAD").strip()[:12]
    (repo / "README").write_text("notes\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "readme")
    code, v, r = check(repo, "--repeats", "2")
    assert (code, v["verdict"], v["baseline_rebuilt"]) == (0, "ok", False), r.stdout + r.stderr
    assert v["note"].startswith(f"at {head}, it did not build (COMPILE_ERROR)") and "cost.h" in v["note"], v["note"]


def test_the_work_tree_of_the_baseline_goes_when_the_check_is_interrupted(tmp_path, monkeypatch):
    import tempfile

    from ksweep.sweep import rounds

    repo = make_repo(tmp_path, "p.c", STEADY)
    assert ksweep_cli("run", "s.toml", "-q", cwd=repo).returncode == 0
    commit(repo, "p.c", STEADY.replace("#define COST 10", "#define COST 15"), "v2")
    hook = repo / ".git" / "hooks" / "post-checkout"  # the repository's hooks do not run for the check
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    runs, real = [], rounds.Contender.run

    def run(self, round_):
        runs.append(self.spec.root)
        if len(runs) == 3:  # Ctrl-C in the second round
            raise KeyboardInterrupt
        return real(self, round_)

    monkeypatch.setattr(rounds.Contender, "run", run)
    r = ksweep_cli("check", "s.toml", cwd=repo)
    assert r.returncode == 130 and len(runs) == 3, r.stdout + r.stderr
    # it was rebuilt in a work tree of its own, under the temporary directory, and that is gone
    # (that tree itself: another test run at the same time has trees of its own there)
    trees = {Path(tempfile.gettempdir()) / Path(root).relative_to(tempfile.gettempdir()).parts[0]
             for root in runs if "ksweep-baseline-" in str(root)}
    assert trees and all(t.name.startswith("ksweep-baseline-") for t in trees), runs
    assert not any(t.exists() for t in trees), trees
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (tmp_path / "hook-ran").exists()


def test_both_runs_of_every_round_go_to_one_gpu(tmp_path, monkeypatch):
    """On a host of two GPUs the runs of a round went to whichever was free; a round's two
    runs now share the first GPU (of --gpus, else of the host's)."""
    from ksweep.app import check as check_module, wiring
    from ksweep.run.gpus import Gpu
    from ksweep.store.sqlite import Store

    two = [Gpu(0, "A", "GPU-aaaa", "550.54"), Gpu(1, "A", "GPU-bbbb", "550.54")]  # runs pinned, no GPU needed
    repo = make_repo(tmp_path, "p.c", STEADY)
    assert ksweep_cli("run", "s.toml", "-q", cwd=repo).returncode == 0
    monkeypatch.setattr(check_module, "detect_gpus", lambda: two)
    monkeypatch.setattr(wiring, "detect_gpus", lambda: two)
    commit(repo, "p.c", STEADY.replace("int main", "/* v2 */ int main"), "v2")
    for argv, uuid in (([], "GPU-aaaa"), (["--gpus", "1,0"], "GPU-bbbb")):
        started = time.time()
        code, v, r = check(repo, "--repeats", "4", "--update", *argv)
        assert (code, v["verdict"], v["baseline_rebuilt"], v["rounds"]) == (0, "ok", True, 4), r.stdout + r.stderr
        with Store(repo / ".ksweep" / "s.db", create=False) as store:
            recorded = [m for m in store.measurements() if m.finished >= started]  # the current build's
        assert len(recorded) == 4 and {m.gpu_uuid for m in recorded} == {uuid}, recorded
