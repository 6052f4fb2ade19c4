"""Saving and loading trained models as one JSON file, ``model.json``, for both engines.

Weights are written with ``float.hex`` (exact to the bit), writes are atomic, and a load
checks everything before it touches a model. The format and the reasons for it are in
docs/training.md.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from . import tensor_nn
from .checks import is_json_positive_int
from .files import write_json
from .nn import ACTIVATIONS, MLP

FORMAT = "modelwright-autograd checkpoint"
VERSION = 1
ENGINES = ("scalar", "tensor")
_DTYPES = ("float64", "float32")
_HEX_FLOAT = re.compile(r"-?(0x[0-9a-f]+(\.[0-9a-f]*)?p[+-]?[0-9]+|inf|nan)")

#: The most weights a checkpoint may hold, per engine. A Value costs ~110 bytes and ~4 us
#: to build, so a million is ~0.1 GB and a few seconds; a tensor model's float64s cost 8
#: bytes each, so fifty million is 0.4 GB. The largest model this project trains (the
#: digits MLP) has 17,290. Anything bigger is a corrupt or hand-edited architecture.
MAX_PARAMETERS = {"scalar": 1_000_000, "tensor": 50_000_000}


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, corrupt or does not fit the model."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"checkpoint {self.path}: {problem}")


# ---------------------------------------------------------------------- architecture
@dataclass(frozen=True)
class Architecture:
    """What it takes to rebuild a model before filling in its weights."""

    engine: str
    nin: int
    nouts: tuple[int, ...]
    activation: str
    dtype: str = "float64"  # the tensor engine's parameter dtype; Values are always float64

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"nin": self.nin, "nouts": list(self.nouts)}
        d["activation"] = self.activation
        if self.engine == "tensor":
            d["dtype"] = self.dtype
        return d

    def describe(self) -> str:
        sizes = "-".join(str(n) for n in (self.nin, *self.nouts))
        return f"{self.engine} MLP {sizes} ({self.activation})"

    def num_parameters(self) -> int:
        """How many weights the model has, from the sizes alone: each layer is a
        (nout, nin) weight matrix and nout biases, so (nin + 1) * nout."""
        sizes = (self.nin, *self.nouts)
        return sum((nin + 1) * nout for nin, nout in pairwise(sizes))

    def layout(self) -> dict[str, tuple[int, ...]]:
        """Each parameter's ``state_dict`` name and shape, without building the model. The
        scalar engine saves the same numbers as one flat list in ``parameters()`` order."""
        sizes = (self.nin, *self.nouts)
        shapes: dict[str, tuple[int, ...]] = {}
        for i, (nin, nout) in enumerate(pairwise(sizes)):
            shapes[f"layers.{i}.weight"] = (nout, nin)
            shapes[f"layers.{i}.bias"] = (nout,)
        return shapes


def architecture_of(model: Any) -> Architecture:
    """The architecture of a model this module can save: an ``nn.MLP`` or ``tensor_nn.MLP``."""
    if isinstance(model, MLP):
        return Architecture("scalar", model.nin, tuple(model.nouts), model.activation)
    if isinstance(model, tensor_nn.MLP):
        nouts = tuple(layer.out_features for layer in model.layers)
        dtype = str(model.layers[0].weight.dtype)
        return Architecture("tensor", model.layers[0].in_features, nouts, model.activation, dtype)
    raise TypeError(f"cannot checkpoint a {type(model).__name__}; expected an MLP")


def build_model(arch: Architecture) -> Any:
    """A fresh model of this architecture (its weights are then overwritten by a load)."""
    if arch.engine == "scalar":
        return MLP(arch.nin, list(arch.nouts), arch.activation, seed=0)
    return tensor_nn.MLP(arch.nin, list(arch.nouts), arch.activation, seed=0, dtype=arch.dtype)


# ---------------------------------------------------------------------- save
def _encode_parameters(model: Any, engine: str) -> Any:
    """Scalar: a list in ``parameters()`` order. Tensor: ``{name: {"shape", "data"}}`` from
    ``state_dict()``, each array flattened in C order."""
    if engine == "scalar":
        return [float(p.data).hex() for p in model.parameters()]
    return {
        name: {"shape": list(array.shape), "data": [v.hex() for v in array.ravel().tolist()]}
        for name, array in model.state_dict().items()
    }


def save_checkpoint(
    path: str | os.PathLike[str], model: Any, metadata: Mapping[str, Any] | None = None
) -> None:
    """Write ``model`` (its architecture and every weight) and JSON-able ``metadata``
    (for example the data it was trained on) to ``path``, atomically."""
    arch = architecture_of(model)
    if arch.num_parameters() > MAX_PARAMETERS[arch.engine]:
        raise ValueError(
            f"cannot checkpoint a {arch.engine} model with {arch.num_parameters():,} weights: "
            f"loading is limited to {MAX_PARAMETERS[arch.engine]:,}"
        )
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "engine": arch.engine,
        "architecture": arch.to_dict(),
    }
    for key, value in (metadata or {}).items():
        if key in _HEADER:
            raise ValueError(f"metadata key {key!r} is reserved for the checkpoint itself")
        doc[key] = value
    doc["parameters"] = _encode_parameters(model, arch.engine)
    write_json(path, doc)


# ---------------------------------------------------------------------- load
_HEADER = frozenset({"format", "version", "engine", "architecture", "parameters"})


@dataclass
class Checkpoint:
    """A loaded checkpoint: the rebuilt model, its architecture, and the other keys."""

    path: Path
    architecture: Architecture
    model: Any
    metadata: dict[str, Any]


def _read_document(path: Path) -> dict[str, Any]:
    """Parse the JSON file and check the header, raising CheckpointError for any fault."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CheckpointError(path, "no such file") from None
    except IsADirectoryError:
        raise CheckpointError(path, "is a directory, not a checkpoint file") from None
    except UnicodeDecodeError:
        raise CheckpointError(path, "not a text file (corrupt?)") from None
    except OSError as e:
        raise CheckpointError(path, f"cannot read it ({e.strerror})") from None
    if not text.strip():
        raise CheckpointError(path, "the file is empty")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckpointError(
            path, f"not valid JSON, truncated or corrupt ({e.msg} at line {e.lineno})"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(path, f"not a modelwright-autograd checkpoint (no {FORMAT!r})")
    if doc.get("version") != VERSION:
        raise CheckpointError(
            path, f"checkpoint version {doc.get('version')!r}; this code reads {VERSION}"
        )
    return doc


def _read_architecture(path: Path, doc: Mapping[str, Any]) -> Architecture:
    engine = doc.get("engine")
    if engine not in ENGINES:
        raise CheckpointError(path, f"unknown engine {engine!r}; expected one of {ENGINES}")
    arch = doc.get("architecture")
    if not isinstance(arch, dict):
        raise CheckpointError(path, "missing its 'architecture'")
    nin, nouts, activation = arch.get("nin"), arch.get("nouts"), arch.get("activation")
    if not is_json_positive_int(nin):
        raise CheckpointError(path, f"architecture 'nin' must be a positive integer, got {nin!r}")
    if not (isinstance(nouts, list) and nouts and all(is_json_positive_int(n) for n in nouts)):
        raise CheckpointError(
            path, f"architecture 'nouts' must be a list of positive integers, got {nouts!r}"
        )
    if activation not in ACTIVATIONS:
        raise CheckpointError(path, f"unknown activation {activation!r}")
    dtype = arch.get("dtype", "float64") if engine == "tensor" else "float64"
    if dtype not in _DTYPES:
        raise CheckpointError(path, f"unsupported dtype {dtype!r}; expected one of {_DTYPES}")
    found = Architecture(engine, nin, tuple(nouts), activation, dtype)
    if found.num_parameters() > MAX_PARAMETERS[engine]:
        raise CheckpointError(
            path,
            f"architecture has {found.num_parameters():,} weights, more than the "
            f"{MAX_PARAMETERS[engine]:,} a {engine} checkpoint may hold (corrupt layer sizes?)",
        )
    return found


def _decode_floats(path: Path, items: Any, expected: int, where: str) -> list[float]:
    """Turn a list of ``float.hex`` strings into floats, checking the count and each one."""
    if not isinstance(items, list):
        raise CheckpointError(path, f"{where} must be a list of float.hex strings")
    if len(items) != expected:
        raise CheckpointError(path, f"{where} holds {len(items)} numbers; the model has {expected}")
    values = []
    for i, item in enumerate(items):
        # fromhex alone would read a decimal "0.5" as hex digits (0.3125): insist on 0x
        problem = "is not a float.hex number"
        if isinstance(item, str) and _HEX_FLOAT.fullmatch(item):
            try:
                values.append(float.fromhex(item))
                continue
            except OverflowError:  # "0x1p+99999": well formed, but beyond float64
                problem = "is too large for a float64"
        shown = repr(item) if len(repr(item)) <= 30 else repr(item)[:27] + "..."
        raise CheckpointError(path, f"{where}[{i}] {problem}: {shown}")
    return values


def _decode_parameters(path: Path, doc: Mapping[str, Any], arch: Architecture):
    """The saved weights, checked against what ``arch`` needs (no model is built for this):
    a list of floats for the scalar engine, a state dict of arrays for the tensor engine."""
    saved = doc.get("parameters")
    if arch.engine == "scalar":
        return _decode_floats(path, saved, arch.num_parameters(), "'parameters'")
    expected = arch.layout()
    if not isinstance(saved, dict):
        raise CheckpointError(path, "'parameters' must map parameter names to arrays")
    if set(saved) != set(expected):
        missing = sorted(set(expected) - set(saved))
        unexpected = sorted(set(saved) - set(expected))
        raise CheckpointError(
            path, f"parameter names differ: missing {missing}, unexpected {unexpected}"
        )
    state = {}
    for name, shape in expected.items():
        entry = saved[name]
        where = f"parameter {name!r}"
        if not isinstance(entry, dict) or entry.get("shape") != list(shape):
            got = entry.get("shape") if isinstance(entry, dict) else entry
            raise CheckpointError(path, f"{where} has shape {got!r}; the model needs {shape}")
        values = _decode_floats(path, entry.get("data"), math.prod(shape), f"{where} data")
        with np.errstate(over="ignore"):
            array = np.array(values, dtype=arch.dtype).reshape(shape)
        overflowed = np.isinf(array) & np.isfinite(np.array(values).reshape(shape))
        if overflowed.any():  # only a float32 model can get here: 1e300 would become inf
            i = int(np.flatnonzero(overflowed)[0])
            raise CheckpointError(
                path, f"{where} data[{i}] is too large for a {arch.dtype}: {values[i]!r}"
            )
        state[name] = array
    return state


def _apply_parameters(model: Any, engine: str, values: Any) -> None:
    """Copy decoded, already-checked weights into ``model`` (this step cannot fail)."""
    if engine == "scalar":
        for p, v in zip(model.parameters(), values):
            p.data = v
    else:
        model.load_state_dict(values)


def _metadata(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _HEADER}


def load_into(model: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Overwrite ``model``'s weights with those saved at ``path``; return the metadata.

    The architecture must match exactly. Every check happens before the first weight is
    written, so on a CheckpointError ``model`` is unchanged.
    """
    path = Path(path)
    doc = _read_document(path)
    saved = _read_architecture(path, doc)
    current = architecture_of(model)
    if saved != current:
        raise CheckpointError(
            path,
            f"architecture mismatch: the file holds a {saved.describe()}, "
            f"the model is a {current.describe()}",
        )
    values = _decode_parameters(path, doc, saved)
    _apply_parameters(model, saved.engine, values)
    return _metadata(doc)


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Rebuild the model saved at ``path``, with its architecture and metadata."""
    path = Path(path)
    doc = _read_document(path)
    arch = _read_architecture(path, doc)
    values = _decode_parameters(path, doc, arch)  # all checks pass before anything is built
    model = build_model(arch)
    _apply_parameters(model, arch.engine, values)
    return Checkpoint(path, arch, model, _metadata(doc))
