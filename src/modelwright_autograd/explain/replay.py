"""What the page's views share: the ids of the elements the script looks up (``PREFIX``),
names isolated inside sentences (``iso``), the changes each step makes (``Changes``) and a
step in words (``sentence``)."""

from __future__ import annotations

from .trace import Step, fmt

PREFIX = "mw"  # the SVG ids the script looks up: mw-n<id>, mw-e<node>-<input position>
#: Labels from the trace are wrapped in these (Unicode's first-strong and pop isolates,
#: the plain-text form of ``unicode-bidi: isolate``) wherever they sit inside a sentence,
#: so a right-to-left override in a label cannot reorder the words around it.
FSI, PDI = "\u2068", "\u2069"


def iso(name: str) -> str:
    """``name`` between Unicode's isolates, to sit inside a sentence."""
    return f"{FSI}{name}{PDI}"


class Changes:
    """The page's state, slot by slot, and the changes each step makes to it. A change is
    ``[element, slot, text before, text after]``, the element and the slot given by their
    place in ``ids`` and ``slots`` (a number is shorter than a name repeated 80,000 times)."""

    def __init__(self) -> None:
        self.state: dict[tuple[str, str], str] = {}
        self.steps: list[list[list]] = []
        self.ids: dict[str, int] = {}
        self.slots: dict[str, int] = {}

    def data(self) -> dict:
        """The changes, as the page's script reads them."""
        return {"changes": self.steps, "ids": list(self.ids), "slots": list(self.slots)}

    def start(self, elem: str, slot: str, value: str) -> None:
        self.state[(elem, slot)] = value

    def next_step(self) -> None:
        self.steps.append([])

    def set(self, elem: str, slot: str, value: str) -> None:
        old = self.state.get((elem, slot), "")
        if old != value:
            elem_at = self.ids.setdefault(elem, len(self.ids))
            slot_at = self.slots.setdefault(slot, len(self.slots))
            self.steps[-1].append([elem_at, slot_at, old, value])
            self.state[(elem, slot)] = value


def sentence(s: Step) -> str:
    """One step in words (the ordered list and the status line)."""
    if s.op == "dot_relu" and not s.data > 0.0:
        return (
            f"Step {s.step}: {iso(s.node)} (dot_relu) has output 0: local derivative 0, "
            f"nothing reaches its {len(s.inputs)} inputs."
        )
    pushed = [f"{fmt(i.pushed)} to {iso(i.node)}" for i in s.inputs if i.pushed is not None]
    if len(pushed) > 6:  # a fused node: the panel lists every input
        pushed[4:] = [f"and {len(pushed) - 4} more"]
    pushes = ", ".join(pushed)
    return f"Step {s.step}: {iso(s.node)} ({s.op}) has grad {fmt(s.grad)}; " + (
        f"it pushes {pushes}." if pushes else "its inputs are constants."
    )
