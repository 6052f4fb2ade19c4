"""Rewrite a checkpoint in format version 2, as the code before safetensors wrote it
(tests/data/legacy/v2_* are files it wrote): every weight a float.hex string in the JSON,
each AdamW moment the base64 of its little-endian bytes. The tests of that format's
reader edit such files to break them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

PREFIX = "optimizer.state."


def as_version_2(path: Path) -> None:
    """Rewrite the checkpoint ``path`` as one version-2 JSON file (the safetensors file
    beside it is left, unused)."""
    doc = json.loads(path.read_text())
    tensors_path = path.parent / doc.pop("tensors")["file"]
    tensors = load_file(tensors_path)
    doc["version"] = 2
    doc["state_dict"] = {
        name: {
            "shape": list(array.shape),
            "data": [v.hex() for v in array.astype(np.float64).ravel().tolist()],
        }
        for name, array in tensors.items()
        if not name.startswith(PREFIX)
    }
    optimizer = doc.get("optimizer")
    if isinstance(optimizer, dict):
        state: dict[str, dict] = {}
        for name, array in tensors.items():
            if name.startswith(PREFIX):
                param, _, key = name.removeprefix(PREFIX).rpartition(".")
                little = array.astype(array.dtype.newbyteorder("<"))
                state.setdefault(param, {})[key] = (
                    int(array) if key == "step" else base64.b64encode(little.tobytes()).decode()
                )
        optimizer["state"] = state
    path.write_text(json.dumps(doc, indent=1) + "\n")


def copy_checkpoint(source: Path, target: Path) -> None:
    """Copy a checkpoint's JSON to ``target`` and the safetensors file it names beside it."""
    doc = json.loads(source.read_text())
    if "tensors" in doc:
        name = doc["tensors"]["file"]
        (target.parent / name).write_bytes((source.parent / name).read_bytes())
    target.write_bytes(source.read_bytes())
