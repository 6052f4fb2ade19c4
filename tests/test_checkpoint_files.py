"""Loading checkpoints from hostile or odd files, all real: FIFOs, symlinks to /dev/zero
and /dev/urandom, a 2 GB sparse file, JSON nested 100,000 deep, a 5,000-digit integer,
crafted .npz archives (a zip bomb, a header claiming 10**13 floats) under a real memory cap
(RLIMIT_AS in a subprocess), and the files earlier versions wrote."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

from modelwright_autograd import MLP, cli
from modelwright_autograd import checkpoint as ckpt
from modelwright_autograd.checkpoint import CheckpointError, load_checkpoint, load_into
from modelwright_autograd.tensor import nn as tensor_nn
from tests.legacy_v2 import as_version_2

LEGACY = Path(__file__).parent / "data" / "legacy"


def _evaluate_in_subprocess(path: Path) -> subprocess.CompletedProcess[str]:
    """``evaluate`` in its own process, with a timeout: a FIFO that blocks fails the test
    instead of hanging the suite."""
    return subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "evaluate", "--checkpoint", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_line_error(result: subprocess.CompletedProcess[str], problem: str) -> None:
    assert result.returncode == 2, result.stderr  # a bad input file: a usage error
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert problem in result.stderr


# ---------------------------------------------------------------------- not a regular file
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_symlink_to_an_endless_device_is_refused_at_once(tmp_path, device):
    link = tmp_path / "model.json"
    link.symlink_to(device)
    _one_line_error(_evaluate_in_subprocess(link), "is a character device, not a checkpoint")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)  # no writer: a blocking open or read would wait forever
    _one_line_error(_evaluate_in_subprocess(fifo), "is a FIFO (named pipe), not a checkpoint")


def test_a_directory_and_a_huge_sparse_file_are_refused_before_reading(tmp_path, capsys):
    sparse = tmp_path / "model.json"
    with open(sparse, "wb") as f:
        f.truncate(2 * 2**30)  # 2 GB that take no disk space; reading them would take 4 GB
    assert sparse.stat().st_size == 2**31
    for path, problem in (
        (tmp_path, "is a directory, not a checkpoint file"),
        (sparse, "is 2,147,483,648 bytes, more than the"),
    ):
        assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
        printed = capsys.readouterr()
        assert printed.err.count("\n") == 1 and problem in printed.err


def test_odd_names_are_the_one_error(tmp_path):
    for name, problem in (
        (str(tmp_path / "a\0b"), "cannot open it (embedded null byte)"),
        (str(tmp_path / ("x" * 300)), "cannot open it (File name too long)"),
    ):
        with pytest.raises(CheckpointError, match=re.escape(problem)) as info:
            load_checkpoint(name)
        assert len(str(info.value)) < 600


def test_an_empty_checkpoint_option_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "--checkpoint", ""])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--checkpoint: expected a file name, got an empty string" in err
    assert "is a directory" not in err


# ---------------------------------------------------------------------- odd JSON
HEADER = '{"format": "modelwright-autograd checkpoint", "version": 2, '


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "its JSON is nested too deeply"),
        (HEADER + '"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        (HEADER + '"x": ' + "7" * 5000 + "}", "holds a number with too many digits"),
        (HEADER + '"x": "unterminated}', "(Unterminated string starting at: line 1 column 66"),
        ('{"format": "modelwright-autograd checkpoint", "version": true}', "version True"),
    ],
    ids=["deep", "deep inside", "5000 digits", "unterminated", "version true"],
)
def test_odd_json_is_the_one_line_error(tmp_path, capsys, text, problem):
    path = tmp_path / "model.json"
    path.write_text(text)
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
    printed = capsys.readouterr()
    assert printed.err.count("\n") == 1 and problem in printed.err
    assert "at at" not in printed.err


@pytest.fixture
def small_run(tmp_path) -> Path:
    """A checkpoint as train writes it, of a 2-4-4-1 scalar model trained on moons."""
    path = tmp_path / "small.json"
    data = {"dataset": "moons", "samples": 30, "noise": 0.1, "seed": 1337}
    metadata = {"data": data, "objective": {"loss": "svm", "l2": 1e-4}}
    ckpt.save_checkpoint(path, MLP(2, [4, 4, 1], seed=0), metadata)
    return path


def test_every_message_is_short_even_for_a_checkpoint_of_100000_layers(tmp_path, capsys, small_run):
    doc = json.loads(small_run.read_text())
    doc["architecture"]["nouts"] = [1] * 100_000  # the file holds a 2-4-4-1 model's weights
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "100,000 layers, more than the 1,000 allowed" in err
    doc["architecture"]["nouts"] = [1] * 1_000  # within the limit: the counts are wrong
    path.write_text(json.dumps(doc))
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds 37 weights" in err and "(1,000 layers)" in err
    assert len(err) < 600
    doc["architecture"]["nouts"] = ["x"] * 1_000
    path.write_text(json.dumps(doc))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert "'nouts' must be a list of positive integers up to 1,000,000, got ['x', 'x'" in str(
        info.value
    )
    assert len(str(info.value)) < 600


def test_data_settings_that_do_not_fit_the_model_are_a_checkpoint_error(
    tmp_path, capsys, small_run
):
    doc = json.loads(small_run.read_text())
    doc["data"]["dataset"] = "digits"  # 64 features and 10 classes; the model is 2-4-4-1
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2  # one line, not argparse's
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its data settings do not fit its model" in err
    assert "--dataset" not in err
    with pytest.raises(SystemExit) as info:  # a --dataset the user gives is still theirs
        cli.main(["evaluate", "--checkpoint", str(small_run), "--dataset", "digits"])
    assert info.value.code == 2
    assert "--dataset: digits has 64 features" in capsys.readouterr().err


def test_a_scoring_pass_beyond_the_training_bounds_is_refused_before_any_data(
    tmp_path, capsys, small_run, monkeypatch
):
    from modelwright_autograd.training import evaluate

    def no_data(*args):
        raise AssertionError("data was made before the cost was checked")

    monkeypatch.setattr(evaluate, "load_dataset", no_data)
    # 1,000,000 points x 37 weights = 37,000,000 multiply-adds, over the scalar pass limit
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "--checkpoint", str(small_run), "--samples", "1000000"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--samples: 1,000,000 points through 37 weights" in err
    assert err.rstrip().endswith("use fewer --samples")  # evaluate has no --hidden/--engine
    doc = json.loads(small_run.read_text())
    doc["data"]["samples"] = 1_000_000  # the same cost, written in the file
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its data settings cost too much to score" in err


def test_odd_numbers_in_the_settings_are_handled(tmp_path, capsys, small_run):
    doc = json.loads(small_run.read_text())
    doc["data"]["noise"] = -0.0  # NumPy refuses a scale of -0.0: it is read as 0
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 0
    assert "noise 0.0" in capsys.readouterr().out
    settings = {"data": doc["data"], "objective": doc["objective"]}
    ckpt.save_checkpoint(path, tensor_nn.MLP(2, [3, 1], seed=0, dtype=np.float32), settings)
    doc = json.loads(path.read_text())
    doc["objective"]["l2"] = 1e308
    path.write_text(json.dumps(doc))
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad l2 weight 1e+308: too large for a float32" in err


# ---------------------------------------------------------------------- earlier files
def _same_state(a, b) -> bool:
    return list(a.state_dict()) == list(b.state_dict()) and all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("v1_scalar_model.json", lambda: MLP(2, [3, 1], seed=0)),
        ("v1_tensor_model.json", lambda: tensor_nn.MLP(2, [3, 1], activation="tanh", seed=0)),
        ("v1_tensor32_model.json", lambda: tensor_nn.MLP(2, [3, 1], seed=1, dtype=np.float32)),
    ],
)
def test_version_1_checkpoints_still_load(capsys, name, model):
    """tests/data/legacy holds files written by the version-1 code from these seeded models
    (weights as one flat list for the scalar engine, ``layers.<i>.weight`` for tensors)."""
    expected = model()
    loaded = load_checkpoint(LEGACY / name)
    assert _same_state(loaded.model, expected)
    assert loaded.metadata["data"]["dataset"] == "moons"
    assert cli.main(["evaluate", "--checkpoint", str(LEGACY / name)]) == 0
    assert "evaluated on the data it was trained on" in capsys.readouterr().out


def test_an_old_npz_loads_into_its_model_and_evaluate_says_how_to_convert(tmp_path, capsys):
    """tests/data/legacy/tensor_nn_save.npz was written by the former tensor_nn.save from
    tensor_nn.MLP(2, [3, 2], seed=0); np.savez writes the same for a Sequential."""
    model = tensor_nn.MLP(2, [3, 2], seed=1)
    load_into(model, LEGACY / "tensor_nn_save.npz")
    assert _same_state(model, tensor_nn.MLP(2, [3, 2], seed=0))
    scalar = MLP(2, [3, 2], seed=1)  # the same weights fit the scalar engine's MLP
    load_into(scalar, LEGACY / "tensor_nn_save.npz")
    assert _same_state(scalar, model)

    seq = tensor_nn.Sequential(tensor_nn.Linear(2, 3, seed=0), tensor_nn.Tanh())
    path = tmp_path / "seq.npz"
    np.savez(path, **{"layers.0.weight": np.ones((3, 2)), "layers.0.bias": np.zeros(3)})
    load_into(seq, path)
    assert np.array_equal(seq[0].weight.data, np.ones((3, 2)))

    assert cli.main(["evaluate", "--checkpoint", str(LEGACY / "tensor_nn_save.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "an .npz of weights only" in err and "convert it" in err


# ---------------------------------------------------------------------- crafted .npz files
def _npy_header(shape, descr="<f8") -> bytes:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return header.getvalue()


def _before_after(model, path):
    before = {k: np.array(v) for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError) as info:
        load_into(model, path)
    assert all(np.array_equal(before[k], v) for k, v in model.state_dict().items())
    return str(info.value)


def test_npz_float32_overflow_is_the_same_error_as_json(tmp_path):
    model = tensor_nn.MLP(2, [3, 1], seed=0, dtype=np.float32)
    state = {k: v.astype(np.float64) for k, v in model.state_dict().items()}
    state["0.weight"][1, 0] = 1e300
    path = tmp_path / "big.npz"
    np.savez(path, **state)
    assert "0.weight[2] = 1e+300 is too large for float32" in _before_after(model, path)
    ckpt.save_checkpoint(tmp_path / "model.json", tensor_nn.MLP(2, [3, 1], seed=0))
    as_version_2(tmp_path / "model.json")  # whose JSON may hold any float64
    doc = json.loads((tmp_path / "model.json").read_text())
    doc["architecture"]["dtype"] = "float32"
    doc["state_dict"]["0.weight"]["data"][2] = (1e300).hex()
    (tmp_path / "model.json").write_text(json.dumps(doc))
    assert "0.weight[2] = 1e+300 is too large for float32" in _before_after(
        model, tmp_path / "model.json"
    )


def test_npz_members_are_checked_by_header(tmp_path):
    model = tensor_nn.MLP(2, [3, 1], seed=0)
    state = model.state_dict()
    cases = {
        "a pickled object": ({**state, "0.bias": np.array([None] * 3, dtype=object)}, "object"),
        "a wrong shape": ({**state, "0.bias": np.zeros(4)}, "'0.bias' has shape (4,)"),
        "a missing array": ({k: v for k, v in state.items() if k != "2.bias"}, "missing keys"),
    }
    for name, (arrays, problem) in cases.items():
        path = tmp_path / f"{name}.npz"
        with open(path, "wb") as f:  # np.savez refuses nothing, so it writes the object array
            np.savez(f, **arrays)
        assert problem in _before_after(model, path), name


#: The model loaded under the memory cap: Linear(400, 400), 160,400 weights, so that a
#: deflated bomb of about 0.6 MB is smaller than the largest .npz such a model can have.
N = 400


def _damaged(raw: bytes, how: str) -> bytes:
    if how == "truncated":
        return raw[: len(raw) // 2]
    if how == "directory offset":  # the end record points before the start of the file
        end = raw.rindex(b"PK\x05\x06")
        return raw[: end + 16] + (2**32 - 1).to_bytes(4, "little") + raw[end + 20 :]
    if how == "data":  # a flipped byte in the first array's numbers: the CRC catches it
        return raw[:200] + bytes([raw[200] ^ 0xFF]) + raw[201:]
    if how == "npy":
        buffer = io.BytesIO()
        np.save(buffer, np.ones(3))
        return buffer.getvalue()
    return b""


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("truncated", "not a readable .npz archive"),
        ("directory offset", "not a readable .npz archive"),
        ("data", "not a readable .npz archive (Bad CRC-32"),
        ("npy", "not a text file"),
        ("empty", "the file is empty"),
    ],
)
def test_a_damaged_npz_is_the_one_error_and_changes_nothing(tmp_path, how, problem):
    path = tmp_path / "model.npz"
    path.write_bytes(_damaged((LEGACY / "tensor_nn_save.npz").read_bytes(), how))
    assert problem in _before_after(tensor_nn.MLP(2, [3, 2], seed=1), path)


def _crafted_npz(path: Path, header: bytes, data_size: int, compress: bool) -> None:
    """An .npz with the model's 0.weight (zeros) and a 0.bias whose .npy header is
    ``header`` and whose data is ``data_size`` zero bytes, written in 16 MB pieces."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method, compresslevel=1) as archive:
        archive.writestr("0.weight.npy", _npy_header((N, N)) + bytes(8 * N * N))
        with archive.open("0.bias.npy", "w", force_zip64=True) as member:
            member.write(header)
            left = data_size
            while left:
                member.write(bytes(min(left, 2**24)))
                left -= min(left, 2**24)


_UNDER_A_MEMORY_CAP = """
import resource, sys
from modelwright_autograd.tensor import nn as tensor_nn
from modelwright_autograd.checkpoint import CheckpointError, load_into

model = tensor_nn.MLP(int(sys.argv[2]), [int(sys.argv[2])])
with open("/proc/self/status") as status:
    used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
cap = used + 64 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
try:
    bytearray(128 * 2**20)  # the cap is real: what an unchecked load would inflate fails
    sys.exit("the memory cap did not hold")
except MemoryError:
    pass
try:
    load_into(model, sys.argv[1])
except CheckpointError as e:
    print(e)
"""


def _load_under_a_memory_cap(path: Path, n: int = N) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_UNDER_A_MEMORY_CAP), str(path), str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def test_a_header_claiming_10_to_the_13_floats_is_refused_under_a_memory_cap(tmp_path):
    path = tmp_path / "claims.npz"
    _crafted_npz(path, _npy_header((10**13,)), 0, compress=True)
    assert path.stat().st_size < 10_000  # 8 * 10**13 bytes claimed by a file of a few KB
    assert "'0.bias' has shape (10000000000000,); the model's 0.bias" in (
        _load_under_a_memory_cap(path)
    )


def test_a_zip_bomb_is_refused_under_a_memory_cap_without_inflating(tmp_path):
    path = tmp_path / "bomb.npz"
    size = 128 * 2**20  # 128 MB of zeros, deflated to about 0.6 MB
    _crafted_npz(path, _npy_header((size // 8,)), size, compress=True)
    assert path.stat().st_size < 2 * 2**20
    assert "'0.bias' has shape (16777216,); the model's 0.bias has shape (400,)" in (
        _load_under_a_memory_cap(path)
    )
    # the right header over the same bomb: the declared size is refused before reading
    lying = tmp_path / "lying.npz"
    _crafted_npz(lying, _npy_header((N,)), size, compress=True)
    assert "'0.bias' declares 134,217,856 bytes; its header promises 3,328" in (
        _load_under_a_memory_cap(lying)
    )
    # and a small model's largest .npz is far smaller than the bomb: refused by its size
    assert "bytes, more than an .npz of this model's weights (" in _load_under_a_memory_cap(path, 3)
