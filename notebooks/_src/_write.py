"""Writes a generated notebook: the one place the `_src` generators share.

Each ``NN_name.py`` beside this file builds its notebook's cells and calls `write`; cell
ids are stable, so regenerating gives the same file (outputs are never stored).
"""

from pathlib import Path

import nbformat


def write(stem, cells, id_prefix):
    """Writes ``notebooks/<stem>.ipynb`` with `cells` (a Python 3 kernel); prints its path."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):  # stable ids: regenerating gives the same file
        cell["id"] = f"{id_prefix}-{i:02d}"
    path = Path(__file__).resolve().parent.parent / f"{stem}.ipynb"
    nbformat.write(nb, path)
    print(f"wrote {path}")
