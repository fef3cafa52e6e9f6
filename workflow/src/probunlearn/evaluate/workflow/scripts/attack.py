"""Rule attack: an attacked model from a user's checkpoint and a model attack (quant, relearn)."""

from probunlearn.steps.attack import run_attack
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
data = {k: sm.input.get(k) for k in ("forget", "retain", "holdout") if sm.input.get(k)}
attack = {k: v for k, v in sm.params.attack.items() if k != "identity"}  # identity: reruns only
with log_to(sm.log[0]):
    run_attack(out_dir=sm.output.model, info_path=sm.output.info, data=data, **attack)
