"""Checkpoints: exact round trips for both engines (weights compared as float.hex, so
nan, inf and -0.0 count), atomic writes under a simulated crash, and a clear
CheckpointError for every broken file with the model left untouched."""

import json
import math
import os
import random

import numpy as np
import pytest

from modelwright_autograd import MLP, Value
from modelwright_autograd import checkpoint as ckpt
from modelwright_autograd.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_into,
    save_checkpoint,
)
from modelwright_autograd.files import atomic_write
from modelwright_autograd.graph import no_grad
from modelwright_autograd.tensor import Tensor
from modelwright_autograd.tensor import nn as tensor_nn
from tests.legacy_v2 import as_version_2

POINTS = [[0.3, -1.2], [2.0, 0.5], [-0.7, 0.0], [1e-3, 4.0]]


def _scalar_model(seed=0):
    return MLP(2, [16, 16, 1], seed=random.Random(seed))


def _scalar_weights(model):
    return [p.data.hex() for p in model.parameters()]


def _tensor_weights(model):
    return {k: [v.hex() for v in a.ravel().tolist()] for k, a in model.state_dict().items()}


def _scalar_predictions(model):
    with no_grad():
        return [model(x).data.hex() for x in POINTS]


def _tensor_predictions(model):
    with no_grad():
        return [v.hex() for v in model(Tensor(POINTS)).data.ravel().tolist()]


# ---------------------------------------------------------------------- round trips
def test_scalar_round_trip_is_bit_exact(tmp_path):
    model = _scalar_model()
    # the awkward floats: sign of zero, infinities, nan, subnormal, a 17-digit value
    for p, v in zip(model.parameters(), [-0.0, math.inf, -math.inf, 5e-324, 0.1 + 0.2]):
        p.data = v
    path = tmp_path / "model.json"
    save_checkpoint(path, model, {"data": {"dataset": "moons"}})
    loaded = load_checkpoint(path)
    assert loaded.architecture.describe() == "scalar MLP 2-16-16-1 (relu)"
    assert loaded.metadata == {"data": {"dataset": "moons"}}
    assert _scalar_weights(loaded.model) == _scalar_weights(model)

    model.parameters()[5].data = math.nan
    save_checkpoint(path, model)
    assert math.isnan(load_checkpoint(path).model.parameters()[5].data)


def test_scalar_predictions_identical_after_load(tmp_path):
    model = _scalar_model(seed=3)
    path = tmp_path / "model.json"
    save_checkpoint(path, model)
    assert _scalar_predictions(load_checkpoint(path).model) == _scalar_predictions(model)
    other = _scalar_model(seed=4)
    assert _scalar_predictions(other) != _scalar_predictions(model)
    load_into(other, path)
    assert _scalar_predictions(other) == _scalar_predictions(model)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tensor_round_trip_is_bit_exact(tmp_path, dtype):
    model = tensor_nn.MLP(2, [8, 3], activation="tanh", seed=5, dtype=dtype)
    model.layers[0].weight.data[0, 0] = -0.0
    model.layers[1].bias.data[2] = np.inf
    path = tmp_path / "model.json"
    save_checkpoint(path, model, {"note": "x"})
    loaded = load_checkpoint(path)
    assert loaded.architecture.describe() == "tensor MLP 2-8-3 (tanh)"
    assert loaded.model.layers[0].weight.dtype == dtype
    assert _tensor_weights(loaded.model) == _tensor_weights(model)
    assert loaded.metadata == {"note": "x"}
    model.layers[1].bias.data[2] = 0.25
    save_checkpoint(path, model)
    assert _tensor_predictions(load_checkpoint(path).model) == _tensor_predictions(model)


def test_metadata_cannot_overwrite_the_header(tmp_path):
    with pytest.raises(ValueError, match="'parameters' is reserved"):
        save_checkpoint(tmp_path / "m.json", _scalar_model(), {"parameters": []})


# ---------------------------------------------------------------------- atomic writes
def _crash_mid_dump(monkeypatch):
    """json.dump writes half its text, then the process 'dies'."""

    def half_dump(obj, f, **kwargs):
        text = json.dumps(obj, **kwargs)
        f.write(text[: len(text) // 2])
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(ckpt.json, "dump", half_dump)


def _crash_at_rename(monkeypatch):
    def failing_replace(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(ckpt.os, "replace", failing_replace)


PAIR = ["model.json", "model.safetensors"]


@pytest.mark.parametrize("crash", [_crash_mid_dump, _crash_at_rename])
def test_a_crash_while_saving_keeps_the_old_file_and_leaves_no_half_file(
    tmp_path, monkeypatch, crash
):
    path = tmp_path / "model.json"
    old_model = _scalar_model(seed=1)
    save_checkpoint(path, old_model)
    old_bytes = path.read_bytes()

    crash(monkeypatch)
    with pytest.raises((KeyboardInterrupt, OSError), match="simulated crash"):
        save_checkpoint(path, _scalar_model(seed=2))
    monkeypatch.undo()

    assert path.read_bytes() == old_bytes  # the old checkpoint is intact
    assert sorted(os.listdir(tmp_path)) == PAIR  # and no temporary file is left behind
    assert _scalar_weights(load_checkpoint(path).model) == _scalar_weights(old_model)

    fresh = tmp_path / "fresh.json"
    crash(monkeypatch)
    with pytest.raises((KeyboardInterrupt, OSError)):
        save_checkpoint(fresh, old_model)
    monkeypatch.undo()
    assert not fresh.exists()
    assert sorted(os.listdir(tmp_path)) == PAIR


def test_atomic_write_replaces_the_content_and_keeps_normal_permissions(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    atomic_write(path, lambda f: f.write(b"new"), binary=True)
    assert path.read_bytes() == b"new"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


# ---------------------------------------------------------------------- broken files
def _valid_text(tmp_path):
    path = tmp_path / "good.json"
    save_checkpoint(path, _scalar_model(seed=9))
    as_version_2(path)  # the weights in the JSON, to be broken there
    return path.read_text()


def _edited(transform):
    def make(tmp_path):
        doc = json.loads(_valid_text(tmp_path))
        transform(doc)
        return json.dumps(doc)

    return make


def _set(key, value):
    return _edited(lambda doc: doc.__setitem__(key, value))


def _set_param(index, value):
    return _edited(lambda doc: doc["state_dict"]["0.weight"]["data"].__setitem__(index, value))


W0 = "'state_dict' entry '0.weight' data"


BROKEN = {
    "empty": (lambda tmp: "", "the file is empty"),
    "truncated": (lambda tmp: _valid_text(tmp)[:-200], "not valid JSON, truncated or corrupt"),
    "garbage": (lambda tmp: "\x00\x01PK garbage {", "not valid JSON"),
    "not a checkpoint": (lambda tmp: '{"hello": 1}', "not a modelwright-autograd checkpoint"),
    "a list": (lambda tmp: "[1, 2]", "not a modelwright-autograd checkpoint"),
    "future version": (
        _set("version", 99),
        "checkpoint version 99; this code reads versions 1 to 3",
    ),
    "version true": (_set("version", True), "checkpoint version True; this code reads"),
    "version 1.0": (_set("version", 1.0), "checkpoint version 1.0; this code reads"),
    "unknown engine": (_set("engine", "quantum"), "unknown engine 'quantum'"),
    "no architecture": (_set("architecture", None), "missing its 'architecture'"),
    "bad nin": (_set("architecture", {"nin": 0, "nouts": [1]}), "'nin' must be a positive"),
    "bad activation": (
        _set("architecture", {"nin": 2, "nouts": [16, 16, 1], "activation": "gelu"}),
        "unknown activation 'gelu'",
    ),
    "too few weights": (
        _edited(lambda doc: doc["state_dict"]["4.bias"]["data"].pop()),
        "'state_dict' entry '4.bias' 'data' must hold 1 float.hex numbers, got 0 numbers",
    ),
    "a weight too many": (
        _edited(lambda doc: doc["state_dict"]["4.bias"].update(shape=[2], data=["0x1p+0"] * 2)),
        "'state_dict' holds more numbers than the 337 a scalar MLP 2-16-16-1 \\(relu\\) has",
    ),
    "renamed": (
        _edited(
            lambda doc: doc["state_dict"].__setitem__("5.bias", doc["state_dict"].pop("4.bias"))
        ),
        r"missing keys \['4.bias'\]; unexpected keys \['5.bias'\]",
    ),
    "transposed": (
        _edited(lambda doc: doc["state_dict"]["0.weight"].update(shape=[2, 16])),
        r"0.weight is not a \(16, 2\) array of real numbers",
    ),
    "bad shape": (
        _edited(lambda doc: doc["state_dict"]["0.weight"].update(shape=[16, -2])),
        r"'state_dict' entry '0.weight' has no valid 'shape' \(got \[16, -2\]\)",
    ),
    "not hex": (_set_param(7, "0.5"), rf"{W0}\[7\] is not a float.hex number: '0.5'"),
    "a number": (_set_param(3, 0.5), rf"{W0}\[3\] is not a float.hex number: 0.5"),
    "nan text": (_set_param(3, "NaN"), rf"{W0}\[3\] is not a float.hex number: 'NaN'"),
    "hex overflow": (
        _set_param(4, "0x1.8p+99999"),
        rf"{W0}\[4\] is too large for a float64: '0x1.8p\+99999'",
    ),
    # (2+1)*16 + (16+1)*160000 + (160000+1)*1 = 2,880,049 Values: refused before counting
    "absurd layer size": (
        _set("architecture", {"nin": 2, "nouts": [16, 160000, 1], "activation": "relu"}),
        "architecture has 2,880,049 weights, more than the 1,000,000 a scalar checkpoint",
    ),
    # sizes whose product has more digits than Python will print (4,300) are refused first
    "4000-digit layer size": (
        _set("architecture", {"nin": 10**4000, "nouts": [10**4000], "activation": "relu"}),
        "'nin' must be a positive integer up to 1,000,000, got 1000000",
    ),
    "4000-digit shape": (
        _edited(lambda doc: doc["state_dict"]["0.weight"].update(shape=[10**4000, 10**4000])),
        r"'state_dict' entry '0.weight' has no valid 'shape' \(got \[1000",
    ),
    "bool layer size": (
        _set("architecture", {"nin": 2, "nouts": [16, True, 1], "activation": "relu"}),
        "'nouts' must be a list of positive integers",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_checkpoint_is_named_and_leaves_the_model_unchanged(tmp_path, case):
    make_text, message = BROKEN[case]
    path = tmp_path / "model.json"
    path.write_text(make_text(tmp_path), encoding="utf-8")
    model = _scalar_model(seed=1)
    before = _scalar_weights(model)
    with pytest.raises(CheckpointError, match=message) as info:
        load_into(model, path)
    assert str(path) in str(info.value)  # the message names the file
    assert _scalar_weights(model) == before
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def _no_model_may_be_built(monkeypatch):
    def refuse(arch):
        raise AssertionError(f"built a {arch.describe()} for a file that cannot be loaded")

    monkeypatch.setattr(ckpt, "build_model", refuse)


# load_into meets these as an architecture mismatch; load_checkpoint has no model to compare
# with, so it must check the sizes the architecture implies against the file before building
@pytest.mark.parametrize(
    ("engine", "nouts", "message"),
    [
        ("scalar", [16, 160000, 1], "2,880,049 weights, more than the 1,000,000"),
        ("scalar", [16, 16000, 1], "'state_dict' holds 337 numbers; a scalar MLP 2-16-16000-1"),
        ("tensor", [100000, 100000, 1], "10,000,500,001 weights, more than the 2,000,000"),
        ("tensor", [16, 16000, 1], "'state_dict' holds 337 numbers; a tensor MLP 2-16-16000-1"),
    ],
)
def test_a_corrupt_layer_size_fails_before_any_model_is_built(
    tmp_path, monkeypatch, engine, nouts, message
):
    path = tmp_path / "model.json"
    model = _scalar_model() if engine == "scalar" else tensor_nn.MLP(2, [16, 16, 1], seed=0)
    save_checkpoint(path, model)
    as_version_2(path)
    doc = json.loads(path.read_text())
    doc["architecture"]["nouts"] = nouts
    path.write_text(json.dumps(doc))
    _no_model_may_be_built(monkeypatch)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


@pytest.mark.parametrize(
    ("engine", "nin", "nouts"),
    [("scalar", 3, [5, 1]), ("tensor", 4, [7, 6, 3]), ("tensor", 1, [1])],
)
def test_the_size_checked_before_building_is_the_built_models(engine, nin, nouts):
    arch = ckpt.Architecture(engine, nin, tuple(nouts), "relu")
    model = ckpt.build_model(arch)
    sizes = [math.prod(np.shape(v)) for v in model.state_dict().values()]
    assert arch.num_parameters() == sum(sizes) == sum(np.size(p.data) for p in model.parameters())


def test_a_model_too_big_to_load_is_not_saved(tmp_path, monkeypatch):
    model = _scalar_model()  # built first: the limit bounds nn.MLP too
    monkeypatch.setitem(ckpt.MAX_PARAMETERS, "scalar", 336)
    with pytest.raises(ValueError, match="with 337 weights: loading is limited to 336"):
        save_checkpoint(tmp_path / "m.json", model)
    assert not (tmp_path / "m.json").exists()


def test_a_float32_weight_beyond_float32_range_is_refused(tmp_path):
    path = tmp_path / "model.json"
    save_checkpoint(path, tensor_nn.MLP(2, [3, 1], seed=1, dtype=np.float32))
    as_version_2(path)
    doc = json.loads(path.read_text())
    doc["state_dict"]["0.weight"]["data"][4] = (2.0**200).hex()
    path.write_text(json.dumps(doc))
    model = tensor_nn.MLP(2, [3, 1], seed=2, dtype=np.float32)
    before = _tensor_weights(model)
    with pytest.raises(
        CheckpointError, match=r"0\.weight\[4\] = 1\.6\d+e\+60 is too large for float32"
    ):
        load_into(model, path)
    assert _tensor_weights(model) == before


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(CheckpointError, match=r"nope\.json: no such file"):
        load_checkpoint(tmp_path / "nope.json")
    with pytest.raises(CheckpointError, match="is a directory"):
        load_checkpoint(tmp_path)
    assert issubclass(CheckpointError, ValueError)


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "model.json"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(CheckpointError, match="not a text file"):
        load_checkpoint(path)


def test_wrong_architecture_fails_before_any_weight_changes(tmp_path):
    path = tmp_path / "model.json"
    save_checkpoint(path, MLP(2, [8, 1], seed=0))
    model = _scalar_model(seed=1)
    before = _scalar_weights(model)
    with pytest.raises(
        CheckpointError,
        match="architecture mismatch: the file holds a scalar "
        "MLP 2-8-1 \\(relu\\), the model is a scalar MLP 2-16-16-1",
    ):
        load_into(model, path)
    assert _scalar_weights(model) == before

    tensor_model = tensor_nn.MLP(2, [16, 16, 1], seed=0)
    tensor_before = _tensor_weights(tensor_model)
    save_checkpoint(path, _scalar_model())
    with pytest.raises(
        CheckpointError,
        match="the file holds a scalar MLP 2-16-16-1 \\(relu\\), the model is a tensor MLP",
    ):
        load_into(tensor_model, path)
    assert _tensor_weights(tensor_model) == tensor_before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p.pop("2.bias"), "'state_dict' holds 32 numbers; a tensor MLP 2-8-1"),
        (
            lambda p: p.__setitem__("extra", p.pop("0.bias")),
            r"missing keys \['0.bias'\]; unexpected keys \['extra'\]",
        ),
        (
            lambda p: p["0.weight"].__setitem__("shape", [2, 8]),
            r"size mismatch for 0.weight: checkpoint shape \(2, 8\), model shape \(8, 2\)",
        ),
        (
            lambda p: p["2.weight"]["data"].pop(),
            "'2.weight' 'data' must hold 8 float.hex numbers, got 7 numbers",
        ),
        (
            lambda p: p["0.bias"]["data"].__setitem__(0, "zero"),
            r"'0.bias' data\[0\] is not a float.hex number: 'zero'",
        ),
    ],
)
def test_broken_tensor_checkpoint(tmp_path, edit, message):
    path = tmp_path / "model.json"
    save_checkpoint(path, tensor_nn.MLP(2, [8, 1], seed=1))
    as_version_2(path)
    doc = json.loads(path.read_text())
    edit(doc["state_dict"])
    path.write_text(json.dumps(doc))
    model = tensor_nn.MLP(2, [8, 1], seed=2)
    before = _tensor_weights(model)
    with pytest.raises(CheckpointError, match=message):
        load_into(model, path)
    assert _tensor_weights(model) == before


def test_unsupported_models_are_refused(tmp_path):
    with pytest.raises(TypeError, match="cannot checkpoint a Value"):
        save_checkpoint(tmp_path / "m.json", Value(1.0))
    assert not (tmp_path / "m.json").exists()
