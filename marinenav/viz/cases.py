"""A table figure of per-case results of an encounter set (the Imazu cases): one row per
planner, one cell per case, coloured by what happened (docs/scenarios.md, "COLREGs checks")."""

from __future__ import annotations

import json
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from marinenav.files import save_figure

OUTCOMES = {  # what a cell shows: label, colour
    "kept": ("solved, COLREGs kept", "tab:green"),
    "broken": ("solved, a rule broken", "gold"),
    "failed": ("collision or time out", "tab:red"),
}


def case_outcomes(metrics: dict) -> list[str]:
    """Per episode of an evaluation with encounter checks (``metrics["encounters"]``):
    ``"kept"``, ``"broken"`` or ``"failed"``."""
    out = []
    for success, record in zip(metrics["episodes"]["success"], metrics["encounters"], strict=True):
        if not success:
            out.append("failed")
        else:
            out.append("kept" if record is None or record["colregs_kept"] else "broken")
    return out


def plot_case_table(metrics_files: list[Path], labels: list[str], out: Path) -> Path:
    """Draw the rows of ``metrics_files`` (evaluation JSON with encounter checks, e.g. written
    by ``python -m marinenav.evaluate ... --scenario imazu --out FILE``) labelled ``labels``;
    write the PNG to ``out``."""
    rows = [case_outcomes(json.loads(Path(path).read_text())) for path in metrics_files]
    cases = max(len(row) for row in rows)
    figure = Figure(figsize=(1.2 + 0.42 * cases, 0.9 + 0.42 * len(rows)))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for i, row in enumerate(rows):
        for k, outcome in enumerate(row):
            y = len(rows) - 1 - i  # the first file on top
            ax.add_patch(Rectangle((k + 0.05, y + 0.05), 0.9, 0.9, color=OUTCOMES[outcome][1]))
    ax.set_xlim(0, cases)
    ax.set_ylim(0, len(rows))
    ax.set_xticks([k + 0.5 for k in range(cases)], [str(k + 1) for k in range(cases)])
    ax.set_yticks([len(rows) - 0.5 - i for i in range(len(rows))], labels)
    ax.set_xlabel("Imazu case")
    ax.set_aspect("equal")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)
    legend = [Patch(color=colour, label=label) for label, colour in OUTCOMES.values()]
    # below the case numbers and the axis label: about 1.7 rows of cells under the axes
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -1.7 / len(rows)),
              ncol=3, frameon=False)  # fmt: skip
    return save_figure(figure, out, dpi=120, bbox_inches="tight")


__all__ = ["OUTCOMES", "case_outcomes", "plot_case_table"]
