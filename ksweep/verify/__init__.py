"""The verify stage (pure): is a run's answer right, and which config is best once the
leaders are measured again.

``checks.py``: checksum, reference and bound checks of a run's metrics, and ``judge``: the
status, message and ``verified`` of a run that ended OK. ``confirm.py``: the confirmation
of the leaders (which configs, interleaved rounds, intervals, BEST/TIE, speed-up) and what
the stored runs say per shape × variant (``confirmed``).
"""
