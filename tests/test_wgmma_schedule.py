"""The wgmma family's schedule as its template renders it: the Work and Walk structs of a rendered kernel, compiled by
the system C++ compiler and walked for every block of a launch. Checks that split-K and stream-K cover every k-tile
of every tile once, that stream-K's shares are even, and that the parts of a tile meet in C in an order no block can
deadlock on (all persistent blocks resident, each waiting only as the template's reduction does)."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from kernel_templates import wgmma
from tests.emulated.host_kernel import compiler
from tuner.config import Config, Problem
from tuner.kernels.render import launch, render

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++ or c++) on PATH")

SCHEDULE = re.compile(r"^struct Work \{.*?^\};\n.*?^struct Walk \{.*?^\};\n", re.S | re.M)
PERSISTENT = dict(BM=64, BN=128, BK=64, STAGES=4, CONSUMERS=1, CLUSTER=1, PERSISTENT=1, GROUP=8, REGALLOC=0)
HARNESS = """
#include <algorithm>
#include <cstdio>
#include <cstdlib>
using std::min;
#define __device__
#define __forceinline__ inline
#define SPLIT_K {split_k}
{schedule}
int main(int argc, char** argv)
{{
    const int units = atoi(argv[1]), k_tiles = atoi(argv[2]), blocks = atoi(argv[3]);
    for (int b = 0; b < blocks; ++b) {{
        Walk walk(units, k_tiles, b, blocks);
        for (Work w; walk.next(w);)
            printf("%d %d %d %d %d %d\\n", b, w.unit, w.k_begin, w.k_end, w.turn, w.parts);
    }}
}}
"""
_built: dict[tuple[int, int], Path] = {}


def walker(tmp_path_factory: pytest.TempPathFactory, stream_k: int, split_k: int = 1) -> Path:
    """The host program walking the schedule of a configuration with this STREAM_K and SPLIT_K."""
    if (stream_k, split_k) not in _built:
        params = {**PERSISTENT, "STREAM_K": stream_k, "SPLIT_K": split_k,
                  "REDUCE": "atomic" if stream_k or split_k > 1 else "serial"}
        found = SCHEDULE.search(render(Config.make(Problem(64, 128, 64), "wgmma", "bfloat16", params)))
        assert found, "the rendered kernel has no Work and Walk structs"
        folder = tmp_path_factory.mktemp(f"walk{stream_k}{split_k}")
        (folder / "walk.cpp").write_text(HARNESS.format(split_k=split_k, schedule=found.group(0)))
        subprocess.run([compiler(), "-std=c++17", "-O1", "-Wall", "-Werror", "-o", str(folder / "walk"),
                        str(folder / "walk.cpp")], check=True, capture_output=True, text=True, timeout=300)
        _built[(stream_k, split_k)] = folder / "walk"
    return _built[(stream_k, split_k)]


def walk(program: Path, units: int, k_tiles: int, blocks: int) -> list[tuple[int, ...]]:
    """Each block's work items in the order it takes them: (block, unit, k_begin, k_end, turn, parts)."""
    out = subprocess.run([str(program), str(units), str(k_tiles), str(blocks)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return [tuple(map(int, line.split())) for line in out.splitlines()]


def blocks_of(params: dict, problem: Problem, sms: int) -> int:
    """The persistent grid the launch takes on a GPU of ``sms`` SMs (one block each)."""
    return launch(Config.make(problem, "wgmma", "bfloat16", params)).grid_on(sms)[0]


def covered_once(items: list[tuple[int, ...]], units: int, k_tiles: int) -> None:
    seen = [(unit, k) for _, unit, begin, end, _, _ in items for k in range(begin, end)]
    assert sorted(seen) == [(u, k) for u in range(units) for k in range(k_tiles)]


def finishes(items: list[tuple[int, ...]], serial: bool) -> bool:
    """Whether every block gets through its items when a part with turn t > 0 waits (serial) for turn t − 1 of its
    unit, or (atomic) for turn 0, and a block does its items in order. (Atomic parts wait only for turn 0 to have
    begun, when it zeroes the tile; waiting for it to be done is the stricter test.)"""
    queues: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for item in items:
        queues[item[0]].append(item)
    done: set[tuple[int, int]] = set()
    progress = True
    while progress:
        progress = False
        for queue in queues.values():
            while queue:
                _, unit, _, _, turn, _ = queue[0]
                needed = turn - 1 if serial else 0
                if turn > 0 and (unit, needed) not in done:
                    break
                done.add((unit, turn))
                queue.pop(0)
                progress = True
    return all(not q for q in queues.values())


SHAPES = [(48, 64, 132), (32, 64, 132), (1120, 47, 132), (2048, 8, 132), (264, 64, 132), (265, 5, 132), (7, 3, 21),
          (1, 1, 1), (3, 50, 132), (133, 1, 132), (200, 9, 114)]


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize(("units", "k_tiles", "sms"), SHAPES)
def test_stream_k_covers_every_k_tile_once_in_even_shares(tmp_path_factory, mode, units, k_tiles, sms):
    blocks = min(units * k_tiles, sms)   # the persistent grid: one block per SM, at most one per MAC iteration
    items = walk(walker(tmp_path_factory, mode), units, k_tiles, blocks)
    covered_once(items, units, k_tiles)
    streamed_units = units if mode == 2 else 0 if units % blocks == 0 else min(units, blocks + units % blocks)
    data_parallel = {u for u in range(units - streamed_units)}
    share: dict[int, int] = defaultdict(int)
    for block, unit, begin, end, turn, parts in items:
        assert begin < end
        if unit in data_parallel:
            assert (begin, end, turn, parts) == (0, k_tiles, 0, 1) and unit % blocks == block
        else:
            share[block] += end - begin
    if streamed_units:
        assert len(share) == blocks and max(share.values()) - min(share.values()) <= 1
    dp_per_block = defaultdict(int)
    for block, unit, *_ in items:
        dp_per_block[block] += unit in data_parallel
    assert len(set(dp_per_block.values())) == 1   # whole waves


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize(("units", "k_tiles", "sms"), SHAPES)
def test_the_parts_of_a_tile_meet_in_k_order_and_cannot_deadlock(tmp_path_factory, mode, units, k_tiles, sms):
    blocks = min(units * k_tiles, sms)
    items = walk(walker(tmp_path_factory, mode), units, k_tiles, blocks)
    by_unit: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for item in items:
        by_unit[item[1]].append(item)
    for parts in by_unit.values():
        ordered = sorted(parts, key=lambda item: item[4])
        assert [p[4] for p in ordered] == list(range(len(parts))) and {p[5] for p in parts} == {len(parts)}
        assert [p[2] for p in ordered] == [0, *(p[3] for p in ordered[:-1])]   # turn t starts where t − 1 ends
        assert [p[0] for p in ordered] == sorted((p[0] for p in ordered), reverse=True)   # later turns, lower blocks
    first_streamed: dict[int, tuple[int, ...]] = {}
    for item in items:
        if item[5] > 1 and item[0] not in first_streamed:
            first_streamed[item[0]] = item
    for block, unit, _, _, turn, _ in items:
        if turn == 0 and len(by_unit[unit]) > 1:
            assert first_streamed[block][1] == unit   # part 0 is the first thing its block reduces
    assert finishes(items, serial=True) and finishes(items, serial=False)


@pytest.mark.parametrize(("split_k", "units", "k_tiles", "blocks"),
                         [(1, 20, 7, 20), (2, 48, 64, 96), (3, 10, 7, 4), (4, 32, 1, 128), (8, 5, 2, 40),
                          (16, 3, 225, 11)])
def test_split_k_splits_cover_k_once_with_their_turns(tmp_path_factory, split_k, units, k_tiles, blocks):
    """Split s of a unit takes k-tiles [s·per, min(k_tiles, (s + 1)·per)), per = ⌈k_tiles / SPLIT_K⌉ (later splits
    may be empty: they add zeros); its turn is s, of SPLIT_K parts."""
    items = walk(walker(tmp_path_factory, 0, split_k), units, k_tiles, blocks)
    assert len(items) == units * split_k
    per = -(-k_tiles // split_k)
    for _, _, begin, end, turn, parts in items:
        assert (begin, end, parts) == (turn * per, min(k_tiles, (turn + 1) * per), split_k)
    assert sorted((u, k) for _, u, b, e, _, _ in items for k in range(b, e)) == [
        (u, k) for u in range(units) for k in range(k_tiles)]


@pytest.mark.parametrize(("mode", "problem"), [(2, Problem(1, 6144, 4096)), (1, Problem(5000, 7000, 3000)),
                                               (1, Problem(8192, 8192, 512)), (2, Problem(100, 200, 300))])
def test_the_traffic_model_counts_the_parts_the_walk_makes(tmp_path_factory, mode, problem):
    params = {**PERSISTENT, "STREAM_K": mode, "REDUCE": "atomic"}
    units, k_tiles = wgmma.units(params, problem), wgmma.k_tiles(params, problem)
    items = walk(walker(tmp_path_factory, mode), units, k_tiles, blocks_of(params, problem, wgmma.MODELLED_SMS))
    assert wgmma.parts(params, problem) == len(items)
    plain = {**PERSISTENT}
    extra = wgmma.global_bytes(params, problem, 2) - wgmma.global_bytes(plain, problem, 2)
    tile_c = 4 * problem.M * problem.N / units
    reduced = {unit for _, unit, _, _, turn, _ in items if turn > 0}
    assert wgmma.reduced_tiles(params, problem) == len(reduced)
    # each part after a tile's first reads and writes it, and (atomic) part 0 zeroes it and adds as well
    assert extra == pytest.approx(2 * tile_c * (len(items) - units + len(reduced)), abs=1)
    serial = wgmma.global_bytes({**params, "REDUCE": "serial"}, problem, 2) - wgmma.global_bytes(plain, problem, 2)
    assert serial == pytest.approx(2 * tile_c * (len(items) - units), abs=1)


def test_stream_k_grid_is_one_cell_per_mac_iteration():
    decode = Problem(1, 6144, 4096)
    params = {**PERSISTENT, "STREAM_K": 2, "REDUCE": "atomic"}
    assert wgmma.grid(params, decode) == (48 * 64, 1, 1) and blocks_of(params, decode, 132) == 132
    assert blocks_of(params, Problem(64, 128, 128), 132) == 2   # one tile of two k-tiles: two blocks
