"""Figures as PNG files (the session's plots/, a benchmark's picture): a matplotlib figure on
the non-interactive backend, written atomically so a reader never sees half a picture.
matplotlib is imported when the first figure is made.
"""

from __future__ import annotations

import io
from pathlib import Path

from gamegym.data.fileio import atomic_write_bytes

__all__ = ["new_figure", "save_figure"]


def new_figure(size: tuple = (6, 4), rows: int = 1):
    """A matplotlib figure and its axis (`rows` > 1: axes, one under the other, sharing x) on
    the non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(rows, 1, figsize=size, dpi=80, sharex=rows > 1)


def save_figure(figure, path: Path) -> Path:
    """Write a figure as PNG atomically (readers never see half a picture) and close it."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format="png")
    finally:
        plt.close(figure)
    atomic_write_bytes(path, buffer.getvalue())
    return path
