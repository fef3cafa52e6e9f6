"""Null attack: ``members`` copies of the original prompt, ``copy0`` .. ``copy{m-1}``, rendered with
the model's own template (a chat template included). It attacks nothing: it is what a prompt attack
of ``m`` members is compared with ("before"), sampled and bounded exactly as the attacked family is
(per question the largest of the m members' bounds, each at alpha / m). Each copy is its own prompt
id (``<id>::copy<k>``), so each is sampled with its own seeds: the m copies are m independent draws
from the plain model's distribution, and the maximum over them is the part of a family's worst-member
bound that the design adds whatever the prompts are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.attacks import ATTACKS, Attack, Inputs, Result, Setting, Target
from probunlearn.attacks._prompts import evalset_of, family


def null_members(m: int) -> tuple[str, ...]:
    """The member names of a null family of ``m`` copies."""
    return tuple(f"copy{k}" for k in range(m))


class Null(Attack):
    name = "null"
    label = "Null (the original prompt, m times)"
    transforms = "prompts"
    positional = "members"
    settings = {
        "members": Setting(
            2, {"type": "integer", "minimum": 1}, "Copies of the original prompt per question."
        ),
    }

    def members(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        return null_members(settings["members"])

    def family_template(self, settings: Mapping[str, Any], target: Target) -> str:
        return target.template or _default_template()

    def apply(self, inputs: Inputs, settings: Mapping[str, Any], spec: str) -> Result:
        rows = evalset_of(inputs, spec)
        questions = rows["question"].to_list()
        members = [(m, questions) for m in self.members(settings)]
        fam = family(rows, members, self.family_template(settings, inputs.target), True)
        return Result(spec=spec, family=fam, info={"members": list(fam.members)})


def _default_template() -> str:
    from probunlearn.data.qa import DEFAULT_TEMPLATE

    return DEFAULT_TEMPLATE


ATTACKS.register(Null())
