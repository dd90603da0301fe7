"""What a backend can do beyond evaluating configurations: the abilities a backend declares (its ``abilities``).

Every backend evaluates configurations and answers the questions of :class:`tuner.backends.protocol.Backend`.
The abilities below are optional: a backend that has one says so in its ``abilities`` and implements the
matching protocol of :mod:`tuner.backends.protocol`, whose functions are the only way the run reaches it. A
backend that does not declare an ability is never asked for it, whatever methods it happens to have.

This module imports nothing, so that the protocols and the catalog of backends (:mod:`tuner.backends.catalog`)
can name abilities without loading a backend.
"""

from __future__ import annotations

import enum


class Ability(enum.Enum):
    SUBMITS = "submits"
    """``submit(config)``: starts an evaluation and answers it later, so that the search records one evaluation
    while the device measures the next (:class:`~tuner.backends.protocol.Submits`)."""
    COMPILES_AHEAD = "compiles ahead"
    """``ready(config)``, ``wait_compiled(configs, timeout)`` and ``ask_ahead``: compiles the configurations handed
    to ``prefetch`` while the device measures, and says which are compiled, so that the search starts those first
    (:class:`~tuner.backends.protocol.CompilesAhead`)."""
    PREPARES = "prepares inputs"
    """``prepare(problem, dtype)``: makes a problem's inputs and reference ahead of its first request
    (:class:`~tuner.backends.protocol.Prepares`)."""
    STARTS_IN_BACKGROUND = "starts in the background"
    """``wait_ready()``: its measuring process starts while the run sets up, and is waited for before the first
    measurement (:class:`~tuner.backends.protocol.StartsInBackground`)."""
    DESCRIBES_DEVICE = "describes its device"
    """``device(remeasure)``: the summary of the device it measures on: description, versions, peaks and measured
    ceilings (:class:`~tuner.backends.protocol.DescribesDevice`)."""
    MEASURES_ENERGY = "measures energy"
    """``energy_unavailable()``: can give each measurement the energy of one launch, and says why not where this
    machine or its settings cannot (:class:`~tuner.backends.protocol.MeasuresEnergy`)."""
    READS_COUNTERS = "reads counters"
    """``counters()``: where the hardware counters of its configurations come from
    (:class:`~tuner.backends.protocol.ReadsCounters`)."""

    def __str__(self) -> str:
        return self.value
