"""Neurons in a trace: the structure the page's neuron view draws.

A neuron is a fused ``dot`` or ``dot_relu`` node (``nn.Neuron``'s forward), optionally
followed by its activation (``tanh``, ``sigmoid`` or ``relu`` as the dot's only user). The
same neuron run on several data points leaves one such node per point, all sharing the same
weight and bias leaves: grouping the nodes by those leaves gives the neurons, and following
which neuron's output feeds which gives the layers and, per node, the data point (sample)
it belongs to. Everything else (the loss's own arithmetic) is "loss". ``find_network``
returns None when the graph is not made of such layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from .trace import Trace

NEURON_OPS = ("dot", "dot_relu")
ACTIVATIONS = ("tanh", "sigmoid", "relu")


@dataclass(frozen=True)
class Instance:
    """One neuron on one sample: its dot node, the node that is its output (the dot itself,
    or the activation after it), and the node ids of its inputs (the previous layer)."""

    dot: int
    out: int
    sample: int
    inputs: tuple[int, ...]


@dataclass(frozen=True)
class Neuron:
    layer: int  # 0 is the first layer of neurons
    index: int  # its row in the layer
    weights: tuple[int, ...]  # the weight leaves' ids, then the bias's
    instances: dict[int, Instance]  # by sample


@dataclass(frozen=True)
class Network:
    neurons: tuple[Neuron, ...]  # by layer, then index
    layers: tuple[tuple[int, ...], ...]  # each layer's neurons, as indices into ``neurons``
    samples: int
    inputs: dict[int, tuple[int, ...]]  # per sample, the data inputs of the first layer
    unit: dict[int, int]  # node id -> neuron index, for the dot and activation nodes


def find_network(trace: Trace) -> Network | None:
    """The layers of neurons in ``trace``, or None if it has none (or not as layers)."""
    nodes = trace.nodes
    users: list[list[int]] = [[] for _ in nodes]
    for n in nodes:
        for i in n.inputs:
            users[i].append(n.id)
    by_weights: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    output_of: dict[int, int] = {}  # the node that is a neuron's output -> its dot node
    for n in nodes:
        if n.op not in NEURON_OPS or len(n.inputs) % 2 != 1:
            continue
        k = len(n.inputs) // 2
        weights = (*n.inputs[:k], n.inputs[-1])
        if any(nodes[w].inputs for w in weights):
            continue  # a weight computed from something else: not a layer's neuron
        out = n.id
        if n.op == "dot" and len(users[n.id]) == 1:
            user = nodes[users[n.id][0]]
            if user.op in ACTIVATIONS and len(user.inputs) == 1:
                out = user.id
        by_weights.setdefault(weights, []).append((n.id, out))
        output_of[out] = n.id
    if not by_weights:
        return None
    layer_of: dict[int, int] = {}  # dot id -> layer
    sample_key: dict[int, object] = {}  # dot id -> what identifies its sample
    for n in nodes:  # topological order: a neuron's inputs are placed before it
        if n.id not in output_of.values():
            continue
        k = len(n.inputs) // 2
        xs = n.inputs[k : 2 * k]
        fed_by = [output_of[x] for x in xs if x in output_of]
        if fed_by:
            if len(fed_by) != len(xs):
                return None  # partly fed by neurons: not a plain layer
            layer_of[n.id] = 1 + max(layer_of[d] for d in fed_by)
            sample_key[n.id] = sample_key[fed_by[0]]
        else:
            layer_of[n.id] = 0
            sample_key[n.id] = xs
    samples: dict[object, int] = {}
    for dot in sorted(sample_key):
        samples.setdefault(sample_key[dot], len(samples))
    groups = []
    for weights, pairs in by_weights.items():
        layers = {layer_of[d] for d, _ in pairs}
        by_sample: dict[int, Instance] = {}
        for dot, out in pairs:
            s = samples[sample_key[dot]]
            if s in by_sample:
                return None  # the same neuron twice on one sample
            k = len(nodes[dot].inputs) // 2
            by_sample[s] = Instance(dot, out, s, nodes[dot].inputs[k : 2 * k])
        if len(layers) != 1:
            return None
        groups.append((layers.pop(), min(d for d, _ in pairs), weights, by_sample))
    groups.sort(key=lambda g: (g[0], g[1]))
    if [g[0] for g in groups] != sorted(g[0] for g in groups) or groups[0][0] != 0:
        return None
    depth = groups[-1][0] + 1
    if {g[0] for g in groups} != set(range(depth)):
        return None
    neurons: list[Neuron] = []
    layers: list[list[int]] = [[] for _ in range(depth)]
    for layer, _, weights, by_sample in groups:
        layers[layer].append(len(neurons))
        neurons.append(Neuron(layer, len(layers[layer]) - 1, weights, by_sample))
    inputs = {s: inst.inputs for n in neurons if n.layer == 0 for s, inst in n.instances.items()}
    unit = {}
    for k, n in enumerate(neurons):
        for inst in n.instances.values():
            unit[inst.dot] = unit[inst.out] = k
    return Network(tuple(neurons), tuple(map(tuple, layers)), len(samples), inputs, unit)
