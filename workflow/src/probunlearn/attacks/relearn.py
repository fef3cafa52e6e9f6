"""Relearning attack (Hu et al. 2024, benign relearning; Deeb and Roger 2024): ``steps`` optimizer
steps of fine-tuning at ``lr`` on ``examples`` question/answer pairs drawn from the forget set (or
from the retain or holdout split), then the model is judged on the attacked questions only: those
of the eval set that share neither an id nor a question with the pairs relearned on
(:attr:`Result.attacked_ids`).

The fine-tune is the one of DCUE's post-processing check
(:func:`probunlearn.steps.postfinetune.run_postfinetune`): :func:`probunlearn.training.train_lm`
(AdamW, cosine schedule with warmup, loss on the answer tokens), stopped after ``steps`` steps, on
the whole model (a LoRA adapter merged first). The pairs are drawn without replacement with numpy's
``default_rng(seed)``; the same seed, threads and CPU give the same model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import polars as pl

from probunlearn.attacks import ATTACKS, Attack, Inputs, Result, Setting
from probunlearn.attacks._shared import working_copy

SOURCES = ("forget", "retain", "holdout")


def choose_examples(n_rows: int, examples: int, seed: int) -> list[int]:
    """Row positions of the ``examples`` pairs relearned on (sorted), drawn without replacement."""
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(n_rows, size=examples, replace=False))


def held_out_ids(
    evalset: pl.DataFrame, relearned_ids: Iterable[str], relearned_questions: Iterable[str]
) -> list[str]:
    """The ids of the eval rows a relearned model is judged on: those that share neither an id nor
    a question with the pairs relearned on, in eval-set order."""
    ids, questions = set(relearned_ids), set(relearned_questions)
    return [
        i
        for i, q in zip(evalset["id"].to_list(), evalset["question"].to_list(), strict=True)
        if i not in ids and q not in questions
    ]


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
    }

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
        picked = rows[choose_examples(rows.height, k, settings["seed"])]
        attacked = held_out_ids(evalset, picked["id"].to_list(), picked["question"].to_list())
        if not attacked:
            raise ValueError(
                f"model {name!r}: attack {spec!r} relearns on {k} pairs of the {source} set, which "
                f"leaves none of the eval set's {evalset.height} questions to attack; lower examples"
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
        info = {
            "source": source,
            "relearned_ids": picked["id"].to_list(),
            "relearned_questions": picked["question"].to_list(),
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
