"""Saving and loading models of both engines, and exporting them to PyTorch.

A checkpoint is two files: ``model.json`` (the architecture, the data, the settings, the
history: readable JSON) and ``model.safetensors`` beside it (the model's ``state_dict()``
under torch's names, and an AdamW's moments and steps, exact to the bit), bound by an id
that both hold. Writes are atomic, the tensors first; a load checks both files (sizes,
offsets, names, shapes, dtypes) before it touches a model, and every fault is one
``CheckpointError``. Versions 1 and 2 (every weight a ``float.hex`` string in the JSON)
and the weights-only ``.npz`` still load. docs/checkpoints.md has the format and why.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from .checkpoint_legacy import LegacyError, decode_state, read_npz
from .checks import (
    MAX_LM_PARAMETERS,
    MAX_PARAMETERS,
    check_lm_sizes,
    is_json_int,
    is_json_positive_int,
    shown,
    shown_path,
)
from .files import UnreadableFile, atomic_write, read_bounded, signals_deferred
from .lm.models import LanguageModel, LMArchitecture, state_dict_doc
from .optim_state import decode_moments
from .safetensors_file import (
    MAX_HEADER_BYTES,
    Header,
    TensorFileError,
    is_safetensors,
    read_header,
    read_tensors,
    write_tensors,
)
from .scalar.nn import ACTIVATIONS, MLP, state_dict_key_problems
from .tensor import nn as tensor_nn

FORMAT = "modelwright-autograd checkpoint"
#: 1: before the weights were a state_dict with torch's names; 2: the weights in the JSON
#: as float.hex, the AdamW moments as base64 (both still read); 3: the tensors beside it
VERSION = 3
#: ``__metadata__["format"]`` of a checkpoint's safetensors file
TENSORS_FORMAT = "modelwright-autograd tensors"
#: An AdamW state's tensors are ``optimizer.state.<parameter>.<exp_avg|exp_avg_sq|step>``.
OPTIMIZER_PREFIX = "optimizer.state."
_OPTIMIZER_KEYS = ("exp_avg", "exp_avg_sq", "step")
ENGINES = ("scalar", "tensor")
_DTYPES = ("float64", "float32")

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
#: The most numbers a checkpoint's safetensors file holds: the weights and an AdamW's two
#: moments (and a step per parameter, far fewer than a million); and its largest size,
#: those numbers as float64 with the longest header.
MAX_TENSOR_NUMBERS = 3 * max(*MAX_PARAMETERS.values(), MAX_LM_PARAMETERS) + 2**20
MAX_TENSOR_BYTES = 8 * MAX_TENSOR_NUMBERS + MAX_HEADER_BYTES + 8
JSON_VALUE_BYTES = 8
_MAX_PROBLEM_CHARS = 300
_MAX_PATH_CHARS = 160


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
_HEADER = frozenset(
    {"format", "version", "engine", "architecture", "state_dict", "parameters", "tensors"}
)


def tensors_file(path: str | os.PathLike[str]) -> Path:
    """The safetensors file a checkpoint ``path`` writes beside it: ``model.json`` ->
    ``model.safetensors``."""
    return Path(path).with_suffix(".safetensors")


def save_checkpoint(
    path: str | os.PathLike[str], model: Any, metadata: Mapping[str, Any] | None = None
) -> None:
    """Write ``model`` (its architecture and ``state_dict()``) and JSON-able ``metadata``
    (for example the data it was trained on) to ``path`` and its tensors beside it
    (``tensors_file(path)``), both atomically. An ``"optimizer"`` entry
    (optim_state.optimizer_to_json) has its moments and steps put with the tensors."""
    path = Path(path)
    if path.suffix == ".safetensors":
        raise ValueError(
            f"name the checkpoint's JSON file, not {path.name}: its tensors go beside it"
        )
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
    # order="C", not ascontiguousarray, which makes a 0-d array (a batch count) 1-d
    tensors = {name: np.asarray(value, order="C") for name, value in model.state_dict().items()}
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "engine": arch.engine,
        "architecture": arch.to_dict(),
        "tensors": {"file": tensors_file(path).name},
    }
    for key, value in (metadata or {}).items():
        if key in _HEADER:
            raise ValueError(f"metadata key {key!r} is reserved for the checkpoint itself")
        doc[key] = value
    optimizer = doc.get("optimizer")
    if isinstance(optimizer, Mapping) and "state" in optimizer:
        doc["optimizer"] = {k: v for k, v in optimizer.items() if k != "state"}
        for param, entry in optimizer["state"].items():
            for key in _OPTIMIZER_KEYS:
                dtype = np.int64 if key == "step" else None
                tensors[f"{OPTIMIZER_PREFIX}{param}.{key}"] = np.asarray(
                    entry[key], dtype, order="C"
                )
    # The id is the JSON's own digest: another save's JSON differs (its step, its history,
    # its settings), and a JSON identical to this one makes the same pair with any tensors
    # of its architecture. Deterministic, so the same run writes the same files.
    text = json.dumps(doc, sort_keys=True, allow_nan=False).encode()
    ident = doc["tensors"]["id"] = hashlib.sha256(text).hexdigest()[:32]

    def write(f: Any) -> None:
        # The JSON goes to its temporary file first, then the tensors are written and
        # renamed into place, then the JSON is renamed (atomic_write): an error before the
        # tensors' rename leaves the old pair whole. Ctrl-C and SIGTERM wait until both
        # renames are done; only a process killed between them leaves a pair whose ids
        # differ, which a load refuses by name.
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
        write_tensors(tensors_file(path), tensors, {"format": TENSORS_FORMAT, "id": ident})

    with signals_deferred():
        atomic_write(path, write)


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
        check_lm_sizes(found.config.block_size, found.config.vocab_size)
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


def _legacy(path: Path, read: Any, *args: Any) -> Any:
    """``read(*args)``, a reader of checkpoint_legacy, its LegacyError a CheckpointError."""
    try:
        return read(*args)
    except LegacyError as e:
        raise CheckpointError(path, e.problem) from None


def _metadata(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _HEADER}


def _tensor_path(path: Path, doc: Mapping[str, Any]) -> tuple[Path, str]:
    """The safetensors file a version-3 checkpoint names (a file beside it) and its id."""
    entry = doc.get("tensors")
    name = entry.get("file") if isinstance(entry, dict) else None
    ident = entry.get("id") if isinstance(entry, dict) else None
    if not (
        isinstance(name, str)
        and name.endswith(".safetensors")
        and name == Path(name).name
        and "\0" not in name
        and isinstance(ident, str)
    ):
        raise CheckpointError(
            path, "its 'tensors' must name a .safetensors file beside it and its 'id'"
        )
    return path.parent / name, ident


def _v3_header(
    path: Path, doc: Mapping[str, Any], arch: Architecture | LMArchitecture
) -> tuple[Path, Header]:
    """The checked header of a version-3 checkpoint's safetensors file, whose id must be
    the JSON's and whose weights must add up to ``arch``'s count, before any model is
    built or any tensor read."""
    tensors, ident = _tensor_path(path, doc)
    try:
        header = read_header(tensors, MAX_TENSOR_BYTES, MAX_TENSOR_NUMBERS)
    except TensorFileError as e:
        raise CheckpointError(path, f"its tensors {tensors.name}: {e.problem}") from None
    found = header.metadata
    if found.get("format") != TENSORS_FORMAT or found.get("id") != ident:
        raise CheckpointError(
            path,
            f"{tensors.name} is not the tensor file it was saved with (its id differs: a "
            "save cut short between the two files, or files of two checkpoints mixed)",
        )
    weights = sum(
        entry.size
        for name, entry in header.tensors.items()
        if not name.startswith(OPTIMIZER_PREFIX)
    )
    if weights != arch.num_parameters():
        raise CheckpointError(
            path,
            f"{tensors.name} holds {weights:,} weights; a {arch.describe()} has "
            f"{arch.num_parameters():,}",
        )
    return tensors, header


def _read_v3(
    path: Path, doc: Mapping[str, Any], model: Any, tensors: Path, header: Header
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A version-3 checkpoint's state dict and metadata, its tensors read from the
    safetensors file beside it (``_v3_header``'s) once every name, dtype and shape is
    checked against ``model``, and the AdamW tensors against the parameters they are for."""
    expected = {name: np.asarray(value) for name, value in model.state_dict().items()}
    weights = [name for name in header.tensors if not name.startswith(OPTIMIZER_PREFIX)]
    problems = state_dict_key_problems(expected, weights)
    if problems:
        raise CheckpointError(path, f"{tensors.name} " + "; ".join(problems))
    wanted = {name: (expected[name].dtype, expected[name].shape) for name in weights}
    metadata = _metadata(doc)
    optimizer = metadata.get("optimizer")
    moments = isinstance(optimizer, dict)
    if moments:
        wanted.update(_optimizer_tensors(path, header.tensors, optimizer, model))
    for name, (dtype, shape) in wanted.items():
        entry = header.tensors[name]
        if entry.dtype != dtype or entry.shape != shape:
            raise CheckpointError(
                path,
                f"{tensors.name} holds {shown(name)} as {entry.dtype.name} {entry.shape}; "
                f"the {architecture_of(model).describe()} has {np.dtype(dtype).name} {shape}",
            )
    try:
        arrays = read_tensors(tensors, header, list(wanted))
    except TensorFileError as e:
        raise CheckpointError(path, f"its tensors {tensors.name}: {e.problem}") from None
    if moments:
        state: dict[str, dict[str, Any]] = {}
        for name in wanted:
            if name.startswith(OPTIMIZER_PREFIX):
                param, _, key = name.removeprefix(OPTIMIZER_PREFIX).rpartition(".")
                value = arrays[name]
                state.setdefault(param, {})[key] = int(value) if key == "step" else value
        metadata["optimizer"] = {**optimizer, "state": state}
    return {name: arrays[name] for name in weights}, metadata


def _optimizer_tensors(
    path: Path, tensors: Mapping[str, Any], optimizer: Mapping[str, Any], model: Any
) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """The dtype and shape each AdamW tensor must have: the moments a parameter's shape in
    the entry's dtype, the steps int64 scalars; each parameter's three present together."""
    params = {name: p.data.shape for name, p in model.named_parameters()}
    dtype = optimizer.get("dtype")
    if dtype not in _DTYPES:
        raise CheckpointError(path, f"its optimizer state has dtype {shown(dtype)}")
    wanted: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}
    seen: dict[str, set[str]] = {}
    for name in tensors:
        if not name.startswith(OPTIMIZER_PREFIX):
            continue
        param, _, key = name.removeprefix(OPTIMIZER_PREFIX).rpartition(".")
        if param not in params or key not in _OPTIMIZER_KEYS:
            raise CheckpointError(path, f"holds the tensor {shown(name)}, of no parameter's state")
        seen.setdefault(param, set()).add(key)
        wanted[name] = (
            (np.dtype(np.int64), ()) if key == "step" else (np.dtype(dtype), params[param])
        )
    for param, keys in seen.items():
        if len(keys) != len(_OPTIMIZER_KEYS):
            raise CheckpointError(
                path, f"its optimizer state for {shown(param)} lacks one of {_OPTIMIZER_KEYS}"
            )
    return wanted


def _read_state(
    path: Path, doc: Mapping[str, Any], arch: Architecture | LMArchitecture, model: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The state dict and metadata of any version's checkpoint, for ``model`` (of ``arch``)."""
    if doc["version"] >= 3:
        return _read_v3(path, doc, model, *_v3_header(path, doc, arch))
    return _legacy(path, decode_state, doc, arch), _legacy_metadata(doc, model)


def _legacy_metadata(doc: Mapping[str, Any], model: Any) -> dict[str, Any]:
    """A version-1 or -2 checkpoint's metadata, its AdamW moments (base64 in version 2)
    decoded into arrays where they fit ``model`` (optimizer_from_json names those that do
    not, when the state is used)."""
    metadata = _metadata(doc)
    if isinstance(metadata.get("optimizer"), dict):
        metadata["optimizer"] = decode_moments(metadata["optimizer"], model)
    return metadata


def load_into(model: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Overwrite ``model``'s weights with those saved at ``path``; return the metadata.

    ``path`` is a checkpoint's JSON file (whose architecture must match ``model`` exactly)
    or an ``.npz`` of weights written by the former ``tensor_nn.save`` (no metadata).
    Every check happens before the first weight is written, so on a CheckpointError
    ``model`` is unchanged.
    """
    path = Path(path)
    raw = _read_file(path)
    if _is_zip(raw):
        _load_state(path, model, _legacy(path, read_npz, raw, model))
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
    state, metadata = _read_state(path, doc, saved, model)
    _load_state(path, model, state)
    return metadata


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Rebuild the model saved at ``path`` (a checkpoint's JSON file), with its
    architecture and metadata."""
    path = Path(path)
    raw = _read_file(path)
    if _is_zip(raw):
        raise CheckpointError(
            path,
            "is an .npz of weights only (from tensor_nn.save), without the architecture and "
            "data settings; convert it with checkpoint.load_into(model, path) then "
            "save_checkpoint (see docs/checkpoints.md)",
        )
    if is_safetensors(raw):
        raise CheckpointError(
            path,
            "is a safetensors file: give the checkpoint's JSON file beside it (model.json), "
            "which holds its architecture",
        )
    doc = _parse_json(path, raw)
    arch = _read_architecture(path, doc)
    if doc["version"] < 3:
        state = _legacy(path, decode_state, doc, arch)  # counts checked before building
        model = build_model(arch)
        metadata = _legacy_metadata(doc, model)
    else:
        tensors, header = _v3_header(path, doc, arch)  # before anything is built
        model = build_model(arch)
        state, metadata = _read_v3(path, doc, model, tensors, header)
    _load_state(path, model, state)
    return Checkpoint(path, arch, model, metadata)


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
