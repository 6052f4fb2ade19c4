"""A module that calls sys.exit() while it is imported (a script's last line left in)."""

import sys


class Value:
    def __init__(self, data):
        self.data = float(data)
        self.grad = 0.0


sys.exit(0)
