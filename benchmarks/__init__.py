"""Benchmarks for modelwright-autograd: ``python -m benchmarks`` from the repository root.

Each comparison runs inside one process, one after the other, so machine noise cancels:
the scalar engine against micrograd 0.1.0 on micrograd's own make_moons demo, graph scale
(a million-node chain and wide graphs), and the tensor engine against PyTorch and a
hand-written NumPy forward/backward. The runner prints Markdown and writes a JSON file.
``python -m benchmarks.modes`` measures forward against reverse mode on its own.
"""
