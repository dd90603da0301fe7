"""Recordings made before a family gained a parameter: a recorded row lacking a parameter of its family stands for
the configuration with the family's default value of it, where the family has one default value.

A parameter is added to a family with the default that keeps its kernel as it was (the wgmma family's SPLIT_K = 1:
no split of K), so a row recorded without it measured that configuration. A parameter with several default values
has no value a missing one stands for: such a row answers only its own key. The recording's counters answer the
same way (:class:`CompletedCounters`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tuner.config import Config
from tuner.counters.sources import Counted, CounterSource, Say
from tuner.kernels.discovery import families


def completed(config: Config) -> Config:
    """``config`` with each parameter of its family that it lacks set to the family's one default value."""
    family = families().get(config.family)
    if family is None:
        return config
    given = config.param_dict
    added = {p.name: p.default[0] for p in family.parameters if p.name not in given and len(p.default) == 1}
    return Config.make(config.problem, config.family, config.dtype, {**given, **added}) if added else config


class CompletedCounters:
    """A recording's counters (``counters``) asked by completed keys: each configuration is looked up as it was
    recorded (``recorded``: completed key → the recorded configuration) and its rows come back under the key asked."""

    def __init__(self, counters: CounterSource, recorded: Mapping[str, Config]):
        self.counters, self.recorded = counters, recorded

    def count(self, configs: Sequence[Config], say: Say | None = None, detail: bool = True) -> Counted:
        asked = {self.recorded[c.key].key: c.key for c in configs if c.key in self.recorded}
        counted = self.counters.count([self.recorded.get(c.key, c) for c in configs], say, detail)
        rows = [{**row, "config_key": asked.get(str(row["config_key"]), row["config_key"])} for row in counted.rows]
        return replace(counted, rows=rows)
