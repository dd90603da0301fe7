"""Child processes that start without running the user's script again.

Python's ``spawn`` and ``forkserver`` start methods import the parent's main module in every child (as
``__mp_main__``), so that functions defined there can be unpickled. A script that calls ``tuner.run`` at its top
level, without an ``if __name__ == "__main__":`` guard, would run again in each measuring process, which refuses to
start processes of its own while it is being imported ("An attempt has been made to start a new process before
the current process has finished its bootstrapping phase"). The package's children need nothing of the main module
(their entry points live in the package), so while one starts, the main module hides what names it (``__file__``
and ``__spec__``) and the child imports none. The main module of a notebook or an interactive session names
nothing, so nothing changes there.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

_NAMES = ("__file__", "__spec__")
_lock = threading.Lock()


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """While the block runs, a child process started through multiprocessing imports nothing of ``__main__``."""
    main = sys.modules.get("__main__")
    with _lock:
        saved = {name: vars(main)[name] for name in _NAMES if main is not None and name in vars(main)}
        try:
            for name in saved:
                if name == "__spec__":
                    main.__spec__ = None  # type: ignore[union-attr]
                else:
                    delattr(main, name)
            yield
        finally:
            for name, value in saved.items():
                setattr(main, name, value)
