"""Solved: backprop by hand: makemore's MLP with batch norm, its backward pass written one tensor
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
    n = len(f.Yb)
    out = np.zeros_like(f.logprobs)
    out[np.arange(n), f.Yb] = -1.0 / n
    return out


def dprobs(f, d):
    """logprobs = log(probs)."""
    return d.logprobs / f.probs


def dcounts_sum_inv(f, d):
    """probs = counts * counts_sum_inv: a column broadcast along each row."""
    return (f.counts * d.probs).sum(1, keepdims=True)


def dcounts_sum(f, d):
    """counts_sum_inv = counts_sum ** -1."""
    return -(f.counts_sum**-2) * d.counts_sum_inv


def dcounts(f, d):
    """counts is used twice: in probs and in counts_sum."""
    return f.counts_sum_inv * d.probs + d.counts_sum


def dnorm_logits(f, d):
    """counts = exp(norm_logits)."""
    return f.counts * d.counts


def dlogit_maxes(f, d):
    """norm_logits = logits - logit_maxes (a column; its gradient comes out near 0: why?)."""
    return -d.norm_logits.sum(1, keepdims=True)


def dlogits(f, d):
    """logits is used twice: in norm_logits and in logit_maxes (max routes to the argmax)."""
    at_max = np.eye(f.logits.shape[1])[f.logits.argmax(1)]
    return d.norm_logits + at_max * d.logit_maxes


def dh(f, d):
    """logits = h @ W2 + b2."""
    return d.logits @ f.W2.T


def dW2(f, d):
    return f.h.T @ d.logits


def db2(f, d):
    return d.logits.sum(0)


def dhpreact(f, d):
    """h = tanh(hpreact)."""
    return (1.0 - f.h**2) * d.h


def dbngain(f, d):
    """hpreact = bngain * bnraw + bnbias: bngain is a row broadcast over the batch."""
    return (f.bnraw * d.hpreact).sum(0, keepdims=True)


def dbnbias(f, d):
    return d.hpreact.sum(0, keepdims=True)


def dbnraw(f, d):
    return f.bngain * d.hpreact


def dbnvar_inv(f, d):
    """bnraw = bndiff * bnvar_inv."""
    return (f.bndiff * d.bnraw).sum(0, keepdims=True)


def dbnvar(f, d):
    """bnvar_inv = (bnvar + EPS) ** -0.5."""
    return -0.5 * (f.bnvar + EPS) ** -1.5 * d.bnvar_inv


def dbndiff2(f, d):
    """bnvar = bndiff2.sum(0, keepdims=True) / (n - 1)."""
    n = f.bndiff2.shape[0]
    return np.ones_like(f.bndiff2) / (n - 1) * d.bnvar


def dbndiff(f, d):
    """bndiff is used twice: in bndiff2 and in bnraw."""
    return 2 * f.bndiff * d.bndiff2 + f.bnvar_inv * d.bnraw


def dbnmeani(f, d):
    """bndiff = hprebn - bnmeani."""
    return -d.bndiff.sum(0, keepdims=True)


def dhprebn(f, d):
    """hprebn is used twice: in bndiff and in bnmeani."""
    n = f.hprebn.shape[0]
    return d.bndiff + np.ones_like(f.hprebn) / n * d.bnmeani


def dembcat(f, d):
    """hprebn = embcat @ W1 + b1."""
    return d.hprebn @ f.W1.T


def dW1(f, d):
    return f.embcat.T @ d.hprebn


def db1(f, d):
    return d.hprebn.sum(0)


def demb(f, d):
    """embcat = emb.reshape(n, -1)."""
    return d.embcat.reshape(f.emb.shape)


def dC(f, d):
    """emb = C[Xb]: a character may appear many times in a batch; its rows add up."""
    out = np.zeros_like(f.C)
    np.add.at(out, f.Xb, d.emb)
    return out


# ------------------------------------------------------------------ the fused forms
def dlogits_fused(f, d):
    """The gradient of the loss with respect to logits in one expression, from f.logits
    and f.Yb alone (work out softmax then cross-entropy on paper first)."""
    n = len(f.Yb)
    probs = np.exp(f.logits - f.logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    probs[np.arange(n), f.Yb] -= 1.0
    return probs / n


def dhprebn_fused(f, d):
    """The gradient with respect to hprebn through all of batch norm in one expression,
    from d.hpreact and the forward's tensors (mind the n - 1)."""
    n = f.hprebn.shape[0]
    g = d.hpreact
    return (
        f.bngain
        * f.bnvar_inv
        / n
        * (n * g - g.sum(0) - n / (n - 1) * f.bnraw * (g * f.bnraw).sum(0))
    )


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
