"""The check audited before it judges any config (kernel mode, numpy): a comparison that
lets a wrong answer through checks nothing.

Given the expected outputs of the two check draws, the comparison (``args.compare``, with
the spec's ``atol`` and ``rtol``) must reject three mutants of the first draw's outputs:
the outputs zeroed, the outputs of the other draw, and one tile of them left poisoned
(0xFF bytes, as the worker leaves an output the kernel never wrote); and the reference must
change when its inputs change. Otherwise one line says the check is blind and what to change.
The worker audits a Python reference's outputs at its setup and a reference config's when
it captures them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .args import compare

TILE = 256  # elements of the tile left poisoned (the first ones: a block's worth)
POISON = 0xFF


def audit(first: Sequence, second: Sequence | None, atol: float, rtol: float) -> str | None:
    """Why the comparison cannot tell a wrong output from a right one ("the check is blind: …",
    one line), or None. ``first``, ``second``: the expected outputs of the two check draws
    (host arrays; ``second`` None without a second draw)."""
    first = [np.asarray(e) for e in first]
    if not first or all(e.size == 0 for e in first):
        return None
    tolerance = f"atol {atol:g}, rtol {rtol:g}"
    if second is not None:
        second = [np.asarray(e) for e in second]
        if all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second)):
            return ("the check is blind: the reference gives the same outputs for both input draws (does it read "
                    "its inputs? an args function that ignores its seed draws the same inputs twice): compute "
                    "the expected outputs from the arguments the reference is given")
    if compare([np.zeros_like(e) for e in first], first, atol, rtol) is None:
        what = ("the expected outputs are all zero: choose inputs whose outputs are not"
                if not any(np.any(e) for e in first) else
                "lower rtol below 1" if rtol >= 1 else "lower atol below the outputs' magnitude")
        return f"the check is blind: outputs of all zeros pass the comparison ({tolerance}: {what})"
    if second is not None and compare(second, first, atol, rtol) is None:
        return (f"the check is blind: the outputs of the other input draw pass as this draw's ({tolerance}): "
                "lower atol and rtol, or draw inputs that change the outputs")
    poisoned = []
    for e in first:
        p = np.array(e, copy=True)
        flat = p.reshape(-1).view(np.uint8) if p.dtype != np.bool_ else p.reshape(-1)
        if p.size:
            flat[:TILE * p.itemsize] = POISON if p.dtype != np.bool_ else True
        poisoned.append(p)
    if compare(poisoned, first, atol, rtol) is None:
        return (f"the check is blind: outputs with a tile of {min(TILE, first[0].size)} elements left unwritten "
                "pass the comparison (the reference is not finite there, which is not judged): give inputs "
                "whose expected outputs are finite")
    return None
