"""Text of a configuration key that no two different configurations share.

A key joins ``name=value`` pairs with ``,`` and its parts with ``/``. A name or a text value written as it is
could itself hold those marks (a recorded value ``x,B=y`` next to ``x`` makes ``A=x,B=y,B=z`` twice), so a text
is written bare only when it is a plain word that cannot be read as anything else; every other text is written
as a JSON string, in quotes with its quotes and backslashes escaped. Numbers and booleans are written as Python
writes them. Plain words keep the keys of earlier run folders unchanged.
"""

from __future__ import annotations

import json
import re

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_READ_AS_OTHER = frozenset({"True", "False", "None", "inf", "nan"})
"""Words that a number or a boolean is written as, so that a text spelling one must be quoted."""


def key_text(value: object) -> str:
    """``value`` as a key writes it: a plain word or a number bare, any other text quoted."""
    if not isinstance(value, str):
        return str(value)
    if _PLAIN.fullmatch(value) and value not in _READ_AS_OTHER:
        return value
    return json.dumps(value)


def pairs_text(params: tuple[tuple[str, object], ...]) -> str:
    """``name=value`` pairs joined by commas, each name and value written by :func:`key_text`."""
    return ",".join(f"{key_text(name)}={key_text(value)}" for name, value in params)
