"""Nothing ksweep starts outlives it, at any depth, and starting children is safe from
threads (process.py, reaper.py). The programs that try to escape are tests/programs/escape.c.

No assertion depends on timing: a process's end is waited for with a generous deadline,
and the random delays before a kill -9 only vary the moment it lands."""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from ksweep import process
from ksweep.process import run_process

from conftest import PROGRAMS

DEADLINE = 20.0  # seconds: how long a process may take to be found dead on a loaded machine


@pytest.fixture(scope="module")
def escape(tmp_path_factory):
    folder = tmp_path_factory.mktemp("escape")
    subprocess.run(["gcc", "-O0", "-o", str(folder / "escape"), str(PROGRAMS / "escape.c")], check=True)
    return str(folder / "escape")


def wait_for(condition, seconds: float = DEADLINE) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def dead(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def session_cmdlines(token: str) -> list[str]:
    out = []
    for pid in process.pids_with_env(process.SESSION_VAR, token):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                out.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass
    return out


# -- finding processes by their environment ---------------------------------------------


def test_environ_entries_match_whole():
    env = b"A=1\0KSWEEP_RUN=abc\0XKSWEEP_SESSION=s\0"
    assert process.environ_has(env, "KSWEEP_RUN", "abc")
    assert process.environ_has(env, "A", "1")
    assert not process.environ_has(env, "KSWEEP_RUN", "ab")  # a prefix of the value
    assert not process.environ_has(env, "KSWEEP_SESSION", "s")  # the end of another name
    assert not process.environ_has(b"", "A", "1")


def test_pids_with_env_finds_a_process_by_its_environment(escape, tmp_path):
    token = process.new_token()
    child = subprocess.Popen([escape, "sleep", "600"], env={"T": token})
    try:
        assert wait_for(lambda: process.pids_with_env("T", token) == [child.pid])
        assert process.kill_tree_by_token("T", token) == 1
        child.wait()
        assert process.pids_with_env("T", token) == []
    finally:
        child.kill()
        child.wait()


def test_the_reaper_kills_the_session_at_the_end_of_its_input(escape):
    token = process.new_token()
    # a daemon of the session, outside any group or session of ours
    starter = subprocess.run([escape, "daemon", "600", "quiet"], capture_output=True, text=True,
                             env={process.SESSION_VAR: token}, check=True)
    daemon = int(re.search(r"daemon (\d+)", starter.stdout).group(1))
    reaper = subprocess.Popen([sys.executable, "-I", "-S", process.REAPER, token], stdin=subprocess.PIPE)
    try:
        assert not dead(daemon)  # the reaper waits for the end of its input
        reaper.stdin.close()
        assert reaper.wait(timeout=60) == 0
        assert wait_for(lambda: dead(daemon))
    finally:
        reaper.kill()
        reaper.wait()
        if not dead(daemon):
            os.kill(daemon, signal.SIGKILL)


# -- fork safety ------------------------------------------------------------------------

_at_fork_calls: list[str] = []
_recording = threading.Event()
# Python's at-fork hooks run where fork() runs them (a preexec_fn makes subprocess fork);
# vfork and posix_spawn run none, like libc's pthread_atfork handlers (OpenBLAS's among them)
os.register_at_fork(before=lambda: _recording.is_set() and _at_fork_calls.append(threading.current_thread().name))

HELLO_WORKER = ("import json, sys; print(json.dumps({'ok': True, 'hello': 'test'}), flush=True); "
                "[print(json.dumps({'ok': True}), flush=True) for line in sys.stdin]")


def test_starting_children_from_a_thread_runs_no_at_fork_handler(tmp_path):
    from ksweep.run.handle import WorkerHandle

    results = []

    def work():
        results.append(run_process(["true"], cwd=tmp_path, timeout=60))
        results.append(run_process(["true"], cwd=tmp_path, timeout=60, nice=5))  # a build's start
        worker = WorkerHandle(argv=[sys.executable, "-c", HELLO_WORKER])
        with worker.lock:
            results.append(worker.start())
        worker.kill()

    _at_fork_calls.clear()
    _recording.set()
    try:
        thread = threading.Thread(target=work, name="ksweep-build-test")
        thread.start()
        thread.join()
    finally:
        _recording.clear()
    assert [r.returncode for r in results[:2]] == [0, 0] and results[2] is None
    assert _at_fork_calls == []


def test_no_child_is_started_with_a_preexec_fn(monkeypatch, tmp_path):
    from ksweep.run.handle import WorkerHandle

    seen = []
    real = subprocess.Popen

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    assert run_process(["true"], cwd=tmp_path, timeout=60, nice=5).returncode == 0
    worker = WorkerHandle(argv=[sys.executable, "-c", HELLO_WORKER])
    with worker.lock:
        assert worker.start() is None
    worker.kill()
    assert len(seen) >= 2
    assert all(kw.get("preexec_fn") is None and kw.get("start_new_session") for kw in seen)


def test_nice_is_set_from_the_parent(tmp_path):
    expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)
    # the shell waits until its niceness is set (it may be asked before the parent set it)
    script = f'until [ "$(cut -d" " -f19 /proc/$$/stat)" = {expected} ]; do :; done; echo niced'
    out = run_process(["sh", "-c", script], cwd=tmp_path, timeout=60, nice=5)
    assert (out.returncode, out.stdout.strip()) == (0, "niced")


# -- a run leaves nothing behind, and waits for nothing that escaped --------------------


def test_a_daemon_holding_the_output_is_killed_and_not_waited_for(escape, tmp_path):
    out = run_process([escape, "daemon", "60"], cwd=tmp_path, timeout=120)
    assert (out.returncode, out.timed_out) == (0, False)
    assert out.stdout.endswith("parent done\n")
    daemon = int(re.search(r"daemon (\d+)", out.stdout).group(1))
    assert wait_for(lambda: dead(daemon))
    assert out.seconds < 30  # the daemon kept the pipe open for 60 s


def test_a_daemon_that_closed_its_output_dies_with_its_run(escape, tmp_path):
    """It lived until the end of the sweep, loading the machine under the later configs'
    timings (70 ms became 225 ms)."""
    out = run_process([escape, "daemon", "600", "quiet"], cwd=tmp_path, timeout=120, leftovers=True)
    assert out.returncode == 0
    daemon = int(re.search(r"daemon (\d+)", out.stdout).group(1))
    assert wait_for(lambda: dead(daemon))  # no reap_session: the run's own end killed it


def test_a_server_a_build_left_is_not_killed_with_it(escape, tmp_path):
    """A compiler may start a server for the next builds (sccache, a bazel server): killing
    what a build left made the builds beside it fail, and their failure was cached."""
    out = run_process([escape, "daemon", "600", "quiet"], cwd=tmp_path, timeout=120)  # a build's call
    daemon = int(re.search(r"daemon (\d+)", out.stdout).group(1))
    try:
        assert not wait_for(lambda: dead(daemon), 2.0)  # a killed one is gone in far less
    finally:
        process.reap_session()  # what the end of the sweep does
    assert wait_for(lambda: dead(daemon))


def test_a_timeout_kills_what_left_the_group(escape, tmp_path):
    out = run_process(["sh", "-c", f"{escape} daemon 600; exec {escape} forever"], cwd=tmp_path, timeout=1)
    assert out.timed_out
    daemon = int(re.search(r"daemon (\d+)", out.stdout).group(1))
    assert wait_for(lambda: dead(daemon))


def test_output_held_by_a_process_without_the_token_is_read_then_left(escape, tmp_path):
    """The daemon dropped its environment: no scan finds it. Its run still returns, with all
    the output the command wrote."""
    pid_file = tmp_path / "daemon.pid"
    out = run_process([escape, "clearenv", "60", "200000"], cwd=tmp_path, timeout=120,
                      env={"ESCAPE_PID_FILE": str(pid_file)})
    daemon = int(pid_file.read_text())
    try:
        assert out.returncode == 0
        assert out.stdout.endswith("parent done\n")
        assert out.stdout.count("x") == 200000 - 200000 // 64
        assert out.seconds < 30
    finally:
        if not dead(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_a_worker_carries_the_session_and_its_kill_kills_what_it_started(escape):
    from ksweep.run.handle import WorkerHandle

    code = ("import json, os, re, subprocess, sys\n"
            "print(json.dumps({'ok': True, 'hello': 'test'}), flush=True)\n"
            "for line in sys.stdin:\n"
            f"    out = subprocess.run([{escape!r}, 'daemon', '600', 'quiet'], capture_output=True, text=True).stdout\n"
            "    print(json.dumps({'ok': True, 'daemon': int(re.search(r'daemon (\\d+)', out).group(1))}), flush=True)\n")
    worker = WorkerHandle(argv=[sys.executable, "-c", code])
    answer = worker.request({"op": "spawn"}, 60)
    daemon = answer.data["daemon"]
    try:
        assert worker.proc.pid in process.pids_with_env(process.SESSION_VAR, process.SESSION)
        assert daemon in process.pids_with_env(process.SESSION_VAR, process.SESSION)
        assert process.reap_session() >= 1  # the daemon; the worker is spared
        assert worker.alive()
        assert wait_for(lambda: dead(daemon))
        daemon = worker.request({"op": "spawn"}, 60).data["daemon"]
        worker.kill()
        assert wait_for(lambda: dead(daemon))
    finally:
        worker.kill()
        if not dead(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_a_persistent_host_kills_the_daemons_of_a_run(escape, tmp_path):
    from ksweep import load_spec
    from ksweep.run.persistent import PersistentHost
    from ksweep.space.space import Space
    from ksweep.sweep.jobs import JobFactory
    from ksweep.sweep.local import make_builder

    shutil.copy(PROGRAMS / "escape.c", tmp_path / "escape.c")
    pid_file = tmp_path / "daemon.pid"
    (tmp_path / "e.toml").write_text(f"""
[params]
X = [1]
[build]
sources = ["escape.c"]
command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "escape.c"]
[run]
command = ["{{binary}}", "daemon", "60"]
env = {{ ESCAPE_PID_FILE = "{pid_file}" }}
timeout = 120
persistent = true
""")
    spec = load_spec(tmp_path / "e.toml")
    job = JobFactory(spec, spec.shape("default"), spec.variant(None), Space.from_spec(spec, "default")).make({"X": 1})
    host = PersistentHost()
    try:
        outcome = host.run(job, make_builder(spec).build(job), None, tmp_path / "scratch")
        daemon = int(pid_file.read_text())
        assert wait_for(lambda: dead(daemon)), outcome  # it would have lived 60 s
        assert host.handle.alive()  # the host itself goes on
    finally:
        host.close()


# -- kill -9 of ksweep ------------------------------------------------------------------

DRIVER = """
import sys, threading
from ksweep import process
print(process.SESSION, flush=True)
run = threading.Thread(target=process.run_process, args=(sys.argv[1:],), kwargs={"cwd": ".", "timeout": 600})
run.start()
run.join()
"""

WRAPPERS = {
    "sh": lambda e: ["sh", "-c", f"{e} forever & wait"],
    "python": lambda e: [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])", e, "forever"],
    "daemon": lambda e: ["sh", "-c", f"{e} daemon 600; exec {e} forever"],
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_kill_9_of_ksweep_leaves_nothing_running(escape, tmp_path, wrapper):
    rng = random.Random(wrapper)
    for attempt in range(6):
        driver = subprocess.Popen([sys.executable, "-c", DRIVER, *WRAPPERS[wrapper](escape)],
                                  stdout=subprocess.PIPE, text=True, cwd=tmp_path)
        try:
            token = driver.stdout.readline().strip()
            assert token
            if attempt % 3:  # most kills land once the real program runs; the others anywhere
                assert wait_for(lambda: any(c.startswith(f"{escape} forever") for c in session_cmdlines(token)))
            time.sleep(rng.uniform(0, 0.2))
        finally:
            driver.kill()
            driver.wait()
        assert wait_for(lambda: not process.pids_with_env(process.SESSION_VAR, token)), session_cmdlines(token)


FORKING_DRIVER = """
import json, os, sys
from ksweep import process
worker, _ = process.start_worker([sys.argv[1], "sleep", "600"])
parent = process.SESSION
child = os.fork()  # as multiprocessing's fork start method does
if child == 0:
    process.run_process(["true"], cwd=".", timeout=60)
    print(json.dumps({"session": process.SESSION, "reaper": process.ensure_reaper()}), flush=True)
    os._exit(0)
os.waitpid(child, 0)
print(json.dumps({"session": parent, "worker": worker.pid}), flush=True)
sys.stdin.read()
"""


def test_a_forked_child_has_a_session_of_its_own(escape, tmp_path):
    """Its reaper, ending with it, must not kill the parent's processes."""
    driver = subprocess.Popen([sys.executable, "-c", FORKING_DRIVER, escape], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        child = json.loads(driver.stdout.readline())
        parent = json.loads(driver.stdout.readline())
        assert child["session"] != parent["session"]
        assert wait_for(lambda: dead(child["reaper"]))  # the child is gone, its reaper has done its work
        assert not dead(parent["worker"])
        assert process.pids_with_env(process.SESSION_VAR, parent["session"]) == [parent["worker"]]
        driver.stdin.close()
        assert driver.wait(timeout=60) == 0
        assert wait_for(lambda: dead(parent["worker"]))  # the parent's reaper, at its exit
    finally:
        driver.kill()
        driver.wait()
