"""metadata.json as the report reads it: the mappings it relies on are checked once, and a field of another type
is left out with a note naming it, so that a hand-edited or damaged file costs a part of the report, never the
whole of it."""

from __future__ import annotations

from typing import Any

SHAPE: dict[str, Any] = {
    "experiment": {},
    "environments": {"*": {"device": {}, "peaks": {"theoretical": {}, "measured": {}}, "templates": {}}},
}
"""The fields that must be mappings; ``*`` stands for every key. Fields not named here are taken as they are."""
LISTS = ("runs",)
"""Top-level fields that must be lists."""


def in_words(value: Any) -> str:
    """``a list``, ``a string``, ``the number 3``: a JSON value's type in words."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return f"the value {str(value).lower() if value is not None else 'null'}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "a mapping" if isinstance(value, dict) else type(value).__name__


def _pruned(value: dict[str, Any], shape: dict[str, Any], where: str, source: str,
            notes: list[str]) -> dict[str, Any]:
    kept = {}
    for key, inner in value.items():
        inner_shape = shape.get(key, shape.get("*"))
        field = f"{where}.{key}" if where else str(key)
        if inner_shape is None:
            kept[key] = inner
        elif isinstance(inner, dict):
            kept[key] = _pruned(inner, inner_shape, field, source, notes)
        else:
            notes.append(f"{source}: field '{field}' is {in_words(inner)}, not a mapping; the report leaves it out")
    return kept


def checked_metadata(raw: Any, source: str, notes: list[str]) -> dict[str, Any]:
    """``raw`` (the parsed metadata.json) without the fields that do not have the shape the report reads; a note
    in ``notes`` for each field left out."""
    if not isinstance(raw, dict):
        notes.append(f"{source} holds {in_words(raw)}, not the mapping of experiment, environments and runs that "
                     f"`python -m tuner run` writes: the report leaves it out (no device description, ceilings or "
                     f"machine models)")
        return {}
    checked = _pruned(raw, SHAPE, "", source, notes)
    for key in LISTS:
        if key in checked and not isinstance(checked[key], list):
            notes.append(f"{source}: field '{key}' is {in_words(checked.pop(key))}, not a list; the report leaves "
                         f"it out")
    return checked
