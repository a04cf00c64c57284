"""A GPU's claim on this host (run/gpu_claim.py): before a run, what a dead claimant's
session left running is killed and gone; a live claimant's processes are left alone."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ksweep import process
from ksweep.reaper import SESSION_VAR
from ksweep.run.gpu_claim import claim, start_time

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="claims need /proc")


def session_process(token: str) -> subprocess.Popen:
    """A process of session ``token`` (as a dead worker's orphaned program), in a session of its
    own, once its environment shows (an exec shows none for a moment after Popen returns)."""
    env = {k: v for k, v in os.environ.items() if k != SESSION_VAR}
    proc = subprocess.Popen(["sleep", "120"], env={**env, SESSION_VAR: token}, start_new_session=True)
    deadline = time.monotonic() + 60
    while f"{SESSION_VAR}={token}".encode() not in Path(f"/proc/{proc.pid}/environ").read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    return proc


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def orphans():
    started = []
    yield lambda token: started.append(session_process(token)) or started[-1]
    for proc in started:
        proc.kill()
        proc.wait()


def me() -> str:
    return f"{os.getpid()} {start_time(os.getpid())} {process.session_env()[SESSION_VAR]}\n"


def test_a_dead_claimants_programs_are_killed_before_the_claim(tmp_path, orphans):
    orphan = orphans("dead-worker")
    (tmp_path / "0").write_text(f"{dead_pid()} 12345 dead-worker")
    assert claim("0", folder=tmp_path) == 1
    assert orphan.poll() is not None  # gone when the claim returns (reaped here: it is our child)
    assert (tmp_path / "0").read_text() == me()
    assert claim("0", folder=tmp_path) == 0  # our own claim: nothing to do


def test_a_pid_given_to_another_process_is_no_live_claimant(tmp_path, orphans):
    orphan = orphans("dead-worker")
    (tmp_path / "GPU-ab_1").write_text(f"{os.getpid()} 0 dead-worker")  # our pid, not our start: reused
    assert claim("GPU-ab/1", folder=tmp_path) == 1 and orphan.poll() is not None


def test_a_live_claimants_programs_are_left_alone(tmp_path, orphans):
    other = orphans("live-worker")  # a live process claimed the GPU: another sweep sharing it
    program = orphans("live-worker")
    (tmp_path / "1").write_text(f"{other.pid} {start_time(other.pid)} live-worker\n")
    assert claim("1", folder=tmp_path) == 0
    assert other.poll() is None and program.poll() is None
    assert (tmp_path / "1").read_text() == f"{other.pid} {start_time(other.pid)} live-worker\n" + me()


def test_a_dead_claimant_is_reaped_whoever_claimed_after_it(tmp_path, orphans):
    """A worker dies; a live process of another sweep claims the GPU before the dead one's
    successor does: the successor still finds the dead one, and kills its orphan."""
    other = orphans("live-worker")
    orphan = orphans("dead-worker")
    (tmp_path / "0").write_text(f"{dead_pid()} 12345 dead-worker\n{other.pid} {start_time(other.pid)} live-worker\n")
    assert claim("0", folder=tmp_path) == 1
    assert orphan.poll() is not None and other.poll() is None
    assert (tmp_path / "0").read_text() == f"{other.pid} {start_time(other.pid)} live-worker\n" + me()
