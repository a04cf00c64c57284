"""A time limit on the spec's own Python code (``python = "file.py:function"`` constraints
and the import of their files), without killing the interpreter.

A ``CallClock`` is armed once for a batch of calls; each call is bracketed by ``start()``
and ``stop()`` (two attribute writes, so a batch of quick calls costs nothing more) and
may take ``limit`` seconds. In the main thread a SIGALRM interval timer ticks while the
clock is armed, and the tick raises ``PythonTimeout`` inside a call that has run too
long, interrupting a loop or a sleep; the previous handler and timer are put back
afterwards. In another thread a watchdog thread raises it there instead, which stops
Python code but not a call blocked in C. A function that catches every exception
(a bare ``except:``) can still defeat either.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time

PYTHON_TIME_LIMIT = 10.0  # seconds one call of a spec's Python function may take


class PythonTimeout(BaseException):
    """Raised inside a spec's Python function that ran past its time limit.

    A BaseException, so that the function's own ``except Exception`` does not swallow it."""


class CallClock:
    def __init__(self, limit: float | None = None):
        self.limit = PYTHON_TIME_LIMIT if limit is None else limit
        self._started: float | None = None
        self._signal = False
        self._done: threading.Event | None = None

    # -- per call ---------------------------------------------------------------------

    def start(self) -> None:
        self._started = time.monotonic()

    def stop(self) -> None:
        self._started = None

    def _overdue(self) -> bool:
        started = self._started
        return started is not None and time.monotonic() - started > self.limit

    # -- per batch --------------------------------------------------------------------

    def __enter__(self) -> "CallClock":
        tick = min(1.0, max(self.limit / 10, 0.01))
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            try:
                self._old_handler = signal.signal(signal.SIGALRM, self._alarm)
            except ValueError:  # not the main interpreter
                pass
            else:
                self._signal = True
                self._armed_at = time.monotonic()
                self._old_timer = signal.setitimer(signal.ITIMER_REAL, tick, tick)
                return self
        self._done = threading.Event()
        target = threading.get_ident()
        threading.Thread(target=self._watch, args=(target, tick), name="ksweep-call-clock", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._started = None
        if self._signal:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old_handler)
            delay, interval = self._old_timer
            if delay > 0:  # someone else's timer: what was left of it
                left = delay - (time.monotonic() - self._armed_at)
                signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), interval)
            self._signal = False
        elif self._done is not None:
            self._done.set()
            self._done = None

    def _alarm(self, signum, frame) -> None:
        if self._overdue():
            raise PythonTimeout()

    def _watch(self, target: int, tick: float) -> None:
        done = self._done
        while done is not None and not done.wait(tick):
            if self._overdue():
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(PythonTimeout))
