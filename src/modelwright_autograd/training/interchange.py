"""Hand-off to nanoGPT and makemore, both ways: a language-model run written as the files
their scripts read (nanoGPT's ``ckpt.pt`` and ``meta.pkl``, makemore's ``model.pt``), and
their files (or a plain torch state_dict) read into a run folder of ours.

torch is imported only when called (ImportError if missing). Every torch file is read
with ``torch.load(weights_only=True)``, and ``meta.pkl`` (a plain pickle, which torch.load
does not read) by an unpickler that refuses every class, so no file can run code. Every
fault in a file is a one-line ``CheckpointError``; docs/checkpoints.md gives the layouts.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import pickletools
import re
import shlex
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import (
    MAX_LM_PARAMETERS,
    Checkpoint,
    CheckpointError,
    architecture_of,
    save_checkpoint,
    shown,
)
from ..checks import check_lm_sizes
from ..files import UnreadableFile, atomic_write, read_bounded, refuse_non_regular
from ..lm import models
from ..lm.corpus import CorpusError, Source, Vocabulary, split_names
from ..optim import AdamW
from ..optim_state import ADAMW_SETTINGS, optimizer_from_json, optimizer_to_json
from ..safetensors_file import TensorFileError, read_header, read_tensors, write_tensors
from . import language, lm_run
from .nanogpt_config import betas_of, from_nanogpt_config, is_number, setting, to_nanogpt_config
from .outputs import RunFolder
from .run_state import rng_states

FORMATS = ("nanogpt", "makemore", "state_dict", "safetensors")
#: What torch.compile puts before every name (nanoGPT's scripts strip it).
COMPILED_PREFIX = "_orig_mod."
#: The largest file import reads: the most weights a language model may have (what train
#: trains), in float64, three times over (the weights and AdamW's two moments, as
#: nanoGPT's ckpt.pt holds them), plus a megabyte.
MAX_IMPORT_BYTES = 3 * 8 * MAX_LM_PARAMETERS + 2**20
MAX_META_BYTES = 2**20
#: The most numbers an import reads: what a file of MAX_IMPORT_BYTES holds in half
#: precision. A tensor can stand for more numbers than its file stores (an expanded view
#: repeats one number, views share one storage), so the count is bounded, not the bytes.
MAX_IMPORT_NUMBERS = MAX_IMPORT_BYTES // 2
#: The names of makemore's causal-mask buffers (one per block), which our models compute.
_MASK = re.compile(r"transformer\.h\.\d+\.attn\.bias")


def default_format(model: Any) -> str:
    """The format ``export`` writes for ``model`` unless told: nanoGPT's for a GPT,
    makemore's for the names models, a torch state_dict file for the rest."""
    arch = architecture_of(model)
    if not isinstance(arch, models.LMArchitecture):
        return "state_dict"
    return "nanogpt" if arch.config.kind == "gpt" else "makemore"


def format_problem(model: Any, fmt: str) -> str | None:
    """Why ``model`` cannot be written in ``fmt``, or None when it can."""
    arch = architecture_of(model)
    if fmt in ("state_dict", "safetensors"):
        return None
    if not isinstance(arch, models.LMArchitecture):
        return f"--format {fmt} is for language models; this is a {arch.describe()}"
    c = arch.config
    if fmt == "nanogpt" and c.kind != "gpt":
        return f"nanoGPT has no {c.kind}; give --format makemore or state_dict"
    if fmt == "makemore" and c.kind == "gpt":
        return "makemore has no GPT; give --format nanogpt or state_dict"
    if fmt == "makemore" and c.kind == "transformer" and not c.bias:
        return "makemore's transformer has biases; this one was trained with --bias false"
    return None


def _save_bytes(torch: Any, obj: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def export_folder(checkpoint: Checkpoint, fmt: str, out: Path) -> list[str]:
    """Write ``checkpoint``'s language model into the folder ``out`` (made if missing) in
    nanoGPT's or makemore's files, each atomically (one it replaces is whole until the
    rename); return what was written, one line each. Imports torch."""
    import torch

    run = lm_run.load_lm_run(checkpoint.path, checkpoint)
    files = _nanogpt_files(torch, run) if fmt == "nanogpt" else _makemore_files(torch, run, out)
    for name in files:  # all before any: a symbolic link as meta.pkl leaves ckpt.pt as it was
        refuse_non_regular(out / name)
    out.mkdir(exist_ok=True)
    for name, (data, _) in files.items():
        atomic_write(out / name, lambda f, data=data: f.write(data), binary=True)
    return [f"{name}: {what}" for name, (_, what) in files.items()]


def _nanogpt_files(torch: Any, run: lm_run.LMRun) -> dict[str, tuple[bytes, str]]:
    """ckpt.pt as nanoGPT's train.py saves it, and meta.pkl as its prepare.py writes it."""
    config = run.model.config
    meta_doc = run.checkpoint.metadata
    best = meta_doc.get("best") if isinstance(meta_doc.get("best"), dict) else {}
    resume = meta_doc.get("resume") if isinstance(meta_doc.get("resume"), dict) else {}
    state = models.torch_state(torch, run.model)
    optimizer, saved = _nanogpt_optimizer(torch, run, state)
    ckpt = {
        "model": state,
        "optimizer": optimizer,
        "model_args": {k: getattr(config, k) for k in models.NANOGPT_ARGS},
        "iter_num": int(setting(resume, "step", setting(best, "step", 0))),
        "best_val_loss": setting(best, "val", setting(best, "test", 1e9)),  # train.py's 1e9
        "config": to_nanogpt_config(run),
    }
    tokens = run.vocab.tokens
    meta = {
        "vocab_size": len(tokens),
        "itos": dict(enumerate(tokens)),
        "stoi": {ch: i for i, ch in enumerate(tokens)},
    }
    step = ckpt["iter_num"]
    adam = (
        "the run's AdamW state (its moments and step)"
        if saved
        else "a freshly initialised AdamW state (this run saved no optimiser state)"
    )
    return {
        "ckpt.pt": (_save_bytes(torch, ckpt), f"the GPT at step {step:,} with {adam}"),
        "meta.pkl": (
            pickle.dumps(meta),
            f"its {len(tokens)} characters; nanoGPT reads it from "
            f"data/{ckpt['config']['dataset']}/meta.pkl",
        ),
    }


def _nanogpt_optimizer(
    torch: Any, run: lm_run.LMRun, state: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """ckpt.pt's ``optimizer``: torch.optim.AdamW's state_dict in nanoGPT's
    configure_optimizers layout (2-D weights decayed, the rest not, in named_parameters
    order: the tied lm_head once) holding the run's AdamW state (its checkpoint's
    ``"optimizer"`` entry) or, if it saved none, a fresh one with the run's settings; and
    whether it was the run's. An OptimizerStateError for a state that does not fit."""
    training = run.training
    ours = models.configure_optimizers(
        run.model,
        setting(training, "weight_decay", 0.1),
        setting(training, "lr", 1e-3),
        betas_of(training),
    )
    doc = run.checkpoint.metadata.get("optimizer")
    if doc is not None:
        optimizer_from_json(run.checkpoint.path, doc, ours, run.model)
    names = {id(p): name for name, p in run.model.named_parameters()}
    params = [names[id(p)] for group in ours.param_groups for p in group["params"]]
    saved = ours.state_dict()
    groups = [
        {
            **{k: g[k] for k in ADAMW_SETTINGS},
            "params": [torch.nn.Parameter(state[params[i]]) for i in g["params"]],
        }
        for g in saved["param_groups"]
    ]
    optimizer = torch.optim.AdamW(groups)
    layout = optimizer.state_dict()
    layout["state"] = {
        i: {
            "step": torch.tensor(float(entry["step"])),  # torch's: a float32 0-d tensor
            "exp_avg": torch.from_numpy(np.array(entry["exp_avg"])),
            "exp_avg_sq": torch.from_numpy(np.array(entry["exp_avg_sq"])),
        }
        for i, entry in saved["state"].items()
    }
    optimizer.load_state_dict(layout)
    return optimizer.state_dict(), doc is not None


def export_safetensors(model: Any, out: Path) -> str:
    """Write ``model``'s state_dict to ``out`` in safetensors, atomically, under the names
    ``safetensors.torch.load_file`` needs to load it strictly into nanoGPT's GPT,
    makemore's models (its transformer's causal masks added) or, for an MLP or CNN, the
    ``torch.nn.Sequential`` of ``checkpoint.to_torch``; return whose names they are."""
    arch = architecture_of(model)
    state = {name: np.asarray(v, order="C") for name, v in model.state_dict().items()}
    whose = "torch.nn.Sequential's"
    if isinstance(arch, models.LMArchitecture):
        config = arch.config
        whose = "nanoGPT's" if config.kind == "gpt" else "makemore's"
        if config.kind == "transformer":
            t = config.block_size
            mask = np.tril(np.ones((t, t), np.float32)).reshape(1, 1, t, t)
            state.update({f"transformer.h.{i}.attn.bias": mask for i in range(config.n_layer)})
    doc = {"engine": arch.engine, **arch.to_dict()}
    write_tensors(
        out, state, {"format": "modelwright-autograd export", "architecture": json.dumps(doc)}
    )
    return whose


def read_safetensors_file(path: Path) -> dict[str, Any]:
    """The tensors of a ``.safetensors`` file as torch tensors, its header checked against
    the file (safetensors_file.read_header) before a tensor is read. Imports torch."""
    import torch

    try:
        header = read_header(path, MAX_IMPORT_BYTES, MAX_IMPORT_NUMBERS)
        arrays = read_tensors(path, header)
    except TensorFileError as e:
        raise CheckpointError(path, e.problem) from None
    if not arrays:
        raise CheckpointError(path, "holds no tensors")
    return {name: torch.from_numpy(np.array(a)) for name, a in arrays.items()}


def _makemore_files(torch: Any, run: lm_run.LMRun, out: Path) -> dict[str, tuple[bytes, str]]:
    """model.pt, makemore's bare state_dict, with its transformer's causal masks."""
    config = run.model.config
    state = models.torch_state(torch, run.model)
    if config.kind == "transformer":
        t = config.block_size
        mask = torch.tril(torch.ones(t, t)).view(1, 1, t, t)
        for i in range(config.n_layer):
            state[f"transformer.h.{i}.attn.bias"] = mask.clone()
    return {"model.pt": (_save_bytes(torch, state), _makemore_command(run, out))}


def _makemore_command(run: lm_run.LMRun, out: Path) -> str:
    """The makemore.py line that samples from model.pt (its sizes are options there)."""
    c = run.model.config
    data = run.checkpoint.metadata.get("data")
    source = data.get("path") if isinstance(data, dict) else None
    words = ["--type", c.kind]
    if c.kind == "transformer":
        words += ["--n-layer", str(c.n_layer), "--n-head", str(c.n_head), "--n-embd", str(c.n_embd)]
    elif c.kind == "mlp":
        words += ["--n-embd", str(c.n_embd), "--n-embd2", str(c.n_hidden)]
    return (
        f"the {c.kind}'s state_dict; makemore samples it with: python makemore.py -i "
        f"{shlex.quote(source or 'names.txt')} -o {shlex.quote(str(out))} {' '.join(words)} "
        "--sample-only"
    )


# ---------------------------------------------------------------------- import
@dataclass
class Imported:
    """A model read from a nanoGPT, makemore or torch file, with its vocabulary."""

    model: models.LanguageModel
    vocab: Vocabulary
    format: str  # "nanogpt", "makemore" or "state_dict"
    source: Source | None  # the corpus given with it, if any
    details: dict[str, Any]  # what else the file said (nanoGPT's iter_num, best_val_loss)
    training: dict[str, Any]  # the settings train --resume continues with
    optimizer: dict[str, Any]  # its AdamW state as our checkpoint keeps it (optim_state.py)
    step: int  # the steps taken (nanoGPT's iter_num; 0 for the others)


def read_torch_file(path: Path) -> Any:
    """``torch.load(path, weights_only=True)``, its refusals as one-line CheckpointErrors.
    Imports torch (after the file's size and what it inflates to are checked)."""
    try:
        raw = read_bounded(path, MAX_IMPORT_BYTES)
    except UnreadableFile as e:
        raise CheckpointError(path, e.reason) from None
    if not raw:
        raise CheckpointError(path, "the file is empty")
    check_inflated_size(path, raw)
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's note on the pickle protocol
            return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        named = _unsafe_globals(torch, raw)
        if not named:  # a plain pickle (meta.pkl) or another pickled stream
            raise CheckpointError(
                path, "not a file torch.save wrote: torch.load(weights_only=True) cannot read it"
            ) from None
        raise CheckpointError(
            path,
            f"holds a pickled object ({_named(named)}), not only tensors and plain data: "
            "torch.load(weights_only=True) refuses it",
        ) from None
    except (RuntimeError, EOFError, KeyError, ValueError, TypeError, AttributeError, IndexError):
        raise CheckpointError(path, "not a file torch.save wrote (truncated or corrupt?)") from None


def _unsafe_globals(torch: Any, raw: bytes) -> list[str]:
    """The classes and functions a torch file's pickle names that torch.load(weights_only
    =True) does not take (what would run code), read without running it: torch's own list
    for a zip, the names outside torch for another pickle stream."""
    if raw.startswith(b"PK\x03\x04"):
        try:
            return sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)))
        except Exception:  # any fault of the file: nothing to name
            return []
    torch_own = ("collections.OrderedDict", "_codecs.encode")
    return [
        name
        for name in pickled_globals(raw)
        if not name.startswith("torch.") and name not in torch_own
    ]


def _named(names: list[str]) -> str:
    """The first of ``names`` (as it is if it is short and printable) and how many more."""
    first = names[0] if names[0].isprintable() and len(names[0]) <= 80 else shown(names[0])
    return first + (f" and {len(names) - 1} more" if len(names) > 1 else "")


#: The opcodes that push a string, and those that store or fetch the memo.
_STRINGS = {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE"}
_STRINGS |= {"SHORT_BINUNICODE", "BINUNICODE8"}
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}


def pickled_globals(raw: bytes) -> list[str]:
    """The classes and functions (``module.name``) the pickles in ``raw`` name, in order,
    read statically (``pickletools.genops``: nothing is imported or run); a stream cut or
    corrupt gives what came before the fault."""
    found: list[str] = []
    strings: list[str] = []  # the strings pushed so far: STACK_GLOBAL takes the last two
    memo: dict[int, str | None] = {}
    stream = io.BytesIO(raw)
    try:
        while stream.tell() < len(raw):
            last: str | None = None  # the string the opcode before left on top, if one
            for op, arg, _ in pickletools.genops(stream):
                pushed = None
                if op.name in ("GLOBAL", "INST"):
                    found.append(str(arg).replace(" ", "."))
                elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                    found.append(f"{strings[-2]}.{strings[-1]}")
                elif op.name in _STRINGS:
                    pushed = str(arg)
                elif op.name == "MEMOIZE":
                    memo[len(memo)] = last
                elif op.name in _PUTS:
                    memo[int(arg)] = last
                elif op.name in _GETS:
                    pushed = memo.get(int(arg))
                if pushed is not None:
                    strings.append(pushed)
                last = pushed if op.name not in ("MEMOIZE", *_PUTS) else last
    except (ValueError, EOFError, TypeError, KeyError):
        pass
    return found


def check_inflated_size(path: Path, raw: bytes) -> None:
    """Refuse a torch zip whose entries inflate to more than MAX_IMPORT_BYTES, from the
    sizes its central directory gives (what torch's reader allocates and inflates into),
    before anything is inflated. A file starting as a zip is read by torch as one, so it
    must be one whose directory Python's zipfile reads; another (torch's legacy format) is
    read as stored, and its size is already bounded."""
    if not raw.startswith(b"PK\x03\x04"):
        return
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError):
        raise CheckpointError(
            path, "not a file torch.save wrote (a zip whose directory cannot be read)"
        ) from None
    inflated = sum(entry.file_size for entry in entries)
    if inflated > MAX_IMPORT_BYTES:
        biggest = max(entries, key=lambda entry: entry.file_size)
        raise CheckpointError(
            path,
            f"inflates to {inflated:,} bytes ({shown(biggest.filename)} alone to "
            f"{biggest.file_size:,}); an import reads at most {MAX_IMPORT_BYTES:,}",
        )


def read_meta(path: Path) -> Vocabulary:
    """nanoGPT's meta.pkl (``stoi``, ``itos``, ``vocab_size``) as a vocabulary; read by
    an unpickler that refuses every class, so only plain dicts, strings and numbers load."""
    try:
        raw = read_bounded(path, MAX_META_BYTES)
        meta = _PlainUnpickler(io.BytesIO(raw)).load()
    except UnreadableFile as e:
        raise CheckpointError(path, e.reason) from None
    except pickle.UnpicklingError as e:
        raise CheckpointError(path, f"not nanoGPT's meta.pkl ({e})") from None
    except (EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise CheckpointError(path, "not a readable pickle (truncated or corrupt?)") from None
    itos = meta.get("itos") if isinstance(meta, dict) else None
    n = len(itos) if isinstance(itos, dict) else 0
    if not (
        n
        and all(isinstance(i, int) and not isinstance(i, bool) for i in itos)
        and set(itos) == set(range(n))
        and all(isinstance(c, str) and len(c) == 1 for c in itos.values())
        and len(set(itos.values())) == n
        and meta.get("stoi") == {c: i for i, c in itos.items()}
        and meta.get("vocab_size") == n
    ):
        raise CheckpointError(
            path,
            "not a character meta.pkl: 'itos' must map 0..n-1 to n distinct characters, "
            "'stoi' back, and 'vocab_size' be n",
        )
    return Vocabulary("".join(itos[i] for i in range(n)), boundary=False)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it holds a {module}.{name}, not only plain data")


def import_model(
    path: Path,
    meta: Path | None = None,
    corpus_text: str | None = None,
    source: Source | None = None,
    kind: str | None = None,
    n_head: int = 4,
    seed: int = 1337,
) -> Imported:
    """Read a nanoGPT ckpt.pt, a makemore model.pt or a torch state_dict at ``path`` into
    one of our models. The vocabulary comes from ``meta`` (or a meta.pkl beside ``path``)
    or from ``corpus_text`` (a names model needs it: makemore's files hold none). A name,
    shape or value that does not fit is a CheckpointError, before anything is written."""
    is_safetensors = path.suffix == ".safetensors"
    payload = read_safetensors_file(path) if is_safetensors else read_torch_file(path)
    details: dict[str, Any] = {}
    settings: Any = None  # nanoGPT's config, if the file has one
    if isinstance(payload, dict) and "model" in payload and "model_args" in payload:
        fmt, state = "nanogpt", _tensors(path, payload["model"], "'model'")
        config = _nanogpt_model_args(path, payload["model_args"], state)
        details = {}  # kept when they are numbers (a JSON checkpoint holds no NaN)
        iter_num, best = payload.get("iter_num"), payload.get("best_val_loss")
        if isinstance(iter_num, int) and not isinstance(iter_num, bool) and iter_num >= 0:
            details["iter_num"] = iter_num
        if is_number(best) and np.isfinite(float(best)):
            details["best_val_loss"] = float(best)
        settings = payload.get("config") if isinstance(payload.get("config"), dict) else {}
        batch = settings.get("batch_size")
        tokens = batch * config.block_size if isinstance(batch, int) else 0
        if not isinstance(batch, bool) and 0 < tokens <= language.MAX_STEP_TOKENS:
            details["batch_size"] = batch  # evaluate's batch, if it is one train would take
    elif isinstance(payload, dict):
        state = _tensors(path, payload, "the state_dict")
        config = _inferred_config(path, state, kind, n_head)
        fmt = "makemore" if any(_MASK.fullmatch(k) for k in state) else "state_dict"
    else:
        raise CheckpointError(
            path,
            f"holds a {type(payload).__name__}; expected nanoGPT's ckpt.pt (a dict with 'model' "
            "and 'model_args'), makemore's model.pt or a state_dict (names to tensors)",
        )
    state = _without_masks(path, state)
    if config.tie_weights:
        _check_tied(path, state)
    model = _built(path, config, state)
    vocab = _vocabulary(path, config, meta, corpus_text, seed, source)
    training = from_nanogpt_config(config.kind, settings or {}, details.get("batch_size"), seed)
    saved = payload.get("optimizer") if fmt == "nanogpt" else None
    optimizer = _optimizer(path, saved, model, training)
    given = source if corpus_text is not None else None
    step = details.get("iter_num", 0)
    return Imported(model, vocab, fmt, given, details, training, optimizer, step)


def _optimizer(
    path: Path, saved: Any, model: models.LanguageModel, training: dict[str, Any]
) -> dict[str, Any]:
    """The imported run's AdamW state as our checkpoint keeps it: torch's ``saved``
    (nanoGPT's ckpt.pt ``optimizer``: torch.optim.AdamW's state_dict over its
    configure_optimizers groups) when there is one, else a fresh AdamW (no moments) with
    the run's settings. A CheckpointError names a state that does not fit the model."""
    ours = models.configure_optimizers(
        model,
        training["weight_decay"],
        training["lr"],
        tuple(training["betas"]),
        training["decay_all"],
    )
    if saved is not None:
        try:
            ours.load_state_dict(_from_torch_adamw(saved, ours, model.config.dtype))
        except (ValueError, TypeError) as e:
            raise CheckpointError(path, f"its 'optimizer' does not fit the model: {e}") from None
    return optimizer_to_json(ours, model)


def _from_torch_adamw(saved: Any, ours: AdamW, dtype: str) -> dict[str, Any]:
    """torch.optim.AdamW's state_dict in the terms of ``ours``' load_state_dict (NumPy
    moments, whole-number steps), which checks the groups' sizes; each moment's shape is
    checked against its parameter's before it is read. A ValueError for anything torch's
    AdamW would not have written or ours cannot take."""
    import torch

    shapes = [p.data.shape for group in ours.param_groups for p in group["params"]]
    groups, state = (saved.get(k) if isinstance(saved, dict) else None for k in _PARTS)
    if not isinstance(groups, list) or not isinstance(state, dict):
        raise ValueError("it needs 'state' (a dict) and 'param_groups' (a list)")
    out_groups = []
    for k, group in enumerate(groups):
        if not isinstance(group, dict) or any(
            key not in group for key in (*ADAMW_SETTINGS, "params")
        ):
            raise ValueError(f"group {k} lacks one of {(*ADAMW_SETTINGS, 'params')}")
        unlike = [key for key in ("amsgrad", "maximize") if group.get(key)]
        if unlike:
            raise ValueError(f"group {k} uses {unlike[0]}, which this AdamW has not")
        betas = group["betas"]
        if not (isinstance(betas, (list, tuple)) and len(betas) == 2):
            raise ValueError(f"group {k} has betas {str(betas)[:40]}, not two numbers")
        out_groups.append(
            {**{key: group[key] for key in ADAMW_SETTINGS}, "params": group["params"]}
        )
    moments = {}
    for i, entry in state.items():
        if not (type(i) is int and 0 <= i < len(shapes)):
            raise ValueError(f"it has state for parameter {shown(i)}; the model has {len(shapes)}")
        if not isinstance(entry, dict) or set(entry) != {"step", *_MOMENTS}:
            raise ValueError(f"parameter {i}'s state is not step, exp_avg, exp_avg_sq")
        step = entry["step"]
        step = float(step) if is_number(step) else None
        if step is None or not step.is_integer():
            raise ValueError(f"parameter {i} has a step that is not a whole number")
        arrays = {}
        for key in _MOMENTS:
            value = entry[key]
            problem = _not_weights(torch, value)
            if problem is not None:
                raise ValueError(f"parameter {i}'s {key} is {problem[0]}, {problem[1]}")
            if tuple(value.shape) != shapes[i]:
                raise ValueError(
                    f"parameter {i}'s {key} has shape {tuple(value.shape)}, the parameter "
                    f"{shapes[i]}"
                )
            arrays[key] = value.detach().to(torch.float64).numpy().astype(dtype)
            if not np.isfinite(arrays[key]).all() or (
                key == "exp_avg_sq" and (arrays[key] < 0).any()
            ):
                raise ValueError(f"parameter {i}'s {key} holds a number AdamW cannot have")
        moments[i] = {"step": int(step), **arrays}
    return {"state": moments, "param_groups": out_groups}


_PARTS = ("param_groups", "state")
_MOMENTS = ("exp_avg", "exp_avg_sq")


def _tensors(path: Path, state: Any, where: str) -> dict[str, np.ndarray]:
    """A state_dict's floating-point tensors as NumPy arrays, names without torch.compile's
    prefix; anything else in it is refused."""
    import torch

    if not isinstance(state, dict) or not state:
        raise CheckpointError(path, f"{where} must map parameter names to tensors")
    out = {}
    numbers = 0
    for name, value in state.items():
        if not isinstance(name, str):
            raise CheckpointError(path, f"{where} has the name {shown(name)}, not a string")
        problem = _not_weights(torch, value)
        if problem is not None:
            raise CheckpointError(
                path, f"{where} holds {problem[0]} under {shown(name)}, {problem[1]}"
            )
        numbers += value.numel()
        if numbers > MAX_IMPORT_NUMBERS:
            raise CheckpointError(
                path,
                f"{where} stands for more numbers than an import reads ({MAX_IMPORT_NUMBERS:,}) "
                f"by {shown(name)}: tensors repeating or sharing their data?",
            )
        dtype = torch.float64 if value.dtype == torch.float64 else torch.float32
        plain = name.removeprefix(COMPILED_PREFIX)
        if plain in out:
            raise CheckpointError(
                path,
                f"{where} holds {shown(plain)} twice (with and without "
                f"{COMPILED_PREFIX!r}); keep one",
            )
        out[plain] = array = value.detach().to(dtype).numpy()
        if not np.isfinite(array).all():
            raise CheckpointError(
                path, f"{where} holds NaN or infinite numbers under {shown(name)} (corrupt?)"
            )
    return out


def _not_weights(torch: Any, value: Any) -> tuple[str, str] | None:
    """What ``value`` is and why it is not a plain floating-point CPU tensor, or None."""
    if not isinstance(value, torch.Tensor):
        return f"a {type(value).__name__}", "not a tensor"
    if not value.is_floating_point():
        return f"{value.dtype} data", "not weights"
    if value.layout != torch.strided or value.device.type != "cpu":
        kind = value.layout if value.layout != torch.strided else value.device.type
        return f"a {str(kind).removeprefix('torch.')} tensor", "not plain weights"
    return None


def _nanogpt_model_args(path: Path, args: Any, state: Mapping[str, np.ndarray]) -> models.LMConfig:
    if not isinstance(args, dict) or set(args) != set(models.NANOGPT_ARGS):
        got = sorted(args, key=repr) if isinstance(args, dict) else type(args).__name__
        raise CheckpointError(
            path, f"'model_args' must hold {models.NANOGPT_ARGS}, got {shown(got)}"
        )
    values = dict(args)
    values["dropout"] = (
        float(values["dropout"]) if is_number(values["dropout"]) else values["dropout"]
    )
    return _checked(path, models.LMConfig("gpt", **values, dtype=_dtype(state)))


def _dtype(state: Mapping[str, np.ndarray]) -> str:
    return "float64" if all(a.dtype == np.float64 for a in state.values()) else "float32"


def _checked(path: Path, config: models.LMConfig) -> models.LMConfig:
    try:
        models.check_config(config)
        check_lm_sizes(config.block_size, config.vocab_size)
    except (ValueError, TypeError) as e:
        raise CheckpointError(path, f"a model this code cannot build: {e}") from None
    weights = models.num_parameters(config)
    if weights > MAX_LM_PARAMETERS:
        raise CheckpointError(
            path, f"{weights:,} weights; a language model here has at most {MAX_LM_PARAMETERS:,}"
        )
    return config


def _inferred_config(
    path: Path, state: Mapping[str, np.ndarray], kind: str | None, n_head: int
) -> models.LMConfig:
    """The model a bare state_dict is, from its names and shapes: makemore's bigram
    (``logits``), MLP (``wte``, ``mlp.0``, ``mlp.2``), transformer (with the causal-mask
    buffers) or nanoGPT's GPT (without them; ``kind`` overrides). The heads cannot be
    seen in the weights: ``n_head`` (makemore's default 4)."""
    shapes = {k: v.shape for k, v in state.items()}
    dtype = _dtype(state)

    def size(name: str, ndim: int) -> tuple[int, ...]:
        found = shapes[name]
        if len(found) != ndim or not all(found):
            raise CheckpointError(path, f"{name} has shape {found}; expected {ndim} dimensions")
        return found

    if set(shapes) == {"logits"}:
        return _checked(path, models.LMConfig("bigram", size("logits", 2)[0], 1, dtype=dtype))
    if {"wte.weight", "mlp.0.weight", "mlp.2.weight"} <= set(shapes):
        c, (h, tc) = size("wte.weight", 2)[1], size("mlp.0.weight", 2)
        if tc % c:
            raise CheckpointError(path, f"mlp.0.weight is {h}x{tc}, not a multiple of wte's {c}")
        v = size("mlp.2.weight", 2)[0]
        config = models.LMConfig("mlp", v, tc // c, n_embd=c, n_hidden=h, dtype=dtype)
        return _checked(path, config)
    if "transformer.wte.weight" in shapes and "transformer.wpe.weight" in shapes:
        v, c = size("transformer.wte.weight", 2)
        block = size("transformer.wpe.weight", 2)[0]
        layers = {int(m.group(1)) for k in shapes if (m := re.match(r"transformer\.h\.(\d+)\.", k))}
        n_layer = max(layers) + 1 if layers else 0
        bias = "transformer.h.0.attn.c_attn.bias" in shapes
        masks = any(_MASK.fullmatch(k) for k in shapes)
        kind = kind or ("transformer" if masks else "gpt")
        if kind == "transformer":
            config = models.makemore_transformer(v, block, n_layer=n_layer, n_head=n_head, n_embd=c)
            config = replace(config, bias=bias, dtype=dtype)
        else:
            tied = "lm_head.weight" not in state or np.array_equal(
                state["lm_head.weight"], state["transformer.wte.weight"]
            )
            config = models.LMConfig(
                "gpt", v, block, n_layer, n_head, c, bias=bias, tie_weights=tied, dtype=dtype
            )
        return _checked(path, config)
    raise CheckpointError(
        path,
        "not a bigram, MLP, transformer or GPT state_dict: its names "
        f"{shown(sorted(shapes)[:4])} are none of theirs",
    )


def _without_masks(path: Path, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The state without makemore's causal masks, each checked to be one."""
    for name in [k for k in state if _MASK.fullmatch(k)]:
        mask = state.pop(name)
        t = mask.shape[-1] if mask.ndim else 0
        if mask.shape != (1, 1, t, t) or not np.array_equal(mask[0, 0], np.tril(np.ones((t, t)))):
            raise CheckpointError(
                path, f"{name} is not a causal mask (1, 1, T, T) of ones below the diagonal"
            )
    return state


def _check_tied(path: Path, state: dict[str, np.ndarray]) -> None:
    """nanoGPT's head shares the token embedding: the two names hold one matrix."""
    head, wte = state.get("lm_head.weight"), state.get("transformer.wte.weight")
    if head is None and wte is not None:
        state["lm_head.weight"] = wte
    elif head is not None and wte is not None and not np.array_equal(head, wte):
        raise CheckpointError(
            path, "lm_head.weight differs from transformer.wte.weight; nanoGPT's GPT ties them"
        )


def _vocabulary(
    path: Path,
    config: models.LMConfig,
    meta: Path | None,
    text: str | None,
    seed: int,
    source: Source | None,
) -> Vocabulary:
    """The model's characters: from meta.pkl for a GPT (or the text, as nanoGPT's
    prepare.py makes them), from the names file for makemore's models."""
    names = config.kind in language.NAMES_MODELS
    if names and meta is not None:
        raise CheckpointError(
            meta, f"a {config.kind}'s characters come from its names file (--data or --dataset)"
        )
    beside = path.parent / "meta.pkl"
    if meta is None and not names and beside.is_file():
        meta = beside
    vocab, where = None, None
    if meta is not None:
        vocab, where = read_meta(meta), meta
    if text is not None:
        label = source.label if source is not None else "data"
        try:
            found = (
                split_names(text, seed, label).vocab if names else Vocabulary.of(text, False, label)
            )
        except CorpusError as e:
            raise CheckpointError(path, str(e)) from None
        if vocab is not None and found != vocab:
            raise CheckpointError(meta, f"its characters differ from those of {label}")
        vocab, where = found, where or label
    if vocab is None:
        need = (
            "--data or --dataset (makemore's files hold no vocabulary)"
            if names
            else ("meta.pkl beside it, --meta, or --data/--dataset")
        )
        raise CheckpointError(path, f"a {config.kind} needs its characters: give {need}")
    if vocab.size != config.vocab_size:
        raise CheckpointError(
            path,
            f"the model has {config.vocab_size} tokens; {shown(str(where))} gives {vocab.size}",
        )
    return vocab


def _built(
    path: Path, config: models.LMConfig, state: dict[str, np.ndarray]
) -> models.LanguageModel:
    model = models.build(config, seed=0)
    try:
        model.load_state_dict(state)
    except ValueError as e:
        raise CheckpointError(path, str(e)) from None
    return model


def write_run(
    imported: Imported, file: Path, out: Path | None, overwrite: bool, seed: int
) -> RunFolder:
    """A run folder (claimed as train's are: new, or --overwrite of a run's) holding the
    imported model as model.json, with the vocabulary, the data given with it, the
    settings, the AdamW state and the step, so that sample, evaluate and train --resume
    take it. A SettingError of ``out`` names a folder that cannot be had."""
    data = (
        imported.source.to_dict()
        if imported.source
        else {"dataset": None, "path": None, "sha256": None}
    )
    metadata = {
        "data": {**data, "seed": seed},
        "vocab": {"tokens": imported.vocab.tokens, "boundary": imported.vocab.boundary},
        "training": imported.training,
        "imported": {
            "format": imported.format,
            "file": os.fspath(file.resolve()),
            **imported.details,
        },
        "optimizer": imported.optimizer,
        # the generators as a new run's with this seed (the file holds none of ours)
        "resume": {
            "step": imported.step,
            "rng": rng_states(imported.model, np.random.default_rng([seed, 1])),
        },
    }
    label = imported.source.label if imported.source else "imported"
    with RunFolder.claim(out, label, overwrite) as run:
        save_checkpoint(run.staging / "model.json", imported.model, metadata)
        run.commit()
    return run
