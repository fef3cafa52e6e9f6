"""Paraphrase attack: each question asked as written and as its paraphrase (TOFU's
``paraphrased_question``; the synthetic world has one too). The family of a question is
``original`` (unless ``original=false``) and ``paraphrase``; the model's own template renders both
(a chat template included)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.attacks import ATTACKS, Attack, Inputs, Result, Target
from probunlearn.attacks._prompts import ORIGINAL, ORIGINAL_SETTING, evalset_of, family


class Paraphrase(Attack):
    name = "paraphrase"
    label = "Paraphrased question"
    transforms = "prompts"
    settings = {"original": ORIGINAL_SETTING}

    def members(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        return (ORIGINAL,) * bool(settings["original"]) + ("paraphrase",)

    def family_template(self, settings: Mapping[str, Any], target: Target) -> str:
        return target.template or _default_template()

    def apply(self, inputs: Inputs, settings: Mapping[str, Any], spec: str) -> Result:
        rows = evalset_of(inputs, spec)
        name = inputs.target.name
        if "paraphrased_question" not in rows.columns:
            raise ValueError(
                f"model {name!r}: attack {spec!r} needs the eval set's column "
                "'paraphrased_question', which it does not have"
            )
        paraphrases = rows["paraphrased_question"].to_list()
        for rid, p in zip(rows["id"].to_list(), paraphrases, strict=True):
            if p is None or not p.strip():
                raise ValueError(
                    f"model {name!r}: attack {spec!r}: row {rid!r} has no paraphrased_question"
                )
        members = [(ORIGINAL, rows["question"].to_list())] if settings["original"] else []
        members.append(("paraphrase", paraphrases))
        template = self.family_template(settings, inputs.target)
        fam = family(rows, members, template, settings["original"])
        return Result(spec=spec, family=fam, info={"members": list(fam.members)})


def _default_template() -> str:
    from probunlearn.data.qa import DEFAULT_TEMPLATE

    return DEFAULT_TEMPLATE


ATTACKS.register(Paraphrase())
