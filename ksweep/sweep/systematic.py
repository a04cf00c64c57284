"""The same compile error in every config a sweep starts with (pure).

In a real codebase a spec mistake makes *every* config fail to compile the same way (a
parameter whose ``-DBM=128`` rewrites the program's own ``template <int BM>``); a sweep
that goes on stores one COMPILE_ERROR per config until its budget ends. The first
``STOP_AFTER`` builds of a sweep, when they all fail with the same error (numbers and
folders aside) and nothing has built yet, stop it with that error said once; those
results are not stored (they say nothing about the configs, and a fixed header must
not resume them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

STOP_AFTER = 4
_PATH = re.compile(r"(?:[\w.+-]*/)+([\w.+-]+)")
_NUMBER = re.compile(r"\d+")


def error_signature(message: str, values: Iterable = ()) -> str:
    """A compile error's message without folders, numbers and the config's own ``values``:
    the same mistake in two configs (other line numbers, other values such as a type
    ``-DT=double`` the message names, other scratch folders) has one signature."""
    words = sorted({str(v) for v in values if isinstance(v, str) and v.strip()}, key=len, reverse=True)
    if words:
        message = re.sub(r"(?<!\w)(?:%s)(?!\w)" % "|".join(map(re.escape, words)), "#", message)
    return _NUMBER.sub("#", _PATH.sub(r"\1", message)).strip()


@dataclass
class SameErrorGuard:
    """Watches the builds of one sweep; ``held`` are compile errors not stored yet."""

    stop_after: int = STOP_AFTER
    held: list = field(default_factory=list)
    _signature: str | None = None
    _open: bool = True  # until a build succeeds or another error shows up

    def see(self, ok: bool, message: str, result, values: Iterable = ()) -> str:
        """'hold' (keep ``result`` back), 'stop' (the sweep should stop: the same error
        ``stop_after`` times) or 'store' (store it, and whatever was held); ``values``: the
        config's, which the message may name."""
        if not self._open:
            return "store"
        if ok:
            self._open = False
            return "store"
        signature = error_signature(message, values)
        if self._signature is not None and signature != self._signature:
            self._open = False
            return "store"
        self._signature = signature
        self.held.append(result)
        return "stop" if len(self.held) >= self.stop_after else "hold"

    def release(self) -> list:
        """The held results, to store now; the guard no longer holds any."""
        out, self.held = self.held, []
        self._open = False
        return out
