"""Writing a matplotlib figure into a run's or a report's folder (Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["save_figure"]


def save_figure(fig, path: Path) -> Path:
    """Lay ``fig`` out tightly, write it at 120 dpi to ``path`` (making its folder) and
    close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
