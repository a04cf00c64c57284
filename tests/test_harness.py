"""[build.harness]: a program built once per shape × variant, named {harness} in the build
and run commands. The gcc-built harness.c loads each config's piece.c library (or has it
linked in); the harness must be built once however many builds run at once, reach every
run (a process per run, a persistent host, Dask workers), and stop the sweep when it does
not build."""

import shutil
import subprocess
import sys

import pytest

from ksweep import SpecError, Status, load_spec
from ksweep.build.argv import TemplateError
from ksweep.errors import KsweepError
from ksweep.run.gpus import NO_GPU
from ksweep.store.sqlite import Store
from ksweep.sweep.jobs import JobFactory
from ksweep.sweep.local import workspace

from conftest import PROGRAMS
from test_multigpu import TWO_GPUS
from test_persistent import local_sweep

SPEC = """
[sweep]
objective = "ms"
[params]
X = [1, 2, 3, 4, 5, 6]
[shapes.small]
defines = { HARNESS_TAG = 7 }
[build]
sources = ["piece.c"]
command = ["gcc", "-shared", "-fPIC", "{defines}", "-o", "{binary}", "piece.c"]
[build.harness]
sources = ["harness.c"]
command = ["sh", "{spec_dir}/count.sh", "{spec_dir}/harness_builds.log", "gcc", "{defines}", "-o", "{harness}",
           "harness.c", "-ldl"]
[run]
command = ["{harness}", "{binary}"]
timeout = 20
[check]
expected = { checksum = 1.0 }
"""

# the configs link the harness, an object file (the harness's main, the config's piece_value)
LINKED = SPEC.replace(
    '''command = ["gcc", "-shared", "-fPIC", "{defines}", "-o", "{binary}", "piece.c"]''',
    '''command = ["gcc", "{defines}", "-o", "{binary}", "piece.c", "{harness}", "-ldl"]''',
).replace('''"gcc", "{defines}", "-o", "{harness}",''', '''"gcc", "-c", "-DLINKED", "{defines}", "-o", "{harness}",''').replace(
    '''command = ["{harness}", "{binary}"]''', '''command = ["{binary}"]''')


def harness_spec(folder, body: str = SPEC):
    for name in ("harness.c", "piece.c", "count.sh"):
        shutil.copy(PROGRAMS / name, folder / name)
    path = folder / "harness.toml"
    path.write_text(body)
    return load_spec(path)


def harness_builds(folder) -> int:
    log = folder / "harness_builds.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def values(results):
    return {r.params["X"]: (r.status, r.metrics.get("ms"), r.metrics.get("harness")) for r in results}


EXPECTED = {x: (Status.OK, 10.0 * x, 7.0) for x in range(1, 7)}


def test_built_once_for_every_config_and_resumed_by_its_content(tmp_path):
    spec = harness_spec(tmp_path)
    summary, results = local_sweep(spec, tmp_path / "r.db", gpus=TWO_GPUS)
    assert values(results) == EXPECTED  # the shape's defines reached the harness, each config its own value
    assert harness_builds(tmp_path) == 1  # six configs, two build threads, one harness build
    assert len({r.metrics["pid"] for r in results}) == 6  # a process per run
    assert summary.build_cpu_seconds > 0

    summary, _ = local_sweep(spec, tmp_path / "r.db")  # nothing changed: resumed, nothing built
    assert (summary.resumed, summary.evaluated, harness_builds(tmp_path)) == (6, 0, 1)

    (tmp_path / "harness.c").write_text((tmp_path / "harness.c").read_text() + "\n/* changed */\n")
    spec = load_spec(tmp_path / "harness.toml")
    summary, results = local_sweep(spec, tmp_path / "r.db")  # a new harness: every result is stale
    assert (summary.resumed, summary.evaluated, harness_builds(tmp_path)) == (0, 6, 2)
    assert values(results) == EXPECTED


def test_configs_may_link_the_harness(tmp_path):
    spec = harness_spec(tmp_path, LINKED)
    _, results = local_sweep(spec, tmp_path / "r.db", gpus=TWO_GPUS)
    assert values(results) == EXPECTED
    assert harness_builds(tmp_path) == 1


def test_a_persistent_host_loads_the_harness(tmp_path):
    """The run command starts with {harness}: the harness is the library the host loads (it
    gets -shared -fPIC -Dmain=ksweep_main), the configs' builds stay as they are."""
    body = SPEC.replace('command = ["sh", "{spec_dir}/count.sh", "{spec_dir}/harness_builds.log", "gcc",',
                        'command = ["gcc",').replace("timeout = 20", "timeout = 20\npersistent = true")
    spec = harness_spec(tmp_path, body)
    factory = JobFactory(spec, spec.shape("small"), spec.variant(None), spec.space("small"))
    job = factory.make({"X": 1})
    assert job.harness.build_argv[:5] == ("gcc", "-shared", "-fPIC", "-Dmain=ksweep_main", "-DHARNESS_TAG=7")
    assert job.build_argv[:3] == ("gcc", "-shared", "-fPIC") and "-Dmain=ksweep_main" not in job.build_argv
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert values(results) == EXPECTED
    assert len({r.metrics["pid"] for r in results}) == 1  # one host ran every config


def test_a_harness_that_does_not_build_stops_the_sweep(tmp_path):
    spec_path = harness_spec(tmp_path, SPEC.replace('"gcc", "{defines}"', '"gcc", "-DBROKEN", "{defines}"')).path
    db = tmp_path / "r.db"
    r = subprocess.run([sys.executable, "-m", "ksweep", "run", str(spec_path), "--db", str(db), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "the harness ([build.harness]) did not build" in r.stderr
    assert "broken on purpose" in r.stderr  # the compiler's own words
    with Store(db) as store:
        assert [x for x in store.results() if x.status is not Status.PRUNED] == []  # no config blamed for it


def test_local_sweep_raises_for_a_broken_harness(tmp_path):
    spec = harness_spec(tmp_path, SPEC.replace('"gcc", "{defines}"', '"gcc", "-DBROKEN", "{defines}"'))
    with pytest.raises(KsweepError, match="did not build"):
        local_sweep(spec, tmp_path / "r.db")


@pytest.mark.parametrize("harness, message", [
    ('command = ["gcc", "-o", "out", "harness.c"]', "must write the harness to {harness}"),
    ('commands = ["gcc"]', "unknown key"),
    ('sources = ["missing.c"]\ncommand = ["gcc", "-o", "{harness}", "harness.c"]', "does not exist"),
])
def test_spec_errors(tmp_path, harness, message):
    body = SPEC.split("[build.harness]")[0] + "[build.harness]\n" + harness + "\n[run]\n" + SPEC.split("[run]")[1]
    with pytest.raises(SpecError, match=message.replace("{", r"\{").replace("}", r"\}")):
        harness_spec(tmp_path, body)


def test_the_harness_sees_no_parameter(tmp_path):
    spec = harness_spec(tmp_path, SPEC.replace('"gcc", "{defines}", "-o", "{harness}"', '"gcc", "-DX={X}", "-o", "{harness}"'))
    with pytest.raises(TemplateError, match=r"build.harness.command: unknown placeholder \{X\}"):
        JobFactory(spec, spec.shape("small"), spec.variant(None), spec.space("small"))


def test_harness_placeholder_needs_a_harness(tmp_path):
    spec = harness_spec(tmp_path, SPEC.split("[build.harness]")[0] + "[run]\n" + SPEC.split("[run]")[1])
    factory = JobFactory(spec, spec.shape("small"), spec.variant(None), spec.space("small"))
    with pytest.raises(TemplateError, match=r"unknown placeholder \{harness\}"):
        factory.make({"X": 1})


def test_one_cache_entry_and_no_ptxas_judgement_for_the_harness(tmp_path):
    """count.sh prints a ptxas report with spills: a config's build would be SPILLS, the harness is not judged."""
    spec = harness_spec(tmp_path)
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert values(results) == EXPECTED
    entries = [p for p in (workspace(spec) / "cache").iterdir() if p.is_dir() and ".tmp" not in p.name]
    assert len(entries) == 7  # six configs and one harness
    assert sum("spill stores" in (p / "meta.json").read_text() for p in entries) == 1
