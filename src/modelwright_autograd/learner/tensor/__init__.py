"""A tensor engine's checks: what they ask (cases.py), the expressions (programs.py), the
oracle (oracle.py), the plumbing (base.py), the op and network checks (ops.py, network.py),
the run (grader.py) and the child's side (probe.py, loaded by ../scalar/probe.py)."""
