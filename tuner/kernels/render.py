"""Rendering a configuration's source from its family's Jinja template, and its launch geometry."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from tuner.config import DTYPE_ACC_CTYPE, DTYPE_CTYPE, Config
from tuner.kernels.discovery import get_family, template_hash
from tuner.kernels.family import Dim3


@dataclass(frozen=True)
class Launch:
    kernel_name: str
    block: Dim3
    grid: Dim3
    """The family's grid; a persistent launch has fewer blocks, which walk its cells (see ``grid_on``)."""
    dynamic_shared_bytes: int
    resident_blocks_per_sm: int = 0
    """Blocks per SM of a persistent launch; 0 launches one block per cell of ``grid``."""

    def grid_on(self, multiprocessors: int | None) -> Dim3:
        """The grid launched on a GPU with this many SMs: ``grid`` itself, or for a persistent launch as many
        blocks along x as the SMs hold at once, at most one per cell. Unknown SMs leave ``grid`` as it is."""
        if not self.resident_blocks_per_sm or not multiprocessors:
            return self.grid
        cells = self.grid[0] * self.grid[1] * self.grid[2]
        return (min(cells, multiprocessors * self.resident_blocks_per_sm), 1, 1)


@cache
def _environment(folder: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(config: Config) -> str:
    """The source of one configuration; the same configuration always renders the same text."""
    return _rendered(config, template_hash(config.family))


@functools.lru_cache(maxsize=4096)
def _rendered(config: Config, digest: str) -> str:
    """The source of one configuration from its family's template as it is now (``digest``: its hash)."""
    family = get_family(config.family)
    values = ", ".join(f"{k}={v}" for k, v in config.params)
    header = (
        f"// tuner kernel family '{family.name}' (template {family.template_file}, "
        f"hash {digest})\n"
        f"// dtype={config.dtype}; {values}"
    )
    assert family.folder is not None  # discovery places every family
    template = _environment(family.folder).get_template(family.template_file)
    return template.render(header=header, dtype=config.dtype, ctype=DTYPE_CTYPE[config.dtype],
                           acc_ctype=DTYPE_ACC_CTYPE[config.dtype], element_bytes=config.element_bytes,
                           **config.param_dict)


def launch(config: Config) -> Launch:
    """Block, grid and shared memory of a launch; ValueError where a precondition of the family is broken, or
    for a C family (a function call, not a launch)."""
    family = get_family(config.family)
    if family.target != "cuda":
        raise ValueError(f"the {family.target} family '{family.name}' is a function call, not a CUDA launch")
    params = config.param_dict
    family.require_preconditions(params, config.dtype)
    dynamic = family.shared_bytes(params, config.element_bytes) if family.dynamic_shared else 0
    return Launch(family.kernel_name, family.block(params), family.grid(params, config.problem), dynamic,
                  family.resident_blocks(params))
