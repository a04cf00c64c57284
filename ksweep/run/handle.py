"""The parent's side of a long-lived worker process (kernel mode's GPU worker, program
mode's persistent host): start it, talk to it in JSON lines with timeouts, restart it.

A request that gets no answer within its timeout is a hang: the worker's process group
is killed and the next request starts a fresh worker. A worker that dies while
answering (a segfault in the driver, an abort) is a crash. After a fatal CUDA error the
worker exits by itself, and is restarted the same way.

The worker is started as every child of ksweep is (process.start_worker): without
``preexec_fn`` (safe from threads), in its own session, carrying the session token (the
reaper kills it if ksweep dies) and a token of its own: killing it kills everything it
started too, wherever that went.
"""

from __future__ import annotations

import collections
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Mapping

from ..process import kill_worker, start_worker

POLL_SECONDS = 0.05  # how often a wait for an answer checks that the worker is alive


class WorkerHandle:
    """``argv``: the worker's command (default: kernel mode's worker with ``backend``)."""

    def __init__(self, backend: str = "cuda", env: Mapping[str, str] | None = None, setup: dict | None = None,
                 start_timeout: float = 120.0, argv: list[str] | None = None):
        self.backend = backend
        self.argv = argv or [sys.executable, "-m", "ksweep.kernel.worker", "--backend", backend]
        self.env = dict(env or {})
        self.setup_request = setup
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self._token = ""  # the run token of the current worker: what it started carries it too
        self.restarts = -1
        self._lines: queue.Queue = queue.Queue()
        self._stderr: collections.deque = collections.deque(maxlen=40)
        self.device = ""
        self.lock = threading.Lock()  # one request at a time (a warm-up thread may start it); held by request()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> dict | None:
        """Start the worker (and send its setup); a RUN_ERROR outcome if it did not come up.
        The caller holds ``lock``."""
        self.proc, self._token = start_worker(
            self.argv, self.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        self.restarts += 1
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()
        hello = self._read(self.start_timeout)
        if hello is None or not hello.get("ok"):
            return self._failed(hello, "the worker did not start")
        self.device = hello.get("hello", "")
        if self.setup_request is not None:
            resp = self.ask(self.setup_request, self.start_timeout)
            if not resp.get("ok"):
                return self._failed(resp, "the worker's setup failed")
        return None

    def _failed(self, resp: dict | None, what: str) -> dict:
        self.kill()
        detail = (resp or {}).get("message") or (resp or {}).get("error") or self.stderr_tail()
        return {"status": "RUN_ERROR", "message": f"{what}: {detail}", "metrics": {}}

    @staticmethod
    def _pump(stream, lines: queue.Queue) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _drain(self, stream) -> None:
        for line in stream:
            self._stderr.append(line.rstrip())

    def stderr_tail(self, n: int = 5) -> str:
        return " | ".join(list(self._stderr)[-n:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill the worker (if still there) and whatever it started, and wait for it."""
        if self.proc is not None:
            kill_worker(self.proc, self._token)
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.alive():
            try:
                self.proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # -- requests ----------------------------------------------------------------------------
    def _read(self, timeout: float) -> dict | None:
        """The next answer; None when the worker died; {"_timeout"} after ``timeout``. Death is
        noticed from the process too: a child the worker forked may hold its pipe open."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))
            except queue.Empty:
                if self.proc is not None and self.proc.poll() is not None:
                    return None
                if time.monotonic() >= deadline:
                    return {"_timeout": True}
                continue
            return None if line is None else json.loads(line)

    def ask(self, req: dict, timeout: float) -> dict:
        """One exchange with a started worker: its answer, or {"_timeout"} / {"_dead"} (raw:
        ``request`` turns these into outcomes). The caller holds ``lock``."""
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            return {"_dead": True}
        resp = self._read(timeout)
        if resp is None:
            return {"_dead": True}
        return resp

    def request(self, req: dict, timeout: float) -> dict:
        """The worker's answer, or a HANG / CRASH / RUN_ERROR outcome of our own."""
        with self.lock:
            return self._request(req, timeout)

    def _request(self, req: dict, timeout: float) -> dict:
        if not self.alive():
            failure = self.start()
            if failure is not None:
                return failure
        resp = self.ask(req, timeout)
        if resp.get("_timeout"):
            self.kill()
            return {"status": "HANG", "message": f"no answer within {timeout:g} s: worker killed and restarted",
                    "metrics": {}}
        if resp.get("_dead"):
            code = self.proc.wait() if self.proc else None
            self.kill()  # what it left running
            sig = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
            return {"status": "CRASH", "message": f"the worker died ({sig}): {self.stderr_tail()}", "metrics": {}}
        if resp.get("fatal"):
            if self.proc is not None:
                self.proc.wait()
                self.kill()
            resp["message"] = resp.get("message", "") + " (context poisoned: worker restarted)"
        return resp
