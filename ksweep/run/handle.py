"""The parent's side of a long-lived worker process (kernel mode's GPU worker, program
mode's persistent host): start it, talk to it in JSON lines with timeouts, restart it.

Every request comes to an ``Answer``: the worker's reply, no reply within the request's
timeout (the worker's process group is killed and the next request starts a fresh
worker), the worker's death while answering (a segfault in the driver, an abort), or a
worker that did not start. After a fatal CUDA error the worker exits by itself, and is
restarted the same way. What an answer means for the run is decided elsewhere
(run/classify.py): the handle reports what happened, not a status.

The worker is started as every child of ksweep is (process.start_worker): without
``preexec_fn`` (safe from threads), in its own session, carrying the session token (the
reaper kills it if ksweep dies) and a token of its own: killing it kills everything it
started too, wherever that went.
"""

from __future__ import annotations

import collections
import json
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping

from ..process import kill_worker, start_worker

POLL_SECONDS = 0.05  # how often a wait for an answer checks that the worker is alive


@dataclass(frozen=True)
class Answer:
    """What one request to a worker came to.

    - ``"reply"``: the worker answered; ``data`` is its JSON answer.
    - ``"timeout"``: no answer within the request's timeout.
    - ``"dead"``: the worker died before answering; ``returncode`` is its exit code (negative:
      the signal that killed it, None: unknown) and ``detail`` (from ``request``) the last
      lines of its stderr.
    - ``"no_start"``: the worker did not start, or its setup failed; ``detail`` says why.
    """

    kind: Literal["reply", "timeout", "dead", "no_start"]
    data: Mapping[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    detail: str = ""

    @property
    def replied(self) -> bool:
        return self.kind == "reply"


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
        self.setup_answer: Mapping[str, Any] = {}  # the worker's answer to its setup (the last start's)
        self.lock = threading.Lock()  # one request at a time (a warm-up thread may start it); held by request()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Answer | None:
        """Start the worker (and send its setup); None when it is up, else a "no_start" answer.
        The caller holds ``lock``."""
        self.proc, self._token = start_worker(
            self.argv, self.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        self.restarts += 1
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()
        # the setup goes before the hello comes: the worker makes its inputs while CUDA starts
        sent = self.setup_request is None or self._send(self.setup_request)
        hello = self._read(self.start_timeout)
        if not hello.replied or not hello.data.get("ok"):
            return self._failed(hello, "the worker did not start")
        self.device = hello.data.get("hello", "")
        if self.setup_request is not None:
            setup = self._read(self.start_timeout) if sent else Answer("dead")
            if not setup.replied or not setup.data.get("ok"):
                return self._failed(setup, "the worker's setup failed")
            self.setup_answer = setup.data
        return None

    def _failed(self, answer: Answer, what: str) -> Answer:
        self.kill()
        detail = answer.data.get("error") or self.stderr_tail()
        return Answer("no_start", detail=f"{what}: {detail}")

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
        proc = self.proc
        return proc is not None and proc.poll() is None

    def kill(self) -> None:
        """Kill the worker (if still there) and whatever it started, and wait for it."""
        proc = self.proc  # another thread (a request that saw the worker die) may clear it meanwhile
        if proc is not None:
            kill_worker(proc, self._token)
            proc.wait()
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
    def _read(self, timeout: float) -> Answer:
        """The next answer: a reply, "timeout" after ``timeout``, or "dead" (its exit code not yet
        known). Death is noticed from the process too: a child the worker forked may hold its
        pipe open."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))
            except queue.Empty:
                if self.proc is not None and self.proc.poll() is not None:
                    return Answer("dead")
                if time.monotonic() >= deadline:
                    return Answer("timeout")
                continue
            return Answer("dead") if line is None else Answer("reply", json.loads(line))

    def _send(self, req: dict) -> bool:
        """Write one request; False when the worker's stdin is closed (it died)."""
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def ask(self, req: dict, timeout: float) -> Answer:
        """One exchange with a started worker. After a "timeout" the worker is still there (the
        caller kills it); a "dead" answer has waited for its exit code. The caller holds ``lock``."""
        answer = self._read(timeout) if self._send(req) else Answer("dead")
        if answer.kind == "dead":
            return Answer("dead", returncode=self.proc.wait() if self.proc is not None else None)
        return answer

    def request(self, req: dict, timeout: float) -> Answer:
        """The answer to one request, the worker started first if it is not running. A worker
        that timed out, died or reported a fatal error is killed (the next request starts a
        fresh one)."""
        with self.lock:
            return self._request(req, timeout)

    def _request(self, req: dict, timeout: float) -> Answer:
        if not self.alive():
            failure = self.start()
            if failure is not None:
                return failure
        answer = self.ask(req, timeout)
        if not answer.replied:
            self.kill()  # a hung worker, or what a dead one left running
            if answer.kind == "dead":
                answer = replace(answer, detail=self.stderr_tail())
        elif answer.data.get("fatal") and self.proc is not None:  # it exits by itself: wait, then clean up
            self.proc.wait()
            self.kill()
        return answer
