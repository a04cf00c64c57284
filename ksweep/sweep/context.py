"""What the phases of a sweep share: the spec and its run mode, the store, the executor, the
options, the observer, the summary and the recorder of results (``record.py``). The sweep
(``driver.py``) makes it once; each phase reads it and never the sweep itself."""

from __future__ import annotations

from dataclasses import dataclass

from ..observer import Observer
from ..run.base import Executor
from ..run.modes import Mode
from ..spec.model import Spec
from ..store.sqlite import Store
from .options import Summary, SweepOptions
from .record import Recorder


@dataclass(frozen=True)
class SweepContext:
    spec: Spec
    mode: Mode
    store: Store
    executor: Executor
    options: SweepOptions
    observer: Observer
    summary: Summary
    record: Recorder
