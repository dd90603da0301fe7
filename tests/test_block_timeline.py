"""benchmarks/block_timeline.py without a GPU: the stamps go where the template still has their anchors, the copy
is a family of its own that renders and names its configuration, and the printed lines become the table's spreads."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import block_timeline
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import _found, _load_file, get_family

DECODE = dict(BM=64, BN=64, BK=64, STAGES=12, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=0, A_BOX=16)


def test_every_anchor_is_found_once_in_the_template():
    template = get_family("wgmma").template_path.read_text()
    stamped = block_timeline.instrumented(template, 6)
    # its definition, and the clock read at the start, the first copy, each full stage, a part's turn to add (in
    # either reduction) and the end
    assert stamped.count("timeline_now()") == 7 and "if (launch_no == 6 && blockIdx.x < TIMELINE_BLOCKS)" in stamped
    with pytest.raises(TunerError, match="update benchmarks/block_timeline.py's ANCHORS"):
        block_timeline.instrumented(template.replace("#include <stdint.h>\n", ""), 6)


@pytest.mark.parametrize("family", block_timeline.FAMILIES)
def test_the_copy_is_a_family_that_prints_its_configuration(tmp_path: Path, family):
    block_timeline.write_families(tmp_path, 4)
    copy = _found(_load_file(tmp_path / f"{family}_timeline.py"), tmp_path / f"{family}_timeline.py")
    assert copy is not None and copy.name == f"{family}_timeline"
    assert copy.parameter_names == (*get_family(family).parameter_names, "TIMELINE_ID")
    assert copy.constraints == get_family(family).constraints and copy.grid is get_family(family).grid


def test_printed_lines_become_spreads_over_the_blocks():
    config = Config.make(Problem(1, 6144, 4096), "wgmma", "bfloat16", DECODE)
    lines = ["GPU noise", "TIMELINE 0 0 5 1000 1600 3000 21000 0 21500",
             "TIMELINE 0 1 7 1100 1700 3400 25400 26400 27000", "TIMELINE 1 0 5 0 0 0 0 0 0", "TIMELINE 0 2"]
    stamps = block_timeline.parse(lines)
    assert sorted(stamps) == [0, 1] and len(stamps[0]) == 2
    row = block_timeline.summary(config, stamps[0])
    assert row["blocks"] == 2 and row["sms"] == 2 and row["blocks_per_sm_max"] == 1
    assert row["first_us"] == {"min": 2.0, "median": 2.2, "max": 2.4}
    assert row["stream_us"] == {"min": 18.0, "median": 20.0, "max": 22.0}
    # Only the block that added a part to a tile waited (1 µs after its last stage) and added (0.6 µs).
    assert row["wait_us"] == {"min": 1.0, "median": 1.0, "max": 1.0}
    assert row["add_us"] == pytest.approx({"min": 0.6, "median": 0.6, "max": 0.6})
    # B's 50.3 MB and 16 rows of A a slice for each of the 96 tile columns: 12.6 MB.
    assert block_timeline.copied_bytes(config) == 4096 * 6144 * 2 + 96 * 16 * 4096 * 2
    assert row["gb_per_s_per_sm"] == pytest.approx(block_timeline.copied_bytes(config) / 2 / 20e3)
    plain = Config.make(Problem(1, 6144, 4096), "wgmma", "bfloat16", {**DECODE, "A_BOX": 0})
    assert block_timeline.copied_bytes(plain) == 4096 * 6144 * 2 + 96 * 64 * 4096 * 2


def test_a_listing_of_other_families_is_refused(tmp_path: Path):
    listing = tmp_path / "mma.json"
    listing.write_text('{"problems": [[64, 64, 64]], "kernels": [{"family": "mma", "dtype": "bfloat16", "params": '
                       '{"BM": 64, "BN": 128, "BK": 32, "WM": 32, "WN": 64, "STAGES": 4, "SWIZZLE": 1, "GROUP_M": 8, '
                       '"MMA_K": 16}}]}')
    assert block_timeline.main(["--configs", str(listing), "--out", str(tmp_path)]) == 2
