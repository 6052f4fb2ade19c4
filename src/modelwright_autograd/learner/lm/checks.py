"""The LM checks of ``modelwright-autograd check``, after the tensor checks, on a folder with
``init --lm``'s ``lm_ops.py`` and ``models.py``: each op against torch (forward and
backward), the GPT's parts alone, makemore's MLP and the GPT (the loss and every parameter's
gradient by name, from weights the grader sets), eval mode, and training from the same
weights and batches as torch. A wrong op is recognised from the formula of the wrong answer
its classic bug gives; a wrong model names its first wrong parameter and the op to look at;
a wrong op, part or model's forward names the line that defines it (read, not run).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ...lm.corpus import builtin_path
from ..base import MAX_HANGS
from ..locate import line_of
from ..report import FAIL, NOTE, PASS, Row
from ..tensor.oracle import agree, array_of
from ..words import TODO, array_text, failure_text
from . import cases
from .cases import GPT_CONFIG, SHORT_LENGTH, TRAINING, OpCase

if TYPE_CHECKING:
    from ..base import GraderBase as Grader

GATE = "LM GATE PASSED: your engine trains makemore's MLP and a GPT; losses equal PyTorch's"
TRAINED = ("MLP trains on names", "GPT trains on Shakespeare")
AUTHOR = {"MLP": "makemore", "GPT": "nanoGPT"}
#: The GPT's parts checked alone, the code that builds each, and the op rows each uses.
PARTS = {
    "LayerNorm": (f"LayerNorm({GPT_CONFIG['n_embd']})", ["layer_norm"]),
    "CausalSelfAttention": (
        "CausalSelfAttention(GPTConfig(**config))",
        [
            "split",
            "masked_fill",
            "softmax",
            "causal softmax",
            "heads' transpose",
            "attention scores",
            "dropout in eval",
        ],
    ),
    "FeedForward": ("FeedForward(GPTConfig(**config))", ["gelu", "dropout in eval"]),
    "Block": ("Block(GPTConfig(**config))", ["LayerNorm", "CausalSelfAttention", "FeedForward"]),
}
#: Where to look when a model's gradient is first wrong at a parameter of this name.
LOOK = (
    (
        "attn",
        "attention's backward (split, the heads' reshape and transpose, @, masked_fill, softmax)",
    ),
    ("ln_", "layer norm's backward"),
    ("mlp.c_fc", "GELU's backward"),
    ("mlp.c_proj", "the block's MLP"),
    ("wte", "embedding's backward (token ids repeat in a batch) or the tied head"),
    ("wpe", "embedding's backward and the position ids"),
    ("mlp.", "tanh's or cat's backward in the MLP"),
)


def run_lm_checks(grader: Grader) -> None:
    """The LM rows, once the tensor rows pass (their ops are the LM's too)."""
    report = grader.report
    if grader.oracle.name != "torch":
        text = "not run without PyTorch (pip install torch): the LM checks compare with torch"
        grader.add(Row("LM checks", NOTE, text))
        return
    report.gate, report.required = GATE, (*report.required, *TRAINED)
    if report.failed:
        grader.add(Row("LM checks", FAIL, "not run: fix the tensor checks above first"))
        return
    LMChecks(grader).run()


class LMChecks:
    """Runs every LM row against one learner's folder, into the tensor grader's report."""

    def __init__(self, grader: Grader) -> None:
        from . import oracle  # torch

        self.g = grader
        self.torch = oracle
        self.modules = {
            "ops_module": grader.target.lm_ops_module,
            "models_module": grader.target.lm_models_module,
        }

    def run(self) -> None:
        for check in (
            *[lambda c=c: self.check_op(c) for c in cases.op_cases()],
            *[lambda p=p: self.check_part(p) for p in PARTS],
            self.check_models,
            self.check_eval,
            self.check_dropout,
            self.check_training,
        ):
            if self.g.hangs >= MAX_HANGS:
                text = f"not run: the engine hung {MAX_HANGS} times; fix that first"
                self.g.add(Row("the other LM checks", FAIL, text))
                return
            check()

    # ------------------------------------------------------------------ plumbing
    def ask(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        return self.g.ask({**request, **self.modules}, timeout)

    def failed_row(self, name: str, reply: dict[str, Any], what: str) -> bool:
        """A row for a request that hung, crashed or raised; True when there was one."""
        if "failure" not in reply and "error" not in reply:
            return False
        self.g.add(Row(name, FAIL, failure_text(reply, what)))
        return True

    def look_at(self, names: list[str]) -> str:
        """'; look at lm_ops.py:31 (softmax), ...': where the learner's files define these
        (functions of lm_ops.py, methods of models.py's classes, the Tensor's methods; a
        class's forward, else its __call__), read from the source, not run; "" when none
        is found."""
        t = self.g.target
        places = []
        for name in names:
            if name.startswith(t.class_name + "."):
                file = t.value_file
            else:
                file = t.lm_models_file if name[:1].isupper() else t.lm_ops_file
            line = line_of(file, name) if file else None
            if line is None and file and name.endswith(".forward"):  # a Module without torch's
                name = name.replace(".forward", ".__call__")  # forward: its __call__
                line = line_of(file, name)
            if line and f"{line} ({name})" not in places:
                places.append(f"{line} ({name})")
        return f"; look at {', '.join(places[:3])}" if places else ""

    def called(self, code: str) -> list[str]:
        """The functions and Tensor methods ``code`` calls, in order (``@``: __matmul__)."""
        cls = self.g.target.class_name
        names = [f"{cls}.{n}" if dot else n for dot, n in re.findall(r"(\.?)(\w+)\(", code)]
        return names + ([f"{cls}.__matmul__"] if "@" in code else [])

    def because(self, name: str, uses: list[str]) -> bool:
        cause = next((u for u in uses if self.g.failed(u)), None)
        if cause is not None:
            self.g.because(name, cause)
        return cause is not None

    # ------------------------------------------------------------------ the ops
    def check_op(self, case: OpCase) -> None:
        if self.because(case.name, list(case.after)):
            return
        request = {"do": "lm_op", "case": _case_request(case)}
        reply = self.ask(request)
        if self.failed_row(case.name, reply, case.code.replace("\n", "; ")):
            if not self.g.rows[case.name].diagnosis.startswith(TODO):
                self.g.rows[case.name].reproduce = self.code(case)
            return
        out = array_of(reply["out"])
        grads = {n: array_of(g) for n, g in reply["grads"].items()}
        if reply["changed"]:
            name = reply["changed"][0]
            problem = (
                f"{name}.data changed: an op must leave its inputs as they were (an in-place "
                f"{name}.data -= ... writes into {name}); make a new array"
            )
        elif case.random:
            problem = _dropout_problem(case, out, grads["x"])
        else:
            want_out, want = self.torch.run_op(case)
            problem = op_problem(case, out, grads, want_out, want)
        if problem:
            self.g.add(
                Row(
                    case.name,
                    FAIL,
                    problem + self.look_at(list(case.looks) or self.called(case.code)),
                    self.code(case),
                )
            )
        elif case.random:
            text = "each call drops its own 25%, scales the rest by 1/(1 - p), masks the backward"
            self.g.add(Row(case.name, PASS, text))
        else:
            self.g.add(Row(case.name, PASS, "forward and backward equal torch's"))

    def code(self, case: OpCase) -> list[str]:
        """Lines a learner pastes to see the case in their engine."""
        t = self.g.target
        lines = [
            f"import sys; sys.path.insert(0, {t.sys_path!r})",
            f"import math; import numpy as np; from {t.value_module} import {t.class_name}",
            f"from {self.modules['ops_module']} import *",
        ]
        for name, x in case.tensors.items():
            lines.append(f"{name} = {t.class_name}(np.array({x.tolist()!r}))")
        for name, x in case.arrays.items():
            lines.append(f"{name} = np.array({x.tolist()!r})")
        lines += [
            *case.code.splitlines(),
            f"(out * np.array({case.weight.tolist()!r})).sum().backward()",
        ]
        lines += [f"print({name}.grad)" for name in case.tensors]
        if not case.random:
            _, want = self.torch.run_op(case)
            lines += [f"# expected {n}.grad: {array_text(g)}" for n, g in want.items()]
        return lines

    # ------------------------------------------------------------------ the GPT's parts
    def check_part(self, kind: str) -> None:
        build, uses = PARTS[kind]
        if self.because(kind, uses):
            return
        shapes = self.torch.parameter_shapes(kind)
        weights = cases.weights_for(shapes, cases.SEED, 0.3)
        rng = np.random.default_rng(cases.SEED + 1)
        shape = (2, 5, GPT_CONFIG["n_embd"])
        x, weight = rng.normal(0.0, 1.0, shape), rng.normal(0.0, 1.0, shape)
        request = {
            "do": "lm_module",
            "build": build.replace("**config", f"**{GPT_CONFIG!r}"),
            "weights": _arrays(weights),
            "x": _send(x),
            "weight": _send(weight),
        }
        reply = self.ask(request)
        if self.failed_row(kind, reply, f"{kind} on a {shape} batch") or self.names_row(
            kind, reply, shapes
        ):
            return
        out, x_grad, grads = self.torch.run_module(kind, weights, x, weight)
        got = array_of(reply["out"])
        look = self.look_at([f"{kind}.forward"])
        if not agree(got, out):
            text = f"{kind}'s output differs from torch's {kind} with the same weights"
            if kind == "CausalSelfAttention":
                hint = _forward_hint(kind)
                text = self.torch.attention_bug(weights, x, got) or text + ": " + hint
            self.g.add(Row(kind, FAIL, text + look))
            return
        wrong = _wrong_grads(reply, grads)
        if not agree(array_of(reply["x_grad"]), x_grad):
            wrong.insert(0, "the input x")
        if wrong:
            text = f"the output is right, but the gradient of {wrong[0]} is wrong"
            self.g.add(Row(kind, FAIL, text + _right_ones(wrong, list(shapes)) + look))
            return
        self.g.add(Row(kind, PASS, "output, x's and every parameter's gradient equal torch's"))

    def names_row(
        self, name: str, reply: dict[str, Any], shapes: dict[str, tuple[int, ...]]
    ) -> bool:
        """A failing row when the learner's parameters are not torch's names and shapes."""
        problem = _names_problem(reply, shapes)
        if problem:
            self.g.add(Row(name, FAIL, problem))
        return bool(problem)

    # ------------------------------------------------------------------ the models
    def model_case(self, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray], Any, Any]:
        """The MLP's or the GPT's parameter shapes, the weights the grader sets and one
        batch (idx, targets) shorter than block_size: what every model row runs."""
        shapes = self.torch.parameter_shapes(kind)
        weights = cases.weights_for(shapes, cases.SEED + 2, 0.5)
        cls = kind.split()[0]
        idx, targets = self.batches(cls, 1, cases.SEED + 3, cases.MODEL_LENGTH[cls])[0]
        return shapes, weights, idx, targets

    def model_request(
        self, kind: str, weights: dict[str, np.ndarray], **more: Any
    ) -> dict[str, Any]:
        cls = kind.split()[0]
        build = f"{cls}({cls}Config(**{cases.MODEL_CONFIGS[kind]!r}))"
        return {"build": build, "weights": _arrays(weights), **more}

    def check_models(self) -> None:
        """makemore's MLP, then the GPT with biases and without (nanoGPT's train.py
        default): one batch's loss, every gradient by name, the logits of a call without
        targets, and the weights each model draws itself before the grader sets its own."""
        for kinds, name, uses in (
            (["MLP"], "makemore's MLP", ["embedding", "cat"]),
            (["GPT", "GPT without biases"], "GPT", ["embedding", "Block"]),
        ):
            if self.because(name, uses):
                continue
            problem, loss = "", 0.0
            for kind in kinds:
                problem, got = self.model_problem(kind)
                if problem:
                    break
                loss = loss or got
            problem = problem or self.init_problem(kinds[0])
            if problem:
                self.g.add(Row(name, FAIL, problem))
                continue
            count = len(self.torch.parameter_shapes(kinds[0]))
            text = f"loss {loss:.4f} and all {count} parameters' gradients equal torch's, by "
            text += "name; the logits without targets too"
            text += "; without biases too" if len(kinds) > 1 else ""
            self.g.add(Row(name, PASS, text + f"; its initial weights are {AUTHOR[kinds[0]]}'s"))

    def model_problem(self, kind: str) -> tuple[str, float]:
        """What is wrong with one model row's model (``kind`` one of MODEL_CONFIGS), or "";
        and torch's loss."""
        cls = kind.split()[0]
        shapes, weights, idx, targets = self.model_case(kind)
        request = self.model_request(kind, weights, idx=_ints(idx), targets=_ints(targets))
        reply = self.ask({"do": "lm_model", **request, "logits": True, "short": SHORT_LENGTH})
        unbiased = "with bias=False (nanoGPT's train.py default), " if kind != cls else ""
        if "failure" in reply or "error" in reply:
            what = (
                f"{cls}(...)(idx, targets), backward(), {cls}(...)(idx) and "
                f"{cls}(...)(idx[:1, :{SHORT_LENGTH}])"
            )
            return unbiased + failure_text(reply, what), 0.0
        problem = _names_problem(reply, shapes)
        if problem:
            return unbiased + problem, 0.0
        loss, grads = self.torch.run_model(kind, weights, idx, targets)
        if not _close(reply["loss"], loss) and unbiased:
            return (
                f"{unbiased}the loss is {losses_text(reply['loss'], loss)}: Linear and "
                "layer_norm must work without a bias (bias None)"
                + self.look_at(["layer_norm", "Linear.__call__"])
            ), loss
        if not _close(reply["loss"], loss):
            return (
                f"the loss is {losses_text(reply['loss'], loss)} with the same weights and "
                f"batch: {cls}'s forward in models.py is not {AUTHOR[cls]}'s ("
                + _forward_hint(cls)
                + ")"
                + self.look_at([f"{cls}.forward"])
            ), loss
        wrong = _wrong_grads(reply, grads)
        if wrong:
            look = next(
                (hint for key, hint in LOOK if key in wrong[0]), "the backward of the ops it uses"
            )
            text = f"the loss is right; {wrong[0]} wrong" + _right_ones(wrong, list(shapes))
            if not np.any(array_of(reply["grads"][wrong[0]])):
                look = (
                    "its path to the loss, which leaves your Tensors somewhere (NumPy on "
                    ".data, or a new Tensor made from it): it gets no gradient at all"
                )
            return unbiased + f"{text}: look at {look}", loss
        problem = _logits_problem(
            cls, array_of(reply["logits"]), self.torch.logits(kind, weights, idx)
        )
        shorter = idx[:1, :SHORT_LENGTH]
        short = _logits_problem(
            cls, array_of(reply["short_logits"]), self.torch.logits(kind, weights, shorter)
        )
        if not problem and short:  # something kept from the first call, at its length
            problem = f"called again on one row of {SHORT_LENGTH} positions, {short}"
        if problem:
            return unbiased + problem + self.look_at([f"{cls}.forward"]), loss
        return "", loss

    def init_problem(self, cls: str) -> str:
        """What is wrong with the weights a model draws itself (built larger, for tight
        statistics, np.random seeded), or ""."""
        kind = f"{cls} init"
        shapes = self.torch.parameter_shapes(kind)
        build = self.model_request(kind, {})["build"]
        request = {"do": "lm_init", "build": build, "seed": cases.SEED + 7}
        reply = self.ask({**request, "shapes": {n: list(s) for n, s in shapes.items()}})
        config = f"{cls}({cls}Config(**{cases.MODEL_CONFIGS[kind]!r}))"
        if "failure" in reply or "error" in reply:
            return failure_text(reply, f"{config} without the grader's weights")
        problem = _names_problem(reply, shapes)
        if problem:
            return f"built as {config}: {problem}"
        laws = cases.initial_laws(kind, shapes)
        wrong = _initial_problem(cls, laws, shapes, reply["initial"])
        if wrong is None:
            return ""
        return (
            f"the loss, gradients and logits are right, but {cls}(...) draws its own weights "
            f"unlike {AUTHOR[cls]} (built as {config}): {wrong[1]}"
            + self.look_at(_INIT_LOOK[cls](wrong[0]))
        )

    def check_eval(self) -> None:
        name = "GPT in eval mode"
        if self.because(name, ["GPT"]):
            return
        _, weights, idx, targets = self.model_case("GPT")
        request = self.model_request(
            "GPT", weights, idx=_ints(idx), targets=_ints(targets), eval=True
        )
        request["build"] = request["build"].replace("'dropout': 0.0", "'dropout': 0.5")
        reply = self.ask({"do": "lm_model", **request})
        if self.failed_row(name, reply, "GPT(...).eval() on a batch"):
            return
        loss, _ = self.torch.run_model("GPT", weights, idx, targets)
        if not _close(reply["loss"], loss):
            text = (
                "with dropout 0.5 and model.eval() the loss is "
                f"{losses_text(reply['loss'], loss)}: dropout must do nothing in eval mode (pass "
                "self.training to it)"
            )
            self.g.add(Row(name, FAIL, text))
            return
        self.g.add(
            Row(name, PASS, "with dropout 0.5, model.eval() gives torch's loss (no dropout)")
        )

    def check_dropout(self) -> None:
        """The GPT in training with dropout, models.py's dropout given the grader's masks:
        new (torch's modules start in training mode), then after eval() and train(), as
        nanoGPT's loop after each evaluation."""
        name = "GPT with dropout in training"
        if self.because(name, ["GPT in eval mode", "dropout in training"]):
            return
        _, weights, idx, targets = self.model_case("GPT")
        masks = cases.dropout_masks(*idx.shape)
        loss, grads = self.torch.run_model("GPT", weights, idx, targets, masks)
        p = cases.DROPOUT_P
        for when, again in (("new", False), ("after eval() and train()", True)):
            request = self.model_request(
                "GPT",
                weights,
                idx=_ints(idx),
                targets=_ints(targets),
                masks=[_send(m) for m in masks],
                rate=p,
                eval_then_train=again,
            )
            request["build"] = request["build"].replace("'dropout': 0.0", f"'dropout': {p}")
            reply = self.ask({"do": "lm_model", **request})
            what = f"GPT(...) {when}, in training with dropout {p}, the grader's masks given to "
            if self.failed_row(name, reply, what + "your dropout"):
                return
            wrong = _wrong_grads(reply, grads)
            if not _close(reply["loss"], loss) or wrong:
                text = (
                    f"with dropout {p} in training and the same masks, the loss is "
                    f"{losses_text(reply['loss'], loss)}"
                    + (f" ({wrong[0]}'s gradient differs)" if wrong else "")
                    + ": dropout goes where nanoGPT puts it, after the embeddings, on att after "
                    "softmax, and after attention's and the MLP's c_proj"
                    + self.look_at(["GPT.forward", "CausalSelfAttention.forward"])
                )
                self.g.add(Row(name, FAIL, text))
                return
        self.g.add(
            Row(name, PASS, f"with dropout {p} and torch's masks, torch's loss and gradients")
        )

    def batches(
        self, kind: str, steps: int, seed: int, length: int | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        settings = TRAINING[kind]
        text = builtin_path("names" if kind == "MLP" else "shakespeare").read_text(encoding="utf-8")
        data = cases.names_data(text) if kind == "MLP" else cases.shakespeare_data(text)
        length = length or settings["length"]
        return cases.batches(data, length, settings["batch"], steps, seed)

    # ------------------------------------------------------------------ training
    def check_training(self) -> None:
        for kind, name, model in (
            ("MLP", TRAINED[0], "makemore's MLP"),
            ("GPT", TRAINED[1], "GPT"),
        ):
            uses = [model, "GPT in eval mode", "GPT with dropout in training"]
            if self.because(name, uses if kind == "GPT" else [model]):
                continue
            settings = TRAINING[kind]
            shapes = self.torch.parameter_shapes(kind)
            if kind == "GPT":
                weights = cases.gpt2_weights(shapes, cases.SEED + 4, GPT_CONFIG["n_layer"])
            else:
                weights = cases.weights_for(shapes, cases.SEED + 4, 0.3)
            batches = self.batches(kind, settings["steps"], cases.SEED + 5)
            sent = [[_ints(x), _ints(y)] for x, y in batches]
            request = self.model_request(kind, weights, batches=sent, settings=settings)
            reply = self.ask({"do": "lm_train", **request}, self.g.train_timeout)
            what = f"{settings['steps']} steps of configure_optimizers(...) and step()"
            if self.failed_row(name, reply, what) or self.names_row(name, reply, shapes):
                continue
            losses, first = self.torch.train(kind, weights, batches, settings)
            got = reply["losses"]
            if (
                len(got) == len(losses)
                and all(map(_close, got, losses))
                and not _wrong_update(reply, first)
            ):
                text = (
                    f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {len(losses)} AdamW steps "
                    "from torch's weights and batches, every step equal to torch's (1e-6), "
                    "the first update to 1e-10"
                )
                self.g.add(Row(name, PASS, text))
                continue
            text = self.training_text(kind, reply, weights, batches, (losses, first))
            self.g.add(Row(name, FAIL, text))

    def training_text(
        self,
        kind: str,
        reply: dict[str, Any],
        weights: dict[str, np.ndarray],
        batches: list[tuple[np.ndarray, np.ndarray]],
        torchs: tuple[list[float], dict[str, np.ndarray]],
    ) -> str:
        """Why the learner's training left torch's (``torchs``: its losses and parameters
        after the first update): the first step whose loss differs, and what the parameters
        after the first update show."""
        settings = TRAINING[kind]
        losses, first = torchs
        got = reply["losses"]
        differ = next((i for i, (a, b) in enumerate(zip(got, losses)) if not _close(a, b)), None)
        if differ is None and len(got) != len(losses):
            return f"{len(got)} losses came back, not one for each of the {len(losses)} batches"
        if differ is None:
            wrong = _wrong_update(reply, first)
            return (
                f"every loss is torch's to 1e-6, but after the first update {wrong[0]} is not "
                "torch.optim.AdamW's to 1e-10 (both float64), by less than moves a loss: "
                "torch adds eps to sqrt(v_hat), after both bias corrections, and keeps m and v "
                "in float64"
            )
        head = f"step {differ}'s loss is {losses_text(got[differ], losses[differ])}"
        if reply["repeated"]:
            return (
                head + f": configure_optimizers' groups list {reply['repeated'][0]} more than "
                "once, so it takes more than one step each time: list each parameter once"
            )
        lr = settings["lr"]
        made = next((v for v in reply["made_with"] if v is not None and not _close(v, lr)), None)
        if made is not None:
            return (
                head + f": configure_optimizers made a group with lr {made:g}, not the "
                f"learning_rate it was given ({lr:g}): pass it on to AdamW"
            )
        if differ == 0:
            return head + ": before any update, so look at the model's forward in training mode"
        theirs = {n: array_of(a) for n, a in reply["first"].items()}
        wrong = _wrong_update(reply, first)
        if not wrong and "rates" in settings:
            frozen = {**settings, "rates": settings["rates"][:1] * len(settings["rates"])}
            if all(map(_close, got, self.torch.train(kind, weights, batches, frozen)[0])):
                return (
                    head + ": these are torch's losses with the first step's lr kept throughout; "
                    "nanoGPT's loop sets group['lr'] before every step, so AdamW.step must read "
                    "it every step"
                )
        if not wrong:
            schedule = ", each group's lr (nanoGPT's loop sets it every step)" * (kind == "GPT")
            return (
                head + ", though the first update agrees with torch's: look at what AdamW "
                f"keeps between steps (m and v, with their betas, and the step count t){schedule}"
                ", and at zero_grad (the grader calls optimizer.zero_grad() and "
                "model.zero_grad() on alternate steps; each must zero every parameter's gradient)"
            )
        if kind == "GPT":  # the only run with a schedule
            _, constant = self.torch.train(kind, weights, batches[:1], settings, scheduled=False)
            if all(_same_update(theirs[n], constant[n]) for n in wrong):
                return (
                    head + ": AdamW.step uses the lr it was made with, not each group's "
                    "group['lr'], which nanoGPT's loop sets before every step (its warmup and "
                    "cosine schedule)"
                )
        step_lr = settings.get("rates", [lr])[0]
        decays = {n: settings["weight_decay"] * (first[n].ndim >= 2) for n in wrong}
        # torch: p1 = p0 (1 - lr wd) - lr u; the update u then the decay: (p0 - lr u)(1 - lr wd)
        after = {
            n: (weights[n] * step_lr * d + first[n]) * (1 - step_lr * d) for n, d in decays.items()
        }
        if all(_same_update(theirs[n], after[n]) for n in wrong):
            return (
                head + ": weight decay comes after the Adam update; torch's AdamW shrinks p "
                "first (p *= 1 - lr * weight_decay), then subtracts the update"
            )
        if all(first[n].ndim < 2 for n in wrong):
            _, decay_all = self.torch.train(kind, weights, batches[:1], settings, decay_all=True)
            if all(_same_update(theirs[n], decay_all[n]) for n in wrong):
                return (
                    head + ": weight decay reaches the biases and layer norms' gains; nanoGPT's "
                    "configure_optimizers decays only the parameters of 2 or more dimensions "
                    "(its second group has weight_decay 0)"
                )
        return (
            head + f": after the first update {wrong[0]} differs from torch.optim.AdamW's: look "
            "at AdamW.step (p *= 1 - lr * weight_decay first; m and v, in float64; the bias "
            "corrections 1 - beta**t; eps added to sqrt(v_hat), after both corrections) and "
            "configure_optimizers' groups and lr"
        )


# ---------------------------------------------------------------------- the words
def losses_text(got: float, want: float) -> str:
    """ "X, torch's Y", with as many digits as tell them apart (6 at least)."""
    digits = next((d for d in range(6, 18) if f"{got:.{d}g}" != f"{want:.{d}g}"), 6)
    return f"{got:.{digits}g}, torch's {want:.{digits}g}"


def _logits_problem(kind: str, got: np.ndarray, want: np.ndarray) -> str:
    """What is wrong with the logits of a call without targets (the call sampling makes):
    every position's, or the last one's only (nanoGPT's, at inference), or ""."""
    if agree(got, want) or agree(got, want[:, -1:]):
        return ""
    if got.shape in (want.shape, want[:, -1:].shape):
        wanted = want if got.shape == want.shape else want[:, -1:]
        shifted = np.exp(wanted - wanted.max(axis=-1, keepdims=True))
        if agree(got, shifted / shifted.sum(axis=-1, keepdims=True)):
            return (
                f"{kind}(idx) without targets returns probabilities, not the logits: sampling "
                "divides the logits by a temperature before its softmax"
            )
        return (
            f"{kind}(idx) without targets returns other numbers than torch's logits, in their "
            f"shape {got.shape}: sampling reads them"
        )
    return (
        f"{kind}(idx) without targets returns an array of shape {got.shape}, not the logits "
        f"torch's gives, {want.shape} (or the last position's, {want[:, -1:].shape}): "
        "sampling reads them"
    )


def _names_problem(reply: dict[str, Any], shapes: dict[str, tuple[int, ...]]) -> str:
    """How the learner's parameters differ from torch's names and shapes, or "" when the
    reply is not the probe's list of them."""
    if "names" not in reply:
        return ""
    theirs = {n: tuple(s) for n, s in reply["names"]}
    missing = [n for n in shapes if n not in theirs]
    extra = [n for n in theirs if n not in shapes]
    problems = []
    if "lm_head.weight" in extra and "transformer.wte.weight" in missing:
        problems.append(
            "the token embedding is listed as lm_head.weight: tied, but the head was made "
            "first; make transformer first, then the head, as nanoGPT does"
        )
        extra.remove("lm_head.weight")
        missing.remove("transformer.wte.weight")
    elif "lm_head.weight" in extra:
        problems.append(
            "lm_head.weight is a parameter of its own: nanoGPT ties the head to the token "
            "embedding (self.lm_head.weight = self.transformer['wte'].weight)"
        )
        extra.remove("lm_head.weight")
    if missing:
        problems.append(f"missing {', '.join(missing[:4])}")
    if extra:
        problems.append(f"not in torch's model: {', '.join(extra[:4])}")
    shaped = [n for n in shapes if n in theirs and theirs[n] != shapes[n]]
    problems += [f"{n} has shape {theirs[n]}, torch's {shapes[n]}" for n in shaped[:2]]
    return "named_parameters() differs from torch's: " + "; ".join(problems)


def _initial_problem(
    cls: str,
    laws: dict[str, tuple[str, float]],
    shapes: dict[str, tuple[int, ...]],
    stats: dict[str, list[float]],
) -> tuple[str, str] | None:
    """The first parameter whose initial weights (the probe's ``_stats``: mean, std, least,
    largest, kurtosis, first two values) cannot come from the author's law, and what they
    show; None when every one can. A normal's or uniform's mean and standard deviation must
    lie within 6 standard errors of the law's (wrong by chance about once in 10^8
    parameters; np.random is seeded, so a given init is judged the same each run), and its
    kurtosis too (3 for a normal, 1.8 for a uniform; 1,000 values or more); a uniform's
    values inside its bounds, the least and largest near them; a constant exact; and no
    two parameters may start with the same two values (drawn alike, not each its own)."""
    author, seen = AUTHOR[cls], {}
    for name, (law, scale) in laws.items():
        n, (mean, std, low, high, kurtosis, *start) = math.prod(shapes[name]), stats[name]
        if law == "constant":
            if not low == high == scale:
                return name, f"{name} is not all {scale:g}, as {author}'s starts it"
            continue
        if tuple(start) in seen:
            return name, (
                f"{name} starts with the same values as {seen[tuple(start)]}: each parameter "
                "is drawn on its own (one generator, not one seeded afresh for each)"
            )
        seen[tuple(start)] = name
        sigma = scale if law == "normal" else scale / math.sqrt(3.0)
        fits = abs(mean) <= 6 * sigma / math.sqrt(n)
        fits = fits and abs(std - sigma) <= 6 * sigma / math.sqrt(2 * n)
        peaked = 3.0 if law == "normal" else 1.8
        shape = n < 1000 or abs(kurtosis - peaked) <= 6 * math.sqrt(24 / n)
        if law == "uniform":
            near = scale * (1 - 20 / n) if n >= 40 else 0.0  # each missed with odds e^-20
            if not (fits and shape and -scale <= low <= -near and near <= high <= scale):
                return name, (
                    f"{name} has mean {mean:.3g}, std {std:.3g} and values from {low:.3g} to "
                    f"{high:.3g}; torch's U(-{scale:.3g}, {scale:.3g}) has 0 and {sigma:.3g}"
                )
        elif not (fits and shape):
            return name, (
                f"{name} has mean {mean:.3g}, std {std:.3g} and kurtosis {kurtosis:.3g}; "
                f"{author}'s N(0, {scale:.3g}) has 0, {scale:.3g} and 3"
            )
    return None


#: Where a model's own initial weights come from, by the parameter found wrong.
_INIT_LOOK = {
    "MLP": lambda name: ["Embedding.__init__" if name.startswith("wte") else "Linear.__init__"],
    "GPT": lambda name: ["LayerNorm.__init__" if ".ln_" in name else "GPT.__init__"],
}


def _wrong_grads(reply: dict[str, Any], grads: dict[str, np.ndarray]) -> list[str]:
    """The parameters (by name, in torch's order) whose gradient differs from torch's."""
    return [n for n in grads if not agree(array_of(reply["grads"][n]), grads[n])]


def _wrong_update(reply: dict[str, Any], first: dict[str, np.ndarray]) -> list[str]:
    """The parameters whose values after the first step are not torch's to float64 rounding:
    both sides float64, so a formula that differs (eps placed otherwise, m and v in float32)
    shows here even when it moves no loss by 1e-6."""
    theirs = {n: array_of(a) for n, a in reply["first"].items()}
    return [n for n in first if n not in theirs or not _same_update(theirs[n], first[n])]


def _same_update(got: np.ndarray, want: np.ndarray) -> bool:
    """Parameters after one AdamW step equal to float64 rounding (1e-10 relative: a formula
    that differs, weight decay after the update, is further off, if under the 1e-6 a loss
    is held to)."""
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-10, atol=1e-12))


def _close(got: float, want: float) -> bool:
    return bool(np.isclose(got, want, rtol=1e-6, atol=1e-9))


def _right_ones(wrong: list[str], names: list[str]) -> str:
    """How many gradients are wrong, and the right ones nearest the first wrong one (the
    module just before it in the model, then just after): "(3 wrong; ln_1 right)"."""
    right = [n for n in names if n not in wrong]
    if not right:
        return " (every parameter's is wrong)"
    first = names.index(wrong[0]) if wrong[0] in names else 0
    before = [n for n in right if names.index(n) < first][-1:]
    after = [n for n in right if names.index(n) > first][:1]
    shown = " and ".join(dict.fromkeys(n.rsplit(".", 1)[0] for n in before + after))
    return f" ({len(wrong)} wrong; {shown} right)"


def _forward_hint(kind: str = "") -> str:
    if kind == "MLP":
        return "the embeddings of the block_size previous ids, concatenated, tanh, then the logits"
    if kind == "CausalSelfAttention":
        return (
            "q, k, v from c_attn; n_head heads of n_embd // n_head each; q k^T / sqrt(head "
            "size), the causal mask, softmax, @ v; the heads merged; c_proj"
        )
    return "token + position embeddings; x + attn(ln_1(x)), x + mlp(ln_2(x)); ln_f; the tied head"


def op_problem(
    case: OpCase,
    out: np.ndarray,
    grads: dict[str, np.ndarray],
    want_out: np.ndarray,
    want: dict[str, np.ndarray],
) -> str:
    """The words for a wrong op, naming the classic bug its numbers show; "" when right."""
    x = next(iter(case.tensors.values()))
    if not agree(out, want_out):
        known = _forward_bug(case, out, x)
        if known:
            return known
        got, torch = array_text(out), array_text(want_out)
        return f"the forward differs from torch's: out is {got}, torch's {torch}"
    wrong = [n for n in want if not agree(grads[n], want[n])]
    if not wrong:
        pairs = [(out, want_out), *((grads[n], want[n]) for n in want)]
        if all(np.allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True) for a, b in pairs):
            return ""
        return (
            "forward and backward agree with torch's float64 to 1e-6 but not to 1e-10: float32 "
            "somewhere inside (astype(np.float32), a float32 array)? keep float64 throughout"
        )
    known = _backward_bug(case, grads, want_out, wrong)
    if known:
        return known
    name = wrong[0]
    got, torch = array_text(grads[name]), array_text(want[name])
    return f"the forward is right, but {name}.grad is {got}, torch's {torch}"


def _forward_bug(case: OpCase, out: np.ndarray, x: np.ndarray) -> str:
    if case.name == "softmax of large numbers" and not np.all(np.isfinite(out)):
        return (
            "softmax overflows on large inputs (exp(1000) is inf): subtract the max along dim "
            "before exp, as log_softmax does; the result is the same"
        )
    if case.name == "dropout in eval":
        return "dropout changed x with training=False: in eval mode it must return x unchanged"
    if case.name == "layer_norm":
        w, b = case.tensors["w"], case.tensors["b"]
        xc = x - x.mean(axis=-1, keepdims=True)
        var, n = (xc**2).mean(axis=-1, keepdims=True), x.shape[-1]
        for variance, words in (
            (
                var * n / (n - 1),
                "divides the variance by N - 1; layer norm's is the mean of the squares, 1/N",
            ),
            (var * n, "sums the squares: the variance is their mean (times 1/N)"),
        ):
            if agree(out, xc / np.sqrt(variance + 1e-5) * w + b):
                return f"the forward {words}"
    if case.name == "gelu":
        tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
        if agree(out, tanh):
            return (
                "this is GELU's tanh approximation; nanoGPT's nn.GELU() is x * Phi(x) "
                "exactly, with math.erf"
            )
    return ""


def _backward_bug(
    case: OpCase, grads: dict[str, np.ndarray], s: np.ndarray, wrong: list[str]
) -> str:
    g = case.weight
    if case.name == "embedding":
        assigned = np.zeros_like(case.tensors["w"])
        assigned[case.arrays["idx"]] = g
        if agree(grads["w"], assigned):
            return (
                "embedding's backward keeps one use of a row picked several times (row 1 is "
                "picked three times here): weight.grad[idx] = or += out.grad writes each row "
                "once; add every use with np.add.at(weight.grad, idx, out.grad)"
            )
    if case.name in ("softmax", "causal softmax") and agree(grads["x"], s * g):
        return (
            "softmax's backward misses the sum term: every output depends on every input along "
            "dim, so d/dx = s * (g - (g * s).sum(dim, keepdims=True)), not s * g"
        )
    if case.name == "softmax":
        other = s * (g - (g * s).sum(axis=-1, keepdims=True))
        if agree(grads["x"], other):
            return "softmax's backward sums over the last axis, not over dim (1 here)"
    if case.name == "causal softmax" and np.isnan(grads["x"]).any():
        return (
            "the gradient is nan where the mask put -inf: softmax's backward must use s, which is "
            "0 there, never x or exp(x) at -inf"
        )
    if case.name == "masked_fill" and agree(grads["x"], g):
        return (
            "masked_fill's backward lets the gradient through where mask is True: those outputs "
            "are the constant -inf, so x gets 0 there"
        )
    if case.name == "layer_norm" and "x" in wrong:
        x, w = case.tensors["x"], case.tensors["w"]
        std = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
        if agree(grads["x"], g * w / std):
            return (
                "layer norm's backward misses the mean terms: the mean and the variance depend on "
                "every x of the row, so dx = (g' - mean(g') - xhat * mean(g' * xhat)) / std with "
                "g' = g * weight (or compose it from mean, -, *, sqrt, whose rules add them)"
            )
    if case.name == "gelu":
        x = case.tensors["x"]
        phi = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
        if agree(grads["x"], g * phi):
            return (
                "GELU's backward misses x * phi(x): d/dx x Phi(x) = Phi(x) + x * phi(x), "
                "phi(x) = exp(-x**2 / 2) / sqrt(2 pi)"
            )
    if case.name == "cat":
        return (
            "cat's backward: each input gets its own slice of out.grad along dim, and x, "
            "given twice, both of its slices (+=)"
        )
    if case.name == "split":
        return "split's backward: each piece's gradient goes into its own slice of x.grad (+=)"
    if case.name == "heads' transpose":
        return (
            "engine.py's transpose or reshape backward is wrong with 4 axes: undo the order "
            "with np.argsort(order)"
        )
    if case.name == "attention scores":
        return (
            "engine.py's @ backward is wrong on 4-D batches: transpose the last two axes "
            "(np.swapaxes(x, -1, -2))"
        )
    return ""


def _dropout_problem(case: OpCase, out: np.ndarray, grad: np.ndarray) -> str:
    """What is wrong with two calls of dropout(x, 0.25, True) on a (2, 2, 20, 25) x, stacked
    (torch's masks are random: the row checks the rules instead), or ""."""
    x, p = case.tensors["x"], 0.25
    if out.shape != (2 * len(x), *x.shape[1:]):
        return f"dropout returned shape {(out.shape[0] // 2, *out.shape[1:])}, not x's {x.shape}"
    dropped = out == 0.0
    if not dropped.any():
        return (
            "dropout(x, 0.25, True) dropped nothing: in training each element is zeroed "
            "with probability p"
        )
    if not np.allclose(out[~dropped], np.concatenate([x, x])[~dropped] / (1 - p)):
        return "the kept elements must be scaled by 1 / (1 - p), so the expected output is x"
    first, second = dropped[: len(x)], dropped[len(x) :]
    # by chance: a whole row or column of 20 x 25 at most 1e-10, two equal masks 1e-300
    if first.all(axis=-2).any() or first.all(axis=-1).any():
        return (
            f"dropout zeroed a whole column or row of a {x.shape} x: each element needs a draw "
            "of its own (a mask of x's shape)"
        )
    if (first[0] == first[1]).all() or (first[:, 0] == first[:, 1]).all():
        return (
            f"dropout dropped the same elements in every (20, 25) matrix of a {x.shape} x: "
            "each element needs a draw of its own (a mask of x's shape)"
        )
    if (first == second).all():
        return "two calls of dropout dropped the same elements: each call needs a new mask"
    if not 0.15 <= dropped.mean() <= 0.35:
        return (
            f"dropout(x, 0.25, True) zeroed {dropped.mean():.0%} of 2,000 elements a call, not "
            "about 25%"
        )
    if not np.allclose(grad, (case.weight * ~dropped).reshape(2, *x.shape).sum(0) / (1 - p)):
        return "dropout's backward must use the forward's mask: out.grad * mask / (1 - p)"
    return ""


def _send(x: np.ndarray) -> dict[str, Any]:
    return {"shape": list(x.shape), "data": [float(v) for v in x.ravel()]}


def _ints(x: np.ndarray) -> dict[str, Any]:
    return {"shape": list(x.shape), "ints": [int(v) for v in x.ravel()]}


def _arrays(named: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    return {n: _send(a) for n, a in named.items()}


def _case_request(case: OpCase) -> dict[str, Any]:
    arrays = {
        n: {"shape": list(a.shape), "bools": a.ravel().tolist()} if a.dtype == bool else _ints(a)
        for n, a in case.arrays.items()
    }
    return {
        "code": case.code,
        "tensors": _arrays(case.tensors),
        "arrays": arrays,
        "weight": _send(case.weight),
    }
