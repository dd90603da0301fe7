"""The device's ceilings measured again at the start of a run, where the caller asks for it (``remeasure_ceilings``,
``--remeasure-ceilings``): otherwise they are measured once per device and reused, with the load they were measured
under (:mod:`tuner.backends.cpu.summary`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from tuner.backends.abilities import Ability
from tuner.backends.protocol import Backend, DescribesDevice
from tuner.errors import Naming, TunerError


def remeasure_ceilings(backends: Sequence[Backend], name: Naming) -> None:
    """Measure the ceilings of every backend's device again (TunerError for a backend without a device)."""
    for backend in backends:
        if Ability.DESCRIBES_DEVICE not in backend.abilities:
            raise TunerError(f"{name('remeasure_ceilings')} measures the ceilings of the device a backend measures "
                             f"on; the {backend.name} backend has none (it answers from recorded measurements)")
    for backend in backends:
        cast(DescribesDevice, backend).device(remeasure=True)
