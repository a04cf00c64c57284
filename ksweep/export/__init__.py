"""``ksweep export``: a database's results as what ships with the kernel (all pure).

``formats.export`` is the one call behind the command; ``selection`` chooses what ships
(each shape's best, or a ``cover``'s fewest configs), ``header`` writes it as C/C++,
``recording`` takes one shape's every config for the ``t4`` and ``kt_cache`` files."""
