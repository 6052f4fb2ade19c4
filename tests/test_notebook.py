"""notebooks/walkthrough.ipynb is stored without outputs and runs from top to bottom.

The notebook checks its own numbers with asserts (hand-derived gradients, gradcheck, the
accuracy it reaches), so running it is a test. The kernel is this interpreter's own
ipykernel, found without any installed kernel spec (``kernel_dirs=[]`` leaves only
ipykernel's built-in "python3"), exactly as in a fresh environment.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "walkthrough.ipynb"


def test_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cells"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert nb.metadata.kernelspec.name == "python3"


@pytest.mark.slow
def test_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # let the kernel use its inline backend
    nb = nbformat.read(NOTEBOOK, as_version=4)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails

    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "d/da = 6" in text  # the explain() narration
    assert "after 30 steps" in text
    mimes = {m for o in outputs if "data" in o for m in o["data"]}
    assert "image/png" in mimes  # the loss curve and decision boundary
    assert "image/svg+xml" in mimes  # the graph, drawn without Graphviz
    assert "text/html" in mimes  # the interactive page of the backward pass
    assert list(tmp_path.iterdir()) == []  # the notebook writes no files
