"""Replay recorded tuning results: run and compare strategies with no GPU.

``load_dataset`` reads a Kernel Tuner cache or T4 results file; ``ReplaySpace`` is the space
of its recorded configs; ``replay`` runs a strategy against it; ``run_bench`` runs the
strategy benchmark (``ksweep bench-strategies``).
"""

from .dataset import Dataset
from .driver import Trace, replay
from .importers import DatasetError, load_dataset
from .space import ReplaySpace

__all__ = ["Dataset", "DatasetError", "ReplaySpace", "Trace", "load_dataset", "replay"]
