"""Recorded search spaces: brute-force measurements of a whole space, read from Kernel Tuner's files."""

from tuner.recorded.family import is_recorded
from tuner.recorded.load import load_recorded, load_recorded_once
from tuner.recorded.space import RecordedSpace

__all__ = ["RecordedSpace", "is_recorded", "load_recorded", "load_recorded_once"]
