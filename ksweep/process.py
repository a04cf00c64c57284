"""Child processes that cannot take the sweep down with them, nor outlive it.

Every command runs in its own session (so its own process group), with stdin closed,
output captured up to a cap (the head and the tail are kept: a program printing
gigabytes cannot exhaust memory, and a result line printed last is still seen), and a
timeout after which the *whole group* is killed. Every live group is registered with its
owner's ``ProcessRegistry`` (each executor has its own) so that Ctrl-C can kill them all at
once (``ProcessRegistry.kill_all``).

What escapes the group (a ``setsid`` daemon, a double fork, the program behind a
wrapper) is found by an environment cookie (reaper.py): every process ksweep starts
carries ``KSWEEP_SESSION=<this process's token>``, and every command of ``run_process``
also ``KSWEEP_RUN=<this call's token>``, inherited at any depth. At the end of a run
whose output pipes stay open, and after every timeout, the processes of its run token
are killed; ``reap_session`` kills what is left of the whole session but the long-lived
workers (at a sweep's end, and in ``kill_all``); and a reaper process, started with the
first child, kills every process of the session when ksweep exits, even by ``kill -9``.

Children are started without ``preexec_fn``. With one, CPython's subprocess must fork()
(not vfork), and fork() runs the pthread_atfork handlers in the forking thread: builds
and runs start from worker threads while the main thread may be inside OpenBLAS, whose
handler shuts down the thread pool the main thread is using (a deadlock for good); and
Python code run between fork and exec in a threaded process is unsafe in itself. Without
``preexec_fn`` CPython uses vfork, which runs no atfork handler and no Python code in the
child; ``start_new_session`` is done by the child without either. What the hook did is
done otherwise: ``nice`` is set from the parent (setpriority) as soon as Popen returns,
and PR_SET_PDEATHSIG (which only a child can set, and which only ever covered the direct
child) is replaced by the reaper.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .reaper import RUN_VAR, SESSION_VAR, environ_has, kill_tree_by_token, pids_with_env

__all__ = [
    "DEFAULT_REGISTRY", "RUN_VAR", "SESSION", "SESSION_VAR", "FifoCapture", "ProcessOutcome", "ProcessRegistry",
    "ensure_reaper", "environ_has", "forget_worker", "kill_all", "kill_tree_by_token", "kill_worker", "new_token",
    "pid_alive", "pids_with_env", "reap_session", "TAIL_BYTES", "reset_stop", "run_process", "session_env",
    "start_worker", "stopping", "track", "untrack",
]

TAIL_BYTES = 64 * 1024


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
    stopped: bool = False  # not started, or killed by a signal while it ran: kill_all() (Ctrl-C) came

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


SESSION = secrets.token_hex(16)  # this process's token: every process it starts carries it
REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
SETTLE_SECONDS = 0.2  # after a run, how long its pipes may take to reach EOF before a scan for its escapees
ESCAPED_SECONDS = 0.5  # after that scan, how long before a pipe still held open is no longer read

_owner = os.getpid()  # the process SESSION and the reaper belong to
_reaper: subprocess.Popen | None = None
_reaper_failed = False
_reaper_lock = threading.Lock()
_workers: set[int] = set()  # long-lived workers: reap_session spares them
_workers_lock = threading.Lock()
_forsaken: list[subprocess.Popen] = []  # a parent's reaper, in a forked child (never waited for)


def pid_alive(pid: int) -> bool:
    """Whether the process ``pid`` still runs (this one does; a zombie has ended): a file or
    folder named after its owner's pid is left over when the owner is gone."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has ended: only its parent has not waited for it yet
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def new_token() -> str:
    return secrets.token_hex(8)


def _own_session() -> None:
    """In a child made by os.fork (multiprocessing's fork start method) that starts
    processes: a session and a reaper of its own. With the parent's token, its own reaper
    would kill the parent's processes when the child ends; and its copy of the parent's
    reaper pipe would keep that reaper from seeing the parent's death."""
    global SESSION, _owner, _reaper, _reaper_failed, _reaper_lock, _workers, _workers_lock
    if os.getpid() == _owner:
        return
    _reaper_lock, _workers_lock = threading.Lock(), threading.Lock()  # a thread of the parent may have held them
    if _reaper is not None:
        try:
            _reaper.stdin.close()
        except (OSError, ValueError, AttributeError):
            pass
        _forsaken.append(_reaper)
    SESSION, _owner, _reaper, _reaper_failed, _workers = secrets.token_hex(16), os.getpid(), None, False, set()


def ensure_reaper() -> int | None:
    """Start this process's reaper if it is not running (once per process, again if it
    was killed; every function that starts a child calls it); its pid, or None where there
    is none (no /proc, or it could not start). It is not waited for: if ksweep dies before
    the reaper reads its stdin, the reaper reads EOF at once and still kills the session."""
    global _reaper, _reaper_failed
    _own_session()
    reaper = _reaper
    if reaper is not None and reaper.poll() is None:
        return reaper.pid
    if _reaper_failed:
        return None
    with _reaper_lock:
        if _reaper is not None and _reaper.poll() is not None:  # killed by someone: a new one
            _reaper.stdin.close()
            _reaper = None
        if _reaper is None and not _reaper_failed:
            if not os.path.exists("/proc/self/environ") or not sys.executable:
                _reaper_failed = True
                return None
            # not in the session itself (it must outlive its kills), nor in a run of an enclosing ksweep
            env = {k: v for k, v in os.environ.items() if k not in (SESSION_VAR, RUN_VAR)}
            try:
                # -I -S: no site, no user paths, not the ksweep folder on sys.path; the write end
                # of its stdin is ours alone (non-inheritable: no child of ours gets it)
                _reaper = subprocess.Popen(
                    [sys.executable, "-I", "-S", REAPER, SESSION], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", env=env, start_new_session=True,
                )
            except OSError:
                _reaper_failed = True
                return None
        return _reaper.pid if _reaper is not None else None


def session_env() -> dict[str, str]:
    """What every process ksweep starts must carry in its environment (and starts the reaper)."""
    ensure_reaper()
    return {SESSION_VAR: SESSION}


def reap_session() -> int:
    """Kill every process of this session (at any depth) except the long-lived workers
    (``start_worker``); returns how many. For the end of a sweep, when nothing of it runs
    any more (a daemon that closed its output was not waited for by its run), and for
    ``kill_all``: anything it finds running is killed."""
    _own_session()
    with _workers_lock:  # a worker being started is spared too
        return kill_tree_by_token(SESSION_VAR, SESSION, exclude=set(_workers))


def start_worker(argv: Sequence[str], env: Mapping[str, str] | None = None,
                 **popen_kwargs) -> tuple[subprocess.Popen, str]:
    """Start a long-lived worker (kernel mode's GPU worker, a persistent host) in its own
    session, with os.environ, ``env``, the session token and a run token of its own;
    returns the process and that token (``kill_worker``). ``reap_session`` spares it."""
    token = new_token()
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.update(session_env())
    full_env[RUN_VAR] = token
    with _workers_lock:
        proc = subprocess.Popen(list(argv), env=full_env, start_new_session=True, **popen_kwargs)
        _workers.add(proc.pid)
    return proc, token


def kill_worker(proc: subprocess.Popen, token: str) -> None:
    """Kill a worker, its process group and everything it started (its run token); the
    caller still waits for it."""
    _kill_group(proc.pid)
    kill_tree_by_token(RUN_VAR, token)
    forget_worker(proc.pid)


def forget_worker(pid: int) -> None:
    """The worker ``pid`` is gone: reap_session no longer spares that pid."""
    with _workers_lock:
        _workers.discard(pid)


def _lower_priority(pid: int, nice: int) -> None:
    """The child's niceness: ours plus ``nice`` (as os.nice in the child would)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    except OSError:
        pass


class _Capture(threading.Thread):
    """Drain one pipe, keeping the first ``limit`` bytes and the last TAIL_BYTES.

    ``wake_fd``: a pipe that becomes readable when the reading must stop although the
    writers still hold the pipe open (something that escaped every kill): what is already
    in the pipe is still read (the exited command's output is all there), then the thread
    ends."""

    AFTER_WAKE = 1 << 20  # bytes still read after the wake-up (a pipe holds at most 1 MiB by default)

    def __init__(self, pipe, limit: int, wake_fd: int | None = None):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.limit = limit
        self.wake_fd = wake_fd
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def run(self) -> None:
        try:
            self._drain(self.pipe.fileno())
        finally:
            self.pipe.close()

    def _drain(self, fd: int) -> None:
        poller = None
        if self.wake_fd is not None:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.register(self.wake_fd, select.POLLIN)
        budget = None  # bytes left to read once woken
        while True:
            if poller is not None:
                try:
                    ready = {f for f, _ in poller.poll()}
                except InterruptedError:
                    continue
                if self.wake_fd in ready:
                    if fd not in ready or budget is not None and budget <= 0:
                        return
                    budget = self.AFTER_WAKE if budget is None else budget
            try:
                chunk = os.read(fd, 65536)
            except InterruptedError:
                continue
            except OSError:
                return
            if not chunk:
                return
            if budget is not None:
                budget -= len(chunk)
            self._keep(chunk)

    def _keep(self, chunk: bytes) -> None:
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
    registry: ProcessRegistry | None = None,
    leftovers: bool = False,
) -> ProcessOutcome:
    """Run argv to completion or timeout; never raises for a failing command.

    ``nice`` lowers the child's CPU priority (builds use it so that the host side of a
    timed run is not starved by a machine full of compilers). The command and everything
    it starts is killed when it ends (its process group, and the processes of its run
    token); no escaped process is waited for. ``registry``: whose kill_all kills it (the
    default registry's when None); nothing starts once that registry is stopping.
    ``leftovers``: also kill, when it ends, what it left running outside its group that
    closed its output (a run's daemon, which would load the machine under the next runs);
    not for a build, whose compiler may leave a server for the next builds (sccache)."""
    registry = registry or DEFAULT_REGISTRY
    if registry.stopping():
        return ProcessOutcome(None, False, "", "", False, 0.0, error="stopped", stopped=True)
    start = time.monotonic()
    kills = registry.kills  # a kill_all() while it runs makes its end no outcome of its own
    token = new_token()
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.update(session_env())
    full_env[RUN_VAR] = token
    try:
        # no preexec_fn (see the module's docstring): vfork, no atfork handler, no Python in the child
        proc = subprocess.Popen(
            list(argv), cwd=str(cwd), env=full_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        return ProcessOutcome(None, False, "", "", False, time.monotonic() - start,
                              error=f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    if nice:
        _lower_priority(proc.pid, nice)
    registry.track(proc.pid)
    if registry.stopping():
        # kill_all() came between the check above and track() (a slow start on a loaded
        # machine): it sets the flag before it reads the groups, so either it saw this one or
        # this sees the flag. Without this the command ran to its timeout, and Ctrl-C with it.
        _kill_group(proc.pid)
    wake_r, wake_w = os.pipe()
    captures = (_Capture(proc.stdout, output_limit, wake_r), _Capture(proc.stderr, output_limit, wake_r))
    for capture in captures:
        capture.start()
    timed_out, cpu, ended = False, 0.0, False
    try:
        timed_out, cpu = _wait(proc, timeout)
        ended = True
    finally:
        _kill_group(proc.pid)  # the program and anything it left behind in its group
        if proc.returncode is None:
            cpu = _reap(proc)
        registry.untrack(proc.pid)
        try:
            _finish_captures(captures, token, wake_w, scan=timed_out or not ended, leftovers=leftovers)
        finally:
            os.close(wake_w)
            os.close(wake_r)
    out, err = captures
    # killed by kill_all (Ctrl-C, a cancelled sweep): not a result of the command (a compiler's
    # "failure" would be cached, a program's "crash" stored); Ctrl-C may reach the group
    # itself first, as SIGINT, so any signal counts
    stopped = registry.kills != kills and proc.returncode is not None and proc.returncode < 0
    return ProcessOutcome(
        returncode=proc.returncode, timed_out=timed_out, stdout=out.text(), stderr=err.text(),
        truncated=out.truncated or err.truncated, seconds=time.monotonic() - start, cpu_seconds=cpu,
        stopped=stopped,
    )


def _finish_captures(captures: Sequence[_Capture], token: str, wake_w: int, scan: bool,
                     leftovers: bool = False) -> None:
    """Wait for the end of a run's output, and kill what the run left behind. Its pipes
    normally reach EOF as soon as its group is dead (then, with ``leftovers``, the processes
    of the run's token that left the group, daemons that closed their output, are killed).
    One still open after SETTLE_SECONDS (or any timeout) is held by a process that left the
    group: the processes of the run's token are killed; one still open after that is held by
    a process that escaped even that (it replaced its environment), and is no longer read."""
    if not scan and _joined(captures, SETTLE_SECONDS):
        if leftovers:  # a run's daemon that closed its output must not outlive it (one scan of /proc)
            kill_tree_by_token(RUN_VAR, token)
        return
    kill_tree_by_token(RUN_VAR, token)
    if _joined(captures, ESCAPED_SECONDS):
        return
    os.write(wake_w, b"x")
    for capture in captures:
        capture.join()  # short: only what is already in the pipe is read


def _joined(threads: Sequence[threading.Thread], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)


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


class ProcessRegistry:
    """The live process groups of one owner (an executor: its builds, its runs, its hosts
    while they run a config), and its stop flag.

    ``run_process`` registers each command's group while it runs; ``kill_all`` (Ctrl-C,
    ``Executor.shutdown(cancel=True)``) stops the owner from starting anything new and kills
    every group it registered. Each executor owns one, so stopping one sweep does not stop
    another in the same process. Thread-safe."""

    def __init__(self) -> None:
        self._live: set[int] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.kills = 0  # kill_all() calls so far: a command killed by one is stopped, not failed

    def track(self, pgid: int) -> None:
        """Have kill_all() kill this process group (a command, or a long-lived worker while it runs a config)."""
        with self._lock:
            self._live.add(pgid)

    def untrack(self, pgid: int) -> None:
        with self._lock:
            self._live.discard(pgid)

    def stopping(self) -> bool:
        """True after kill_all() (Ctrl-C): nothing new may start."""
        return self._stopping.is_set()

    def reset_stop(self) -> None:
        """Allow processes to start again (after kill_all, for the owner's next sweep)."""
        self._stopping.clear()

    def kill_all(self, reap: bool = True) -> int:
        """Stop starting new processes, kill every registered group, then (``reap``) every
        other process of this session but the long-lived workers (``reap_session``; not on a
        Dask worker that other sweeps share); returns how many groups were killed."""
        self._stopping.set()
        with self._lock:
            self.kills += 1
            groups = list(self._live)
        for pgid in groups:
            _kill_group(pgid)
        if reap:
            reap_session()
        return len(groups)


DEFAULT_REGISTRY = ProcessRegistry()  # of callers that name none (a Dask worker's tasks, a bare run_process)


def kill_all(registry: ProcessRegistry | None = None) -> int:
    """``registry.kill_all()`` (the default registry's when None)."""
    return (registry or DEFAULT_REGISTRY).kill_all()


def reset_stop(registry: ProcessRegistry | None = None) -> None:
    (registry or DEFAULT_REGISTRY).reset_stop()


def stopping(registry: ProcessRegistry | None = None) -> bool:
    return (registry or DEFAULT_REGISTRY).stopping()


def track(pgid: int, registry: ProcessRegistry | None = None) -> None:
    (registry or DEFAULT_REGISTRY).track(pgid)


def untrack(pgid: int, registry: ProcessRegistry | None = None) -> None:
    (registry or DEFAULT_REGISTRY).untrack(pgid)


AT_ONCE_WAIT = 0.05  # seconds between looks at calls running at once (``at_once``)


def at_once(fn, items: Sequence, jobs: int, registry: ProcessRegistry | None) -> list:
    """``fn`` of each item, ``jobs`` at a time in threads (each call starts processes through
    ``registry``), in the items' order. Waited for in short sleeps, so that Ctrl-C or SIGTERM
    lands in a sleep, never inside the futures' locks, which the calls still need. Ctrl-C, or an
    exception of one call, kills what ``registry`` runs (the others' processes end at once),
    and is raised once every call has returned."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(items))), thread_name_prefix="ksweep-at-once")
    futures = []
    try:
        futures = [pool.submit(fn, item) for item in items]
        while True:
            failed = next((f for f in futures if f.done() and f.exception() is not None), None)
            if failed is not None:
                raise failed.exception()
            if all(f.done() for f in futures):
                return [f.result() for f in futures]
            time.sleep(AT_ONCE_WAIT)
    except BaseException:  # also while the calls are being handed out
        for f in futures:
            f.cancel()
        if registry is not None:
            registry.kill_all(reap=False)
        raise
    finally:
        pool.shutdown(wait=True)  # after kill_all: nothing of it is left running


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
