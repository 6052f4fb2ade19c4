"""An AdamW's state in a checkpoint (no pickle): the ``"optimizer"`` entry that ``train``
writes beside a language model's weights so that ``--resume`` can continue the run
exactly, and that an export can turn into torch's ``optimizer.state_dict()``.

The layout is torch's with the parameters named rather than numbered (the names are the
model's ``state_dict`` names; torch's number for a parameter is its position across the
groups in order)::

    "optimizer": {
      "type": "AdamW", "dtype": "float32",
      "param_groups": [{"lr": 0.001, "betas": [0.9, 0.99], "eps": 1e-08,
                        "weight_decay": 0.1, "params": ["transformer.wte.weight", ...]}, ...],
      "state": {"transformer.wte.weight": {"step": 120, "exp_avg": <array>,
                                           "exp_avg_sq": <array>}, ...}
    }

In memory the moments are parameter-shaped NumPy arrays in ``dtype``;
``checkpoint.save_checkpoint`` writes ``"state"`` into the safetensors file and the rest
into the JSON. A version-2 checkpoint kept each moment as the base64 of its little-endian
bytes (``decode_moments`` reads it). docs/checkpoints.md describes both.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

import numpy as np

from .checks import is_json_positive_int
from .optim import AdamW

#: The settings of an AdamW parameter group that a checkpoint keeps (torch's names).
ADAMW_SETTINGS = ("lr", "betas", "eps", "weight_decay")


def optimizer_to_json(optimizer: AdamW, model: Any) -> dict[str, Any]:
    """The ``"optimizer"`` entry for ``optimizer`` (an AdamW over ``model``'s parameters)."""
    names = {id(p): name for name, p in model.named_parameters()}
    params = [p for group in optimizer.param_groups for p in group["params"]]
    dtype = str(np.result_type(*[p.data for p in params]))
    saved = optimizer.state_dict()
    groups = [
        {
            **{k: list(g[k]) if k == "betas" else g[k] for k in ADAMW_SETTINGS},
            "params": [names[id(params[i])] for i in g["params"]],
        }
        for g in saved["param_groups"]
    ]
    state = {
        names[id(params[i])]: {
            "step": entry["step"],
            "exp_avg": np.asarray(entry["exp_avg"], dtype),
            "exp_avg_sq": np.asarray(entry["exp_avg_sq"], dtype),
        }
        for i, entry in saved["state"].items()
    }
    return {"type": "AdamW", "dtype": dtype, "param_groups": groups, "state": state}


class OptimizerStateError(ValueError):
    """An ``"optimizer"`` entry that is malformed or does not fit the model: one line."""

    def __init__(self, path: Path, problem: str) -> None:
        self.problem = f"its optimizer state {problem}"
        super().__init__(f"{path}: {self.problem}")


def optimizer_from_json(path: Path, doc: Any, optimizer: AdamW, model: Any) -> None:
    """Load the ``"optimizer"`` entry ``doc`` into ``optimizer`` (made for ``model`` with
    the same groups): every name, size and number is checked first, so on an
    OptimizerStateError ``optimizer`` is unchanged."""
    if not isinstance(doc, dict) or doc.get("type") != "AdamW":
        raise OptimizerStateError(path, "is missing or not an AdamW's")
    dtype = doc.get("dtype")
    if dtype not in ("float32", "float64"):
        raise OptimizerStateError(path, f"has dtype {str(dtype)[:40]!r}, not float32 or float64")
    named = dict(model.named_parameters())
    params = [p for group in optimizer.param_groups for p in group["params"]]
    index = {id(p): i for i, p in enumerate(params)}
    groups, state = doc.get("param_groups"), doc.get("state")
    if not isinstance(groups, list) or not isinstance(state, dict):
        raise OptimizerStateError(path, "needs 'param_groups' (a list) and 'state' (an object)")
    mine = [[index[id(p)] for p in g["params"]] for g in optimizer.param_groups]
    saved_groups = []
    for k, group in enumerate(groups):
        if not isinstance(group, dict) or any(
            key not in group for key in (*ADAMW_SETTINGS, "params")
        ):
            raise OptimizerStateError(path, f"group {k} lacks one of {(*ADAMW_SETTINGS, 'params')}")
        try:
            ids = [index[id(named[name])] for name in group["params"]]
        except (KeyError, TypeError):
            raise OptimizerStateError(
                path, f"group {k} names a parameter the model lacks"
            ) from None
        if k >= len(mine) or ids != mine[k]:
            raise OptimizerStateError(path, "groups its parameters unlike this run's optimizer")
        saved_groups.append({**{key: group[key] for key in ADAMW_SETTINGS}, "params": ids})
    if len(saved_groups) != len(mine):
        raise OptimizerStateError(path, f"has {len(saved_groups)} groups, the run's {len(mine)}")
    moments: dict[int, dict[str, Any]] = {}
    for name, entry in state.items():
        if name not in named or not isinstance(entry, dict):
            raise OptimizerStateError(path, f"has state for {name[:60]!r}, not a parameter")
        shape = named[name].data.shape
        if not is_json_positive_int(entry.get("step")):
            raise OptimizerStateError(path, f"gives {name} no step count")
        m, v = (_decode(path, entry.get(k), dtype, shape, f"{name}'s {k}") for k in _MOMENTS)
        if (v < 0).any():
            raise OptimizerStateError(path, f"has a negative number in {name}'s exp_avg_sq")
        moments[index[id(named[name])]] = {"step": entry["step"], "exp_avg": m, "exp_avg_sq": v}
    try:
        optimizer.load_state_dict({"state": moments, "param_groups": saved_groups})
    except (ValueError, TypeError) as e:
        raise OptimizerStateError(path, str(e)) from None


_MOMENTS = ("exp_avg", "exp_avg_sq")


def _decode(path: Path, value: Any, dtype: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """A moment: an array (as a checkpoint loads it), or a version-2 file's base64 that
    decode_moments left because it does not fit."""
    if isinstance(value, np.ndarray):
        if value.dtype != np.dtype(dtype) or value.shape != shape:
            raise OptimizerStateError(
                path, f"has {what} of {value.dtype} {value.shape}, not {dtype} {shape}"
            )
        array = value
    elif isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise OptimizerStateError(path, f"has {what} that is not base64") from None
        expected = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if len(raw) != expected:
            raise OptimizerStateError(path, f"has {len(raw):,} bytes of {what}, not {expected:,}")
        array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)
    else:
        raise OptimizerStateError(path, f"has no {what}")
    if not np.isfinite(array).all():
        raise OptimizerStateError(path, f"has a non-finite number in {what}")
    return array.astype(dtype)


def decode_moments(doc: dict[str, Any], model: Any) -> dict[str, Any]:
    """A version-2 ``"optimizer"`` entry with each base64 moment that is the size of its
    parameter decoded into an array (exact to the bit); anything else is left as it is,
    for optimizer_from_json to name when the state is used."""
    state, dtype = doc.get("state"), doc.get("dtype")
    if not isinstance(state, dict) or dtype not in ("float32", "float64"):
        return doc
    shapes = {name: p.data.shape for name, p in model.named_parameters()}
    little = np.dtype(dtype).newbyteorder("<")
    decoded: dict[str, Any] = {}
    for name, entry in state.items():
        if isinstance(entry, dict) and name in shapes:
            entry = dict(entry)
            for key in _MOMENTS:
                try:
                    raw = base64.b64decode(entry.get(key), validate=True)
                except (binascii.Error, ValueError, TypeError):
                    continue
                if len(raw) == int(np.prod(shapes[name])) * little.itemsize:
                    array = np.frombuffer(raw, little).reshape(shapes[name]).astype(dtype)
                    entry[key] = array
        decoded[name] = entry
    return {**doc, "state": decoded}
