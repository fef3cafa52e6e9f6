"""Figures 3-6 and Tables 1-2 of the paper, drawn from plain inputs (polars frames, numpy arrays).

Every figure function writes ``<out_stem>.png`` (150 dpi) and ``<out_stem>.pdf`` and the numbers
behind it as ``<table_stem>.csv``; the table functions write a CSV plus a Markdown and a PNG
rendering. Every file is written to a temporary name in its directory and renamed into place, and
the output is deterministic (no creation date, no software tag): same inputs, same bytes.

Inputs are validated up front: a missing column, an empty frame, a null/NaN or a value out of
range raises ValueError naming the column. Metrics come from :mod:`probunlearn.bounds`.

``style`` holds the palette, the writers and the checks; ``leakage`` Fig. 3 and 6, ``sweeps`` Fig. 4
and 5, ``tables`` Tables 1 and 2, ``sequential`` the sequential-sampling figure, ``membership`` the
membership-inference AUCs, ``attacks`` the leak bounds before and after each attack.
"""

import matplotlib

matplotlib.use("Agg")  # before any submodule imports pyplot: no display needed

from probunlearn.report.figures.leakage import (  # noqa: E402
    fig3_histograms,
    fig3a_binary_leakage,
    fig3d_general_leakage,
    fig3ef_convergence,
    fig6_alignment,
)
from probunlearn.report.figures.membership import fig_membership  # noqa: E402
from probunlearn.report.figures.sequential import fig_sequential  # noqa: E402
from probunlearn.report.figures.style import (  # noqa: E402
    METHOD_ORDER,
    method_colors,
    save_figure,
    save_table,
    split_label,
)
from probunlearn.report.figures.sweeps import (  # noqa: E402
    fig4a_std_vs_lambda,
    fig4b_std_vs_temperature,
    fig5a_diversity,
    fig5b_confidence,
    fig5c_ed_vs_utility,
)
from probunlearn.report.figures.tables import table1, table2  # noqa: E402

__all__ = [
    "METHOD_ORDER",
    "method_colors",
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
    "fig_membership",
    "fig_sequential",
    "save_figure",
    "save_table",
    "split_label",
    "table1",
    "table2",
]
