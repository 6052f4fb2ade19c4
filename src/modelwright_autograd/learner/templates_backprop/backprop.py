"""Backprop by hand: makemore's MLP with batch norm, its backward pass written one tensor
at a time in NumPy (the exercise of makemore part 4, "Becoming a Backprop Ninja").

forward() is given, every intermediate tensor under a name. Each d<name>(f, d) below is a
TODO: return the gradient of the loss with respect to f.<name>, an array of the same shape,
from the forward's tensors (f.<...>) and the gradients found before it (d.<...>: the
tensors the forward computed after f.<name>). A tensor used twice gets the sum of both
paths. Run `modelwright-autograd check .` after each one: it compares every gradient with
PyTorch's autograd of the same forward, and names the usual bug when it sees one.
"""

from types import SimpleNamespace

import numpy as np

VOCAB, BLOCK, EMBED, HIDDEN = 27, 3, 10, 64  # characters, context, embedding, hidden units
EPS = 1e-5  # batch norm's epsilon


def init_params(seed=42):
    """The parameters, scaled so that tanh starts neither saturated nor flat."""
    rng = np.random.default_rng(seed)
    fan_in = BLOCK * EMBED
    return {
        "C": rng.standard_normal((VOCAB, EMBED)),
        "W1": rng.standard_normal((fan_in, HIDDEN)) * (5 / 3) / fan_in**0.5,
        "b1": rng.standard_normal(HIDDEN) * 0.1,  # useless before batch norm; kept to see why
        "W2": rng.standard_normal((HIDDEN, VOCAB)) * 0.1,
        "b2": rng.standard_normal(VOCAB) * 0.1,
        "bngain": 1.0 + 0.1 * rng.standard_normal((1, HIDDEN)),
        "bnbias": 0.1 * rng.standard_normal((1, HIDDEN)),
    }


def forward(params, Xb, Yb):
    """The loss of a batch (Xb: n contexts of BLOCK character ids, Yb: the n next ones),
    one small step a line; returns every tensor (the parameters too) as f.<name>."""
    f = SimpleNamespace(**params, Xb=Xb, Yb=Yb)
    n = len(Xb)
    f.emb = f.C[Xb]  # (n, BLOCK, EMBED): the embedding gather
    f.embcat = f.emb.reshape(n, -1)  # (n, BLOCK * EMBED): the context side by side
    f.hprebn = f.embcat @ f.W1 + f.b1  # linear layer 1
    f.bnmeani = f.hprebn.sum(0, keepdims=True) / n  # batch norm: the mean over the batch
    f.bndiff = f.hprebn - f.bnmeani
    f.bndiff2 = f.bndiff**2
    f.bnvar = f.bndiff2.sum(0, keepdims=True) / (n - 1)  # variance, Bessel's n - 1
    f.bnvar_inv = (f.bnvar + EPS) ** -0.5
    f.bnraw = f.bndiff * f.bnvar_inv  # normalised
    f.hpreact = f.bngain * f.bnraw + f.bnbias  # scaled and shifted
    f.h = np.tanh(f.hpreact)
    f.logits = f.h @ f.W2 + f.b2  # linear layer 2
    f.logit_maxes = f.logits.max(1, keepdims=True)
    f.norm_logits = f.logits - f.logit_maxes  # exp cannot overflow; the loss is the same
    f.counts = np.exp(f.norm_logits)
    f.counts_sum = f.counts.sum(1, keepdims=True)
    f.counts_sum_inv = f.counts_sum**-1
    f.probs = f.counts * f.counts_sum_inv
    f.logprobs = np.log(f.probs)
    f.loss = -f.logprobs[np.arange(n), Yb].mean()
    return f


# ---------------------------------------------------------------- step by step, backwards
def dlogprobs(f, d):
    """loss = -(mean over the batch of each row's logprob at its target)."""
    raise NotImplementedError("TODO 1: dlogprobs")


def dprobs(f, d):
    """logprobs = log(probs)."""
    raise NotImplementedError("TODO 2: dprobs")


def dcounts_sum_inv(f, d):
    """probs = counts * counts_sum_inv: a column broadcast along each row."""
    raise NotImplementedError("TODO 3: dcounts_sum_inv")


def dcounts_sum(f, d):
    """counts_sum_inv = counts_sum ** -1."""
    raise NotImplementedError("TODO 4: dcounts_sum")


def dcounts(f, d):
    """counts is used twice: in probs and in counts_sum."""
    raise NotImplementedError("TODO 5: dcounts")


def dnorm_logits(f, d):
    """counts = exp(norm_logits)."""
    raise NotImplementedError("TODO 6: dnorm_logits")


def dlogit_maxes(f, d):
    """norm_logits = logits - logit_maxes (a column; its gradient comes out near 0: why?)."""
    raise NotImplementedError("TODO 7: dlogit_maxes")


def dlogits(f, d):
    """logits is used twice: in norm_logits and in logit_maxes (max routes to the argmax)."""
    raise NotImplementedError("TODO 8: dlogits")


def dh(f, d):
    """logits = h @ W2 + b2."""
    raise NotImplementedError("TODO 9: dh")


def dW2(f, d):
    raise NotImplementedError("TODO 10: dW2")


def db2(f, d):
    raise NotImplementedError("TODO 11: db2")


def dhpreact(f, d):
    """h = tanh(hpreact)."""
    raise NotImplementedError("TODO 12: dhpreact")


def dbngain(f, d):
    """hpreact = bngain * bnraw + bnbias: bngain is a row broadcast over the batch."""
    raise NotImplementedError("TODO 13: dbngain")


def dbnbias(f, d):
    raise NotImplementedError("TODO 14: dbnbias")


def dbnraw(f, d):
    raise NotImplementedError("TODO 15: dbnraw")


def dbnvar_inv(f, d):
    """bnraw = bndiff * bnvar_inv."""
    raise NotImplementedError("TODO 16: dbnvar_inv")


def dbnvar(f, d):
    """bnvar_inv = (bnvar + EPS) ** -0.5."""
    raise NotImplementedError("TODO 17: dbnvar")


def dbndiff2(f, d):
    """bnvar = bndiff2.sum(0, keepdims=True) / (n - 1)."""
    raise NotImplementedError("TODO 18: dbndiff2")


def dbndiff(f, d):
    """bndiff is used twice: in bndiff2 and in bnraw."""
    raise NotImplementedError("TODO 19: dbndiff")


def dbnmeani(f, d):
    """bndiff = hprebn - bnmeani."""
    raise NotImplementedError("TODO 20: dbnmeani")


def dhprebn(f, d):
    """hprebn is used twice: in bndiff and in bnmeani."""
    raise NotImplementedError("TODO 21: dhprebn")


def dembcat(f, d):
    """hprebn = embcat @ W1 + b1."""
    raise NotImplementedError("TODO 22: dembcat")


def dW1(f, d):
    raise NotImplementedError("TODO 23: dW1")


def db1(f, d):
    raise NotImplementedError("TODO 24: db1")


def demb(f, d):
    """embcat = emb.reshape(n, -1)."""
    raise NotImplementedError("TODO 25: demb")


def dC(f, d):
    """emb = C[Xb]: a character may appear many times in a batch; its rows add up."""
    raise NotImplementedError("TODO 26: dC")


# ------------------------------------------------------------------ the fused forms
def dlogits_fused(f, d):
    """The gradient of the loss with respect to logits in one expression, from f.logits
    and f.Yb alone (work out softmax then cross-entropy on paper first)."""
    raise NotImplementedError("TODO 27: dlogits_fused")


def dhprebn_fused(f, d):
    """The gradient with respect to hprebn through all of batch norm in one expression,
    from d.hpreact and the forward's tensors (mind the n - 1)."""
    raise NotImplementedError("TODO 28: dhprebn_fused")


# ------------------------------------------------------ given: the passes that use them
STEP_BY_STEP = [
    dlogprobs, dprobs, dcounts_sum_inv, dcounts_sum, dcounts, dnorm_logits, dlogit_maxes,
    dlogits, dh, dW2, db2, dhpreact, dbngain, dbnbias, dbnraw, dbnvar_inv, dbnvar, dbndiff2,
    dbndiff, dbnmeani, dhprebn, dembcat, dW1, db1, demb, dC,
]  # fmt: skip
FUSED = [dlogits_fused, dh, dW2, db2, dhpreact, dbngain, dbnbias, dhprebn_fused]
FUSED += [dembcat, dW1, db1, demb, dC]


def backward(f, steps=STEP_BY_STEP):
    """Every gradient, the TODOs in order: d.<name> for each tensor f.<name> on the way."""
    d = SimpleNamespace()
    for step in steps:
        setattr(d, step.__name__[1:].removesuffix("_fused"), step(f, d))
    return d


def backward_fused(f):
    """The same parameter gradients through the two fused forms."""
    return backward(f, FUSED)
