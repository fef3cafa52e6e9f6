"""Few-shot attack: ``k`` question/answer pairs of other rows before the question (MUSE's
knowledge-memorisation prompts put such pairs first). The pairs come from the eval set itself
(``source=evalset``) or from the retain split (``source=retain``); never the question's own row, nor
a row with the same question, and with ``exclude=subject`` (the default) no row about the question's
subject (:func:`probunlearn.attacks.subjects_of`: its author), whose answer could give the question's
away in the context; ``exclude=question`` keeps only the question itself out (the same-subject
variant, the threat model of papers that show other facts of the same person). ``draws`` different
draws per question, each drawn with numpy's ``default_rng`` seeded by (``seed``, draw, the question's
id), so a question's family depends on the question and the pool only (with ``source=retain``, not
on which other questions are attacked).

With a plain template each pair is rendered as the model was fine-tuned on it (its prompt, a space,
the answer), the pairs are separated by a blank line and the question's own prompt follows. With a
chat template the pairs are written as ``Question: ...\\nAnswer: ...`` blocks inside the one user
turn, before the question. The family of a question is ``original`` (unless ``original=false``) and
``shots0`` .. ``shots{draws-1}``; the ids of each member's pairs are in the family's ``shots``
column."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from probunlearn.attacks import (
    ATTACKS,
    EXCLUDE_SETTING,
    Attack,
    Inputs,
    Result,
    Setting,
    Target,
    subjects_of,
)
from probunlearn.attacks._prompts import ORIGINAL, ORIGINAL_SETTING, evalset_of, family, render

SOURCES = ("evalset", "retain")


def _rng(seed: int, draw: int, row_id: str) -> np.random.Generator:
    key = int.from_bytes(hashlib.blake2b(row_id.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng([seed, draw, key])


class FewShot(Attack):
    name = "fewshot"
    label = "Few-shot context"
    transforms = "prompts"
    positional = "k"
    settings = {
        "k": Setting(
            3, {"type": "integer", "minimum": 1}, "Question/answer pairs before the question."
        ),
        "draws": Setting(1, {"type": "integer", "minimum": 1}, "Different contexts per question."),
        "source": Setting("evalset", {"enum": list(SOURCES)}, "Where the pairs come from."),
        "seed": Setting(0, {"type": "integer", "minimum": 0}, "Seed of the draws."),
        "original": ORIGINAL_SETTING,
        "exclude": EXCLUDE_SETTING,
    }
    revision = 1  # exclude=subject became the default under the same spec (issue 50)

    def needs(self, settings: Mapping[str, Any]) -> frozenset[str]:
        return frozenset({"evalset"} | ({"retain"} if settings["source"] == "retain" else set()))

    def members(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        shots = tuple(f"shots{d}" for d in range(settings["draws"]))
        return (ORIGINAL,) * bool(settings["original"]) + shots

    def family_template(self, settings: Mapping[str, Any], target: Target) -> str:
        # a plain template renders every prompt in full; a chat template renders the one turn
        return "{question}" if target.plain_template() is not None else str(target.template)

    def apply(self, inputs: Inputs, settings: Mapping[str, Any], spec: str) -> Result:
        from probunlearn.data.qa import DEFAULT_TEMPLATE

        rows = evalset_of(inputs, spec)
        name = inputs.target.name
        pool = rows if settings["source"] == "evalset" else inputs.data.get("retain")
        if pool is None:
            raise ValueError(f"model {name!r}: attack {spec!r} needs the retain set's rows")
        plain = inputs.target.plain_template()
        shot_template = plain or DEFAULT_TEMPLATE
        pool_ids, pool_q = pool["id"].to_list(), pool["question"].to_list()
        shot_text = [
            render(shot_template, q) + " " + a.strip()
            for q, a in zip(pool_q, pool["answer"].to_list(), strict=True)
        ]
        k, draws = settings["k"], settings["draws"]
        ids, questions = rows["id"].to_list(), rows["question"].to_list()
        prompts: list[list[str]] = [[] for _ in range(draws)]
        shots: list[list[list[str]]] = [[] for _ in range(draws)]
        by_subject = settings["exclude"] == "subject"
        own_subjects = subjects_of(rows) if by_subject else [None] * rows.height
        pool_subjects = subjects_of(pool) if by_subject else [None] * pool.height
        for rid, q, subject in zip(ids, questions, own_subjects, strict=True):
            candidates = [
                j
                for j in range(pool.height)
                if pool_ids[j] != rid
                and pool_q[j] != q
                and not (by_subject and pool_subjects[j] == subject)
            ]
            if len(candidates) < k:
                other = "subject" if by_subject else "question"
                raise ValueError(
                    f"model {name!r}: attack {spec!r} puts k={k} pairs before each question, but "
                    f"the {settings['source']} set has {len(candidates)} question(s) of another "
                    f"{other} for row {rid!r} (exclude={settings['exclude']}; exclude=question "
                    "or source=retain may leave more)"
                )
            own = render(plain, q) if plain is not None else q
            for d in range(draws):
                chosen = [
                    candidates[i]
                    for i in _rng(settings["seed"], d, rid).choice(
                        len(candidates), size=k, replace=False
                    )
                ]
                context = "\n\n".join(shot_text[j] for j in chosen)
                prompts[d].append(context + "\n\n" + own)
                shots[d].append([pool_ids[j] for j in chosen])
        members: list[tuple[str, list[str]]] = []
        extra_shots: list[list[list[str]]] = []
        if settings["original"]:
            members.append(
                (ORIGINAL, [render(plain, q) if plain is not None else q for q in questions])
            )
            extra_shots.append([[] for _ in ids])
        for d in range(draws):
            members.append((f"shots{d}", prompts[d]))
            extra_shots.append(shots[d])
        template = self.family_template(settings, inputs.target)
        fam = family(rows, members, template, settings["original"], extra={"shots": extra_shots})
        info = {"members": list(fam.members), "exclude": settings["exclude"]}
        return Result(spec=spec, family=fam, info=info)


ATTACKS.register(FewShot())
