"""Saving and loading models of both engines as one JSON file, ``model.json``, and
exporting them to PyTorch.

A checkpoint holds the architecture and the model's ``state_dict()`` (torch's names), each
weight written with ``float.hex``, exact to the bit. Writes are atomic; a load checks the
file (a regular file of bounded size) and every number before it touches a model, and
every fault is one ``CheckpointError``. The format and the reasons for it are in
docs/checkpoints.md.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import reprlib
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from .checks import MAX_LM_PARAMETERS, MAX_PARAMETERS, is_json_int, is_json_positive_int, shown_path
from .files import UnreadableFile, atomic_write, read_bounded, write_json
from .lm.models import LanguageModel, LMArchitecture, state_dict_doc
from .scalar.nn import ACTIVATIONS, MLP, mlp_layer_key, state_dict_key_problems
from .tensor import nn as tensor_nn

FORMAT = "modelwright-autograd checkpoint"
VERSION = 2  # 1: before the weights were a state_dict with torch's names (still read)
ENGINES = ("scalar", "tensor")
_DTYPES = ("float64", "float32")
_HEX_FLOAT = re.compile(r"-?(0x[0-9a-f]+(\.[0-9a-f]*)?p[+-]?[0-9]+|inf|nan)")

#: The most layers a checkpoint's MLP may have (checks.MAX_PARAMETERS bounds its weights).
#: The deepest this project trains has 3; a thousand loads in well under a second.
MAX_LAYERS = 1_000
#: The largest file a load reads: the longest float.hex (24 characters) with its quotes,
#: comma, newline and indentation, for the most weights, plus for a language model its
#: optimiser's two moments in base64 (22 characters a float64 weight), plus a megabyte.
MAX_FILE_BYTES = max(48 * max(MAX_PARAMETERS.values()), 70 * MAX_LM_PARAMETERS) + 2**20
#: The most JSON values a load parses (bounded before parsing by the commas, brackets and
#: braces, which over-count): one a weight, plus room for the names, shapes and metadata;
#: and at most one per JSON_VALUE_BYTES of the file, since a weight's float.hex takes at
#: least 11 ("0x0.0p+0" with its quotes and comma). Bounds the parsed document near 70
#: bytes a value and 9 bytes a byte of the file whatever it holds (95 MB of ``[],`` would
#: otherwise become 2.4 GB of empty lists).
MAX_JSON_VALUES = max(*MAX_PARAMETERS.values(), MAX_LM_PARAMETERS) + 2**17
JSON_VALUE_BYTES = 8
_MAX_PROBLEM_CHARS = 300
_MAX_PATH_CHARS = 160
_MAX_DIMS = 32  # NumPy allows 64; no layer has more than 2

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = _repr.maxlong = 40


def shown(value: Any) -> str:
    """``repr(value)`` cut to a few dozen characters, for error messages about file content
    (a list of 100,000 layer sizes or a 4,000-digit number is not printed whole)."""
    return _repr.repr(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, corrupt or does not fit the model. Its
    message is one line of at most a few hundred characters."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        self.problem = _cut(" ".join(problem.split()), _MAX_PROBLEM_CHARS)
        super().__init__(
            f"checkpoint {_cut(shown_path(self.path), _MAX_PATH_CHARS)}: {self.problem}"
        )


# ---------------------------------------------------------------------- architecture
@dataclass(frozen=True)
class Architecture:
    """What it takes to rebuild a model before filling in its weights."""

    engine: str
    nin: int
    nouts: tuple[int, ...]
    activation: str
    dtype: str = "float64"  # the tensor engine's parameter dtype; Values are always float64
    #: "mlp", or "cnn" for a ``tensor_nn.CNN``: then nin is the pixels of its square
    #: images and nouts are its two conv layers' channels and its classes.
    model: str = "mlp"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"nin": self.nin, "nouts": list(self.nouts)}
        d["activation"] = self.activation
        if self.engine == "tensor":
            d["dtype"] = self.dtype
        if self.model != "mlp":
            d["model"] = self.model
        return d

    def describe(self) -> str:
        """``scalar MLP 2-16-16-1 (relu)``; a deep one's middle sizes are left out."""
        if self.model == "cnn":
            c1, c2, classes = self.nouts
            side = math.isqrt(self.nin)
            return f"tensor CNN {side}x{side} conv {c1}-{c2} -> {classes}"
        sizes = [str(n) for n in (self.nin, *self.nouts)]
        if len(sizes) > 12:
            sizes = [*sizes[:5], f"...({len(self.nouts):,} layers)...", *sizes[-2:]]
        return f"{self.engine} MLP {'-'.join(sizes)} ({self.activation})"

    def num_parameters(self) -> int:
        """How many numbers the state_dict holds, from the sizes alone. An MLP layer is a
        (nout, nin) weight matrix and nout biases, so (nin + 1) * nout. A CNN's conv layer
        has cout * (cin * 9 + 1) and its batch norm 4 * cout + 1 (weight, bias, running
        mean and variance, the batch count); its head sees cout * (side/4)**2 inputs."""
        if self.model == "cnn":
            c1, c2, classes = self.nouts
            flat = c2 * (math.isqrt(self.nin) // 4) ** 2
            convs = sum(cout * (cin * 9 + 1) + 4 * cout + 1 for cin, cout in ((1, c1), (c1, c2)))
            return convs + (flat + 1) * classes
        sizes = (self.nin, *self.nouts)
        return sum((nin + 1) * nout for nin, nout in pairwise(sizes))


def architecture_of(model: Any) -> Architecture | LMArchitecture:
    """The architecture of a model this module can save: an ``nn.MLP``, a ``tensor_nn.MLP``,
    a ``tensor_nn.CNN`` or a language model (``lm.models``)."""
    if isinstance(model, LanguageModel):
        return LMArchitecture(model.config)
    if isinstance(model, tensor_nn.CNN):
        nouts = (*model.channels, model.classes)
        dtype = str(model.head.weight.dtype)
        return Architecture("tensor", model.side**2, nouts, "relu", dtype, "cnn")
    if isinstance(model, MLP):
        return Architecture("scalar", model.nin, tuple(model.nouts), model.activation)
    if isinstance(model, tensor_nn.MLP):
        nouts = tuple(layer.out_features for layer in model.layers)
        dtype = str(model.layers[0].weight.dtype)
        return Architecture("tensor", model.layers[0].in_features, nouts, model.activation, dtype)
    raise TypeError(f"cannot checkpoint a {type(model).__name__}; expected an MLP or a CNN")


def weight_limit(arch: Architecture | LMArchitecture) -> int:
    """The most weights a checkpoint of this kind of model may hold (checks.py)."""
    if isinstance(arch, LMArchitecture):
        return MAX_LM_PARAMETERS
    return MAX_PARAMETERS[arch.engine]


def build_model(arch: Architecture | LMArchitecture) -> Any:
    """A fresh model of this architecture (its weights are then overwritten by a load)."""
    if isinstance(arch, LMArchitecture):
        return arch.build()
    if arch.model == "cnn":
        side, (c1, c2, classes) = math.isqrt(arch.nin), arch.nouts
        return tensor_nn.CNN(side, (c1, c2), classes, seed=0, dtype=arch.dtype)
    if arch.engine == "scalar":
        return MLP(arch.nin, list(arch.nouts), arch.activation, seed=0)
    return tensor_nn.MLP(arch.nin, list(arch.nouts), arch.activation, seed=0, dtype=arch.dtype)


# ---------------------------------------------------------------------- save
_HEADER = frozenset({"format", "version", "engine", "architecture", "state_dict", "parameters"})


def save_checkpoint(
    path: str | os.PathLike[str], model: Any, metadata: Mapping[str, Any] | None = None
) -> None:
    """Write ``model`` (its architecture and ``state_dict()``) and JSON-able ``metadata``
    (for example the data it was trained on) to ``path``, atomically."""
    arch = architecture_of(model)
    if isinstance(arch, Architecture) and len(arch.nouts) > MAX_LAYERS:
        raise ValueError(
            f"cannot checkpoint an MLP of {len(arch.nouts):,} layers: loading is limited to "
            f"{MAX_LAYERS:,}"
        )
    limit = weight_limit(arch)
    if arch.num_parameters() > limit:
        raise ValueError(
            f"cannot checkpoint a {arch.engine} model with {arch.num_parameters():,} weights: "
            f"loading is limited to {limit:,}"
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
    state = {}
    for name, value in model.state_dict().items():
        array = np.asarray(value, dtype=np.float64)  # a float32 is exact as a float64
        state[name] = {
            "shape": list(array.shape),
            "data": [v.hex() for v in array.ravel().tolist()],
        }
    doc["state_dict"] = state
    write_json(path, doc)


# ---------------------------------------------------------------------- reading the file
def _read_file(path: Path) -> bytes:
    """The bytes of ``path``, if it is a regular file of at most MAX_FILE_BYTES (see
    files.read_bounded: a FIFO, ``/dev/zero`` or a huge sparse file is refused at once)."""
    try:
        return read_bounded(path, MAX_FILE_BYTES)
    except UnreadableFile as e:
        if e.kind is not None:
            raise CheckpointError(path, f"{e.reason}, not a checkpoint file") from None
        if e.size is not None and "grew" not in e.reason:
            raise CheckpointError(
                path,
                f"{e.reason}, more than the {MAX_FILE_BYTES:,} that a checkpoint "
                f"of at most {MAX_LM_PARAMETERS:,} weights can be",
            ) from None
        raise CheckpointError(path, e.reason) from None


def _is_zip(raw: bytes) -> bool:
    return raw.startswith(b"PK\x03\x04") or raw.startswith(b"PK\x05\x06")


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice (``json`` keeps the last)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def _parse_json(path: Path, raw: bytes) -> dict[str, Any]:
    """Parse the JSON document and check its header, raising CheckpointError for any fault."""
    if not raw.strip():
        raise CheckpointError(path, "the file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(path, "not a text file (corrupt?)") from None
    values = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    limit = min(MAX_JSON_VALUES, len(raw) // JSON_VALUE_BYTES + 2**17)
    if values > limit:
        raise CheckpointError(
            path,
            f"holds about {values:,} JSON values (commas, arrays and objects); a checkpoint "
            f"of its {len(raw):,} bytes has at most {limit:,}, one a weight of at least "
            f"{JSON_VALUE_BYTES} bytes (bloated metadata?)",
        )
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise CheckpointError(path, f"holds the key {shown(e.key)} twice; keep one") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(path, f"not valid JSON, truncated or corrupt ({e})") from None
    except RecursionError:
        raise CheckpointError(path, "not a checkpoint: its JSON is nested too deeply") from None
    except ValueError:  # Python's limit on the digits of an integer (4,300)
        raise CheckpointError(path, "corrupt: it holds a number with too many digits") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(path, f"not a modelwright-autograd checkpoint (no {FORMAT!r})")
    version = doc.get("version")
    if not (is_json_int(version) and 1 <= version <= VERSION):
        raise CheckpointError(
            path, f"checkpoint version {shown(version)}; this code reads versions 1 to {VERSION}"
        )
    return doc


def _read_architecture(path: Path, doc: Mapping[str, Any]) -> Architecture:
    engine = doc.get("engine")
    if engine not in ENGINES:
        raise CheckpointError(path, f"unknown engine {shown(engine)}; expected one of {ENGINES}")
    arch = doc.get("architecture")
    if not isinstance(arch, dict):
        raise CheckpointError(path, "missing its 'architecture'")
    if arch.get("model") == "lm":
        return _read_lm_architecture(path, engine, arch)
    nin, nouts, activation = arch.get("nin"), arch.get("nouts"), arch.get("activation")
    limit = MAX_PARAMETERS[engine]  # no layer can be wider than the model's weight limit

    def size(n: Any) -> bool:
        return is_json_positive_int(n) and n <= limit

    if isinstance(nouts, list) and len(nouts) > MAX_LAYERS:
        raise CheckpointError(
            path, f"architecture has {len(nouts):,} layers, more than the {MAX_LAYERS:,} allowed"
        )
    if not size(nin):
        raise CheckpointError(
            path, f"architecture 'nin' must be a positive integer up to {limit:,}, got {shown(nin)}"
        )
    if not (isinstance(nouts, list) and nouts and all(size(n) for n in nouts)):
        raise CheckpointError(
            path,
            f"architecture 'nouts' must be a list of positive integers up to {limit:,}, "
            f"got {shown(nouts)}",
        )
    if activation not in ACTIVATIONS:
        raise CheckpointError(path, f"unknown activation {shown(activation)}")
    dtype = arch.get("dtype", "float64") if engine == "tensor" else "float64"
    if dtype not in _DTYPES:
        raise CheckpointError(path, f"unsupported dtype {shown(dtype)}; expected one of {_DTYPES}")
    model = arch.get("model", "mlp")
    if model not in ("mlp", "cnn"):
        raise CheckpointError(path, f"unknown model {shown(model)}; expected 'mlp' or 'cnn'")
    if model == "cnn":
        side = math.isqrt(nin)
        if engine != "tensor" or side * side != nin or side % 4 or len(nouts) != 3:
            raise CheckpointError(
                path,
                "a CNN architecture needs the tensor engine, nin a square image of a side "
                f"divisible by 4 and nouts [channels1, channels2, classes], got nin "
                f"{shown(nin)} and nouts {shown(nouts)}",
            )
        if activation != "relu":
            raise CheckpointError(path, f"a CNN uses relu, not {shown(activation)}")
    found = Architecture(engine, nin, tuple(nouts), activation, dtype, model)
    if found.num_parameters() > MAX_PARAMETERS[engine]:
        raise CheckpointError(
            path,
            f"architecture has {found.num_parameters():,} weights, more than the "
            f"{MAX_PARAMETERS[engine]:,} a {engine} checkpoint may hold (corrupt layer sizes?)",
        )
    return found


def _read_lm_architecture(path: Path, engine: str, arch: dict[str, Any]) -> LMArchitecture:
    """A language model's architecture (lm.models.LMConfig's fields), every value checked."""
    try:
        found = LMArchitecture.from_dict(arch)
    except (ValueError, TypeError) as e:
        raise CheckpointError(path, f"bad language-model architecture: {e}") from None
    if engine != "tensor":
        raise CheckpointError(path, f"a language model needs the tensor engine, not {engine!r}")
    if found.num_parameters() > MAX_LM_PARAMETERS:
        raise CheckpointError(
            path,
            f"architecture has {found.num_parameters():,} weights, more than the "
            f"{MAX_LM_PARAMETERS:,} a language model's checkpoint may hold (corrupt sizes?)",
        )
    return found


# ---------------------------------------------------------------------- decoding the weights
def _decode_floats(path: Path, items: list[Any], where: str) -> list[float]:
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
        raise CheckpointError(path, f"{where}[{i}] {problem}: {shown(item)}")
    return values


def _legacy_name(name: str, model_is_sequential: bool = False) -> str:
    """A name from before torch's names (``layers.<i>.weight``) as it is now: an MLP's
    layer i is ``mlp_layer_key(i)``, a Sequential's module i is ``i``."""
    old = re.fullmatch(r"layers\.([0-9]{1,9})\.(.+)", name)
    if old is None:
        return name
    i = int(old[1])
    return f"{i if model_is_sequential else mlp_layer_key(i)}.{old[2]}"


def _renamed(path: Path, named: Any, rename: Any) -> dict[str, Any]:
    """``{rename(name): item for name, item in named}``, refusing two names that become one
    (a legacy ``layers.0.weight`` beside ``0.weight``): which one is meant is unknowable."""
    out: dict[str, Any] = {}
    original: dict[str, str] = {}
    for name, item in named:
        new = rename(name)
        if new in out:
            raise CheckpointError(
                path,
                f"holds both {shown(original[new])} and {shown(name)}, two names for the "
                f"tensor {shown(new)}; keep one",
            )
        out[new], original[new] = item, name
    return out


def _decode_state(path: Path, doc: Mapping[str, Any], arch: Architecture) -> dict[str, np.ndarray]:
    """The saved state dict as float64 arrays. The counts are checked against ``arch``
    before any number is decoded; names and shapes are the model's ``load_state_dict``'s
    to check."""
    if doc["version"] == 1 and arch.engine == "scalar":
        return _decode_v1_scalar(path, doc.get("parameters"), arch)
    if doc["version"] == 1:
        saved, key = doc.get("parameters"), "'parameters'"
        if isinstance(saved, dict):
            saved = _renamed(path, saved.items(), _legacy_name)
    else:
        saved, key = doc.get("state_dict"), "'state_dict'"
    if not isinstance(saved, dict):
        raise CheckpointError(path, f"{key} must map parameter names to {{shape, data}}")
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
            raise CheckpointError(path, f"{where} has no valid 'shape' (got {shown(shape)})")
        if not isinstance(data, list) or len(data) != math.prod(shape):
            got = f"{len(data):,} numbers" if isinstance(data, list) else shown(data)
            raise CheckpointError(
                path, f"{where} 'data' must hold {math.prod(shape):,} float.hex numbers, got {got}"
            )
        total += len(data)
        if total > expected:
            break  # enough said
    if total > expected:
        raise CheckpointError(
            path, f"{key} holds more numbers than the {expected:,} a {arch.describe()} has"
        )
    if total < expected:
        raise CheckpointError(
            path, f"{key} holds {total:,} numbers; a {arch.describe()} has {expected:,}"
        )
    return {
        name: np.array(
            _decode_floats(path, entry["data"], f"{key} entry {shown(name)} data"), np.float64
        ).reshape(entry["shape"])
        for name, entry in saved.items()
    }


def _decode_v1_scalar(path: Path, items: Any, arch: Architecture) -> dict[str, np.ndarray]:
    """Version 1 kept a scalar model's weights as one list in ``parameters()`` order: layer
    by layer, neuron by neuron, its weights then its bias."""
    expected = arch.num_parameters()
    if not isinstance(items, list) or len(items) != expected:
        got = f"{len(items):,} numbers" if isinstance(items, list) else shown(items)
        raise CheckpointError(
            path, f"'parameters' must hold {expected:,} float.hex numbers, got {got}"
        )
    flat = np.array(_decode_floats(path, items, "'parameters'"), np.float64)
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


def _read_npz(path: Path, raw: bytes, model: Any) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` written by the former ``tensor_nn.save``. Each member's
    name, ``.npy`` header (dtype, shape) and declared size are checked against ``model``
    before its data is read, and no more than the model's size is ever inflated, so a zip
    bomb or a header claiming 10**13 numbers is refused without allocating them."""
    expected = {name: np.shape(value) for name, value in model.state_dict().items()}
    limit = sum(8 * math.prod(shape) + 1024 for shape in expected.values()) + 4096
    if len(raw) > limit:
        raise CheckpointError(
            path, f"is {len(raw):,} bytes, more than an .npz of this model's weights ({limit:,})"
        )
    sequential = isinstance(model, tensor_nn.Sequential)
    state = {}
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = _renamed(
                path,
                ((info.filename.removesuffix(".npy"), info) for info in archive.infolist()),
                lambda name: _legacy_name(name, sequential),
            )
            problems = state_dict_key_problems(expected, members)
            if problems:
                raise CheckpointError(path, "; ".join(problems))
            for name, info in members.items():
                with archive.open(info) as member:
                    state[name] = _read_npy(path, name, info, member, expected[name])
    except CheckpointError:
        raise
    except _CORRUPT_ZIP as e:
        raise CheckpointError(path, f"not a readable .npz archive ({e})") from None
    return state


def _read_npy(
    path: Path, name: str, info: zipfile.ZipInfo, member: Any, shape: tuple[int, ...]
) -> np.ndarray:
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
        raise CheckpointError(path, f"{where} has a bad .npy header ({e})") from None
    if dtype.hasobject or dtype.kind not in "fiu":
        raise CheckpointError(path, f"{where} holds {dtype} data, not numbers")
    if found != shape:
        raise CheckpointError(
            path, f"{where} has shape {shown(found)}; the model's {name} has shape {shape}"
        )
    nbytes = math.prod(shape) * dtype.itemsize
    if info.file_size != member.tell() + nbytes:
        raise CheckpointError(
            path,
            f"{where} declares {info.file_size:,} bytes; its header promises "
            f"{member.tell() + nbytes:,}",
        )
    data = member.read(nbytes)
    if len(data) != nbytes:
        raise CheckpointError(path, f"{where} is truncated")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


# ---------------------------------------------------------------------- load
@dataclass
class Checkpoint:
    """A loaded checkpoint: the rebuilt model, its architecture, and the other keys."""

    path: Path
    architecture: Architecture
    model: Any
    metadata: dict[str, Any]


def _load_state(path: Path, model: Any, state: Mapping[str, np.ndarray]) -> None:
    """``model.load_state_dict(state)``, whose checks (names, shapes, values a float32
    cannot hold) all run before it changes anything, with its refusal as a CheckpointError."""
    try:
        model.load_state_dict(state)
    except ValueError as e:
        raise CheckpointError(path, str(e)) from None


def _metadata(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _HEADER}


def load_into(model: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Overwrite ``model``'s weights with those saved at ``path``; return the metadata.

    ``path`` is a ``model.json`` (whose architecture must match ``model`` exactly) or an
    ``.npz`` of weights written by the former ``tensor_nn.save`` (no metadata). Every check
    happens before the first weight is written, so on a CheckpointError ``model`` is
    unchanged.
    """
    path = Path(path)
    raw = _read_file(path)
    if _is_zip(raw):
        _load_state(path, model, _read_npz(path, raw, model))
        return {}
    doc = _parse_json(path, raw)
    saved = _read_architecture(path, doc)
    current = architecture_of(model)
    if saved != current:
        raise CheckpointError(
            path,
            f"architecture mismatch: the file holds a {saved.describe()}, "
            f"the model is a {current.describe()}",
        )
    _load_state(path, model, _decode_state(path, doc, saved))
    return _metadata(doc)


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Rebuild the model saved at ``path``, with its architecture and metadata."""
    path = Path(path)
    raw = _read_file(path)
    if _is_zip(raw):
        raise CheckpointError(
            path,
            "is an .npz of weights only (from tensor_nn.save), without the architecture and "
            "data settings; convert it with checkpoint.load_into(model, path) then "
            "save_checkpoint (see docs/checkpoints.md)",
        )
    doc = _parse_json(path, raw)
    arch = _read_architecture(path, doc)
    state = _decode_state(path, doc, arch)  # the counts fit arch before anything is built
    model = build_model(arch)
    _load_state(path, model, state)
    return Checkpoint(path, arch, model, _metadata(doc))


# ---------------------------------------------------------------------- export to PyTorch
TORCH_MISSING = (
    "PyTorch is not installed; install it with: pip install torch "
    "(a CPU build is enough: --index-url https://download.pytorch.org/whl/cpu)"
)
_TORCH_ACTIVATIONS = {"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid"}


def to_torch(model: Any) -> Any:
    """The ``torch.nn.Sequential(Linear, act, ..., Linear)`` equal to ``model`` (either
    engine's MLP), or for a CNN the Sequential of named layers of ``tensor.nn.torch_cnn``, in its
    dtype, with its weights. Imports torch (ImportError if missing)."""
    import torch

    arch = architecture_of(model)
    dtype = getattr(torch, arch.dtype)
    if arch.model == "cnn":
        torch_model = tensor_nn.torch_cnn(torch, arch.nin, arch.nouts, dtype)
        state = {k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()}
        torch_model.load_state_dict(state)
        return torch_model
    modules = []
    for i, (nin, nout) in enumerate(pairwise((arch.nin, *arch.nouts))):
        if i:
            modules.append(getattr(torch.nn, _TORCH_ACTIVATIONS[arch.activation])())
        modules.append(torch.nn.Linear(nin, nout, dtype=dtype))
    torch_model = torch.nn.Sequential(*modules)
    # Each tensor copied into its module by name: torch's own load_state_dict filters the
    # whole dict once per child (quadratic in the layers: 5 s for 1,000 of them).
    targets = torch_model.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, value in model.state_dict().items():
            target, array = targets[name], np.asarray(value, arch.dtype)
            if tuple(target.shape) != array.shape:  # copy_ would broadcast
                raise ValueError(f"{name} has shape {array.shape}, torch's {tuple(target.shape)}")
            target.copy_(torch.from_numpy(array))
    return torch_model


def export_torch(source: Any, out: str | os.PathLike[str]) -> None:
    """Write ``source`` (a model, or the path of a ``model.json``) for PyTorch to ``out``:
    ``torch.save({"architecture": ..., "state_dict": ...})``, atomically. The state dict
    loads into ``torch.nn.Sequential(Linear, act, ..., Linear)``; docs/checkpoints.md has
    the lines that rebuild it. Imports torch (ImportError if missing)."""
    import torch

    model = load_checkpoint(source).model if isinstance(source, (str, os.PathLike)) else source
    arch = architecture_of(model)
    if isinstance(arch, LMArchitecture):  # under nanoGPT's names
        doc = state_dict_doc(torch, model)
    else:
        doc = {
            "format": "modelwright-autograd torch export",
            "architecture": {"engine": arch.engine, **arch.to_dict(), "dtype": arch.dtype},
            "state_dict": to_torch(model).state_dict(),
        }
    # Serialised in memory first (at most MAX_PARAMETERS weights, 16 MB), so that writing
    # the file is atomic_write's plain write: a full disk is an OSError naming it, not
    # torch's RuntimeError from inside its zip writer.
    buffer = io.BytesIO()
    torch.save(doc, buffer)
    atomic_write(out, lambda f: f.write(buffer.getbuffer()), binary=True)
