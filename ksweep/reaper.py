"""Find and kill what ksweep started, at any depth, by an environment cookie.

Every process ksweep starts carries ``KSWEEP_SESSION=<token of this ksweep process>`` in
its environment, and every command of ``run_process`` also ``KSWEEP_RUN=<token of that
call>``. Descendants inherit the environment at any depth, through wrappers (``sh -c``,
a Python harness), double forks and ``setsid``, so a scan of ``/proc/*/environ`` finds
them all, wherever they were reparented. (Only a process that replaced its environment
escapes; ``run_process`` stops waiting on such a one after a short time.)

Run as a program, this module is the reaper: ``python reaper.py TOKEN`` blocks reading
its stdin, a pipe whose write end only the ksweep process holds; at end of file (ksweep
exited, or was killed with ``kill -9``) it kills every process of the session and exits.
It is started by path, without the ``ksweep`` package, and imports only ``os``,
``_signal`` and ``sys``: it starts in a few tens of milliseconds. Where there is no
``/proc``, it finds nothing and kills nothing.
"""

from __future__ import annotations

import os
import sys

try:  # the signal module without its enums (imported by the signal module: a few ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - not CPython
    import signal

SESSION_VAR = "KSWEEP_SESSION"
RUN_VAR = "KSWEEP_RUN"
PROC = "/proc"
MAX_ROUNDS = 50  # scans of one kill: each round only kills what the previous ones had not


def environ_has(environ: bytes, name: str, value: str) -> bool:
    """Whether ``name=value`` is one of the entries of a /proc/PID/environ text (pure)."""
    return b"\0" + f"{name}={value}".encode() + b"\0" in b"\0" + environ + b"\0"


def pids_with_env(name: str, value: str, *, exclude: frozenset[int] | set[int] = frozenset(),
                  proc: str = PROC) -> list[int]:
    """The processes whose environment holds ``name=value`` (as they were started: a later
    putenv does not show in /proc), other than this one and ``exclude``. Processes of other
    users (unreadable), vanished ones and zombies (empty environ) are not listed."""
    try:
        names = os.listdir(proc)
    except OSError:
        return []
    me = os.getpid()
    found = []
    for entry in names:
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == me or pid in exclude:
            continue
        try:
            with open(f"{proc}/{entry}/environ", "rb", buffering=0) as f:
                data = f.read()
        except OSError:  # gone, not ours (EACCES), or a kernel thread
            continue
        if data and environ_has(data, name, value):
            found.append(pid)
    return found


def kill_tree_by_token(name: str, value: str, *, exclude: frozenset[int] | set[int] = frozenset(),
                       proc: str = PROC) -> int:
    """SIGKILL every process whose environment holds ``name=value`` (but ``exclude``), scanning
    again until a scan finds nothing new (a process may fork while it is being scanned);
    returns how many were killed. A killed process that has not died yet is listed again by
    the next scan, and is not killed twice."""
    killed: set[int] = set()
    for _ in range(MAX_ROUNDS):
        fresh = [pid for pid in pids_with_env(name, value, exclude=exclude, proc=proc) if pid not in killed]
        if not fresh:
            break
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.add(pid)
    return len(killed)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1]:
        print("usage: reaper.py SESSION_TOKEN", file=sys.stderr)
        return 2
    token = argv[1]
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):  # only the end of stdin ends us
        signal.signal(sig, signal.SIG_IGN)
    while True:  # ksweep never writes: read returns at its exit
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    kill_tree_by_token(SESSION_VAR, token)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
