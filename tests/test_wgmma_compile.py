"""Every configuration of the wgmma family's default space (C in float32 or, for the _out_ dtypes, in 16 bits),
those the GPU tests run and split-K designs of every schedule compile for sm_90a without spilling, into the
instructions the design relies on: HGMMA (wgmma), UTMALDG (TMA copies; .MULTICAST in clusters), the register trade
(USETMAXREG) where asked, no local memory (LDL/STL), and with split-K or stream-K the reduction's acquire
(LDG.E.STRONG.GPU), release (STG.E.STRONG.GPU) and named barrier 1."""

from __future__ import annotations

import itertools

import pytest

from tests.machine_code import assert_compiled_without_spills, sass_or_skip
from tests.wgmma_configs import (
    A_BOX_GPU,
    GPU_PARAMETERS,
    OUTPUT_16_PARAMETERS,
    SPLIT_K_COMPILED,
    SPLIT_K_GPU,
    STREAM_K_GPU,
)
from tuner.compile.nvcc import compile_configs
from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.targets import target
from tuner.space.entry_space import violations

pytestmark = pytest.mark.slow

ARCH = "sm_90a"


INPUT_DTYPES = ("bfloat16", "float16", "tf32")
"""The default space is compiled in each input dtype; a 16-bit C changes only the epilogue's stores, compiled on
the designs of OUTPUT_16_PARAMETERS."""


def default_space() -> list[Config]:
    family = get_family("wgmma")
    names = family.parameter_names
    configs = []
    for dtype in INPUT_DTYPES:
        for values in itertools.product(*(p.default for p in family.parameters)):
            params = dict(zip(names, values, strict=True))
            if not violations(family, params, dtype, target(ARCH)):
                configs.append(Config.make(Problem(4096, 4096, 4096), "wgmma", dtype, params))
    return configs


CONFIGS = default_space() + list(dict.fromkeys(
    Config.make(Problem(4096, 4096, 4096), "wgmma", dtype, params)
    for dtype, params in GPU_PARAMETERS + SPLIT_K_COMPILED + OUTPUT_16_PARAMETERS
    + [(d, p) for d, p in SPLIT_K_GPU + STREAM_K_GPU if p.get("REDUCE", "serial") == "serial"]
    + [(d, p) for f, d, p in A_BOX_GPU if f == "wgmma"]))
"""The default space, the GPU tests' designs, the split-K and stream-K designs (with atomic reductions, the
compile tests' own two: the GPU tests build theirs) and the wgmma family's designs that copy A in smaller boxes."""


@pytest.fixture(scope="module")
def compiled(nvcc):
    return compile_configs(CONFIGS, ARCH, ("-O3",))


def test_the_default_space_holds_configurations_of_every_dtype():
    assert {c.dtype for c in CONFIGS} == {*INPUT_DTYPES, "bfloat16_out_bfloat16", "float16_out_float16"}
    assert set(get_family("wgmma").dtypes) == {c.dtype for c in CONFIGS}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.dtype}-" + "-".join(f"{v}" for _, v in c.params))
def test_compiles_to_wgmma_and_tma_without_spills(compiled, config):
    result = compiled[config]
    assert_compiled_without_spills(result)
    sass = sass_or_skip(result.binary)
    params = config.param_dict
    assert "HGMMA.64x" in sass and ("TF32" in sass) == (config.dtype == "tf32")
    assert "UTMALDG.2D" in sass
    assert ("UTMALDG.2D.MULTICAST" in sass) == (params["CLUSTER"] > 1)
    assert ("USETMAXREG" in sass) == bool(params["REGALLOC"])
    assert "LDL" not in sass and "STL" not in sass
    split = params.get("SPLIT_K", 1) > 1 or params.get("STREAM_K", 0) > 0
    assert ("BAR.SYNC.DEFER_BLOCKING 0x1," in sass) == split
    assert ("LDG.E.STRONG.GPU" in sass and "STG.E.STRONG.GPU" in sass) == split
