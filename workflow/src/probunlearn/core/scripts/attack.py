"""Rule attack: an attacked model from a model and a model attack (quantization, relearning); in the
paper's workflow the model is the rule's input, in ``probunlearn evaluate`` a user's checkpoint
named in the params (its ``identity`` only decides reruns)."""

from probunlearn.steps.attack import run_attack
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
data = {k: sm.input.get(k) for k in ("forget", "retain", "holdout") if sm.input.get(k)}
attack = {k: v for k, v in sm.params.attack.items() if k != "identity"}
attack.setdefault("model_dir", sm.input.get("model"))
with log_to(sm.log[0]):
    run_attack(out_dir=sm.output.model, info_path=sm.output.info, data=data, **attack)
