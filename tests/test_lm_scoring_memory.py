"""Scoring a names split holds a bounded amount of memory whatever the context: the MLP's
and the transformer's activations grow with the square of the context, so a split with
one 64-character line (the longest a names model takes) must not be scored 1,000 words at
once (about 1 GB for the default MLP)."""

import tracemalloc

import numpy as np

from modelwright_autograd.graph import no_grad
from modelwright_autograd.lm import corpus as C
from modelwright_autograd.lm import models as M
from modelwright_autograd.lm.scoring import names_loss


def test_scoring_a_long_context_split_stays_small_and_is_the_mean_over_characters():
    short = [a + b for a in "abcdefghijklmnopqrstuvwxyz" for b in "aeiou"] * 4
    names = C.split_names("\n".join(["abcdefgh" * 8, *short]), 1337, "names")
    assert names.block_size() == 65 and len(names.train) > 400
    config = M.LMConfig("mlp", names.vocab.size, names.block_size(), n_embd=16, n_hidden=64)
    model = M.build(config, seed=1)
    model.eval()
    tracemalloc.start()
    try:
        names_loss(model, names, names.train)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # its 469 words at once: 469 x 65 positions x a 65 x 16 context in float32, 127 MB
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB"
    # a few words scored in one forward pass give the same mean per character
    few = list(names.train[:200])
    x, y = names.examples(few)
    with no_grad():
        whole = model.loss(x, y).item()
    np.testing.assert_allclose(names_loss(model, names, few), whole, rtol=1e-6)
