"""Model names: an unlearned model is named ``{method}-{split}-f{lambda_f}-r{lambda_r}`` (e.g.
``npo_eo-forget10-f1-r0``); the split may be ``saga`` or a benchmark corpus (MUSE-News's ``news``).
Hyper-parameters shared by every unlearned model are the rule's params, so a change retrains them
all; a changed lambda is a new name and trains only that model."""

from __future__ import annotations

import re
from collections.abc import Container

from probunlearn import methods
from probunlearn.benchmarks import corpora
from probunlearn.data.evalsets import FORGET_SPLITS, RETAIN_OF


def unlearned_pattern() -> str:
    """Regular expression of an unlearned model's name (the rules' wildcard constraint)."""
    splits = "|".join([*FORGET_SPLITS, "saga", *corpora()])
    return rf"[a-z_]+-({splits})-f[0-9.e+-]+-r[0-9.e+-]+"


_NAME = re.compile(r"([a-z_]+)-([a-z0-9]+)-f([0-9.e+-]+)-r([0-9.e+-]+)")


def method_labels() -> dict[str, str]:
    """Unlearning method -> its label in the paper's tables (from the method registry)."""
    return methods.labels()


def unlearned_name(method: str, split: str, lambda_f: float = 0.0, lambda_r: float = 0.0) -> str:
    """The model name of a recipe; a method that is another one without its entropy terms (NPO+EO:
    NPO) is named as that one when both lambdas are 0."""
    plain = methods.method(method).plain
    if plain is not None and lambda_f == 0 and lambda_r == 0:
        method = plain
    return f"{method}-{split}-f{lambda_f:g}-r{lambda_r:g}"


def parse_unlearned(name: str) -> dict:
    """``{"method", "split", "lambda_f", "lambda_r"}`` of an unlearned model's name."""
    # a lambda may hold '-' itself (1e-05), so the name is matched, not split at '-'
    match = _NAME.fullmatch(name)
    if match is None:
        raise ValueError(
            f"model name {name!r}: expected {{method}}-{{split}}-f{{lambda_f}}-r{{lambda_r}}"
        )
    method, split, lf, lr = match.groups()
    return {"method": method, "split": split, "lambda_f": float(lf), "lambda_r": float(lr)}


def model_recipe(model: str, hub_models: Container[str] = ()) -> tuple[str, str]:
    """(method, split) of a model name, for the rows of metrics.csv."""
    if model in ("pretrained", "target"):
        return model, ""
    if model in hub_models:
        return "hub", ""
    if model.startswith("reference_"):
        return "reference", model.split("_", 1)[1]
    rec = parse_unlearned(model)
    return rec["method"], rec["split"]


def retain_split(model: str) -> str:
    """The retain set paired with an unlearned model's forget set (retain90 for the saga, a
    corpus's own retain corpus: MUSE's retain1 for ``news``)."""
    split = parse_unlearned(model)["split"]
    corpus = corpora().get(split)
    return corpus.retain if corpus is not None else RETAIN_OF.get(split, "retain90")
