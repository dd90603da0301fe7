"""Configurations of one problem made on demand from rows of kernel entries' spaces: a sequence that makes only
the configurations asked for, the union of several entries' rows without repeats, and the reasons of rejected
rows by configuration key."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, overload

import numpy as np

from tuner.config import Config, ParamValue, Problem


class EntrySpace(Protocol):
    """What a sequence needs of a kernel entry's space (tuner.space.entry_space.EntrySpace)."""

    @property
    def family(self) -> Any: ...

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def values(self) -> tuple[tuple[ParamValue, ...], ...]: ...

    @property
    def dtypes(self) -> tuple[str, ...]: ...

    @property
    def valid_rows(self) -> np.ndarray: ...

    @property
    def invalid_rows(self) -> np.ndarray: ...

    def configs(self, problem: Problem, rows: np.ndarray, chunk: int = ...) -> Iterator[Config]: ...

    def row_of(self, dtype: str, params: Mapping[str, ParamValue]) -> int | None: ...

    def rows_of_dtype(self, rows: np.ndarray, dtype: str) -> np.ndarray: ...

    def listed_by(self, other: Any, rows: np.ndarray) -> np.ndarray: ...

    def broken(self, row: int) -> list[str]: ...


class ConfigSequence(Sequence[Config]):
    """The configurations at the given rows of each entry space, entry after entry, rows ascending."""

    def __init__(self, problem: Problem, segments: Iterable[tuple[EntrySpace, np.ndarray]]):
        self.problem = problem
        self.segments = tuple(segments)
        self._ends = np.cumsum([len(rows) for _, rows in self.segments], dtype=np.int64)

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    @overload
    def __getitem__(self, index: int) -> Config: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Config, ...]: ...

    def __getitem__(self, index: int | slice) -> Config | tuple[Config, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(f"configuration {index} of {len(self)}")
        segment = int(np.searchsorted(self._ends, position, side="right"))
        offset = position - (int(self._ends[segment - 1]) if segment else 0)
        entry, rows = self.segments[segment]
        return next(entry.configs(self.problem, rows[offset:offset + 1]))

    def __iter__(self) -> Iterator[Config]:
        for entry, rows in self.segments:
            yield from entry.configs(self.problem, rows)

    def __contains__(self, config: object) -> bool:
        return isinstance(config, Config) and self.locate(config) is not None

    def locate(self, config: Config) -> tuple[EntrySpace, int] | None:
        """The entry space and row holding ``config``, or None when it is not in the sequence."""
        if config.problem != self.problem:
            return None
        params = dict(config.params)
        for entry, rows in self.segments:
            if entry.family.name != config.family:
                continue
            row = entry.row_of(config.dtype, params)
            if row is not None:
                at = int(np.searchsorted(rows, row))
                if at < len(rows) and rows[at] == row:
                    return entry, row
        return None

    def locate_key(self, key: str) -> tuple[EntrySpace, int] | None:
        """As ``locate``, for a configuration given by its key (``Config.key``)."""
        parts = key.split("/", 3)
        if len(parts) != 4 or parts[0] != self.problem.label:
            return None
        _, family, dtype, text = parts
        named = dict(item.partition("=")[::2] for item in text.split(",")) if text else {}
        for entry, _ in self.segments:
            if entry.family.name != family or set(named) != set(entry.names):
                continue
            by_text = {name: {str(v): v for v in values} for name, values in zip(entry.names, entry.values,
                                                                                  strict=True)}
            if all(named[name] in by_text[name] for name in named):
                config = Config.make(self.problem, family, dtype, {n: by_text[n][t] for n, t in named.items()})
                if config.key == key:
                    return self.locate(config)
        return None


def union(problem: Problem, entries: Sequence[EntrySpace], dtype: str | None = None,
          valid: bool = True) -> ConfigSequence:
    """The valid (or the invalid) configurations of ``entries`` for ``problem``, of ``dtype`` only when given,
    in enumeration order, each once: a combination an earlier entry lists is left to that entry."""
    segments = []
    for i, entry in enumerate(entries):
        rows = entry.valid_rows if valid else entry.invalid_rows
        if dtype is not None:
            rows = entry.rows_of_dtype(rows, dtype)
        for earlier in entries[:i]:
            rows = rows[~entry.listed_by(earlier, rows)]
        segments.append((entry, rows))
    return ConfigSequence(problem, segments)


class Rejections(Mapping[str, str]):
    """Config key -> the static rules it breaks, for the (invalid) configurations of a sequence."""

    def __init__(self, configs: ConfigSequence):
        self.configs = configs

    def __getitem__(self, key: str) -> str:
        found = self.configs.locate_key(key)
        if found is None:
            raise KeyError(key)
        entry, row = found
        return "; ".join(entry.broken(row))

    def __iter__(self) -> Iterator[str]:
        return (config.key for config in self.configs)

    def __len__(self) -> int:
        return len(self.configs)
