"""What the server of the report's drawing processes imports before it forks any: a tie to the process that
started it, which it dies with (its drawing processes die with it), then the report's modules, once for all of
them. Only that server imports this module.

The tie comes first, to the process named by ``name_starter``: a run killed while the server still loads
matplotlib takes the server with it, and one killed before the tie is made is found gone and the server exits.
"""

import os

from tuner.lifetime import die_with_starter

die_with_starter()
SERVER_PID = os.getpid()

import tuner.report  # noqa: E402,F401
