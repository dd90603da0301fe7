"""The results table's files in a run folder: results.parquet, results.csv (safe to open in a spreadsheet) and
metadata.json, written atomically and read back (a table an earlier version wrote is refused)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from tuner import atomic_file, input_file
from tuner.errors import TunerError
from tuner.results.schema import BASELINE_FAMILY

RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
METADATA_JSON = "metadata.json"
MAX_METADATA_BYTES = 64 * 2**20
FORMER_STRATEGY_COLUMN = "sampler"
"""What tables written before named the ``strategy`` column: such a table is refused, naming the change."""
FORMER_BASELINE_FAMILY = "cublas"
"""What tables written before named the baseline rows' family: such a table is refused, naming the change."""

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _defused(cell: Any) -> Any:
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell a spreadsheet would take for a formula (one starting with =, +, -, @, a tab
    or a carriage return, other than a plain number) written after an apostrophe, which spreadsheets read as
    "text follows" (results.csv only; results.parquet keeps the text as it is)."""
    text = [c for c in df.columns if pd.api.types.is_string_dtype(df[c]) or df[c].dtype == object]
    if not text:
        return df
    safe = df.copy()
    for column in text:
        safe[column] = safe[column].map(_defused, na_action="ignore")
    return safe


def save(df: pd.DataFrame, metadata: dict[str, Any], folder: str | Path) -> None:
    """Write results.parquet, results.csv and metadata.json, each replaced atomically.

    A folder that cannot take them (a full disk, a read-only file system, no permission) raises TunerError
    naming it; the files written there before are left as they were, and no partial file stays behind."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, write in (
            (RESULTS_PARQUET, lambda p: df.to_parquet(p, index=False)),
            (RESULTS_CSV, lambda p: spreadsheet_safe(df).to_csv(p, index=False)),
            (METADATA_JSON, lambda p: p.write_text(json.dumps(metadata, indent=2, sort_keys=True, default=str))),
        ):
            atomic_file.replace_with(folder / name, write)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)  # pyarrow wraps the system's words in its own
        raise TunerError(f"{folder}: the results table cannot be saved in this folder ({reason}); the files saved "
                         f"there before are left as they were, and a run's evaluations stay in its Optuna storage, "
                         f"from which the table is rebuilt: free space or make the folder writable, then run the "
                         f"same command again") from None


def load_table(path: str | Path) -> pd.DataFrame:
    """The results table of a run folder, or of a results.parquet file (only a regular file: InputFileError for a
    FIFO or a device)."""
    path = Path(path)
    table = path / RESULTS_PARQUET if path.is_dir() else path
    why = input_file.not_regular(table)
    if why is not None:
        raise input_file.InputFileError(f"{table} {why}")
    df = pd.read_parquet(table)
    changed = earlier_format(df)
    if changed:
        raise TunerError(f"{table} was written by an earlier version of the tuner: {changed}; it is left as it "
                         f"was: rename it so, or run the experiment again into a new output folder")
    return df


def earlier_format(df: pd.DataFrame) -> str | None:
    """What changed since an earlier version wrote a table with these columns; None for a current table."""
    if FORMER_STRATEGY_COLUMN in df.columns:
        return f"its column '{FORMER_STRATEGY_COLUMN}' is called 'strategy' now"
    if "family" in df.columns and (df["family"] == FORMER_BASELINE_FAMILY).any():
        return f"its baseline rows' family '{FORMER_BASELINE_FAMILY}' is called '{BASELINE_FAMILY}' now"
    return None


def load_metadata(path: str | Path) -> Any:
    """The parsed metadata.json beside a results table ({} where there is none); not necessarily a mapping.
    Raises ValueError (json.JSONDecodeError) when the file is not JSON or nests too deeply to be read, OSError
    where it cannot be read, is no regular file or is larger than MAX_METADATA_BYTES."""
    path = Path(path)
    meta_file = (path if path.is_dir() else path.parent) / METADATA_JSON
    if not meta_file.exists():
        return {}
    text = input_file.read_text(meta_file, MAX_METADATA_BYTES)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{meta_file} nests its values too deeply to be read") from None


def load(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A recorded table and its metadata, from a run folder or a results.parquet file."""
    return load_table(path), load_metadata(path)
