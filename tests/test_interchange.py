"""Hand-off to nanoGPT and makemore, both ways, against loaders written from what their
scripts do (nanoGPT's sample.py and train.py with init_from='resume', makemore.py
--sample-only): our export loads there strictly and gives our logits; a checkpoint torch
made there imports here and gives torch's logits in sample and evaluate; a bad file for
import is one line and exit code 2. The torch models are benchmarks/lm_torch.py's, written
as nanoGPT's model.py and makemore.py write them."""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the hand-off to nanoGPT and makemore needs torch")

from benchmarks import lm_torch as LT  # noqa: E402
from modelwright_autograd import cli  # noqa: E402
from modelwright_autograd.checkpoint import CheckpointError, load_checkpoint  # noqa: E402
from modelwright_autograd.lm import corpus as C  # noqa: E402
from modelwright_autograd.lm import models as M  # noqa: E402
from modelwright_autograd.optim_state import optimizer_from_json  # noqa: E402
from modelwright_autograd.training import interchange  # noqa: E402
from tests.legacy_v2 import as_version_2  # noqa: E402

TINY_GPT = ["--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "16"]


def _train(tmp_path: Path, *options: str) -> Path:
    out = tmp_path / "run"
    assert cli.main(["train", *options, "--out", str(out), "--quiet"]) == 0
    return out


def _ours(run: Path, idx: np.ndarray) -> np.ndarray:
    model = load_checkpoint(run / "model.json").model
    model.eval()
    return model(idx).data


def _theirs(model: torch.nn.Module, idx: np.ndarray) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return model(torch.from_numpy(idx)).numpy()


# ---------------------------------------------------------------------- nanoGPT's side
def nanogpt_gpt(model_args: dict, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """GPT(GPTConfig(**model_args)) of nanoGPT's model.py (flash attention: no mask buffer)."""
    cfg = {**model_args, "kind": "gpt", "gelu": "none", "tie_weights": True, "init": "gpt2"}
    return LT.build(cfg, dtype)


def nanogpt_resume(
    out_dir: Path, lr: float = 1e-3, dtype: torch.dtype = torch.float32
) -> tuple[torch.nn.Module, torch.optim.AdamW, dict]:
    """What train.py does with init_from='resume' (and sample.py, up to the optimiser):
    torch.load, the model_args it forces, _orig_mod. stripped, load_state_dict (strict),
    configure_optimizers then optimizer.load_state_dict."""
    checkpoint = torch.load(out_dir / "ckpt.pt", map_location="cpu")  # torch's default load
    model_args = {"dropout": 0.0}
    for k in ["n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size"]:
        model_args[k] = checkpoint["model_args"][k]
    model = nanogpt_gpt(model_args, dtype)
    state_dict = checkpoint["model"]
    for k in list(state_dict):
        if k.startswith("_orig_mod."):
            state_dict[k[len("_orig_mod.") :]] = state_dict.pop(k)
    model.load_state_dict(state_dict)  # strict
    optimizer = model.configure_optimizers(0.1, lr, (0.9, 0.95))
    optimizer.load_state_dict(checkpoint["optimizer"])
    return model, optimizer, checkpoint


@pytest.mark.slow  # about 2-4 s: a run on the whole corpus
def test_a_gpt_export_is_what_nanogpts_sample_and_train_read(tmp_path, capsys):
    run = _train(
        tmp_path, "--dataset", "shakespeare", "--model", "gpt", "--steps", "4",
        "--eval-interval", "2", "--eval-iters", "2", *TINY_GPT,
    )  # fmt: skip
    out = tmp_path / "out-shakespeare-char"
    assert cli.main(["export", str(run), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the run's AdamW state" in printed and "data/shakespeare_char/meta.pkl" in printed
    assert sorted(p.name for p in out.iterdir()) == ["ckpt.pt", "meta.pkl"]

    model, optimizer, checkpoint = nanogpt_resume(out)
    metrics = json.loads((run / "metrics.json").read_text())
    assert checkpoint["iter_num"] == metrics["best"]["step"]
    assert checkpoint["best_val_loss"] == pytest.approx(metrics["best"]["val"], abs=0)
    assert checkpoint["config"]["dataset"] == "shakespeare_char"
    groups = checkpoint["optimizer"]["param_groups"]
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert groups[0]["betas"] == (0.9, 0.99) and groups[0]["eps"] == 1e-8
    assert optimizer.param_groups[0]["betas"] == (0.9, 0.99)  # the run's, as loaded

    # sample.py: meta.pkl from data/<config['dataset']>/, as prepare.py writes it
    meta_path = tmp_path / "data" / checkpoint["config"]["dataset"] / "meta.pkl"
    meta_path.parent.mkdir(parents=True)
    shutil.copy(out / "meta.pkl", meta_path)
    with open(meta_path, "rb") as f:
        meta = pickle.load(f)
    text, _ = C.read_source("shakespeare", None)
    chars = sorted(set(text))  # prepare.py's vocabulary
    assert meta == {
        "vocab_size": len(chars),
        "itos": dict(enumerate(chars)),
        "stoi": {ch: i for i, ch in enumerate(chars)},
    }
    idx = np.array([[meta["stoi"][c] for c in "First Citizen:\nBe"[:16]]])
    np.testing.assert_allclose(_theirs(model, idx), _ours(run, idx), rtol=0, atol=1e-5)
    torch.manual_seed(1337)
    x = torch.tensor([[meta["stoi"]["\n"]]])
    with torch.no_grad():
        for _ in range(20):
            probs = torch.softmax(model(x[:, -16:])[:, -1, :], dim=-1)
            x = torch.cat([x, torch.multinomial(probs, 1)], dim=1)
    assert len("".join(meta["itos"][i] for i in x[0].tolist())) == 21

    # train.py: the next iterations from the loaded model and optimiser
    model.train()
    before = model.transformer.wte.weight.detach().clone()
    data = torch.from_numpy(np.array([meta["stoi"][c] for c in text[:2000]]))
    for _ in range(2):
        ix = torch.randint(len(data) - 16, (4,))
        xb = torch.stack([data[i : i + 16] for i in ix])
        yb = torch.stack([data[i + 1 : i + 17] for i in ix])
        loss = LT.loss(model, xb.numpy(), yb.numpy())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    assert torch.isfinite(loss) and not torch.equal(before, model.transformer.wte.weight)
    assert all(s["step"].item() == checkpoint["iter_num"] + 2 for s in optimizer.state.values())


def test_a_names_model_export_is_makemores_work_folder(tmp_path, capsys):
    """makemore.py --sample-only: ``model.load_state_dict(torch.load(work_dir/'model.pt'))``
    into its Transformer, which registers each block's causal mask as the buffer
    ``attn.bias``; the vocabulary and block size are what its create_datasets makes."""
    run = _train(
        tmp_path, "--dataset", "names", "--model", "transformer", "--steps", "3",
        "--n-layer", "2", "--n-head", "2", "--n-embd", "8",
    )  # fmt: skip
    out = tmp_path / "work"
    assert cli.main(["export", str(run), str(out)]) == 0
    assert f"-o {out} --type transformer --n-layer 2 --n-head 2" in capsys.readouterr().out
    assert [p.name for p in out.iterdir()] == ["model.pt"]
    words = [w.strip() for w in C.builtin_path("names").read_text().splitlines() if w.strip()]
    chars = sorted(set("".join(words)))
    vocab, block = len(chars) + 1, max(map(len, words)) + 1
    cfg = {"kind": "transformer", "vocab_size": vocab, "block_size": block, "n_layer": 2}
    cfg.update(n_head=2, n_embd=8, bias=True, dropout=0.0, gelu="tanh", tie_weights=False)
    model = LT.build({**cfg, "init": "torch"}, torch.float32)
    for block_module in model.transformer.h:
        block_module.attn.register_buffer("bias", torch.zeros(1, 1, block, block))
    state = torch.load(out / "model.pt")
    model.load_state_dict(state)  # strict: the masks are there
    assert torch.equal(
        state["transformer.h.1.attn.bias"][0, 0], torch.tril(torch.ones(block, block))
    )
    idx = np.array([[0, *(chars.index(c) + 1 for c in "emma")]])
    np.testing.assert_allclose(_theirs(model, idx), _ours(run, idx), rtol=0, atol=1e-5)


@pytest.mark.parametrize("kind", ["bigram", "mlp"])
def test_makemores_bigram_and_mlp_load_the_export_strictly(tmp_path, kind):
    run = _train(
        tmp_path, "--dataset", "names", "--model", kind, "--steps", "2", "--eval-interval", "1"
    )
    assert cli.main(["export", str(run), str(tmp_path / "work")]) == 0
    config = load_checkpoint(run / "model.json").model.config
    model = LT.build(config.to_dict(), torch.float32)
    model.load_state_dict(torch.load(tmp_path / "work" / "model.pt"))
    idx = np.array([[0, 5, 13, 13, 1]])
    np.testing.assert_allclose(_theirs(model, idx), _ours(run, idx), rtol=0, atol=1e-5)


def test_export_refuses_a_format_the_model_has_not_and_a_file_name_for_a_folder(tmp_path, capsys):
    run = _train(
        tmp_path, "--dataset", "names", "--model", "bigram", "--steps", "2", "--eval-interval", "1"
    )
    for options, said in (
        (["--format", "nanogpt", str(tmp_path / "x")], "nanoGPT has no bigram"),
        ([str(tmp_path / "model.pt")], "looks like a file"),
        ([str(run)], "is the run's own folder"),
        ([str(run / "model.json")], "is the checkpoint itself"),
    ):
        with pytest.raises(SystemExit) as info:
            cli.main(["export", str(run), *options])
        assert info.value.code == 2 and said in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "model.pt").exists()
    assert cli.main(["export", str(run), str(tmp_path / "b.pt"), "--format", "state_dict"]) == 0


@pytest.mark.slow  # two trainings and three export processes (about 12 s)
def test_export_refuses_a_symbolic_link_where_a_file_goes_naming_it(tmp_path):
    """DIR/model.pt, DIR/ckpt.pt or DIR/meta.pkl a symbolic link: one line naming that
    file, exit code 2 as for OUT itself a link (real processes), and nothing written."""
    names = _train(tmp_path, "--dataset", "names", "--model", "bigram", "--steps", "2")
    gpt = tmp_path / "gpt"
    argv = ["train", "--dataset", "names", "--model", "gpt", *TINY_GPT, "--steps", "2"]
    assert cli.main([*argv, "--out", str(gpt), "--quiet"]) == 0
    target = tmp_path / "elsewhere"
    for run, link in ((names, "model.pt"), (gpt, "ckpt.pt"), (gpt, "meta.pkl")):
        out = tmp_path / f"out-{link.replace('.', '-')}"
        out.mkdir()
        (out / link).symlink_to(target)
        done = subprocess.run(
            [sys.executable, "-m", "modelwright_autograd", "export", str(run), str(out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"OUT: {out / link}: it is a symbolic link" in done.stderr
        assert sorted(p.name for p in out.iterdir()) == [link] and not target.exists()


# ---------------------------------------------------------------------- import
def _text_file(tmp_path: Path) -> tuple[Path, dict]:
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(list("abcdef ghij\nklm"), 3000))
    path = tmp_path / "input.txt"
    path.write_text(text)
    chars = sorted(set(text))
    meta = {
        "vocab_size": len(chars),
        "itos": dict(enumerate(chars)),
        "stoi": {c: i for i, c in enumerate(chars)},
    }
    return path, meta


def _nanogpt_made_checkpoint(tmp_path: Path) -> tuple[Path, torch.nn.Module, Path]:
    """A ckpt.pt as nanoGPT's train.py saves it after a step (compiled: '_orig_mod.'
    names; best_val_loss a tensor), and meta.pkl beside it as prepare.py writes it."""
    data, meta = _text_file(tmp_path)
    torch.manual_seed(0)
    args = dict(
        n_layer=2,
        n_head=2,
        n_embd=16,
        block_size=16,
        bias=False,
        vocab_size=meta["vocab_size"],
        dropout=0.0,
    )
    model = nanogpt_gpt(args)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
    x = torch.randint(0, meta["vocab_size"], (2, 16))
    LT.loss(model, x.numpy(), x.roll(-1, 1).numpy()).backward()
    optimizer.step()
    folder = tmp_path / "out"
    folder.mkdir()
    checkpoint = {
        "model": {f"_orig_mod.{k}": v for k, v in model.state_dict().items()},
        "optimizer": optimizer.state_dict(),
        "model_args": args,
        "iter_num": 250,
        "best_val_loss": torch.tensor(2.5),
        "config": {"dataset": "input_char", "batch_size": 8, "learning_rate": 1e-3},
    }
    torch.save(checkpoint, folder / "ckpt.pt")
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump(meta, f)
    return folder / "ckpt.pt", model, data


def test_a_nanogpt_checkpoint_imports_and_samples_and_evaluates_as_torch(tmp_path, capsys):
    ckpt, model, data = _nanogpt_made_checkpoint(tmp_path)
    run = tmp_path / "imported"
    assert cli.main(["import", str(ckpt), "--data", str(data), "--out", str(run)]) == 0
    assert "from nanogpt's" in capsys.readouterr().out
    idx = np.random.default_rng(1).integers(0, model.lm_head.weight.shape[0], (3, 16))
    np.testing.assert_allclose(_ours(run, idx), _theirs(model, idx), rtol=0, atol=1e-5)
    imported = load_checkpoint(run / "model.json").metadata["imported"]
    assert imported["iter_num"] == 250 and imported["best_val_loss"] == 2.5
    assert cli.main(["sample", str(run), "--tokens", "30", "--num", "2"]) == 0
    assert len(capsys.readouterr().out) > 60
    assert cli.main(["evaluate", str(run), "--eval-iters", "3"]) == 0
    printed = capsys.readouterr().out
    val = float(printed.split("val    loss ")[1].split()[0])
    # evaluate's batches: nanoGPT's get_batch on the last 10%, seeded 1337 + 1, batch 8
    text = data.read_text()
    vocab = C.Vocabulary.of(text, False, "input")
    ids = vocab.encode(text)[int(len(text) * 0.9) :]
    rng = np.random.default_rng(1338)
    losses = [LT.loss(model, *C.text_batch(ids, 16, 8, rng)).item() for _ in range(3)]
    assert abs(val - np.mean(losses)) <= 5e-5


@pytest.mark.slow  # about 2-4 s: a run on the whole corpus
def test_a_makemore_model_pt_imports_with_its_names_file(tmp_path, capsys):
    words = [w.strip() for w in C.builtin_path("names").read_text().splitlines() if w.strip()]
    block, vocab = max(map(len, words)) + 1, len(set("".join(words))) + 1
    cfg = {"kind": "transformer", "vocab_size": vocab, "block_size": block, "n_layer": 2}
    cfg.update(n_head=2, n_embd=8, bias=True, dropout=0.0, gelu="tanh", tie_weights=False)
    torch.manual_seed(0)
    model = LT.build({**cfg, "init": "torch"}, torch.float32)
    for layer in model.transformer.h:  # makemore's Transformer holds its masks
        layer.attn.register_buffer(
            "bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block)
        )
    work = tmp_path / "out"
    work.mkdir()
    torch.save(model.state_dict(), work / "model.pt")
    run = tmp_path / "imported"
    command = [
        "import",
        str(work / "model.pt"),
        "--dataset",
        "names",
        "--n-head",
        "2",
        "--out",
        str(run),
    ]
    assert cli.main(command) == 0
    idx = np.random.default_rng(2).integers(0, vocab, (2, block))
    np.testing.assert_allclose(_ours(run, idx), _theirs(model, idx), rtol=0, atol=1e-5)
    assert load_checkpoint(run / "model.json").model.config.gelu == "tanh"
    capsys.readouterr()
    assert cli.main(["sample", str(run), "--num", "5"]) == 0
    assert "samples that are new" in capsys.readouterr().out
    assert cli.main(["evaluate", str(run)]) == 0
    assert "test   loss" in capsys.readouterr().out


def test_a_plain_state_dict_of_a_bigram_imports_into_a_new_folder_only(tmp_path, capsys):
    state = {"logits": torch.randn(27, 27, dtype=torch.float64)}
    torch.save(state, tmp_path / "bigram.pt")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as info:
        cli.main(["import", str(tmp_path / "bigram.pt"), "--dataset", "names", "--out", str(taken)])
    assert info.value.code == 2 and "already holds files" in capsys.readouterr().err
    assert os.listdir(taken) == ["notes.txt"]
    run = tmp_path / "run"
    assert (
        cli.main(["import", str(tmp_path / "bigram.pt"), "--dataset", "names", "--out", str(run)])
        == 0
    )
    model = load_checkpoint(run / "model.json").model
    assert model.config.dtype == "float64"
    np.testing.assert_array_equal(model.logits.data, state["logits"].numpy())


class _RunsCode:
    """Unpickled, it would run a shell command."""

    def __reduce__(self) -> tuple:
        return os.system, ("echo ran",)


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    ckpt, _, _ = _nanogpt_made_checkpoint(tmp_path)
    good = torch.load(ckpt)
    cases: dict[str, tuple[Path, str]] = {}

    def save(name: str, obj: object, said: str) -> None:
        path = tmp_path / "bad" / f"{name}.pt"
        path.parent.mkdir(exist_ok=True)
        torch.save(obj, path)
        cases[name] = (path, said)

    save("code", {"logits": print}, "holds a pickled object (builtins.print)")
    system = f"holds a pickled object ({os.system.__module__}.system)"
    save("system", {"logits": _RunsCode()}, system)
    legacy = tmp_path / "bad" / "legacy.pt"
    torch.save({"logits": _RunsCode()}, legacy, _use_new_zipfile_serialization=False)
    cases["legacy"] = (legacy, system)
    plain = tmp_path / "bad" / "plain.pt"
    plain.write_bytes(pickle.dumps({"logits": _RunsCode()}))
    cases["plain"] = (plain, system)
    save("string", {"logits": "abc"}, "holds a str under 'logits', not a tensor")
    save(
        "integers",
        {"logits": torch.ones(3, 3, dtype=torch.int64)},
        "torch.int64 data under 'logits'",
    )
    save("unknown", {"encoder.weight": torch.ones(3, 3)}, "not a bigram, MLP, transformer or GPT")
    save("list", [torch.ones(2)], "holds a list")
    save("nan", {"logits": torch.full((27, 27), float("nan"))}, "NaN or infinite numbers")
    twice = {"logits": torch.ones(27, 27), "_orig_mod.logits": torch.ones(27, 27)}
    save("twice", twice, "holds 'logits' twice")
    wrong = dict(good["model"])
    wrong["_orig_mod.transformer.h.0.attn.c_attn.weight"] = torch.ones(48, 15)
    save("shape", {**good, "model": wrong}, "size mismatch for transformer.h.0.attn.c_attn.weight")
    extra = {**good["model"], "_orig_mod.transformer.h.0.attn.rotary": torch.ones(2)}
    save("extra", {**good, "model": extra}, "unexpected keys ['transformer.h.0.attn.rotary']")
    save("args", {**good, "model_args": {"n_layer": 2}}, "'model_args' must hold")
    gpt2 = {**good["model_args"], "vocab_size": 50304}  # GPT-2's tokens: not characters
    save("vocab", {**good, "model_args": gpt2}, "vocab_size must be at most 256")
    # a few bytes that stand for more numbers than the file holds, or for no numbers here
    huge = torch.zeros(1).expand(2**40)  # one float, seen 2**40 times (stride 0)
    save("expanded", {"logits": huge}, "more numbers than an import reads")
    save("sparse", {"logits": torch.eye(27).to_sparse()}, "a sparse_coo tensor under 'logits'")
    save("no data", {"logits": torch.empty(27, 27, device="meta")}, "a meta tensor under")
    odd_args = {**good, "model_args": {1: 2, "n_layer": 2}}
    save("odd args", odd_args, "'model_args' must hold")
    empty = tmp_path / "bad" / "empty.pt"
    empty.write_bytes(b"")
    cases["empty"] = (empty, "the file is empty")
    junk = tmp_path / "bad" / "junk.pt"
    junk.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    cases["junk"] = (junk, "not a file torch.save wrote")
    cases["missing"] = (tmp_path / "bad" / "nothing.pt", "no such file")
    cases["meta"] = (ckpt.parent / "meta.pkl", "not a file torch.save wrote: torch.load")
    return cases


def test_bad_files_for_import_are_one_line_and_exit_2(tmp_path, capsys):
    for name, (path, said) in _bad_files(tmp_path).items():
        out = tmp_path / f"run-{name}"
        code = cli.main(["import", str(path), "--dataset", "names", "--out", str(out)])
        captured = capsys.readouterr()
        assert code == 2, name
        assert captured.err.count("\n") == 1 and said in captured.err, (name, captured.err)
        assert "Traceback" not in captured.err and captured.out == ""
        assert not out.exists(), name  # nothing written


def _zip(entries: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip archive, written by hand: (name, payload as stored, method, CRC-32, inflated
    size) per entry, so a payload can be a deflate stream built without inflating it."""
    import struct

    body, directory = b"", b""
    for name, payload, method, crc, size in entries:
        head = (method, 0, 0, crc, len(payload), size, len(name.encode()), 0)
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, *head, 0, 0, 0, 0,
                                 len(body)) + name.encode()  # fmt: skip
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, *head) + name.encode() + payload
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                      len(directory), len(body), 0)  # fmt: skip
    return body + directory + end


def test_a_zip_bomb_is_refused_from_its_directory_before_anything_is_inflated(tmp_path):
    """makemore's bigram model.pt whose one storage entry is 2 GiB of zeros, deflated (the
    file is 2 MB): refused in one line, exit code 2, and the command's peak memory stays
    under 200 MB (it took 1.2 GB for a 1 GiB entry when torch.load inflated it first)."""
    import io
    import zipfile
    import zlib

    saved = io.BytesIO()
    torch.save({"logits": torch.zeros(27, 27)}, saved)
    chunk = bytes(2**22)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)  # a full flush resets the stream, so
    piece = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)  # each 4 MiB is this
    pieces, crc = 512, 0
    for _ in range(pieces):
        crc = zlib.crc32(chunk, crc)
    entries = []
    with zipfile.ZipFile(saved) as real:
        for info in real.infolist():
            data = real.read(info)
            if info.filename.endswith("/data/0"):
                bomb = piece * pieces + deflate.flush()
                entries.append((info.filename, bomb, 8, crc, len(chunk) * pieces))
            else:
                entries.append((info.filename, data, 0, zlib.crc32(data), len(data)))
    path = tmp_path / "model.pt"
    path.write_bytes(_zip(entries))
    assert 1e6 < path.stat().st_size < 3e6
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-m', 'modelwright_autograd', *sys.argv[1:]],"
        " capture_output=True, text=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(done.stderr, end='')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", measure, "import", str(path), "--dataset", "names", "--out",
         str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    first, said = result.stdout.split("\n", 1)
    code, peak_kib = map(int, first.split())
    assert code == 2 and said.count("\n") == 1 and "Traceback" not in said
    assert "inflates to 2,147,48" in said and "/data/0' alone to 2,147,483,648" in said
    assert peak_kib < 200 * 1024, f"peak memory {peak_kib / 1024:.0f} MB"
    assert not (tmp_path / "run").exists()


def test_a_meta_pkl_that_is_not_plain_data_is_refused_unread(tmp_path, capsys):
    ckpt, _, _ = _nanogpt_made_checkpoint(tmp_path)
    (ckpt.parent / "meta.pkl").write_bytes(pickle.dumps({"itos": {0: "a"}, "f": print}))
    assert cli.main(["import", str(ckpt), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "builtins.print, not only plain data" in err
    for meta in ({"itos": {0: "a", "x": "b"}, "stoi": {}, "vocab_size": 2}, [1, 2]):
        (ckpt.parent / "meta.pkl").write_bytes(pickle.dumps(meta))
        assert cli.main(["import", str(ckpt), "--out", str(tmp_path / "run")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a character meta.pkl" in err
    assert not (tmp_path / "run").exists()


def test_import_without_torch_is_one_line(tmp_path):
    hide_torch = (
        "import sys; sys.modules['torch'] = None; from modelwright_autograd import cli; "
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    (tmp_path / "m.pt").write_bytes(b"x")
    result = subprocess.run(
        [sys.executable, "-c", hide_torch, "import", "m.pt", "--out", "run"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "PyTorch is not installed" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # 40 imports, 2-4 s
def test_a_damaged_checkpoint_imports_whole_or_is_one_line(tmp_path, capsys):
    """Bytes overwritten, cut or zeroed anywhere in a real ckpt.pt: each import either
    succeeds (the damage fell in the weights' bytes, which a zip member does not check)
    or is one line and exit code 2 with nothing written; never a traceback."""
    ckpt, _, _ = _nanogpt_made_checkpoint(tmp_path)
    raw = ckpt.read_bytes()
    rng = np.random.default_rng(0)
    refused = 0
    for k in range(40):
        damaged = bytearray(raw)
        at = int(rng.integers(len(raw)))
        if k % 3 == 0:
            damaged[at] ^= 0xFF
        elif k % 3 == 1:
            damaged = damaged[:at]
        else:
            damaged[at : at + 50] = bytes(len(damaged[at : at + 50]))
        bad = ckpt.with_name("damaged.pt")
        bad.write_bytes(bytes(damaged))
        out = tmp_path / f"run{k}"
        code = cli.main(
            ["import", str(bad), "--meta", str(ckpt.with_name("meta.pkl")), "--out", str(out)]
        )
        err = capsys.readouterr().err
        assert (code, err.count("\n")) in ((0, 0), (2, 1)), err
        assert out.exists() == (code == 0)
        refused += code == 2
    assert refused >= 10  # the cut files at least


def test_import_takes_what_train_trains_nanogpts_shakespeare_gpt_and_no_more(tmp_path):
    """nanoGPT's standard Shakespeare GPT (6 layers, 6 heads, 384 wide, block 256: counted
    by hand, 10,745,088 weights, and 10,770,048 with the tied head counted again as
    num_parameters counts it) is within import's limit, as it is within train's; one past
    the limit is one line naming it."""
    from modelwright_autograd.checkpoint import MAX_LM_PARAMETERS
    from modelwright_autograd.lm import models as M

    c = 384
    standard = M.LMConfig(
        "gpt", vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=c, bias=False
    )
    per_block = 2 * c + 3 * c * c + c * c + 4 * c * c + 4 * c * c  # 2 LayerNorms, attn, MLP
    assert 65 * c + 256 * c + 6 * per_block + c == 10_745_088
    assert M.num_parameters(standard) == 10_745_088 + 65 * c
    assert interchange._checked(tmp_path / "ckpt.pt", standard) == standard
    wide = replace(standard, n_layer=7, n_embd=432)
    assert M.num_parameters(wide) > MAX_LM_PARAMETERS
    with pytest.raises(CheckpointError, match=f"at most {MAX_LM_PARAMETERS:,}"):
        interchange._checked(tmp_path / "ckpt.pt", wide)


# ---------------------------------------------------------------------- AdamW's state both ways
def _float64_gpt_run(tmp_path: Path) -> Path:
    data, _ = _text_file(tmp_path)
    return _train(
        tmp_path, "--data", str(data), "--model", "gpt", "--steps", "4", "--eval-interval", "2",
        "--eval-iters", "1", "--batch-size", "4", "--dtype", "float64", *TINY_GPT,
    )  # fmt: skip


def _same_step(ours_model, ours, theirs, optimizer, seed: int) -> None:
    """One AdamW step of ours and of torch's from the same gradients (random, by name) at
    the same rate; the weights after it agree to 1e-12 (float64)."""
    rng = np.random.default_rng(seed)
    mine = dict(ours_model.named_parameters())
    params = dict(theirs.named_parameters())  # the tied head once, as in nanoGPT
    assert sorted(mine) == sorted(params)
    for name, p in params.items():
        g = rng.standard_normal(tuple(p.shape))
        p.grad, mine[name].grad = torch.from_numpy(g.copy()), g.copy()
    for group in [*optimizer.param_groups, *ours.param_groups]:
        group["lr"] = 3e-3
    optimizer.step()
    ours.step()
    for name, p in params.items():
        np.testing.assert_allclose(mine[name].data, p.detach().numpy(), rtol=0, atol=1e-12)


def test_a_gpt_export_carries_the_runs_adamw_state_and_torch_continues_it(tmp_path, capsys):
    run = _float64_gpt_run(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["export", str(run), str(out)]) == 0
    assert "with the run's AdamW state (its moments and step)" in capsys.readouterr().out
    model, optimizer, checkpoint = nanogpt_resume(out, dtype=torch.float64)  # train.py's load
    saved = load_checkpoint(run / "model.json")
    step = saved.metadata["resume"]["step"]
    assert checkpoint["iter_num"] == step > 0
    # nanoGPT's configure_optimizers groups: the 2-D weights decayed, then the rest
    params = list(model.parameters())
    in_order = [p for p in params if p.dim() >= 2] + [p for p in params if p.dim() < 2]
    groups = checkpoint["optimizer"]["param_groups"]
    assert [g["params"] for g in groups] == [
        list(range(len(in_order) - len(groups[1]["params"]))),
        list(range(len(in_order) - len(groups[1]["params"]), len(in_order))),
    ]
    assert len(groups[1]["params"]) == sum(p.dim() < 2 for p in params)
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    for i, entry in checkpoint["optimizer"]["state"].items():
        assert entry["exp_avg"].shape == in_order[i].shape
    # ours, from the run's checkpoint: the same moments and step, to the bit
    ours = M.configure_optimizers(saved.model, 0.0, 1.0, (0.5, 0.5))  # the file's settings
    optimizer_from_json(run / "model.json", saved.metadata["optimizer"], ours, saved.model)
    mine = ours.state_dict()["state"]
    for i, entry in optimizer.state_dict()["state"].items():
        assert entry["step"].item() == mine[i]["step"] == step
        for key in ("exp_avg", "exp_avg_sq"):
            assert np.array_equal(entry[key].numpy(), mine[i][key])
    assert len(mine) == len(params)
    _same_step(saved.model, ours, model, optimizer, seed=5)


def test_an_export_without_a_saved_state_says_so_and_a_bad_state_is_refused(tmp_path, capsys):
    run = _float64_gpt_run(tmp_path)
    shutil.copy(run / "model.json", run / "v2.json")
    as_version_2(run / "v2.json")  # the format whose moments are in the JSON, to spoil one
    doc = json.loads((run / "v2.json").read_text())
    state = doc["optimizer"]["state"]["transformer.wpe.weight"]
    state["exp_avg"] = state["exp_avg"][:-8]  # a moment the size of no parameter
    (run / "bad.json").write_text(json.dumps(doc))
    doc["optimizer"]["param_groups"][1]["params"].pop()  # a parameter missing
    (run / "short.json").write_text(json.dumps(doc))
    del doc["optimizer"]
    (run / "none.json").write_text(json.dumps(doc))
    for name, said in (("bad.json", "bytes of transformer.wpe.weight's exp_avg"),
                       ("short.json", "groups its parameters unlike")):  # fmt: skip
        assert cli.main(["export", str(run / name), str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "Traceback" not in err
        assert not (tmp_path / name).exists()
    assert cli.main(["export", str(run / "none.json"), str(tmp_path / "fresh")]) == 0
    assert "freshly initialised AdamW state" in capsys.readouterr().out
    _, optimizer, checkpoint = nanogpt_resume(tmp_path / "fresh", dtype=torch.float64)
    assert checkpoint["optimizer"]["state"] == {} and optimizer.state_dict()["state"] == {}


def _float64_nanogpt_checkpoint(tmp_path: Path, steps: int = 3) -> tuple[Path, dict, Path]:
    """A float64 ckpt.pt as nanoGPT's train.py saves it after ``steps`` steps (its
    get_lr, clipping at 1.0), its config as train.py's, and meta.pkl beside it."""
    data, meta = _text_file(tmp_path)
    torch.manual_seed(0)
    args = dict(n_layer=2, n_head=2, n_embd=16, block_size=16, bias=True,
                vocab_size=meta["vocab_size"], dropout=0.0)  # fmt: skip
    config = dict(dataset="input_char", batch_size=4, learning_rate=2e-3, max_iters=4,
                  weight_decay=0.1, beta1=0.9, beta2=0.95, grad_clip=1.0, decay_lr=True,
                  warmup_iters=2, lr_decay_iters=4, min_lr=2e-4, eval_interval=10,
                  eval_iters=2)  # fmt: skip
    model = nanogpt_gpt(args, torch.float64)
    optimizer = model.configure_optimizers(0.1, 2e-3, (0.9, 0.95))
    for it in range(steps):
        x = torch.randint(0, meta["vocab_size"], (4, 16))
        LT.loss(model, x.numpy(), x.roll(-1, 1).numpy()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for group in optimizer.param_groups:
            group["lr"] = nanogpt_get_lr(it, config)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    folder = tmp_path / "out"
    folder.mkdir()
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "model_args": args,
        "iter_num": steps,
        "best_val_loss": torch.tensor(2.5),
        "config": config,
    }
    torch.save(checkpoint, folder / "ckpt.pt")
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump(meta, f)
    return folder / "ckpt.pt", config, data


def nanogpt_get_lr(it: int, config: dict) -> float:
    """nanoGPT's train.py get_lr."""
    lr, warmup, decay_iters = (
        config["learning_rate"],
        config["warmup_iters"],
        config["lr_decay_iters"],
    )
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return config["min_lr"]
    ratio = (it - warmup) / (decay_iters - warmup)
    return config["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - config["min_lr"])


def test_resuming_an_imported_nanogpt_checkpoint_takes_torchs_next_step(tmp_path, capsys):
    ckpt, config, data = _float64_nanogpt_checkpoint(tmp_path)
    run = tmp_path / "imported"
    assert cli.main(["import", str(ckpt), "--data", str(data), "--out", str(run)]) == 0
    assert "with the file's AdamW state at step 3" in capsys.readouterr().out
    imported = load_checkpoint(run / "model.json").metadata
    assert imported["resume"]["step"] == 3
    assert all(entry["step"] == 3 for entry in imported["optimizer"]["state"].values())
    training = imported["training"]
    assert (training["lr"], training["min_lr"], training["warmup"], training["steps"]) == (
        2e-3, 2e-4, 2, 4
    )  # fmt: skip
    assert training["betas"] == [0.9, 0.95] and training["decay_all"] is False
    resumed = tmp_path / "resumed"
    argv = ["train", "--resume", str(run), "--out", str(resumed), "--quiet"]  # nanoGPT's 4
    assert cli.main(argv) == 0
    after = load_checkpoint(resumed / "last.json").model
    # torch: train.py resuming from the same file, on the batch the resumed run drew
    model, optimizer, _ = nanogpt_resume(ckpt.parent, dtype=torch.float64)
    text = data.read_text()
    ids = C.Vocabulary.of(text, False, "input").encode(text)[: int(len(text) * 0.9)]
    rng = np.random.default_rng([1337, 1])  # the batches' generator, as the run's
    x, y = C.text_batch(ids, 16, 4, rng)
    model.train()
    LT.loss(model, x, y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for group in optimizer.param_groups:
        group["lr"] = nanogpt_get_lr(3, config)
    optimizer.step()
    theirs = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    for name, value in after.state_dict().items():
        np.testing.assert_allclose(value, theirs[name], rtol=0, atol=1e-12, err_msg=name)


def test_an_imported_optimizer_that_does_not_fit_is_one_line_and_exit_2(tmp_path, capsys):
    ckpt, _, data = _float64_nanogpt_checkpoint(tmp_path, steps=1)
    good = torch.load(ckpt)
    wrong_shape = {**good["optimizer"], "state": dict(good["optimizer"]["state"])}
    wrong_shape["state"][0] = {**wrong_shape["state"][0], "exp_avg": torch.zeros(3, 3)}
    groups = [dict(g) for g in good["optimizer"]["param_groups"]]
    groups[1]["params"] = groups[1]["params"][:-1]
    fewer = {**good["optimizer"], "param_groups": groups}
    amsgrad = {**good["optimizer"], "param_groups": [
        {**g, "amsgrad": True} for g in good["optimizer"]["param_groups"]]}  # fmt: skip
    huge = {**good["optimizer"], "state": dict(good["optimizer"]["state"])}
    expanded = torch.zeros(1, 1, dtype=torch.float64).expand(2**30, 2**10)  # 8 bytes on disk
    huge["state"][1] = {**huge["state"][1], "exp_avg_sq": expanded}
    for name, optimizer, said in (
        ("shape", wrong_shape, "parameter 0's exp_avg has shape (3, 3)"),
        ("huge", huge, "exp_avg_sq has shape (1073741824, 1024)"),
        ("count", fewer, "its groups hold"),
        ("amsgrad", amsgrad, "uses amsgrad"),
    ):
        torch.save({**good, "optimizer": optimizer}, ckpt.with_name(f"{name}.pt"))
        out = tmp_path / f"run-{name}"
        argv = ["import", str(ckpt.with_name(f"{name}.pt")), "--data", str(data)]
        assert cli.main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "'optimizer' does not fit" in err, err
        assert not out.exists()


def test_resuming_an_imported_makemore_model_starts_a_fresh_adamw(tmp_path, capsys):
    """makemore's model.pt holds no optimiser: the resumed run's first step is a fresh
    torch AdamW's (makemore's settings for the bigram) on the batch the run drew."""
    state = {"logits": torch.randn(27, 27, dtype=torch.float64)}
    torch.save(state, tmp_path / "model.pt")
    run = tmp_path / "run"
    argv = ["import", str(tmp_path / "model.pt"), "--dataset", "names", "--out", str(run)]
    assert cli.main(argv) == 0
    assert "no optimiser state: train --resume starts a fresh AdamW" in capsys.readouterr().out
    saved = load_checkpoint(run / "model.json")
    assert saved.metadata["optimizer"]["state"] == {} and saved.metadata["resume"]["step"] == 0
    resumed = tmp_path / "resumed"
    argv = ["train", "--resume", str(run), "--steps", "1", "--out", str(resumed), "--quiet"]
    assert cli.main(argv) == 0
    after = load_checkpoint(resumed / "last.json").model.logits.data
    twin = LT.build(saved.model.config.to_dict(), torch.float64)
    twin.load_state_dict(state)
    training = saved.metadata["training"]
    corpus = C.split_names(C.read_source("names", None)[0], 1337, "names")
    rng = np.random.default_rng([1337, 1])  # the batches' generator, as the run's
    rows = rng.integers(0, len(corpus.train), size=training["batch_size"])
    LT.loss(twin, *corpus.train.take(rows).examples(corpus.block_size())).backward()
    fresh = torch.optim.AdamW(twin.parameters(), lr=0.1, betas=(0.9, 0.99), weight_decay=0.0)
    fresh.step()
    assert (training["lr"], training["weight_decay"], training["betas"]) == (0.1, 0.0, [0.9, 0.99])
    np.testing.assert_allclose(after, twin.logits.detach().numpy(), rtol=0, atol=1e-12)
