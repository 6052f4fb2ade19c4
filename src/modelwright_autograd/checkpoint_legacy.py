"""Reading the checkpoints written before safetensors: versions 1 and 2 of ``model.json``
(every weight a ``float.hex`` string in the JSON; version 1 with its older names) and the
weights-only ``.npz`` of the former ``tensor_nn.save``. checkpoint.py parses and checks
the JSON's header and calls these for the weights; every fault is a one-line
``LegacyError``, which it reports as a CheckpointError naming the file."""

from __future__ import annotations

import io
import math
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

import numpy as np

from .checks import is_json_positive_int, shown
from .scalar.nn import mlp_layer_key, state_dict_key_problems
from .tensor import nn as tensor_nn

_HEX_FLOAT = re.compile(r"-?(0x[0-9a-f]+(\.[0-9a-f]*)?p[+-]?[0-9]+|inf|nan)")
_MAX_DIMS = 32  # NumPy allows 64; no layer has more than 2


class LegacyError(ValueError):
    """A fault in an older checkpoint's weights: ``problem`` in one line."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


# ---------------------------------------------------------------------- versions 1 and 2
def _decode_floats(items: list[Any], where: str) -> list[float]:
    """Turn a list of ``float.hex`` strings into floats, checking each one."""
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
        raise LegacyError(f"{where}[{i}] {problem}: {shown(item)}")
    return values


def _legacy_name(name: str, model_is_sequential: bool = False) -> str:
    """A name from before torch's names (``layers.<i>.weight``) as it is now: an MLP's
    layer i is ``mlp_layer_key(i)``, a Sequential's module i is ``i``."""
    old = re.fullmatch(r"layers\.([0-9]{1,9})\.(.+)", name)
    if old is None:
        return name
    i = int(old[1])
    return f"{i if model_is_sequential else mlp_layer_key(i)}.{old[2]}"


def _renamed(named: Any, rename: Any) -> dict[str, Any]:
    """``{rename(name): item for name, item in named}``, refusing two names that become one
    (a legacy ``layers.0.weight`` beside ``0.weight``): which one is meant is unknowable."""
    out: dict[str, Any] = {}
    original: dict[str, str] = {}
    for name, item in named:
        new = rename(name)
        if new in out:
            raise LegacyError(
                f"holds both {shown(original[new])} and {shown(name)}, two names for the "
                f"tensor {shown(new)}; keep one",
            )
        out[new], original[new] = item, name
    return out


def decode_state(doc: Mapping[str, Any], arch: Any) -> dict[str, np.ndarray]:
    """The saved state dict as float64 arrays. The counts are checked against ``arch``
    before any number is decoded; names and shapes are the model's ``load_state_dict``'s
    to check."""
    if doc["version"] == 1 and arch.engine == "scalar":
        return _decode_v1_scalar(doc.get("parameters"), arch)
    if doc["version"] == 1:
        saved, key = doc.get("parameters"), "'parameters'"
        if isinstance(saved, dict):
            saved = _renamed(saved.items(), _legacy_name)
    else:
        saved, key = doc.get("state_dict"), "'state_dict'"
    if not isinstance(saved, dict):
        raise LegacyError(f"{key} must map parameter names to {{shape, data}}")
    expected, total = arch.num_parameters(), 0
    for name, entry in saved.items():
        where = f"{key} entry {shown(name)}"
        shape = entry.get("shape") if isinstance(entry, dict) else None
        data = entry.get("data") if isinstance(entry, dict) else None
        if not (
            isinstance(shape, list)
            and len(shape) <= _MAX_DIMS
            and all(is_json_positive_int(n) and n <= expected for n in shape)
        ):
            raise LegacyError(f"{where} has no valid 'shape' (got {shown(shape)})")
        if not isinstance(data, list) or len(data) != math.prod(shape):
            got = f"{len(data):,} numbers" if isinstance(data, list) else shown(data)
            raise LegacyError(
                f"{where} 'data' must hold {math.prod(shape):,} float.hex numbers, got {got}"
            )
        total += len(data)
        if total > expected:
            break  # enough said
    if total > expected:
        raise LegacyError(f"{key} holds more numbers than the {expected:,} a {arch.describe()} has")
    if total < expected:
        raise LegacyError(f"{key} holds {total:,} numbers; a {arch.describe()} has {expected:,}")
    return {
        name: np.array(
            _decode_floats(entry["data"], f"{key} entry {shown(name)} data"), np.float64
        ).reshape(entry["shape"])
        for name, entry in saved.items()
    }


def _decode_v1_scalar(items: Any, arch: Any) -> dict[str, np.ndarray]:
    """Version 1 kept a scalar model's weights as one list in ``parameters()`` order: layer
    by layer, neuron by neuron, its weights then its bias."""
    expected = arch.num_parameters()
    if not isinstance(items, list) or len(items) != expected:
        got = f"{len(items):,} numbers" if isinstance(items, list) else shown(items)
        raise LegacyError(f"'parameters' must hold {expected:,} float.hex numbers, got {got}")
    flat = np.array(_decode_floats(items, "'parameters'"), np.float64)
    state, start = {}, 0
    for i, (nin, nout) in enumerate(pairwise((arch.nin, *arch.nouts))):
        block = flat[start : start + nout * (nin + 1)].reshape(nout, nin + 1)
        state[f"{mlp_layer_key(i)}.weight"] = block[:, :nin]
        state[f"{mlp_layer_key(i)}.bias"] = block[:, nin]
        start += block.size
    return state


# ---------------------------------------------------------------------- .npz (weights only)
#: What ``zipfile`` raises on a damaged archive (found by corrupting bytes of a real .npz):
#: a bad CRC or header, a negative seek from a corrupt directory, a bad deflate stream...
_CORRUPT_ZIP = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,  # an unsupported compression method
    RuntimeError,  # an encrypted member
    ValueError,
    OSError,
    struct.error,
    OverflowError,
    KeyError,
    IndexError,
)


def read_npz(raw: bytes, model: Any) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` written by the former ``tensor_nn.save``. Each member's
    name, ``.npy`` header (dtype, shape) and declared size are checked against ``model``
    before its data is read, and no more than the model's size is ever inflated, so a zip
    bomb or a header claiming 10**13 numbers is refused without allocating them."""
    expected = {name: np.shape(value) for name, value in model.state_dict().items()}
    limit = sum(8 * math.prod(shape) + 1024 for shape in expected.values()) + 4096
    if len(raw) > limit:
        raise LegacyError(
            f"is {len(raw):,} bytes, more than an .npz of this model's weights ({limit:,})"
        )
    sequential = isinstance(model, tensor_nn.Sequential)
    state = {}
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = _renamed(
                ((info.filename.removesuffix(".npy"), info) for info in archive.infolist()),
                lambda name: _legacy_name(name, sequential),
            )
            problems = state_dict_key_problems(expected, members)
            if problems:
                raise LegacyError("; ".join(problems))
            for name, info in members.items():
                with archive.open(info) as member:
                    state[name] = _read_npy(name, info, member, expected[name])
    except LegacyError:
        raise
    except _CORRUPT_ZIP as e:
        raise LegacyError(f"not a readable .npz archive ({e})") from None
    return state


def _read_npy(name: str, info: zipfile.ZipInfo, member: Any, shape: tuple[int, ...]) -> np.ndarray:
    """One ``.npy`` member: header first, then exactly the bytes that header promises."""
    where = f"array {shown(name)}"
    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            found, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            found, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except ValueError as e:
        raise LegacyError(f"{where} has a bad .npy header ({e})") from None
    if dtype.hasobject or dtype.kind not in "fiu":
        raise LegacyError(f"{where} holds {dtype} data, not numbers")
    if found != shape:
        raise LegacyError(f"{where} has shape {shown(found)}; the model's {name} has shape {shape}")
    nbytes = math.prod(shape) * dtype.itemsize
    if info.file_size != member.tell() + nbytes:
        raise LegacyError(
            f"{where} declares {info.file_size:,} bytes; its header promises "
            f"{member.tell() + nbytes:,}",
        )
    data = member.read(nbytes)
    if len(data) != nbytes:
        raise LegacyError(f"{where} is truncated")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")
