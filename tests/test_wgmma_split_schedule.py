"""The wgmma family's split-K schedule, walked without a GPU: the template's work items (split w % SPLIT_K of unit
w / SPLIT_K) under its turn protocol (split s of a tile writes C once the flag reads s, then sets s + 1, the last 0)
finish, every one, for persistent blocks all resident and for blocks dispatched in the order of their index, and
leave every flag at zero; dispatched in another order with too few SMs, they would wait on each other for ever."""

from __future__ import annotations

from collections import deque

import pytest

from tests.test_wgmma_family import MINIMAL
from tuner.config import Config, Problem
from tuner.kernels.render import render


def take_turn(flags: dict[int, int], work: int, split_k: int) -> bool:
    """Whether work item ``work`` may write C now; if so, it does, and hands the tile's turn on."""
    tile, split = work // split_k, work % split_k
    if split > 0 and flags.get(tile, 0) != split:
        return False
    flags[tile] = 0 if split + 1 == split_k else split + 1
    return True


def persistent(works: int, split_k: int, blocks: int) -> tuple[int, dict[int, int]]:
    """Work items finished by ``blocks`` resident blocks, each walking w = b, b + blocks, …, and the flags after."""
    flags: dict[int, int] = {}
    position = list(range(blocks))
    finished, progress = 0, True
    while progress:
        progress = False
        for b, work in enumerate(position):
            if work < works and take_turn(flags, work, split_k):
                position[b], finished, progress = work + blocks, finished + 1, True
    return finished, flags


def dispatched(order: list[int], split_k: int, slots: int) -> tuple[int, dict[int, int]]:
    """Work items finished by one block each, dispatched in ``order`` into ``slots`` resident places."""
    flags: dict[int, int] = {}
    waiting, resident = deque(order), []
    finished, progress = 0, True
    while progress:
        progress = False
        while waiting and len(resident) < slots:
            resident.append(waiting.popleft())
        for work in list(resident):
            if take_turn(flags, work, split_k):
                resident.remove(work)
                finished, progress = finished + 1, True
    return finished, flags


def test_the_template_numbers_work_items_as_the_model_does():
    """One walk of the items (tests/test_wgmma_schedule.py runs it), taken by the producer and the consumers; an
    item's turn is its split, of SPLIT_K parts."""
    source = render(Config.make(Problem(64, 64, 64), "wgmma", "bfloat16", {**MINIMAL, "SPLIT_K": 3}))
    assert source.count("const int split = work % SPLIT_K;") == 1
    assert "item = Work{work / SPLIT_K, split * per_split, min(k_tiles, (split + 1) * per_split), split, SPLIT_K};" \
        in source
    assert source.count("Walk walk(units, k_tiles, first_work, work_step);") == 2
    assert source.count("unit_tile(item.unit, ") == 2
    assert "turn + 1 == parts ? 0u : static_cast<unsigned int>(turn + 1)" in source
    assert "while (load_acquire(flag) != static_cast<unsigned int>(turn))" in source
    assert "await_turn(split_flags + tile, item.turn);" in source


@pytest.mark.parametrize("units", [1, 7, 32, 100])
@pytest.mark.parametrize("split_k", [2, 3, 8, 16])
@pytest.mark.parametrize("blocks", [1, 5, 132])
def test_persistent_blocks_finish_every_work_item(units, split_k, blocks):
    works = units * split_k
    finished, flags = persistent(works, split_k, min(blocks, works))
    assert finished == works and set(flags.values()) <= {0}


@pytest.mark.parametrize("split_k", [2, 5, 16])
@pytest.mark.parametrize("slots", [1, 3, 264])
def test_blocks_dispatched_in_order_finish_on_any_number_of_sms(split_k, slots):
    works = 40 * split_k
    finished, flags = dispatched(list(range(works)), split_k, slots)
    assert finished == works and set(flags.values()) <= {0}


def test_blocks_dispatched_out_of_order_on_too_few_sms_would_wait_for_ever():
    """Why the order of dispatch matters to a non-persistent launch: the later splits of a tile, resident first,
    hold the places the first split needs."""
    split_k = 4
    finished, _ = dispatched(list(reversed(range(8 * split_k))), split_k, split_k - 1)
    assert finished < 8 * split_k
