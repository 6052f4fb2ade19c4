"""The shape of the child's replies to the LM requests: the learner's code shares the
probe's process and can forge a reply, so one that is not what the request asks for is a
failure, like a crash (``child.well_formed`` hands the ``lm_*`` requests here)."""

from __future__ import annotations

from typing import Any

from ..tensor.programs import is_sent_array


def _named(x: Any, names: Any) -> bool:
    """Arrays under exactly the names the request sent (its tensors, or its weights)."""
    return (
        isinstance(x, dict)
        and isinstance(names, dict)
        and set(x) == set(names)
        and all(is_sent_array(v) for v in x.values())
    )


def _mismatch(reply: dict[str, Any]) -> bool:
    names = reply.get("names")
    return isinstance(names, list) and all(
        isinstance(e, list)
        and len(e) == 2
        and isinstance(e[0], str)
        and isinstance(e[1], list)
        and all(type(n) is int for n in e[1])
        for e in names
    )


def well_formed_lm(request: dict[str, Any], reply: dict[str, Any]) -> bool:
    """True when ``reply`` has the keys and types the LM probe's answer to ``request`` has."""
    do = request["do"]
    if do != "lm_op" and "names" in reply:
        return _mismatch(reply)
    if do == "lm_op":
        tensors, changed = request["case"]["tensors"], reply.get("changed")
        return (
            is_sent_array(reply.get("out"))
            and _named(reply.get("grads"), tensors)
            and isinstance(changed, list)
            and all(isinstance(n, str) and n in tensors for n in changed)
        )
    weights = request.get("weights")
    if do == "lm_module":
        return (
            is_sent_array(reply.get("out"))
            and is_sent_array(reply.get("x_grad"))
            and _named(reply.get("grads"), weights)
        )
    if do == "lm_model":
        logits = not request.get("logits") or (
            is_sent_array(reply.get("logits")) and is_sent_array(reply.get("short_logits"))
        )
        return (
            isinstance(reply.get("loss"), float) and _named(reply.get("grads"), weights) and logits
        )
    if do == "lm_init":
        stats = reply.get("initial")
        return (
            isinstance(stats, dict)
            and set(stats) == set(request["shapes"])
            and all(
                isinstance(s, list) and len(s) == 7 and all(isinstance(v, float) for v in s)
                for s in stats.values()
            )
        )
    if do == "lm_train":
        losses, made_with, repeated = (reply.get(k) for k in ("losses", "made_with", "repeated"))
        return (
            isinstance(losses, list)
            and all(isinstance(v, float) for v in losses)
            and _named(reply.get("first"), weights)
            and isinstance(made_with, list)
            and all(v is None or isinstance(v, float) for v in made_with)
            and isinstance(repeated, list)
            and all(isinstance(n, str) and n in weights for n in repeated)
        )
    return False
