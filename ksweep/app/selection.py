"""A config named on the command line, read against its space: ``NAME=VALUE …`` (each name a
parameter, given once; each value of the parameter's kind, and one of its values unless the
caller shows configs outside the space) and a result id (``12`` or ``#12``). ``explain``,
``compare`` and ``profile`` read their configs here (``target.resolve_config``)."""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

from ..errors import KsweepError
from ..spec.model import Param
from ..spec.names import did_you_mean

_ID = re.compile(r"#?([0-9]+)")
_SHOWN = 12  # the values a message lists


def result_id(word: str) -> int | None:
    """The result id a word names (``12`` or ``#12``), else None. An id past SQLite's largest
    is still an id (of no result): the store answers that none has it."""
    m = _ID.fullmatch(word)
    return int(m.group(1)) if m else None


def given_values(words: Sequence[str], params: Sequence[Param], *, outside: bool = False) -> dict[str, Any]:
    """name -> value of each ``NAME=VALUE`` word, the value as the parameter's own (``128`` ->
    128, ``true`` -> True). One line (KsweepError) for a word that is no ``NAME=VALUE``, a name
    that is no parameter, a name given twice, a value not of the parameter's kind (a number's
    ``abc``) and, unless ``outside``, a value that is not one of the parameter's values."""
    given: dict[str, Any] = {}
    said: dict[str, str] = {}
    for w in words:
        if "=" not in w:
            raise KsweepError(f"'{w}': give the config as NAME=VALUE ..., a result id, 'best' or 'default'")
        name, text = (part.strip() for part in w.split("=", 1))
        param = next((p for p in params if p.name == name), None)
        if param is None:
            close = did_you_mean(name, [p.name for p in params])
            raise KsweepError(f"'{name}' is not a parameter" + (f" — did you mean '{close}'?" if close else
                              f" (parameters: {', '.join(p.name for p in params)})"))
        if name in said:
            raise KsweepError(f"{name} is given twice ({said[name]}, {name}={text}): give each parameter once")
        said[name] = f"{name}={text}"
        given[name] = value_of(param, text, outside=outside)
    return given


def value_of(param: Param, text: str, *, outside: bool = False) -> Any:
    """``text`` as one of ``param``'s values; with ``outside``, a value of their kind that is
    none of them (a number for numbers) as it reads."""
    values = param.values
    for v in values:
        if isinstance(v, bool):
            if text.lower() in ("true", "false", "1", "0") and (text.lower() in ("true", "1")) == v:
                return v
        elif str(v) == text:
            return v
    number = _number(text)
    if number is not None:
        same = next((v for v in values if _is_number(v) and v == number), None)
        if same is not None:  # 128.0 for 128
            return same
    kinds = "true or false" if values and all(isinstance(v, bool) for v in values) else \
        "numbers" if values and all(_is_number(v) for v in values) else None
    if kinds == "numbers" and number is None:
        raise KsweepError(f"{param.name}={text}: {param.name}'s values are numbers ({shown_values(values)}): "
                          f"give one of them")
    if kinds == "true or false" or not outside:
        raise KsweepError(f"{param.name}={text} is not one of {param.name}'s values ({shown_values(values)})")
    if number is not None and any(_is_number(v) for v in values):
        return number
    return text


def shown_values(values: Sequence[Any]) -> str:
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:_SHOWN])
    return shown + (f", … {len(values)} values" if len(values) > _SHOWN else "")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(text: str) -> int | float | None:
    """An int or a finite float that ``text`` reads as; None for anything else."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None
