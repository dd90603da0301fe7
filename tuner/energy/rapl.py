"""RAPL energy on the CPU: the packages' (and their DRAM's) running totals under ``/sys/class/powercap``.

Linux's powercap driver gives each RAPL zone a folder ``intel-rapl:N`` (the package N, also on AMD processors)
with subzones ``intel-rapl:N:M`` (cores, uncore, DRAM). Their ``energy_uj`` counts microjoules and wraps to 0
past ``max_energy_range_uj``. The energy of the CPU is the sum over the package zones and the DRAM subzones (the
package domain does not hold the DRAM's); the ``psys`` zone, which holds the packages, and the MMIO copies of the
package zones are left out so that nothing is counted twice. A package counts every core's energy, whatever runs
there: a measurement shares it with whatever else the machine does.

Where there is no zone, or ``energy_uj`` is readable by root alone (Linux's default since 5.10), RAPL is not
available here, and :func:`rapl_zones` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tuner.energy.counter import counter_delta

POWERCAP = Path("/sys/class/powercap")
ZONE_PREFIX = "intel-rapl:"


@dataclass(frozen=True)
class RaplZone:
    name: str
    """The zone's ``name``: package-0, dram, ..."""
    folder: Path
    largest: int | None
    """``max_energy_range_uj``: the counter's largest value before it wraps (None where the file is missing)."""

    def read_uj(self) -> int:
        return int((self.folder / "energy_uj").read_text().strip())


class RaplUnavailable(Exception):
    """No RAPL zone can be read here; the message says why."""


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def rapl_zones(root: Path = POWERCAP) -> list[RaplZone]:
    """The zones whose energies add up to the CPU's (see the module text); RaplUnavailable saying why there are
    none that this process can read."""
    folders = sorted(p for p in root.glob(f"{ZONE_PREFIX}*") if p.is_dir()) if root.is_dir() else []
    if not folders:
        raise RaplUnavailable(f"RAPL energy is not available here: no {root}/{ZONE_PREFIX}* zone (the processor or "
                              f"the kernel exposes none, as in most virtual machines)")
    zones = []
    for folder in folders:
        depth = folder.name.count(":")
        name = _text(folder / "name") or ""
        if (depth == 1 and name.startswith("package")) or (depth == 2 and name == "dram"):
            largest = _text(folder / "max_energy_range_uj")
            zones.append(RaplZone(name, folder, int(largest) if largest and largest.isdigit() else None))
    if not zones:
        raise RaplUnavailable(f"RAPL energy is not available here: {root} has no package zone among "
                              f"{', '.join(p.name for p in folders)}")
    for zone in zones:
        try:
            zone.read_uj()
        except PermissionError:
            raise RaplUnavailable(f"RAPL energy is not available here: {zone.folder / 'energy_uj'} is readable by "
                                  f"root alone (Linux's default since 5.10; an administrator can grant read access)"
                                  ) from None
        except (OSError, ValueError) as exc:
            raise RaplUnavailable(f"RAPL energy is not available here: {zone.folder / 'energy_uj'} cannot be read "
                                  f"({exc})") from None
    return zones


class RaplCounter:
    """The CPU's energy in microjoules, as one running total over its zones: ``read()`` the zones now, ``delta``
    between two such reads (each zone's wrap-around handled)."""

    def __init__(self, zones: list[RaplZone]):
        self.zones = zones

    def read(self) -> tuple[int, ...]:
        return tuple(zone.read_uj() for zone in self.zones)

    def delta_uj(self, before: tuple[int, ...], after: tuple[int, ...]) -> int:
        return sum(counter_delta(b, a, zone.largest) for zone, b, a in zip(self.zones, before, after, strict=True))

    def describe(self) -> str:
        return "RAPL " + " + ".join(f"{zone.name} ({zone.folder.name})" for zone in self.zones)
