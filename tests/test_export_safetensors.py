"""``export --format safetensors`` writes a model under nanoGPT's, makemore's or
torch.nn.Sequential's names, which ``safetensors.torch.load_file`` reads into their
modules strictly (the torch modules of the interop tests), predicting what ours does; and
``import`` reads such a file back, refusing a crafted one in one line with exit code 2."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch modules are the reference")

from safetensors.torch import load_file  # noqa: E402

from benchmarks import lm_torch as LT  # noqa: E402
from modelwright_autograd import cli  # noqa: E402
from modelwright_autograd.checkpoint import load_checkpoint, to_torch  # noqa: E402
from modelwright_autograd.lm import corpus as C  # noqa: E402

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


def _export(run: Path, out: Path, capsys) -> str:
    assert cli.main(["export", str(run), str(out), "--format", "safetensors"]) == 0
    return capsys.readouterr().out


def test_a_gpt_exports_under_nanogpts_names_and_loads_strictly(tmp_path, capsys):
    run = _train(tmp_path, "--dataset", "shakespeare", *TINY_GPT, "--steps", "3")
    out = tmp_path / "gpt.safetensors"
    assert "under nanoGPT's names" in _export(run, out, capsys)
    config = load_checkpoint(run / "model.json").model.config
    model = LT.build(config.to_dict(), torch.float32)  # nanoGPT's GPT, as the interop tests
    model.load_state_dict(load_file(out))  # strict
    idx = np.array([[1, 5, 9, 2]])
    np.testing.assert_allclose(_theirs(model, idx), _ours(run, idx), rtol=0, atol=1e-5)
    # and back: import reads it as the GPT it is, with the characters of its data
    back = tmp_path / "back"
    argv = ["import", str(out), "--dataset", "shakespeare", "--n-head", "2", "--out", str(back)]
    assert cli.main(argv) == 0
    np.testing.assert_array_equal(_ours(back, idx), _ours(run, idx))


def test_a_makemore_transformer_exports_with_its_masks_and_loads_strictly(tmp_path, capsys):
    run = _train(
        tmp_path, "--dataset", "names", "--model", "transformer", "--steps", "2",
        "--n-layer", "2", "--n-head", "2", "--n-embd", "8",
    )  # fmt: skip
    out = tmp_path / "names.safetensors"
    assert "under makemore's names" in _export(run, out, capsys)
    config = load_checkpoint(run / "model.json").model.config
    model = LT.build({**config.to_dict(), "init": "torch"}, torch.float32)
    block = config.block_size
    for block_module in model.transformer.h:  # makemore's Transformer registers the masks
        block_module.attn.register_buffer("bias", torch.zeros(1, 1, block, block))
    state = load_file(out)
    model.load_state_dict(state)  # strict: the masks are there
    assert torch.equal(
        state["transformer.h.1.attn.bias"][0, 0], torch.tril(torch.ones(block, block))
    )
    idx = np.array([[0, 5, 13, 13, 1]])
    np.testing.assert_allclose(_theirs(model, idx), _ours(run, idx), rtol=0, atol=1e-5)
    back = tmp_path / "back"
    argv = ["import", str(out), "--dataset", "names", "--n-head", "2", "--out", str(back)]
    assert cli.main(argv) == 0
    np.testing.assert_array_equal(_ours(back, idx), _ours(run, idx))


def test_an_mlp_exports_under_the_sequentials_names(tmp_path, capsys):
    run = _train(tmp_path, "--steps", "3")
    out = tmp_path / "mlp.safetensors"
    assert "torch.nn.Sequential" in _export(run, out, capsys)
    model = load_checkpoint(run / "model.json").model
    torch_model = to_torch(model)  # torch.nn.Sequential(Linear, ReLU, ...), float64
    torch_model.load_state_dict(load_file(out))  # strict
    x = torch.tensor([[0.3, -1.2]], dtype=torch.float64)
    assert torch_model(x).item() == model([0.3, -1.2]).data


def _crafted(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    def write(name: str, header: dict, data: bytes) -> Path:
        text = json.dumps(header).encode()
        path = tmp_path / name
        path.write_bytes(struct.pack("<Q", len(text)) + text + data)
        return path

    def bigram(dtype: str, data: bytes, shape=(28, 28)) -> dict:
        return {"logits": {"dtype": dtype, "shape": list(shape), "data_offsets": [0, len(data)]}}

    nan = np.full((28, 28), np.nan, np.float32).tobytes()
    ints = np.zeros((28, 28), np.int64).tobytes()
    return {
        "truncated": (write("t.safetensors", bigram("F32", nan), nan[:-4]), "truncated"),
        "2**40 numbers": (
            write("h.safetensors", bigram("F32", b"", (2**20, 2**20)), b""),
            "claims 1,099,511,627,776 numbers",
        ),
        "NaN": (write("n.safetensors", bigram("F32", nan), nan), "NaN or infinite"),
        "integers": (write("i.safetensors", bigram("I64", ints), ints), "not weights"),
        "overlap": (
            write(
                "o.safetensors",
                {
                    "logits": {"dtype": "F32", "shape": [28, 28], "data_offsets": [0, 3136]},
                    "x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                },
                nan,
            ),
            "overlap",
        ),
    }


def test_a_crafted_safetensors_import_is_one_line_and_exit_2(tmp_path, capsys):
    for name, (path, said) in _crafted(tmp_path).items():
        out = tmp_path / f"out-{path.stem}"
        code = cli.main(["import", str(path), "--dataset", "names", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, name
        assert err.count("\n") == 1 and said in err and "Traceback" not in err, (name, err)
        assert not out.exists()


def test_a_names_file_exported_then_imported_keeps_its_vocabulary(tmp_path, capsys):
    run = _train(tmp_path, "--dataset", "names", "--model", "bigram", "--steps", "2")
    out = tmp_path / "bigram.safetensors"
    _export(run, out, capsys)
    back = tmp_path / "back"
    assert cli.main(["import", str(out), "--dataset", "names", "--out", str(back)]) == 0
    words = C.builtin_path("names").read_text().split()
    assert load_checkpoint(back / "model.json").metadata["vocab"]["tokens"][1:] == "".join(
        sorted(set("".join(words)))
    )
