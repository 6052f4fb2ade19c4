"""``python -m modelwright_autograd`` runs the command-line interface (see launch.py)."""

import sys

from .launch import main

sys.exit(main())
