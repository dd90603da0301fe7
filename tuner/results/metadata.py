"""What every backend's environment records beside its device (versions, git state, the families' templates), and
``metadata_id()``, which names an environment by a short hash, so results rows can point at the environment they
were measured in (the environments themselves are built beside each backend).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import tomllib
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "tiled-tuner"
"""The name under which pip installs the package (``tuner`` on the package index is another project)."""


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def tuner_version() -> str | None:
    """The installed version, or the one in pyproject.toml when running from a checkout."""
    installed = _version(DISTRIBUTION)
    if installed:
        return installed
    try:
        return tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None


def python_versions() -> dict[str, str | None]:
    return {
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "optuna": _version("optuna"),
        "tuner": tuner_version(),
    }


def git_state(path: Path = PROJECT_ROOT) -> dict[str, Any]:
    """{commit, dirty} of the checkout holding the tuner.

    A copy of the tree without its ``.git`` (shipped to a GPU host, say) is described by the environment
    variables TUNER_GIT_COMMIT and TUNER_GIT_DIRTY (``1`` or ``0``) when they are set, else by Nones.
    """
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        dirty = os.environ.get("TUNER_GIT_DIRTY")
        return {"commit": os.environ.get("TUNER_GIT_COMMIT") or None,
                "dirty": None if dirty is None else dirty.strip() not in ("", "0", "false")}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": None if status is None else bool(status.strip())}


def family_fields() -> dict[str, Any]:
    """An environment's fields that describe the families: their template hashes (with and without the code they
    import), the folders of families beyond the package's and what a report needs of those."""
    from tuner.kernels.discovery import families, family_dirs, folder_family_records, template_hash, template_text_hash

    return {
        "templates": {name: template_hash(name) for name in families()},
        "template_texts": {name: template_text_hash(name) for name in families()},
        "template_dirs": [str(folder) for folder in family_dirs()],
        "families": folder_family_records(),
    }


def metadata_id(env: dict[str, Any]) -> str:
    """A short stable hash of the environment, ignoring when it was created."""
    stable = {key: value for key, value in env.items() if key != "created_utc"}
    text = json.dumps(stable, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]
