"""What the server of the report's drawing processes imports before it forks any: the report's modules, once for
all of them, and a tie to the process that started it, which it dies with (its drawing processes die with it)."""

import os

import tuner.report  # noqa: F401
from tuner.lifetime import die_with_parent

die_with_parent(os.getppid())
