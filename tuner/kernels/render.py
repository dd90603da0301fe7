"""Rendering a configuration's source from its family's Jinja template, and its launch geometry."""

from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2
import jinja2.sandbox

from tuner.config import DTYPE_CTYPE, Config
from tuner.kernels.discovery import get_family, template_hash
from tuner.kernels.family import TOKEN, Dim3, FamilyError
from tuner.kernels.tensor_maps import TensorMap
from tuner.precision import PRECISIONS, input_dtype


@dataclass(frozen=True)
class Launch:
    kernel_name: str
    block: Dim3
    grid: Dim3
    """The family's grid; a persistent launch has fewer blocks, which walk its cells (see ``grid_on``)."""
    dynamic_shared_bytes: int
    resident_blocks_per_sm: int = 0
    """Blocks per SM of a persistent launch; 0 launches one block per cell of ``grid``."""
    cluster: Dim3 = (1, 1, 1)
    """Blocks per thread-block cluster; (1, 1, 1) launches without clusters."""
    tensor_maps: tuple[TensorMap, ...] = ()
    """TMA descriptors passed before the family's arguments."""
    arch: str | None = None
    """The architecture the kernel was compiled for where only it runs the kernel (``sm_90a``), else None."""

    @property
    def extended(self) -> bool:
        """Whether the launch needs more than a plain kernel launch (clusters, tensor maps)."""
        return bool(self.tensor_maps) or self.cluster != (1, 1, 1)

    def grid_on(self, multiprocessors: int | None) -> Dim3:
        """The grid launched on a GPU with this many SMs: ``grid`` itself, or for a persistent launch as many
        blocks along x as the SMs hold at once, at most one per cell, in whole clusters. Unknown SMs leave
        ``grid`` as it is."""
        if not self.resident_blocks_per_sm or not multiprocessors:
            return self.grid
        cells = self.grid[0] * self.grid[1] * self.grid[2]
        blocks = min(cells, multiprocessors * self.resident_blocks_per_sm)
        return (max(self.cluster[0], blocks - blocks % self.cluster[0]), 1, 1)


@cache
def _environment(folder: Path) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def render(config: Config) -> str:
    """The source of one configuration; the same configuration always renders the same text."""
    return _rendered(config, template_hash(config.family))


def _context(config: Config, template_file: str, digest: str) -> dict[str, object]:
    """The variables a family's template is rendered with."""
    loose = [f"{k}={v!r}" for k, v in config.params if isinstance(v, str) and not TOKEN.fullmatch(v)]
    if loose:
        raise ValueError(f"the text value(s) {', '.join(loose)} are not single tokens (a C identifier or a number); "
                         f"a kernel's source takes no free text")
    values = ", ".join(f"{k}={v}" for k, v in config.params)
    header = (
        f"// tuner kernel family '{config.family}' (template {template_file}, hash {digest})\n"
        f"// dtype={config.dtype}; {values}"
    )
    precision = PRECISIONS[config.dtype]
    return {"header": header, "dtype": config.dtype, "operands": input_dtype(config.dtype),
            "ctype": DTYPE_CTYPE[config.dtype], "acc_ctype": DTYPE_CTYPE[precision.accumulator],
            "out_ctype": DTYPE_CTYPE[precision.output], "element_bytes": config.element_bytes, **config.param_dict}


@functools.lru_cache(maxsize=4096)
def _rendered(config: Config, digest: str) -> str:
    """The source of one configuration from its family's template as it is now (``digest``: its hash); FamilyError
    naming the template's file and line where it does not parse or render."""
    family = get_family(config.family)
    assert family.folder is not None  # discovery places every family
    try:
        template = _environment(family.folder).get_template(family.template_file)
        return template.render(**_context(config, family.template_file, digest))
    except jinja2.TemplateError as exc:
        raise _template_mistake(family.template_path, exc, config.key) from None


def _template_mistake(path: Path, exc: jinja2.TemplateError, rendering: str) -> FamilyError:
    """A template that does not parse (Jinja names its line) or refers to what is not defined."""
    line = getattr(exc, "lineno", None) or _line_in_traceback(exc, path)
    where = f"{path}, line {line}" if line else str(path)
    what = "does not parse" if isinstance(exc, jinja2.TemplateSyntaxError) else "cannot be rendered"
    return FamilyError(f"{where}: the template {what} ({type(exc).__name__}: {exc.message or exc}) for {rendering}; "
                       f"fix the family's template")


def _line_in_traceback(exc: BaseException, path: Path) -> int | None:
    """The template line an error was raised at (Jinja maps its compiled frames back to the template's lines)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return next((frame.lineno for frame in reversed(frames) if frame.filename == str(path)), None)


def render_stored(config: Config, template_text: str, template_file: str, digest: str) -> str:
    """The source of one configuration from a template kept as data (a run folder's copy): rendered in Jinja's
    sandbox, with no loader, so that the text can reach neither Python nor files."""
    environment = jinja2.sandbox.ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined,
                                                               keep_trailing_newline=True, trim_blocks=True,
                                                               lstrip_blocks=True)
    return environment.from_string(template_text).render(**_context(config, template_file, digest))


def launch(config: Config) -> Launch:
    """Block, grid and shared memory of a launch; ValueError where a precondition of the family is broken, or
    for a C family (a function call, not a launch)."""
    family = get_family(config.family)
    if family.target != "cuda":
        raise ValueError(f"the {family.target} family '{family.name}' is a function call, not a CUDA launch")
    params = config.param_dict
    family.require_preconditions(params, config.dtype)
    try:
        dynamic = family.shared_bytes(params, config.element_bytes) if family.dynamic_shared else 0
        return Launch(family.kernel_name, family.block(params), family.grid(params, config.problem), dynamic,
                      family.resident_blocks(params), family.cluster(params),
                      family.tensor_maps(params, config.element_bytes), family.arch)
    except Exception as exc:  # a family's own code may fail in any way: say where
        raise family.mistake("the launch geometry", exc, config.key) from None
