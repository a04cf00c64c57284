"""The worker plugin of the Dask executor (imported only where ``distributed`` is installed).

``OnClose`` calls a function (by reference: the workers import it) when its worker closes,
whatever closes it: retired, restarted by its nanny, its scheduler lost, SIGTERM. The
executor registers one per cluster (``idempotent``: the first sweep's stays, and the
scheduler gives it to every worker that joins later); a plugin replaced or removed while its
worker runs on calls nothing.
"""

from __future__ import annotations

from typing import Callable

from distributed import WorkerPlugin
from distributed.core import Status

CLOSING = frozenset({Status.closing, Status.closing_gracefully, Status.closed, Status.failed})


class OnClose(WorkerPlugin):
    idempotent = True

    def __init__(self, name: str, fn: Callable[[], None]):
        self.name = name
        self.fn = fn

    def teardown(self, worker) -> None:
        if worker.status in CLOSING:
            self.fn()
