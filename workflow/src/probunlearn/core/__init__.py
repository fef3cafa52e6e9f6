"""The evaluation core: the rules that sample, score and bound, teacher-force, compute TOFU's metrics
and DCUE for a set of models and eval sets, shared by both workflows (``RULES``, included by the
paper's Snakefile and by the one ``probunlearn evaluate`` runs).

The including Snakefile names its planner ``CORE`` and a function ``core_env(kind)`` (the conda
environment file of a job that loads a model, ``"torch"``, or not, ``"analysis"``). The planner,
:class:`probunlearn.dag.Design` for the paper's runs and :class:`probunlearn.evaluate.plan.Plan`
for an evaluation, answers:

- ``paths`` (:class:`probunlearn.dag.Paths`) and ``threads`` (of a job that runs a model);
- ``model_pattern(rule)``: the model wildcard of a core rule;
- ``model_inputs(model)`` (the files a model is read from, when the run makes them) and
  ``load_params(model)`` (``model_path`` and, for a user's checkpoint, ``revision``, ``base`` and
  its content ``identity``);
- ``sampling_params(model, evalset, setting)`` and ``samples_paths(model, evalset, setting)``;
- ``judge_input(evalset)``, ``harm_judge(evalset)`` and ``score_params(model, evalset, setting)``;
- ``greedy_sets``, ``logprob_sets``, ``tofu_gen_sets`` and ``evaluate_params(model)`` (rule
  ``evaluate``: greedy answers, TOFU's greedy answers, per-token log-probabilities);
- ``tofu_inputs(model)``, ``tofu_metrics_params(model)``, ``dcue_inputs(model)``,
  ``dcue_params(model)``.

So a sample of a (model, eval set, setting) is seeded by (model, eval set, prompt, sample index) in
both workflows, and the same model, eval set and settings give the same samples, scores and bounds.
"""

from __future__ import annotations

import os

RULES = os.path.join(os.path.dirname(__file__), "rules.smk")
"""The core's Snakemake rules."""
SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")
"""The scripts of the core's rules, and of the rules both workflows declare with their own planner
(``attack``, ``attack_prompts``, ``attacks_table``, ``membership``, ``membership_table``): one
script each, whichever workflow runs it."""
