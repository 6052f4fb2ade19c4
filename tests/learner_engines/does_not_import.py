"""An engine that imports a module that does not exist."""

from engine_helpers_that_do_not_exist import topological_sort  # noqa: F401


class Value:
    def __init__(self, data):
        self.data = float(data)
        self.grad = 0.0
