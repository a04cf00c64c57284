"""Program mode on a persistent host (run/host.py): one process per GPU loads each
config's build as a shared library and calls its main. The gcc-built test programs must
give the same statuses and messages as one process per run, while sharing one process."""

import os
import shutil
import stat

import pytest

from ksweep import SpecError, Status, load_spec
from ksweep.build.argv import library_flags
from ksweep.run.executor import LocalExecutor
from ksweep.run.gpus import NO_GPU
from ksweep.process import TAIL_BYTES, FifoCapture
from ksweep.run.persistent import PersistentHost
from ksweep.space.space import Space
from ksweep.sweep.jobs import JobFactory
from ksweep.sweep.local import make_builder, workspace

from conftest import PROGRAMS
from test_multigpu import TWO_GPUS, sweep_with
from test_pipeline import ALL_MODES, EXPECTED, sweep

HOSTED = """
[sweep]
objective = "ms"
[params]
X = [1, 2, 3, 4]
EXIT_CODE = [0]
[build]
sources = ["hosted.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "hosted.c"]
[run]
command = ["{binary}", "7"]
env = { HOSTED_VALUE = "5" }
timeout = 20
persistent = true
[check]
expected = { checksum = 1.0 }
"""


def hosted_spec(folder, body: str = HOSTED):
    shutil.copy(PROGRAMS / "hosted.c", folder / "hosted.c")
    path = folder / "hosted.toml"
    path.write_text(body)
    return load_spec(path)


def local_sweep(spec, db, gpus=(NO_GPU,)):
    executor = LocalExecutor(make_builder(spec), list(gpus), workspace(spec) / "scratch", build_jobs=2)
    try:
        return sweep_with(spec, executor, db)
    finally:
        executor.shutdown()


@pytest.mark.slow
def test_every_status_as_with_a_process_per_run(program_dir, every_status):
    # ALL_MODES, a process per run: swept once for the session, in a folder of its own (tests/conftest.py)
    _, per_process, _, folder = every_status
    _, hosted, _ = sweep(program_dir(ALL_MODES.replace("timeout = 3", "timeout = 3\npersistent = true"), "p.toml"),
                         confirm=None)
    assert {m: r.status for m, r in hosted.items()} == EXPECTED

    def message(r, where) -> str:  # the compiler's message names the source by its path
        return r.message.replace(str(where), "<folder>")

    for mode, r in hosted.items():
        assert (message(r, program_dir.dir), dict(r.metrics)) == \
            (message(per_process[mode], folder), dict(per_process[mode].metrics)), mode
    assert hosted[0].cache_key != per_process[0].cache_key  # a library, not the program


def test_configs_share_one_process_with_fresh_statics_args_env_and_folders(tmp_path):
    spec = hosted_spec(tmp_path)
    summary, results = local_sweep(spec, tmp_path / "r.db")
    assert [r.status for r in results] == [Status.OK] * 4
    metrics = [r.metrics for r in results]
    assert len({m["pid"] for m in metrics}) == 1  # one host ran them all
    assert all((m["calls"], m["argc"], m["arg"], m["env"], m["in_workdir"], m["stdin"]) == (1, 2, 7, 5, 1, 0)
               for m in metrics)


def test_a_program_that_exits_ends_its_host_and_the_next_gets_a_new_one(tmp_path):
    spec = hosted_spec(tmp_path, HOSTED.replace("EXIT_CODE = [0]", "EXIT_CODE = [0, 3]"))
    space = Space.from_spec(spec, "default")
    factory = JobFactory(spec, spec.shape("default"), spec.variant(None), space)
    builder = make_builder(spec)
    host = PersistentHost()
    try:
        def run(x, code):
            job = factory.make({"X": x, "EXIT_CODE": code})
            return host.run(job, builder.build(job), None, tmp_path / "scratch")

        first, failed, second, third = run(1, 0), run(1, 3), run(2, 0), run(3, 0)
    finally:
        host.close()
    assert [o.status for o in (first, failed, second, third)] == [Status.OK, Status.RUN_ERROR, Status.OK, Status.OK]
    assert "exit code 3" in failed.message and "giving up with exit(3)" in failed.message
    assert first.metrics["pid"] != second.metrics["pid"] == third.metrics["pid"]


def test_one_host_per_gpu(tmp_path):
    spec = hosted_spec(tmp_path, HOSTED.replace("X = [1, 2, 3, 4]", "X = [1, 2, 3, 4, 5, 6]"))
    _, results = local_sweep(spec, tmp_path / "r.db", TWO_GPUS)
    assert [r.status for r in results] == [Status.OK] * 6
    pids = {}
    for r in results:
        pids.setdefault(r.gpu_index, set()).add(r.metrics["pid"])
    assert set(pids) == {0, 1} and all(len(p) == 1 for p in pids.values()) and pids[0] != pids[1]


def test_library_flags():
    assert library_flags("nvcc") == ("-shared", "-Xcompiler", "-fPIC", "-Dmain=ksweep_main")
    for compiler in ("gcc", "/usr/bin/g++", "gcc-12", "clang++", "cc", "clang-17"):
        assert library_flags(compiler) == ("-shared", "-fPIC", "-Dmain=ksweep_main"), compiler
    assert library_flags("make") is None and library_flags("bash") is None
    assert library_flags("nvcc", shared=False) == ("-Xcompiler", "-fPIC", "-Dmain=ksweep_main")


def test_a_hang_that_floods_its_output_keeps_only_head_and_tail(program_dir, monkeypatch):
    """A program printing without end: a HANG, as with a process per run, and its output is
    capped as it arrives (it goes through a pipe, not into a file that would fill the disk)."""
    written = []
    real = FifoCapture.run

    def spy(self):
        written.append(os.stat(self.path).st_mode)
        real(self)

    monkeypatch.setattr(FifoCapture, "run", spy)
    body = ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [11]").replace(
        "timeout = 3", "timeout = 2\npersistent = true")
    _, hosted, _ = sweep(program_dir(body))
    assert hosted[11].status is Status.HANG and "2 s" in hosted[11].message
    assert written and all(stat.S_ISFIFO(mode) for mode in written)


def test_fifo_capture_caps_what_it_reads_and_ends_without_a_writer(tmp_path):
    path = tmp_path / "out"
    os.mkfifo(path)
    capture = FifoCapture(path, limit=1000)
    capture.start()
    with open(path, "wb") as f:
        for _ in range(100):
            f.write(b"z" * 10_000 + b"\n")
        f.write(b"the end\n")
    capture.finish()
    text = capture.text()
    assert capture.truncated and text.startswith("z" * 1000) and text.endswith("the end\n")
    assert len(text) < 1000 + TAIL_BYTES + 100
    idle = tmp_path / "idle"
    os.mkfifo(idle)
    lonely = FifoCapture(idle, limit=1000)
    lonely.start()
    lonely.finish()  # nobody ever opens it for writing: the thread must still end
    assert not lonely.is_alive() and lonely.text() == ""


@pytest.mark.parametrize("change, key", [
    (('command = ["gcc"', 'command = ["make"'), "build.command"),
    (('command = ["{binary}", "7"]', 'command = ["python3", "{binary}"]'), "run.command"),
])
def test_what_a_persistent_host_cannot_run(tmp_path, change, key):
    spec = hosted_spec(tmp_path, HOSTED.replace(*change))
    with pytest.raises(SpecError, match=key.replace(".", r"\.")):
        local_sweep(spec, tmp_path / "r.db")


def test_run_persistent_must_be_a_boolean(tmp_path):
    with pytest.raises(SpecError, match="run.persistent"):
        hosted_spec(tmp_path, HOSTED.replace("persistent = true", 'persistent = "yes"'))


def test_kernel_mode_specs_refuse_it():
    import tomllib
    from dataclasses import replace
    from pathlib import Path

    from ksweep import spec_from_dict
    from ksweep.spec.checks import check_modes

    spec = load_spec(Path(__file__).parent.parent / "examples" / "kernel_mode" / "matmul.toml")
    data = tomllib.loads(spec.path.read_text())
    with pytest.raises(SpecError, match="run.persistent: .*already runs every config"):
        spec_from_dict({**data, "run": {"persistent": True}}, path=spec.path)
    # ksweep run --persistent sets it after loading, and checks again
    with pytest.raises(SpecError, match="run.persistent: .*already runs every config"):
        check_modes(replace(spec, run=replace(spec.run, persistent=True)))


def gone(pid: int, wait: float = 10.0) -> bool:
    """True once ``pid`` has ended (no process, or a zombie waiting to be reaped)."""
    import time

    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("code", [0, 3])
def test_what_a_program_leaves_running_dies_with_its_run(tmp_path, code):
    """As in a process group: a forked child does not outlive the run, and one holding the
    host's answer pipe does not turn an exit() into a hang."""
    pid_file = tmp_path / "child.pid"
    spec = hosted_spec(tmp_path, HOSTED.replace("EXIT_CODE = [0]", f"EXIT_CODE = [{code}]\nLEFTOVER = [1]")
                       .replace('env = { HOSTED_VALUE = "5" }', f'env = {{ HOSTED_VALUE = "5", CHILD_PID_FILE = "{pid_file}" }}'))
    factory = JobFactory(spec, spec.shape("default"), spec.variant(None), Space.from_spec(spec, "default"))
    builder = make_builder(spec)
    host = PersistentHost()
    try:
        job = factory.make({"X": 1, "EXIT_CODE": code, "LEFTOVER": 1})
        outcome = host.run(job, builder.build(job), None, tmp_path / "scratch")
    finally:
        host.close()
    assert outcome.status is (Status.OK if code == 0 else Status.RUN_ERROR), outcome.message
    if code:
        assert "exit code 3" in outcome.message
    assert gone(int(pid_file.read_text()))


def test_output_of_atexit_handlers_is_kept(tmp_path):
    spec = hosted_spec(tmp_path, HOSTED.replace("EXIT_CODE = [0]", "EXIT_CODE = [0]\nATEXIT = [1]"))
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert [(r.status, r.metrics.get("late")) for r in results] == [(Status.OK, 1.0)] * 4


def test_cxx_streams_untied_from_stdio_are_flushed_after_each_run(tmp_path):
    """sync_with_stdio(false): std::cout buffers on its own; a process flushes it at exit, and
    so must the host after each run (else the result shows up in a later run, or never)."""
    shutil.copy(PROGRAMS / "unsynced.cpp", tmp_path / "unsynced.cpp")
    path = tmp_path / "unsynced.toml"
    path.write_text(HOSTED.replace('"hosted.c"', '"unsynced.cpp"').replace('"gcc"', '"g++"').replace(
        "EXIT_CODE = [0]\n", "").replace('command = ["{binary}", "7"]', 'command = ["{binary}"]'))
    spec = load_spec(path)
    _, results = local_sweep(spec, tmp_path / "r.db")
    assert {r.params["X"]: (r.status, r.metrics.get("ms")) for r in results} == {
        x: (Status.OK, float(x)) for x in (1, 2, 3, 4)}  # each run its own output, none a neighbour's
