"""A headless Chromium driven through the DevTools protocol over a pipe: what the tests and
``bench/html_page.py`` open a ``ksweep report --html`` page with.

Chromium started with ``--remote-debugging-pipe`` reads the protocol's commands from its
file descriptor 3 and writes answers and events to its descriptor 4, each message a JSON
object ended by a NUL byte: no websocket, no port, only the standard library.

    with Browser() as browser:          # None of it when no chromium is found: find_chromium()
        page = browser.open("file:///tmp/page.html", ready="window.ksweepReady")
        page.value                      # what the ready promise resolved to
        page.dom                        # the rendered document's HTML, after the scripts ran
        page.requests                   # every URL the page asked for (file:, data:, blob: or else)
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) on PATH, else None."""
    return next((p for p in map(shutil.which, NAMES) if p), None)


class BrowserError(RuntimeError):
    """The browser did not start, answer, or load the page in time."""


@dataclass
class Opened:
    value: object  # what the ready expression's promise resolved to
    dom: str  # document.documentElement.outerHTML once it resolved
    requests: list[str] = field(default_factory=list)  # every URL requested, in order
    console: list[str] = field(default_factory=list)  # errors the page threw or logged

    @property
    def network(self) -> list[str]:
        """The requests that would have left the machine (none of file:, data:, blob:, about:)."""
        return [u for u in self.requests if not u.startswith(LOCAL_SCHEMES)]


class Browser:
    """One headless Chromium; ``open`` loads a page in a new tab and waits for it."""

    def __init__(self, chromium: str | None = None, width: int = 1400, height: int = 1000,
                 timeout: float = 60.0):
        self.chromium = chromium or find_chromium()
        if self.chromium is None:
            raise BrowserError("no chromium on PATH")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="ksweep-chromium-")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]

        def fds():  # in the child, before exec: its 3 reads our commands, its 4 writes to us
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        argv = [self.chromium, "--headless", "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--hide-scrollbars", "--mute-audio", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                # nothing leaves the machine even if a page asked: a proxy that refuses, no name resolved
                "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
        self.proc = subprocess.Popen(argv, pass_fds=(3, 4), preexec_fn=fds, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_browser, from_browser, *high):
            os.close(fd)
        self._buffer = b""
        self._next = 0
        self._events: list[dict] = []
        self._session: str | None = None

    # -- the protocol ----------------------------------------------------------------------
    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        """Send a command; its result (a BrowserError with the protocol's error)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self._events.append(reply)

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise BrowserError("the browser did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its pipe (did it start?)")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def events(self, method: str, session: str | None = None) -> list[dict]:
        return [e.get("params", {}) for e in self._events
                if e.get("method") == method and (session is None or e.get("sessionId") == session)]

    # -- pages -------------------------------------------------------------------------------
    def open(self, url: str, ready: str = "document.readyState === 'complete'") -> Opened:
        """Load ``url`` in a new tab and wait for ``ready`` (an expression: a value, or a promise
        to await; polled until it is defined); the page's DOM, requests and errors then."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        wait = (f"new Promise((done, fail) => {{ const t0 = Date.now(); const poll = () => {{ let v; "
                f"try {{ v = ({ready}); }} catch (e) {{ v = undefined; }} "
                f"if (v !== undefined && v !== null && v !== false && document.readyState !== 'loading') "
                f"Promise.resolve(v).then(done, fail); "
                f"else if (Date.now() - t0 > {int(self.timeout * 1000)}) fail(new Error('not ready')); "
                f"else setTimeout(poll, 20); }}; poll(); }})")
        result = self.send("Runtime.evaluate", {"expression": wait, "awaitPromise": True, "returnByValue": True},
                           session=session)
        if "exceptionDetails" in result:
            raise BrowserError(f"{url}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        value = result.get("result", {}).get("value")
        dom = self.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                             "returnByValue": True}, session=session)["result"]["value"]
        requests = [e["request"]["url"] for e in self.events("Network.requestWillBeSent", session)]
        console = [e["exceptionDetails"].get("exception", {}).get("description", "")
                   for e in self.events("Runtime.exceptionThrown", session)]
        console += [e["entry"].get("text", "") for e in self.events("Log.entryAdded", session)
                    if e.get("entry", {}).get("level") == "error"]
        self._session, self._target = session, target
        return Opened(value, dom, requests, console)

    def evaluate(self, expression: str):
        """The value of ``expression`` (a promise awaited) in the page last opened."""
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, session=self._session)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result.get("result", {}).get("value")

    def screenshot(self, path: str | Path, width: int = 1400) -> Path:
        """A PNG of the whole page last opened (its full height)."""
        height = self.evaluate("document.documentElement.scrollHeight")
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": int(height),
                                                         "deviceScaleFactor": 1, "mobile": False},
                  session=self._session)
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                         session=self._session)["data"]
        import base64

        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
