"""Figures 3-6 and Tables 1-2 of the paper, drawn from plain inputs (polars frames, numpy arrays).

Every figure function writes ``<out_stem>.png`` (150 dpi) and ``<out_stem>.pdf`` and the numbers
behind it as ``<table_stem>.csv``; the table functions write a CSV plus a Markdown and a PNG
rendering. Every file is written to a temporary name in its directory and renamed into place, and
the output is deterministic (no creation date, no software tag): same inputs, same bytes.

Inputs are validated up front: a missing column, an empty frame, a null/NaN or a value out of
range raises ValueError naming the column. Metrics come from :mod:`probunlearn.bounds`.

``style`` holds the palette, the writers and the checks; ``leakage`` Fig. 3 and 6, ``sweeps`` Fig. 4
and 5, ``tables`` Tables 1 and 2, ``sequential`` the sequential-sampling figure.
"""

import matplotlib

matplotlib.use("Agg")  # before any submodule imports pyplot: no display needed
