"""Whose runs a GPU of this host has: what a dead owner left running goes before the next run.

Every process ksweep starts carries its ksweep process's session token (process.py), and
that process's reaper kills them all when it dies. The reaper is a process too: on a loaded
host it may run late, and meanwhile the GPU's next owner (a Dask worker that its nanny
restarted on the same GPU) would start a run beside a program of the dead one, which keeps
going and may even finish. So a process claims a GPU before each run it starts there: a file
per device under the temporary directory, taken under ``flock``, lists the claimants (pid,
start time, session token), and a claimant that is no longer alive has the processes of its
session killed, and gone, before the claim returns. A live claimant (another process sharing
the GPU) is left alone, and stays listed until it dies.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import tempfile
import time
from pathlib import Path

from .. import process
from ..reaper import SESSION_VAR, pids_with_env

GONE_WAIT = 10.0  # seconds a claim waits for a dead claimant's killed processes to be gone


def claims_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"ksweep-gpu-claims-{os.getuid()}"


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat's 22nd field): with
    the pid, it names one process, not a later one given the same pid; None when it is gone
    or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, started: str) -> bool:
    return process.pid_alive(pid) and start_time(pid) == started


def claim(device: str, *, folder: Path | None = None, wait: float = GONE_WAIT) -> int:
    """Claim GPU ``device`` (the id a run's CUDA_VISIBLE_DEVICES names) for this process's
    runs. Every other claimant that has died has what is left of its session (its orphaned
    programs, at any depth) killed first, and the claim waits, at most ``wait`` seconds, until
    it is gone. Returns how many processes it killed. Where there is no /proc, or the claims
    folder cannot be written, it claims nothing (the reaper alone is left)."""
    me = start_time(os.getpid())
    if me is None:
        return 0
    session = process.session_env()[SESSION_VAR]
    folder = folder or claims_dir()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(folder / re.sub(r"[^A-Za-z0-9._-]", "_", device), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return 0
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one claim at a time: a dead claimant is reaped once
        except OSError:  # a file system without flock
            return 0
        text = os.pread(fd, 1 << 16, 0).decode(errors="replace")
        live, dead = [], []
        for claimant in (line.split() for line in text.splitlines()):
            if len(claimant) != 3 or not claimant[0].isdigit() or claimant[2] == session:
                continue  # unreadable, or this process's own: written again below
            (live if _alive(int(claimant[0]), claimant[1]) else dead).append(claimant)
        killed = _kill_sessions([token for _, _, token in dead], wait)
        claimants = "".join(f"{' '.join(c)}\n" for c in [*live, [str(os.getpid()), me, session]])
        if claimants != text:
            os.ftruncate(fd, 0)
            os.pwrite(fd, claimants.encode(), 0)
        return killed
    finally:
        os.close(fd)  # releases the lock


def _kill_sessions(tokens: list[str], wait: float) -> int:
    """SIGKILL every process of these sessions, scan after scan until one finds none (a child
    forked meanwhile; a process killed and not yet dead: a GPU context takes a while to tear
    down) or ``wait`` seconds have passed; how many processes it killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + wait
    while tokens:
        found = [pid for token in tokens for pid in pids_with_env(SESSION_VAR, token)]
        if not found or time.monotonic() > deadline:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile
                continue
            killed.add(pid)
        time.sleep(0.02)
    return len(killed)
