"""Relearning attack (Hu et al. 2024, benign relearning; Deeb and Roger 2024): ``steps`` optimizer
steps of fine-tuning at ``lr`` on ``examples`` question/answer pairs drawn from the forget set (or
from the retain or holdout split), then the model is judged on the attacked questions only
(:attr:`Result.attacked_ids`): with ``exclude=subject`` (the default) those of the eval set whose
subject (:func:`probunlearn.attacks.subjects_of`: the author) is none of the pairs' subjects, so that
a relearned fact cannot answer a judged question; with ``exclude=question`` (the threat model of
papers that relearn on some questions of an author and ask the others) those that share neither an
id nor a question with the pairs.

The pairs: with ``exclude=subject`` the subjects of the source split are shuffled with numpy's
``default_rng(seed)`` and taken in that order until they hold ``examples`` rows, and the pairs are
drawn among their rows (the mini world's forget10, 4 authors x 10 questions: 8 pairs of one author,
judged on the 30 questions of the other three); with ``exclude=question`` they are drawn among all
rows. Either way without replacement, with ``default_rng(seed)``: the same seed and data give the
same pairs, whichever model is relearned (the control: :attr:`Attack.controlled`).

The fine-tune is the one of DCUE's post-processing check
(:func:`probunlearn.steps.postfinetune.run_postfinetune`): :func:`probunlearn.training.train_lm`
(AdamW, cosine schedule with warmup, loss on the answer tokens), stopped after ``steps`` steps, on
the whole model (a LoRA adapter merged first); the same seed, threads and CPU give the same model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import polars as pl

from probunlearn.attacks import (
    ATTACKS,
    EXCLUDE_SETTING,
    Attack,
    Inputs,
    Result,
    Setting,
    subjects_of,
)
from probunlearn.attacks._shared import working_copy

SOURCES = ("forget", "retain", "holdout")


def choose_examples(n_rows: int, examples: int, seed: int) -> list[int]:
    """Row positions of the ``examples`` pairs relearned on (sorted), drawn without replacement."""
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(n_rows, size=examples, replace=False))


def choose_by_subject(subjects: list[str], examples: int, seed: int) -> list[int]:
    """Row positions of the ``examples`` pairs (sorted): the subjects (in first-seen order)
    shuffled with ``default_rng(seed)`` and taken until they hold ``examples`` rows, the pairs
    drawn without replacement among those rows."""
    rng = np.random.default_rng(seed)
    order = list(dict.fromkeys(subjects))
    taken: list[int] = []
    for k in rng.permutation(len(order)):
        taken += [i for i, s in enumerate(subjects) if s == order[int(k)]]
        if len(taken) >= examples:
            break
    taken.sort()
    return sorted(taken[int(i)] for i in rng.choice(len(taken), size=examples, replace=False))


def held_out_ids(
    evalset: pl.DataFrame,
    relearned_ids: Iterable[str],
    relearned_questions: Iterable[str],
    relearned_subjects: Iterable[str] | None = None,
) -> list[str]:
    """The ids of the eval rows a relearned model is judged on, in eval-set order: those that share
    neither an id nor a question with the pairs relearned on, nor (``relearned_subjects`` given:
    ``exclude=subject``) a subject (:func:`probunlearn.attacks.subjects_of`)."""
    ids, questions = set(relearned_ids), set(relearned_questions)
    subjects = set(relearned_subjects) if relearned_subjects is not None else set()
    own = subjects_of(evalset) if subjects else [None] * evalset.height
    return [
        i
        for i, q, s in zip(evalset["id"].to_list(), evalset["question"].to_list(), own, strict=True)
        if i not in ids and q not in questions and s not in subjects
    ]


def relearn_split(
    rows: pl.DataFrame, evalset: pl.DataFrame, settings: Mapping[str, Any]
) -> tuple[list[int], list[str], list[str]]:
    """(row positions of the pairs in ``rows``, their subjects in first-seen order, the ids of the
    ``evalset`` rows judged) for the settings ``examples``, ``seed`` and ``exclude``: what
    :meth:`Relearn.apply` relearns and judges, known before any job (the model is not read)."""
    by_subject = settings["exclude"] == "subject"
    subjects = subjects_of(rows)
    k, seed = settings["examples"], settings["seed"]
    positions = (
        choose_by_subject(subjects, k, seed)
        if by_subject
        else choose_examples(rows.height, k, seed)
    )
    picked = rows[positions]
    picked_subjects = list(dict.fromkeys(subjects[i] for i in positions))
    judged = held_out_ids(
        evalset,
        picked["id"].to_list(),
        picked["question"].to_list(),
        picked_subjects if by_subject else None,
    )
    return positions, picked_subjects, judged


class Relearn(Attack):
    name = "relearn"
    label = "Relearning"
    transforms = "model"
    positional = "steps"
    settings = {
        "steps": Setting(
            20, {"type": "integer", "minimum": 1}, "Optimizer steps of the fine-tune."
        ),
        "lr": Setting(1e-5, {"type": "number", "exclusiveMinimum": 0}, "Peak learning rate."),
        "examples": Setting(
            8, {"type": "integer", "minimum": 1}, "Question/answer pairs relearned on."
        ),
        "source": Setting(
            "forget", {"enum": list(SOURCES)}, "The split the relearned pairs are drawn from."
        ),
        "batch_size": Setting(4, {"type": "integer", "minimum": 1}, "Pairs per step."),
        "seed": Setting(
            0, {"type": "integer", "minimum": 0}, "Seed of the draw and the fine-tune."
        ),
        "exclude": EXCLUDE_SETTING,
    }
    controlled = True
    revision = 1  # exclude=subject became the default under the same spec (issue 50)

    def needs(self, settings: Mapping[str, Any]) -> frozenset[str]:
        return frozenset({"tokenizer", settings["source"]})

    def apply(self, inputs: Inputs, settings: Mapping[str, Any], spec: str) -> Result:
        from probunlearn.training import train_lm

        name, source = inputs.target.name, settings["source"]
        rows = inputs.data.get(source)
        if rows is None:
            raise ValueError(f"model {name!r}: attack {spec!r} needs the {source} set's rows")
        evalset = inputs.evalset if inputs.evalset is not None else inputs.data.get("forget")
        if evalset is None:
            raise ValueError(
                f"model {name!r}: attack {spec!r} needs the eval set it attacks (or the forget set)"
            )
        if inputs.tokenizer is None:
            raise ValueError(f"model {name!r}: attack {spec!r} needs the tokenizer")
        k = settings["examples"]
        if k > rows.height:
            raise ValueError(
                f"model {name!r}: attack {spec!r} relearns on {k} examples, but the {source} set "
                f"has {rows.height} rows"
            )
        by_subject = settings["exclude"] == "subject"
        positions, picked_subjects, attacked = relearn_split(rows, evalset, settings)
        picked = rows[positions]
        if not attacked:
            what = "subjects" if by_subject else "questions"
            raise ValueError(
                f"model {name!r}: attack {spec!r} relearns on {k} pairs of the {source} set, which "
                f"leaves none of the eval set's {evalset.height} questions to attack (exclude="
                f"{settings['exclude']}: the pairs' {what} are not judged); lower examples"
                + (", or exclude=question" if by_subject else "")
            )
        model, merged = working_copy(inputs, spec)
        model.requires_grad_(True)
        batch_size = min(settings["batch_size"], k)
        per_epoch = math.ceil(k / batch_size)
        log = train_lm(
            model,
            inputs.tokenizer,
            list(zip(picked["question"].to_list(), picked["answer"].to_list(), strict=True)),
            epochs=math.ceil(settings["steps"] / per_epoch),
            max_steps=settings["steps"],
            lr=settings["lr"],
            batch_size=batch_size,
            seed=settings["seed"],
            template=inputs.target.template or _default_template(),
            loss_on_prompt=False,
            progress=False,
            desc=f"attack {spec}",
        )
        model.eval()
        notes = []
        if by_subject and all(x.startswith("row:") for x in picked_subjects):
            notes.append(
                f"the {source} set's rows name no subject: exclude=subject keeps apart the "
                "questions relearned on only"
            )
        info = {
            "source": source,
            "exclude": settings["exclude"],
            "relearned_ids": picked["id"].to_list(),
            "relearned_questions": picked["question"].to_list(),
            "relearned_subjects": picked_subjects,
            "held_out_ids": attacked,
            "notes": notes,
            "steps": settings["steps"],
            "batch_size": batch_size,
            "train_log": log,
            "merged_adapter": merged,
        }
        return Result(spec=spec, model=model, attacked_ids=attacked, info=info)


def _default_template() -> str:
    from probunlearn.data.qa import DEFAULT_TEMPLATE

    return DEFAULT_TEMPLATE


ATTACKS.register(Relearn())
