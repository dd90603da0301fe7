"""The results of a run: the table of evaluations with its schema and files, and the environment of its
measurements. This face holds the table's public names, as :mod:`tuner.results.table` gathers them."""

from tuner.results import table
from tuner.results.table import *  # noqa: F403

__all__ = list(table.__all__)
