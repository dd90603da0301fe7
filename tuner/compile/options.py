"""Which nvcc options an experiment may pass: those that change the code generated, nothing that names a file.

nvcc's options can write files (``-o``, ``-MF``, ``--keep-dir``), read them (``--options-file``, ``-I``), run
other programs (``-ccbin``, ``--run``) or load plug-ins (``-Xcompiler -fplugin=…``). An experiment file is
data, so its ``compile.options`` are checked against an allow-list of code-generation flags; anything else is
refused with the option named. The target is ``compile.arch``, never an option.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

FLAGS = frozenset({
    "-O0", "-O1", "-O2", "-O3", "--dopt=on", "--dopt=off", "-dopt=on", "-dopt=off",
    "-use_fast_math", "--use_fast_math", "--extra-device-vectorization", "-extra-device-vectorization",
    "-lineinfo", "--generate-line-info", "--restrict", "-restrict", "--expt-relaxed-constexpr",
    "-expt-relaxed-constexpr", "--resource-usage", "-res-usage", "-w", "--disable-warnings",
})
"""Options taken as they are."""
VALUED = {
    "-maxrregcount": r"\d{1,3}", "--maxrregcount": r"\d{1,3}",
    "-ftz": r"true|false", "--ftz": r"true|false",
    "-prec-div": r"true|false", "--prec-div": r"true|false",
    "-prec-sqrt": r"true|false", "--prec-sqrt": r"true|false",
    "-fmad": r"true|false", "--fmad": r"true|false",
    "-std": r"c\+\+(?:11|14|17|20)", "--std": r"c\+\+(?:11|14|17|20)",
    "-Xptxas": None, "--ptxas-options": None,
}
"""Options with a value, written ``-opt=value`` or as two items; None: the value is a list of ptxas options."""
PTXAS_FLAGS = frozenset({
    "-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "-warn-spills", "--warn-on-spills", "-warn-lmem-usage",
    "--warn-on-local-memory-usage", "--allow-expensive-optimizations", "-allow-expensive-optimizations",
    "--disable-optimizer-constants", "-disable-optimizer-consts",
})
PTXAS_VALUED = {
    "-O": r"[0-3]", "--opt-level": r"[0-3]", "-maxrregcount": r"\d{1,3}", "--maxrregcount": r"\d{1,3}",
    "-dlcm": r"ca|cg", "--def-load-cache": r"ca|cg|cs|lu|cv", "-dscm": r"wb|cg|cs|wt",
    "--def-store-cache": r"wb|cg|cs|wt", "--allow-expensive-optimizations": r"true|false",
}
MACRO = re.compile(r"-D[A-Za-z_]\w*(?:=[\w.+-]*)?")
"""``-DNAME`` or ``-DNAME=value``, the value a token (digits, letters, ``_ . + -``)."""
ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")


class OptionError(ValueError):
    """An option outside the allow-list; ``index`` is its position in the list."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


def _ptxas_values(text: str) -> bool:
    for item in text.split(","):
        name, _, value = item.partition("=")
        if item in PTXAS_FLAGS:
            continue
        pattern = PTXAS_VALUED.get(name)
        if pattern is None or not re.fullmatch(pattern, value):
            return False
    return bool(text)


def _value_fits(name: str, value: str) -> bool:
    pattern = VALUED[name]
    return _ptxas_values(value) if pattern is None else re.fullmatch(pattern, value) is not None


def check_nvcc_options(options: Sequence[str]) -> None:
    """Raise OptionError for the first option that is not a code-generation flag of the allow-list."""
    i = 0
    while i < len(options):
        option = options[i]
        if not isinstance(option, str):
            raise OptionError(i, f"an option is text, not {option!r}")
        name, equals, value = option.partition("=")
        if option in FLAGS or MACRO.fullmatch(option):
            i += 1
            continue
        if name in VALUED:
            if not equals:
                if i + 1 >= len(options):
                    raise OptionError(i, f"the option '{option}' needs a value after it")
                value = options[i + 1]
                i += 1
            if not isinstance(value, str) or not _value_fits(name, value):
                raise OptionError(i, f"'{value}' is not a value this tool passes to nvcc's '{name}'")
            i += 1
            continue
        if name in ARCH_OPTIONS:
            raise OptionError(i, f"the option '{option}' sets the target, which is compile.arch (e.g. sm_90a), "
                                 f"not an option")
        raise OptionError(i, f"the option '{option}' is not one this tool passes to nvcc: only options that change "
                             f"the code generated are allowed (-O0..-O3, -use_fast_math, -maxrregcount=N, -ftz=, "
                             f"-prec-div=, -prec-sqrt=, -fmad=, -std=c++NN, -Xptxas with ptxas's -v, -O, "
                             f"-dlcm=, -maxrregcount=, -DNAME[=token], -lineinfo, --extra-device-vectorization, "
                             f"--restrict), never one that names a file, a program or a plug-in")
