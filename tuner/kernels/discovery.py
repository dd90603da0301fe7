"""Where kernel families are found: the package's own ``kernel_templates``, the entry points of installed
packages (group ``tuner.families``), and folders an experiment (``template_dirs:``) or the command line
(``--templates DIR``) names.

A folder holds one ``<name>.py`` per family, each defining ``FAMILY = Family(...)``, beside its Jinja source.
An entry point names a Family, a module defining ``FAMILY``, or a package whose folder holds families.
Two families of the same name are an error that names both files.

The folders in use are process state (``use_family_dirs``), so that a measuring process started with the same
folders (``family_dirs()``) finds the same families.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from tuner.errors import TunerError
from tuner.kernels.family import Family

ENTRY_POINT_GROUP = "tuner.families"


class UnknownFamily(TunerError, KeyError):
    """No family of that name is found (a TunerError for the user, a KeyError for lookups)."""

    def __str__(self) -> str:
        return str(self.args[0])


_dirs: tuple[Path, ...] = ()
_recorded: dict[str, Family] = {}


def use_family_dirs(dirs: Iterable[str | Path]) -> None:
    """Add folders of families to those searched (each folder once, in order)."""
    global _dirs
    added = []
    for entry in dirs:
        folder = Path(entry).expanduser().resolve()
        if not folder.is_dir():
            raise TunerError(f"{entry}: no such folder of kernel families")
        if folder not in _dirs and folder not in added and folder != _package_folder():
            added.append(folder)
    if added:
        _dirs = (*_dirs, *added)
        families.cache_clear()


def use_recorded_family(family: Family) -> None:
    """Add a family that stands for a recording (:mod:`tuner.recorded.family`) to those known; it replaces a
    recorded family of the same name (the experiment read last names it)."""
    _recorded[family.name] = family
    families.cache_clear()


def family_dirs() -> tuple[Path, ...]:
    """The folders added with ``use_family_dirs``."""
    return _dirs


def _package_folder() -> Path:
    import kernel_templates

    return Path(kernel_templates.__file__).resolve().parent


@contextlib.contextmanager
def _importable(folder: Path) -> Iterator[None]:
    """Let a family's module import the modules beside it while it is loaded."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))


def _load_file(path: Path) -> ModuleType:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"tuner_families_{digest}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TunerError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _importable(path.parent):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a user's declaration may fail in any way, exit included: say where
        del sys.modules[name]
        raise TunerError(f"{path}: the family declaration raised {type(exc).__name__}: {exc}") from None
    return module


def _found(module: ModuleType, path: Path) -> Family | None:
    family = getattr(module, "FAMILY", None)
    if family is None:
        return None
    if not isinstance(family, Family):
        raise TunerError(f"{path}: FAMILY is a {type(family).__name__}, not a tuner.kernels.family.Family")
    return _placed(family, path)


def _placed(family: Family, path: Path) -> Family:
    """The family with the file that declares it and the folder its template lies in. Its name must be an
    identifier: it names the family's template file, the report's figures and the columns of the tables."""
    if not isinstance(family.name, str) or not family.name.isidentifier():
        raise TunerError(f"{path}: the family name {family.name!r} is not an identifier (letters, digits and '_', "
                         f"not starting with a digit); it names the template file beside the declaration and files "
                         f"of the report, so it may hold no '/' or '.'")
    found = replace(family, folder=path.parent, declaration=path)
    if Path(found.template_file).name != found.template_file or found.template_file.startswith("."):
        raise TunerError(f"{path}: family '{found.name}' names its template {found.template_file!r}; give the name "
                         f"of a file beside the declaration")
    if not found.template_path.is_file():
        raise TunerError(f"{path}: family '{found.name}' has no template {found.template_file} beside it")
    return found


def _package_families() -> Iterator[Family]:
    import kernel_templates

    for info in pkgutil.iter_modules(kernel_templates.__path__):
        module = importlib.import_module(f"kernel_templates.{info.name}")
        family = _found(module, Path(module.__file__ or "").resolve())
        if family is not None:
            yield family


def _folder_families(folder: Path) -> Iterator[Family]:
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        family = _found(_load_file(path), path)
        if family is not None:
            yield family


def _entry_point_families() -> Iterator[Family]:
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
        except (Exception, SystemExit) as exc:  # an installed package's failure to import: name it
            raise TunerError(f"the entry point '{entry.name} = {entry.value}' ({ENTRY_POINT_GROUP}) cannot be "
                             f"loaded: {type(exc).__name__}: {exc}") from None
        if isinstance(loaded, Family):
            module = sys.modules[entry.value.split(":")[0]]
            yield _placed(loaded, Path(module.__file__ or "").resolve())
        elif isinstance(loaded, ModuleType):
            path = Path(loaded.__file__ or "").resolve()
            family = _found(loaded, path)
            if family is not None:
                yield family
            elif path.name == "__init__.py":
                yield from _folder_families(path.parent)
        else:
            raise TunerError(f"the entry point '{entry.name} = {entry.value}' ({ENTRY_POINT_GROUP}) names a "
                             f"{type(loaded).__name__}, not a Family or a module of families")


@cache
def families() -> dict[str, Family]:
    """Every family found, by name."""
    found: dict[str, Family] = {}
    sources = [_package_families(), _entry_point_families(), *(_folder_families(d) for d in _dirs),
               iter(_recorded.values())]
    for source in sources:
        for family in source:
            earlier = found.get(family.name)
            if earlier is not None and earlier.declaration != family.declaration:
                raise TunerError(f"two kernel families are named '{family.name}': {_origin(earlier)} and "
                                 f"{_origin(family)}; rename one")
            found[family.name] = family
    return dict(sorted(found.items()))


def _origin(family: Family) -> Path | None:
    return family.recording or family.declaration


def is_package_family(family: Family) -> bool:
    """Whether the family is one of the package's own (in ``kernel_templates``)."""
    return family.folder == _package_folder()


def get_family(name: str) -> Family:
    known = families()
    if name not in known:
        raise UnknownFamily(f"unknown kernel family '{name}'; known families: {', '.join(known)} (add a folder of "
                         f"families with template_dirs: in the experiment or --templates DIR)")
    return known[name]


def folder_family_records() -> dict[str, dict[str, object]]:
    """What a report needs of each family found in a folder of ``use_family_dirs``, whose code a report made later
    from the run folder does not import: its description, target, parameters and template text."""
    records: dict[str, dict[str, object]] = {}
    for family in families().values():
        if family.folder is None or family.recording is not None or family.folder not in _dirs:
            continue
        records[family.name] = {"description": family.description, "target": family.target,
                                "parameters": list(family.parameter_names), "template_file": family.template_file,
                                "template": family.template_path.read_text(encoding="utf-8")}
    return records


def template_hash(name: str) -> str:
    """SHA-256 (first 16 hex digits) of the family's template and its declaration module."""
    family = get_family(name)
    sources = (family.recording,) if family.recording is not None else (family.template_path, family.declaration)
    return _files_hash(tuple((str(path), *_stamp(path)) for path in sources if path is not None))


def template_text_hash(name: str) -> str:
    """SHA-256 (first 16 hex digits) of the family's template text alone (its recording, for a recorded family):
    what decides the source a configuration compiles to, where its declaration module may change beside it."""
    family = get_family(name)
    source = family.recording if family.recording is not None else family.template_path
    return _files_hash(((str(source), *_stamp(source)),))


def changed_template(environment: Mapping[str, Any], name: str) -> tuple[str, str] | None:
    """(recorded, current) hash where the family's template differs from the one a run's environment recorded,
    else None: the template text's hash where the environment keeps it (``template_texts``), else (a run written
    before) the hash of the template and its declaration (``templates``)."""
    for key, current in (("template_texts", template_text_hash), ("templates", template_hash)):
        recorded = environment.get(key)
        if isinstance(recorded, Mapping) and isinstance(recorded.get(name), str):
            now = current(name)
            return None if recorded[name] == now else (recorded[name], now)
    return None


def _stamp(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_mtime_ns, status.st_size


@functools.lru_cache(maxsize=256)
def _files_hash(files: tuple[tuple[str, int, int], ...]) -> str:
    """The hash of files named with their modification time and size (read again when either changes)."""
    digest = hashlib.sha256()
    for path, _, _ in files:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]
