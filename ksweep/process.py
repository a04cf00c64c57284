"""Child processes that cannot take the sweep down with them.

Every command runs in its own session (so its own process group), with stdin closed,
output captured up to a cap (the head and the tail are kept: a program printing
gigabytes cannot exhaust memory, and a result line printed last is still seen), and a
timeout after which the *whole group* is killed. On Linux the child also gets
PR_SET_PDEATHSIG, so it dies with ksweep even on ``kill -9``. Every live group is
registered so that Ctrl-C can kill them all at once (``kill_all``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

TAIL_BYTES = 64 * 1024

_live: set[int] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None
    timed_out: bool
    stdout: str
    stderr: str
    truncated: bool
    seconds: float
    error: str | None = None  # the command could not be started at all
    cpu_seconds: float = 0.0  # user + system time of the command and the children it waited for
    stopped: bool = False  # not started: kill_all() (Ctrl-C) came first

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"


def _load_prctl():
    """libc's prctl, looked up once here: a child between fork and exec must not dlopen
    (another thread of ours may have held the loader's lock at the fork)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
PR_SET_PDEATHSIG = 1


def _die_with_parent(nice: int = 0) -> None:  # runs in the child between fork and exec
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL))


class _Capture(threading.Thread):
    """Drain one pipe, keeping the first ``limit`` bytes and the last TAIL_BYTES."""

    def __init__(self, pipe, limit: int):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def run(self) -> None:
        while True:
            chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
            if not chunk:
                break
            room = self.limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > TAIL_BYTES:
                    cut = len(self.tail) - TAIL_BYTES
                    self.dropped += cut
                    del self.tail[:cut]
        self.pipe.close()

    def text(self) -> str:
        data = bytes(self.head)
        if self.dropped:
            data += f"\n[... {self.dropped} bytes dropped ...]\n".encode()
        data += bytes(self.tail)
        return data.decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        return bool(self.tail)


def run_process(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    output_limit: int = 4 * 1024 * 1024,
    nice: int = 0,
) -> ProcessOutcome:
    """Run argv to completion or timeout; never raises for a failing command.

    ``nice`` lowers the child's CPU priority (builds use it so that the host side of a
    timed run is not starved by a machine full of compilers)."""
    if _stopping.is_set():
        return ProcessOutcome(None, False, "", "", False, 0.0, error="stopped", stopped=True)
    start = time.monotonic()
    full_env = dict(os.environ)
    full_env.update(env or {})
    try:
        proc = subprocess.Popen(
            list(argv), cwd=str(cwd), env=full_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=(lambda: _die_with_parent(nice)) if nice else _die_with_parent,
        )
    except OSError as exc:
        return ProcessOutcome(None, False, "", "", False, time.monotonic() - start,
                              error=f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    with _live_lock:
        _live.add(proc.pid)
    out, err = _Capture(proc.stdout, output_limit), _Capture(proc.stderr, output_limit)
    out.start()
    err.start()
    timed_out, cpu = False, 0.0
    try:
        timed_out, cpu = _wait(proc, timeout)
    finally:
        _kill_group(proc.pid)  # the program and anything it left behind
        if proc.returncode is None:
            cpu = _reap(proc)
        with _live_lock:
            _live.discard(proc.pid)
    out.join(5)
    err.join(5)
    return ProcessOutcome(
        returncode=proc.returncode, timed_out=timed_out, stdout=out.text(), stderr=err.text(),
        truncated=out.truncated or err.truncated, seconds=time.monotonic() - start, cpu_seconds=cpu,
    )


def _reap(proc: subprocess.Popen) -> float:
    """Wait for proc, set its returncode, and return its CPU seconds (os.wait4's rusage)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _wait(proc: subprocess.Popen, timeout: float) -> tuple[bool, float]:
    """(timed out, CPU seconds). Polls with os.wait4 so that the child's rusage is kept."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return False, usage.ru_utime + usage.ru_stime
        if time.monotonic() >= deadline:
            return True, 0.0
        time.sleep(delay)
        delay = min(delay * 2, 0.005)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all() -> int:
    """Stop starting new processes and kill every live group; returns how many were killed."""
    _stopping.set()
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        _kill_group(pgid)
    return len(groups)


def reset_stop() -> None:
    """Allow processes to start again (after kill_all, for the next sweep in this process)."""
    _stopping.clear()


def stopping() -> bool:
    """True after kill_all() (Ctrl-C): nothing new may start."""
    return _stopping.is_set()


def track(pgid: int) -> None:
    """Have kill_all() kill this process group too (a long-lived worker while it runs a config)."""
    with _live_lock:
        _live.add(pgid)


def untrack(pgid: int) -> None:
    with _live_lock:
        _live.discard(pgid)


class FifoCapture(_Capture):
    """``_Capture`` of a named pipe another process writes (a persistent host's run): the
    output is capped as it arrives, never stored whole. The thread opens the pipe, which
    blocks until the writer opens it too; ``finish`` waits for the end of the output."""

    def __init__(self, path: str | Path, limit: int):
        super().__init__(None, limit)
        self.path = str(path)

    def run(self) -> None:
        try:
            self.pipe = open(self.path, "rb", buffering=0)
        except OSError:
            return
        super().run()

    def finish(self, timeout: float = 5.0) -> None:
        """Wait for the writer's end of file; a writer that never opened the pipe (its
        process died first) is stood in for, so the thread ends either way."""
        deadline = time.monotonic() + timeout
        while self.is_alive() and time.monotonic() < deadline:
            try:  # succeeds only while the thread is still waiting in open(): it then sees EOF
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            self.join(0.05)
