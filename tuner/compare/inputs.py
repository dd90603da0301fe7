"""What a comparison runs on: recorded spaces named by files and folders.

Each path is one of: a Kernel Tuner cache file or T4 results file (``.json``, ``.json.gz``), one space named
after the file; a run folder of this tuner (or its ``results.parquet``), one space per study, named
``<folder>/<study>``; an experiment file (``.yaml``, ``.yml``) whose kernel entries name recordings, one space per
recorded entry, named after the entry.
"""

from __future__ import annotations

from pathlib import Path

from tuner.errors import TunerError
from tuner.recorded import RecordedSpace, load_recorded_once
from tuner.recorded.family import recording_name
from tuner.recorded.run_folder import is_run_folder, load_run_folder

EXPERIMENT_SUFFIXES = (".yaml", ".yml")


def recorded_spaces(paths: list[str | Path]) -> dict[str, RecordedSpace]:
    """Every space the paths name, by name, in the order given."""
    if not paths:
        raise TunerError("name at least one recorded space: a Kernel Tuner cache or T4 file, a run folder, or an "
                         "experiment whose kernels are recordings")
    spaces: dict[str, RecordedSpace] = {}
    for entry in paths:
        for name, space in _spaces_of(Path(entry)).items():
            if name in spaces:
                raise TunerError(f"two recorded spaces are named '{name}' ({spaces[name].source} and "
                                 f"{space.source}); name each once")
            spaces[name] = space
    return spaces


def _spaces_of(path: Path) -> dict[str, RecordedSpace]:
    if not path.exists():
        raise TunerError(f"{path}: no such file or folder (give a Kernel Tuner cache or T4 file, a run folder, or "
                         f"an experiment file)")
    if is_run_folder(path):
        folder = path.parent if path.is_file() else path
        return {f"{folder.name}/{study}": space for study, space in load_run_folder(path).items()}
    if path.suffix in EXPERIMENT_SUFFIXES:
        return _experiment_spaces(path)
    if path.is_dir():
        raise TunerError(f"{path}: a folder without a results table (a run folder holds results.parquet)")
    return {recording_name(path): load_recorded_once(path)}


def _experiment_spaces(path: Path) -> dict[str, RecordedSpace]:
    from tuner.experiment.schema import load_experiment  # the experiment parser is only needed here
    from tuner.space.entry_space import entry_families

    spaces = {}
    for name, family in entry_families(load_experiment(path)).items():
        if family.recording is None:
            raise TunerError(f"{path}: the kernel entry '{name}' is a template; a comparison needs recorded spaces "
                             f"(entries 'recorded: FILE')")
        spaces[name] = load_recorded_once(family.recording)
    return spaces
