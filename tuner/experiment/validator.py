"""The checks an experiment file's values pass (:class:`_Validator`), each refusal naming the file, line and field
through the YAML document it reads."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from tuner.errors import did_you_mean
from tuner.experiment.run_settings import Rule
from tuner.experiment.yaml_document import Document, FieldPath


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


class _Validator:
    def __init__(self, document: Document):
        self.r = document

    def mapping(self, value: Any, path: FieldPath, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.r.error(path, f"expected a mapping with keys {', '.join(required + optional)}, "
                                     f"found {_describe(value)}")
        allowed = required + optional
        for key in value:
            if key not in allowed:
                raise self.r.error((*path, key), f"unknown key '{key}'{did_you_mean(key, allowed)}; allowed here: "
                                                 f"{', '.join(allowed)}")
        for key in required:
            if key not in value:
                raise self.r.error(path, f"missing required key '{key}'")
        return value

    def integer(self, value: Any, path: FieldPath, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.r.error(path, f"expected an integer ≥ {minimum}, found {_describe(value)}")
        return value

    def number(self, value: Any, path: FieldPath, positive: bool = True) -> float:
        expected = f"expected a {'positive ' if positive else ''}number"
        if isinstance(value, bool) or not isinstance(value, int | float) or (positive and value <= 0):
            raise self.r.error(path, f"{expected}, found {_describe(value)}")
        if not math.isfinite(value):
            raise self.r.error(path, f"{expected}, found {_describe(value)} (only finite numbers are allowed)")
        return float(value)

    def ruled(self, value: Any, path: FieldPath, rule: Rule) -> Any:
        if not rule.accepts(value):
            raise self.r.error(path, f"expected {rule.expected}, found {_describe(value)}{rule.remark(value)}")
        return value

    def text(self, value: Any, path: FieldPath) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.r.error(path, f"expected non-empty text, found {_describe(value)}")
        return value

    def boolean(self, value: Any, path: FieldPath) -> bool:
        if not isinstance(value, bool):
            raise self.r.error(path, f"expected true or false, found {_describe(value)}")
        return value

    def choice(self, value: Any, path: FieldPath, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.r.error(path, f"expected one of {', '.join(choices)}, found {_describe(value)}"
                                     f"{did_you_mean(value, choices)}")
        return value

    def sequence(self, value: Any, path: FieldPath) -> list:
        if not isinstance(value, list):
            raise self.r.error(path, f"expected a list, found {_describe(value)}")
        return value

    def values(self, value: Any, path: FieldPath, check: Callable[[Any, FieldPath], Any]) -> tuple:
        if not isinstance(value, list) or not value:
            raise self.r.error(path, f"expected a non-empty list of values to search, found {_describe(value)}")
        items = tuple(check(v, (*path, i)) for i, v in enumerate(value))
        self.unique(items, path, lambda item: f"the value {item!r} is listed twice")
        return items

    def unique(self, items: Iterable[Hashable], path: FieldPath, message: Callable[[Any], str],
               within: tuple[str, ...] = ()) -> None:
        """Refuse the second of two equal items of the list at ``path`` (the error names ``path[i]`` + ``within``)."""
        seen: set[Hashable] = set()
        for i, item in enumerate(items):
            if item in seen:
                raise self.r.error((*path, i, *within), message(item))
            seen.add(item)
