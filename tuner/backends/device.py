"""What every device offers by the same names (:class:`Device`): the GPU (:mod:`tuner.backends.pycuda.summary`)
and the CPU (:mod:`tuner.backends.cpu.summary`), each a module of its backend's folder."""

from __future__ import annotations

from typing import Any, Protocol


class Device(Protocol):
    """A device, as its backend's summary module describes it (a module satisfies the protocol)."""

    def describe(self) -> dict[str, Any]:
        """What the device is, read without measuring anything."""
        ...

    def summary(self, remeasure: bool = False, *, progress: bool = False) -> dict[str, Any]:
        """Its description, versions, theoretical peaks and measured ceilings (cached; measured again with
        ``remeasure``); ``progress``: say on stderr what is measured."""
        ...

    def format_summary(self, info: dict[str, Any]) -> str:
        """The summary as ``python -m tuner device`` prints it."""
        ...
