"""The paper's figures and tables under one name (they live in :mod:`probunlearn.figures`)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from probunlearn.figures.leakage import (
    fig3_histograms,
    fig3a_binary_leakage,
    fig3d_general_leakage,
    fig3ef_convergence,
    fig6_alignment,
)
from probunlearn.figures.sequential import fig_sequential
from probunlearn.figures.style import (
    METHOD_COLORS,
    METHOD_ORDER,
    save_figure,
    save_table,
    split_label,
)
from probunlearn.figures.sweeps import (
    fig4a_std_vs_lambda,
    fig4b_std_vs_temperature,
    fig5a_diversity,
    fig5b_confidence,
    fig5c_ed_vs_utility,
)
from probunlearn.figures.tables import table1, table2

__all__ = [
    "METHOD_COLORS",
    "METHOD_ORDER",
    "fig3_histograms",
    "fig3a_binary_leakage",
    "fig3d_general_leakage",
    "fig3ef_convergence",
    "fig4a_std_vs_lambda",
    "fig4b_std_vs_temperature",
    "fig5a_diversity",
    "fig5b_confidence",
    "fig5c_ed_vs_utility",
    "fig6_alignment",
    "fig_sequential",
    "plt",
    "save_figure",
    "save_table",
    "split_label",
    "table1",
    "table2",
]
