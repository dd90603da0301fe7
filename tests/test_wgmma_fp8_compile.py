"""The FP8 families' default spaces (in e4m3) and the configurations the GPU tests run (in e4m3 and the mixed
e4m3 × e5m2, with C in float32 or bfloat16; e5m2 alone changes only the type names, and the GPU tests build it)
compile for sm_90a without spilling, into FP8 wgmma (QGMMA.64xBNx32.F32 with the operands' formats) fed by TMA
copies, with no local memory."""

from __future__ import annotations

import itertools

import pytest

from tests.fp8_configs import FP8_CONFIGS, FP8_OUT_CONFIGS
from tests.machine_code import assert_compiled_without_spills, sass_or_skip
from tuner.compile.nvcc import compile_configs
from tuner.config import Config, Problem
from tuner.kernels import fp8_matmul
from tuner.kernels.discovery import get_family
from tuner.kernels.targets import target
from tuner.space.entry_space import violations

pytestmark = pytest.mark.slow

ARCH = "sm_90a"
PROBLEM = Problem(4096, 4096, 4096)


def default_space(name: str, dtype: str = "float8_e4m3") -> list[Config]:
    """The family's default configurations in one dtype (the others differ in the wgmma's type names only)."""
    family = get_family(name)
    configs = []
    for values in itertools.product(*(p.default for p in family.parameters)):
        params = dict(zip(family.parameter_names, values, strict=True))
        if not violations(family, params, dtype, target(ARCH)):
            configs.append(Config.make(PROBLEM, name, dtype, params))
    return configs


CONFIGS = list(dict.fromkeys(
    default_space("wgmma_fp8") + default_space("wgmma_fp8_blocks")
    + [Config.make(PROBLEM, family, dtype, params) for family, dtype, params in FP8_CONFIGS + FP8_OUT_CONFIGS
       if dtype != "float8_e5m2" and (dtype == "float8_e4m3_out_bfloat16" or params == FP8_OUT_CONFIGS[0][2]
                                      or not dtype.endswith("_out_bfloat16"))]))
"""The default spaces, every tested design, and the bfloat16 C in e4m3 on every tested design (in the other two
FP8 inputs on the plainest: the C's stores do not depend on the inputs' formats)."""


@pytest.fixture(scope="module")
def compiled(nvcc):
    return compile_configs(CONFIGS, ARCH, ("-O3",))


def test_every_tested_configuration_is_valid():
    for config in CONFIGS:
        family = get_family(config.family)
        assert not violations(family, config.param_dict, config.dtype, target(ARCH)), config.key


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_compiles_to_fp8_wgmma_without_spills(compiled, config):
    result = compiled[config]
    assert_compiled_without_spills(result)
    sass = sass_or_skip(result.binary)
    a_type, b_type = (d.removeprefix("float8_").upper() for d in fp8_matmul.operand_dtypes(config.dtype))
    assert f"QGMMA.64x{config.param_dict['BN']}x32.F32.{a_type}.{b_type}" in sass
    assert "UTMALDG.2D" in sass
