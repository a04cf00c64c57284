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
from ksweep.space.space import Space
from ksweep.store.sqlite import Store
from ksweep.sweep.jobs import JobFactory
from ksweep.sweep.local import workspace

from conftest import PROGRAMS

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
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
    for name in ("harness.c", "piece.c", "count.sh", "sticky.cpp"):
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


@pytest.mark.slow
def test_built_once_for_every_config_and_resumed_by_its_content(tmp_path):
    spec = harness_spec(tmp_path)
    summary, results = local_sweep(spec, tmp_path / "r.db", gpus=TWO_GPUS)
    assert values(results) == EXPECTED  # the shape's defines reached the harness, each config its own value
    assert harness_builds(tmp_path) == 1  # six configs, two build threads, one harness build
    assert len({r.metrics["pid"] for r in results}) == 6  # a process per run
    assert summary.build_cpu_seconds > 0

    summary, _ = local_sweep(spec, tmp_path / "r.db", gpus=TWO_GPUS)  # nothing changed: resumed, nothing built
    assert (summary.resumed, summary.evaluated, harness_builds(tmp_path)) == (6, 0, 1)

    (tmp_path / "harness.c").write_text((tmp_path / "harness.c").read_text() + "\n/* changed */\n")
    spec = load_spec(tmp_path / "harness.toml")
    summary, results = local_sweep(spec, tmp_path / "r.db", gpus=TWO_GPUS)  # a new harness: every result is stale
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
    factory = JobFactory(spec, spec.shape("small"), spec.variant(None), Space.from_spec(spec, "small"))
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
    """Refused when the spec is loaded (plan sees it too), not when the harness is built."""
    with pytest.raises(TemplateError, match=r"build.harness.command: '\{X\}' is not filled here"):
        harness_spec(tmp_path, SPEC.replace('"gcc", "{defines}", "-o", "{harness}"', '"gcc", "-DX={X}", "-o", "{harness}"'))


def test_harness_placeholder_needs_a_harness(tmp_path):
    with pytest.raises(TemplateError, match=r"run.command: '\{harness\}' names no harness"):
        harness_spec(tmp_path, SPEC.split("[build.harness]")[0] + "[run]\n" + SPEC.split("[run]")[1])


def test_one_cache_entry_and_no_ptxas_judgement_for_the_harness(tmp_path):
    """count.sh prints a ptxas report with spills: a config's build would be SPILLS, the harness is not judged."""
    spec = harness_spec(tmp_path)
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert values(results) == EXPECTED
    entries = [p for p in (workspace(spec) / "cache").iterdir() if p.is_dir() and ".tmp" not in p.name]
    assert len(entries) == 7  # six configs and one harness
    assert sum("spill stores" in (p / "meta.json").read_text() for p in entries) == 1


def cache_entries(spec) -> int:
    return len([p for p in (workspace(spec) / "cache").iterdir() if p.is_dir() and ".tmp" not in p.name])


def test_a_changed_harness_rebuilds_no_config_that_does_not_link_it(tmp_path):
    spec = harness_spec(tmp_path)
    local_sweep(spec, tmp_path / "r.db")
    (tmp_path / "harness.c").write_text((tmp_path / "harness.c").read_text() + "\n/* changed */\n")
    spec = load_spec(tmp_path / "harness.toml")
    summary, results = local_sweep(spec, tmp_path / "r.db")
    assert summary.evaluated == 6 and values(results) == EXPECTED  # every result is stale...
    assert cache_entries(spec) == 8  # ...but only the harness was built again (6 configs + 2 harnesses)


def test_a_persistent_host_runs_configs_that_link_the_harness(tmp_path):
    """The configs' libraries link the harness object: it is compiled position independent
    with its main renamed, the configs' builds become libraries."""
    body = LINKED.replace('command = ["sh", "{spec_dir}/count.sh", "{spec_dir}/harness_builds.log", "gcc",',
                          'command = ["gcc",').replace("timeout = 20", "timeout = 20\npersistent = true")
    spec = harness_spec(tmp_path, body)
    job = JobFactory(spec, spec.shape("small"), spec.variant(None), Space.from_spec(spec, "small")).make({"X": 1})
    assert job.harness.build_argv[:4] == ("gcc", "-fPIC", "-Dmain=ksweep_main", "-c")
    assert job.build_argv[:4] == ("gcc", "-shared", "-fPIC", "-Dmain=ksweep_main")
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert values(results) == EXPECTED
    assert len({r.metrics["pid"] for r in results}) == 1


def test_a_broken_harness_that_configs_link_stops_the_sweep(tmp_path):
    spec = harness_spec(tmp_path, LINKED.replace('"-DLINKED",', '"-DLINKED", "-DBROKEN",'))
    with pytest.raises(KsweepError, match="the harness .* did not build"):
        local_sweep(spec, tmp_path / "r.db")
    with Store(tmp_path / "r.db") as store:
        assert [x for x in store.results() if x.status is not Status.PRUNED] == []


def test_a_failed_harness_is_built_again_next_time(tmp_path):
    spec = harness_spec(tmp_path, SPEC.replace('"gcc", "{defines}"', '"gcc", "-DBROKEN", "{defines}"'))
    for _ in range(2):
        with pytest.raises(KsweepError, match="did not build"):
            local_sweep(spec, tmp_path / "r.db")
    assert harness_builds(tmp_path) == 2  # a failure is not cached: the environment may have been fixed


@nvcc
def test_nvcc_links_a_harness_object_named_by_output(tmp_path):
    """nvcc takes an input by its suffix: the harness is written as harness.o."""
    body = LINKED.replace('"gcc"', '"nvcc"').replace('"-ldl"', '"-Xlinker", "-ldl"').replace(
        '[build.harness]\n', '[build.harness]\noutput = "harness.o"\n').replace('X = [1, 2, 3, 4, 5, 6]', 'X = [2, 5]')
    spec = harness_spec(tmp_path, body)
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert values(results) == {2: (Status.OK, 20.0, 7.0), 5: (Status.OK, 50.0, 7.0)}, [r.message for r in results]


STICKY = """
[sweep]
objective = "ms"
[params]
X = [1, 2, 3, 4]
[build]
sources = ["sticky.cpp"]
command = ["g++", "{defines}", "-o", "{binary}", "sticky.cpp"]
[run]
timeout = 20
persistent = true
[check]
expected = { checksum = 1.0 }
"""


def test_a_library_dlclose_cannot_unload_gets_a_new_host_next(tmp_path):
    """g++ pins a library with an inline static (a unique symbol): without a new host the
    next config would share that static (calls 2, 3, ...)."""
    spec = harness_spec(tmp_path, STICKY)
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert [(r.status, r.metrics["calls"]) for r in results] == [(Status.OK, 1.0)] * 4


def test_harness_sources_default_to_the_variant_s_and_unused_harnesses_are_not_built(tmp_path):
    body = SPEC.replace("[run]", """[variants.own]
sources = ["harness.c", "piece.c"]
[variants.alone]
build_command = ["gcc", "-DLINKED", "{defines}", "-o", "{binary}", "harness.c", "piece.c", "-ldl"]
run_command = ["{binary}"]
[run]""").replace('[build.harness]\nsources = ["harness.c"]\n', "[build.harness]\n")
    spec = harness_spec(tmp_path, body)
    space = Space.from_spec(spec, "small")
    own = JobFactory(spec, spec.shape("small"), spec.variant("own"), space)
    assert [p.name for p in own.harness.sources] == ["harness.c", "piece.c"]
    assert JobFactory(spec, spec.shape("small"), spec.variant("alone"), space).harness is None


def test_output_must_be_a_file_name(tmp_path):
    body = SPEC.replace("[build.harness]\n", '[build.harness]\noutput = "../x"\n')
    with pytest.raises(SpecError, match="build.harness.output"):
        harness_spec(tmp_path, body)


def test_the_harness_may_have_a_timeout_of_its_own(tmp_path):
    spec = harness_spec(tmp_path, SPEC.replace("[build.harness]\n", "[build.harness]\ntimeout = 7\n")
                        .replace("[build]\n", "[build]\ntimeout = 100\n"))
    job = JobFactory(spec, spec.shape("small"), spec.variant(None), Space.from_spec(spec, "small")).make({"X": 1})
    assert (job.harness.build_timeout, job.build_timeout) == (7, 100)
    with pytest.raises(SpecError, match="build.harness.timeout"):
        harness_spec(tmp_path, SPEC.replace("[build.harness]\n", "[build.harness]\ntimeout = -1\n"))


def test_a_harness_no_command_names_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match=r"build.harness: no command names \{harness\}"):
        harness_spec(tmp_path, SPEC.replace('command = ["{harness}", "{binary}"]', 'command = ["{binary}"]'))


def test_kernel_mode_refuses_a_harness(tmp_path):
    from conftest import vadd_kernel_spec

    path = vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 1024)
    path.write_text(path.read_text() + '[build.harness]\ncommand = ["nvcc", "-o", "{harness}", "h.cu"]\n')
    with pytest.raises(SpecError, match="build.harness: .*drop \\[build.harness\\]"):
        load_spec(path)


# X is not passed to the compiler (define = false), only to the run: every config has the same
# build, which must be compiled once even when two build threads ask for it at the same time
SHARED_BUILD = SPEC.replace("X = [1, 2, 3, 4, 5, 6]", "X = { values = [1, 2, 3, 4, 5, 6], define = false }").replace(
    '''command = ["gcc", "-shared", "-fPIC", "{defines}", "-o", "{binary}", "piece.c"]''',
    '''command = ["sh", "{spec_dir}/wait_for_two.sh", "{spec_dir}/piece_builds.log", "gcc", "-shared", "-fPIC",
                "{defines}", "-o", "{binary}", "piece.c"]''').replace(
    '''command = ["{harness}", "{binary}"]''', '''command = ["{harness}", "{binary}", "{X}"]''')


@pytest.mark.slow
def test_configs_sharing_a_build_compile_it_once(tmp_path):
    shutil.copy(PROGRAMS / "wait_for_two.sh", tmp_path / "wait_for_two.sh")
    spec = harness_spec(tmp_path, SHARED_BUILD)
    summary, results = local_sweep(spec, tmp_path / "r.db", gpus=TWO_GPUS)
    assert [r.status for r in results] == [Status.OK] * 6
    assert len((tmp_path / "piece_builds.log").read_text().splitlines()) == 1
    assert len({r.cache_key for r in results}) == 6  # each config's result is its own
