"""collection_paused(): the collector is off inside, and back as it was outside, even when
the block raises; and a graph built inside is freed by reference counting alone."""

from __future__ import annotations

import gc

import pytest

from modelwright_autograd import MLP, Value, collection_paused


@pytest.fixture(autouse=True)
def _restore_collector():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_restored_after():
    gc.enable()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_when_the_block_raises():
    gc.enable()
    with pytest.raises(ZeroDivisionError), collection_paused():
        assert not gc.isenabled()
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_leaves_a_disabled_collector_disabled_and_nests():
    gc.disable()
    with collection_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with collection_paused():
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still paused
    assert gc.isenabled()


def test_a_step_inside_frees_its_graph_without_the_collector():
    model = MLP(2, [4, 1], seed=0)
    gc.collect()
    with collection_paused():
        loss = model([Value(1.0), Value(-2.0)]) ** 2
        loss.backward()
        del loss
        # reference counting freed the whole graph: the collector finds nothing left
        assert gc.collect() == 0
    assert any(p.grad != 0.0 for p in model.parameters())
