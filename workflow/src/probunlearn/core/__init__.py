"""The evaluation core: the rules that sample, score and bound, teacher-force, compute TOFU's metrics
and DCUE, attack models and prompts and measure membership inference, for a set of models and eval
sets, defined once and shared by both workflows (``RULES``, included by the paper's Snakefile and by
the one ``probunlearn evaluate`` runs).

The including Snakefile names its planner ``CORE``, a subclass of
:class:`probunlearn.core.planner.CorePlanner` (:class:`probunlearn.dag.Design` for the paper's runs,
:class:`probunlearn.evaluate.plan.Plan` for an evaluation), which supplies what differs between the
workflows as typed facts (the run's settings, one model, one eval set, the models of each rule, the
attacks and the membership inference) and builds every rule param from them
(:mod:`probunlearn.steps.specs`); and it defines ``core_env(kind)`` (the conda environment file of a
job that loads a model, ``"torch"``, or not, ``"analysis"``), ``report_table(name)`` and
``figure_outputs(name)`` (where the attack and membership tables and figures go).

So a sample of a (model, eval set, setting) is seeded by (model, eval set, prompt, sample index) in
both workflows, and the same model, eval set and settings give the same samples, scores and bounds.
"""

from __future__ import annotations

import os

RULES = os.path.join(os.path.dirname(__file__), "rules.smk")
"""The core's Snakemake rules."""
SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")
"""The scripts of the core's rules: one each, whichever workflow runs it."""
