"""Rule attack_prompts: a prompt attack's family of prompts for every question of an eval set."""

from probunlearn.steps.attack import run_attack_prompts
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_attack_prompts(
        evalset_path=sm.input.evalset,
        out_path=sm.output[0],
        name=sm.wildcards.evalset,
        retain_path=sm.input.get("retain"),
        **sm.params.attack,
    )
