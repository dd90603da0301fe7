"""Rendering a configuration's CUDA source from its family's Jinja template, and its launch geometry."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

import kernel_templates
from tuner.config import DTYPE_CTYPE, Config
from tuner.family import Dim3, get_family

TEMPLATE_DIR = Path(kernel_templates.__file__).parent


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
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def template_source(family: str) -> str:
    return (TEMPLATE_DIR / get_family(family).template_file).read_text()


def template_hash(family: str) -> str:
    """SHA-256 (first 16 hex digits) of the family's template and its declaration module."""
    fam = get_family(family)
    digest = hashlib.sha256()
    for name in (fam.template_file, f"{fam.name}.py"):
        digest.update((TEMPLATE_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def render(config: Config) -> str:
    """The CUDA C source of one configuration; the same configuration always renders the same text."""
    family = get_family(config.family)
    values = ", ".join(f"{k}={v}" for k, v in config.params)
    header = (
        f"// tuner kernel family '{family.name}' (template {family.template_file}, "
        f"hash {template_hash(family.name)})\n"
        f"// dtype={config.dtype}; {values}"
    )
    template = _environment().get_template(family.template_file)
    return template.render(header=header, dtype=config.dtype, ctype=DTYPE_CTYPE[config.dtype], **config.param_dict)


def launch(config: Config) -> Launch:
    """Block, grid and shared memory of a launch; ValueError where a precondition of the family is broken."""
    family = get_family(config.family)
    params = config.param_dict
    family.require_preconditions(params, config.dtype)
    dynamic = family.shared_bytes(params, config.element_bytes) if family.dynamic_shared else 0
    return Launch(family.kernel_name, family.block(params), family.grid(params, config.problem), dynamic,
                  family.resident_blocks(params))
