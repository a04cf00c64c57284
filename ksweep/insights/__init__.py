"""What a database (or a recorded dataset) says beyond its best config, pure: which
failures follow a rule a constraint could state (``rules.py``), which knobs matter
(``importance.py``), how safe the winner is (``risk.py``), over one shape × variant's
evaluated configs (``table.py``); ``summary.py`` puts them together for ``ksweep
insights`` and picks the headlines ``ksweep run`` ends with."""

from .summary import Insight, analyse, headlines
from .table import Table, from_dataset, from_standing

__all__ = ["Insight", "Table", "analyse", "from_dataset", "from_standing", "headlines"]
