"""A kernel entry's restrictions as static rules: Python expressions over its parameters, as Kernel Tuner takes them.

``restrictions: ["BM * BN <= 128 * 128", "TM <= TN"]`` in a kernel entry of an experiment (or ``restrictions=`` of
``tuner.KernelSpec`` and ``tuner.tune``) rejects every combination for which an expression is false, beside the
family's own rules. The expressions are data: each is parsed and checked by :mod:`tuner.kernels.restrictions`
(parameter names, numbers, arithmetic, comparisons, ``and``/``or``/``not`` only) and evaluated by walking its tree,
never handed to ``eval``; a division by zero breaks the restriction. An expression is one line: a text holding a
line break or another control character is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tuner.errors import TunerError
from tuner.kernels.family import Constraint, Params
from tuner.kernels.restrictions import Restriction, parse_restriction


def restriction_rules(texts: Sequence[object], names: Sequence[str], where: str) -> tuple[Constraint, ...]:
    """One rule per expression over the parameters ``names``; TunerError naming ``where`` (a file and field,
    followed by ``[i]``) for one that is not an expression of the accepted kind."""
    return tuple(rule(_parse(text, names, f"{where}[{i}]")) for i, text in enumerate(texts))


def restriction_refusal(text: object, names: Sequence[str]) -> str | None:
    """Why ``text`` is not a restriction over the parameters ``names``, or None where it is one."""
    try:
        _parse(text, names, "the restriction")
    except TunerError as exc:
        return str(exc)
    return None


def _parse(text: object, names: Sequence[str], where: str) -> Restriction:
    if isinstance(text, str) and any(not character.isprintable() for character in text):
        raise TunerError(f"{where}: {text!r} holds a line break or another control character; a restriction is "
                         f"one line of text")
    return parse_restriction(text, names, where)


def rule(restriction: Restriction) -> Constraint:
    def holds(params: Params, dtype: str) -> bool:
        columns = {name: np.asarray([params[name]]) for name in sorted(restriction.names)}
        return bool(restriction.holds(columns)[0])

    return Constraint(f"restriction {restriction.text}", holds)
