"""``probunlearn evaluate``: the probabilistic verdict on anyone's checkpoints.

:mod:`~probunlearn.evaluate.plan` decides what a run makes from its config and checks every input
before any job; :mod:`~probunlearn.evaluate.userdata` reads the user's own questions;
:mod:`~probunlearn.evaluate.jobs` holds one function per rule of the packaged workflow
(``workflow/Snakefile`` here); :mod:`~probunlearn.evaluate.summary` and
:mod:`~probunlearn.evaluate.report` write the tables and HTML report, with the figures of
:mod:`~probunlearn.evaluate.figures`; :mod:`~probunlearn.evaluate.browser` shows the report in a
headless Chromium. The command line is :mod:`probunlearn.cli.evaluate`.
"""
