"""Kernel families: each ``<name>.py`` declares a ``FAMILY`` and renders ``<name>.cu.j2``."""
