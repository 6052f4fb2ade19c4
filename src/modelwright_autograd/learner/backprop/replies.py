"""The shape of the backprop probe's replies (``child.well_formed`` hands the backprop
requests here): the learner's code shares the probe's process and could forge them."""

from __future__ import annotations

from typing import Any

from ..tensor.programs import is_sent_array


def _error(x: Any) -> bool:
    return isinstance(x, dict) and all(
        isinstance(x.get(k), str) for k in ("type", "message", "where")
    )


def well_formed_backprop(request: dict[str, Any], reply: dict[str, Any]) -> bool:
    """True when ``reply`` has the keys and types the probe's answer to ``request`` has."""
    do = request["do"]
    if do == "backprop_load":
        found = reply.get("found")
        return isinstance(found, list) and all(name in request["functions"] for name in found)
    if do == "backprop_forward":
        tensors = reply.get("tensors")
        return (
            isinstance(tensors, dict)
            and set(tensors) == set(request["names"])
            and all(is_sent_array(t) or _error(t.get("error")) for t in tensors.values())
        )
    if do == "backprop_step":
        return is_sent_array(reply.get("grad"))
    if do == "backprop_restore":
        return reply.get("restored") == len(request["grads"])
    if do == "backprop_train":
        losses = reply.get("losses")
        return (
            isinstance(losses, list)
            and len(losses) == len(request["batches"])
            and all(isinstance(x, float) for x in losses)
        )
    return False
