"""Rule attack: an attacked model from a model and a model attack (quantization, relearning)."""

from probunlearn.steps.attack import run_attack
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
data = {k: sm.input.get(k) for k in ("forget", "retain", "holdout") if sm.input.get(k)}
with log_to(sm.log[0]):
    run_attack(
        model_dir=sm.input.model,
        out_dir=sm.output.model,
        info_path=sm.output.info,
        data=data,
        **sm.params.attack,
    )
