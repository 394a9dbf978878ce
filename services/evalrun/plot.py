"""The risk–coverage curve as a CSV table and a PNG plot (matplotlib, Agg backend, no display)."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["TABLE_COLUMNS", "write_risk_coverage_plot", "write_risk_coverage_table"]

TABLE_COLUMNS = ("threshold", "answered", "correct", "coverage", "risk")

Row = Mapping[str, float | int | None]


def write_risk_coverage_table(rows: Sequence[Row], path: Path | str) -> Path:
    """CSV with one row per threshold; an empty ``risk`` cell when nothing is answered."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(TABLE_COLUMNS)
        for r in rows:
            writer.writerow(["" if r[c] is None else r[c] for c in TABLE_COLUMNS])
    return p


def write_risk_coverage_plot(
    rows: Sequence[Row], path: Path | str, title: str = "Risk–coverage"
) -> Path:
    """PNG of risk (y) against coverage (x), each point labelled with its threshold.

    Points with no answered case (risk undefined) are left out; thresholds giving the same point
    share one label (``0.7–0.75``). The line is drawn in threshold order; it need not be monotone
    in risk — confidences are not calibrated probabilities.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # One point per distinct (coverage, risk), labelled with the thresholds that give it.
    pts: list[tuple[float, float, str]] = []
    last: tuple[float, float] | None = None
    first_t = prev_t = 0.0
    for r in rows:
        if r["risk"] is None:
            continue
        xy, t = (float(r["coverage"] or 0.0), float(r["risk"])), float(r["threshold"] or 0.0)
        if xy == last:
            prev_t = t
            pts[-1] = (*xy, f"{first_t:g}–{prev_t:g}")
            continue
        last, first_t, prev_t = xy, t, t
        pts.append((*xy, f"{t:g}"))
    fig, ax = plt.subplots(figsize=(6, 4.5), dpi=100)
    try:
        if pts:
            xs, ys, _ = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", linewidth=1.5)
            for x, y, text in pts:
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, max(0.1, max((y for _, y, _ in pts), default=0.0) * 1.1 + 0.02))
        ax.set_xlabel("coverage (answered / cases)")
        ax.set_ylabel("risk (wrong / answered)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(p, format="png")
    finally:
        plt.close(fig)
    return p
