"""The scalar engine's checks: what they ask (cases.py), the expressions (programs.py), the
oracles (oracle.py), the op and network checks (ops.py, network.py), the run (grader.py,
which hands a tensor engine to ../tensor/) and the child's side (probe.py)."""
