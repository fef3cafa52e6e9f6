"""Rules attack and attack_prompts (experiment ``attacks``): an attacked model from a model and a
model attack (quantization, relearning), or a prompt attack's family of an eval set
(:mod:`probunlearn.attacks`). Torch is imported by :func:`run_attack` only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from probunlearn.attacks import ATTACKS, Inputs, Target, apply_attack, parse_spec
from probunlearn.data.rows import read_rows
from probunlearn.storage.atomic import write_json, write_parquet


def _json_ready(value: Any) -> Any:
    """``value`` with tuples as lists and non-JSON leaves as text (an attack's ``info``)."""
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def run_attack(
    model_dir: str,
    out_dir: str,
    info_path: str,
    *,
    spec: str,
    model_name: str,
    template: str | None = None,
    adapter: bool = False,
    data: Mapping[str, str] | None = None,
    threads: int | None = None,
    device: str | None = "auto",
    revision: str | None = None,
    base: str | None = None,
    attack_revision: int = 0,
) -> dict[str, Any]:
    """Rule attack: load the model at ``model_dir`` (float32), apply the model attack ``spec``
    (:func:`probunlearn.attacks.apply_attack`), save the attacked model to ``out_dir`` and what
    was done (the spec, its notes, the pairs relearned on) to ``info_path`` as JSON.

    ``data``: the rows an attack reads by name (forget, retain, holdout) -> eval-set file;
    ``template``: the model's prompt template; ``adapter``: whether the model is a LoRA adapter
    (its merged weights are attacked, and the notes say so); ``revision``, ``base``: a hub model's
    revision, an adapter's base (``probunlearn evaluate``'s checkpoints); ``attack_revision``: the
    attack's :attr:`~probunlearn.attacks.Attack.revision` (a rerun trigger only). Returns the info
    written."""
    from probunlearn import models

    s = parse_spec(spec)
    if ATTACKS.get(s.kind).transforms != "model":
        raise ValueError(f"attack {s.canonical!r} changes prompts, not the model: not rule attack")
    rows = {name: read_rows(path) for name, path in (data or {}).items()}
    target = Target(
        name=model_name,
        template=template,
        adapter=adapter,
        **{d: d in rows for d in ("forget", "retain", "holdout")},
    )
    models.set_threads(threads)
    tokenizer = models.load_tokenizer(model_dir, revision=revision, base=base)
    model = models.load_model(
        model_dir, revision=revision, dtype="float32", device=device, base=base
    )
    inputs = Inputs(target=target, model=model, tokenizer=tokenizer, data=rows, inplace=True)
    result = apply_attack(s, inputs)
    models.save_model(result.model.to("cpu"), tokenizer, out_dir)
    info = _json_ready({"model": model_name, "attack": result.spec, **result.info})
    for note in info.get("notes", []):
        print(f"note: {note}")
    write_json(info, info_path)
    return info


def run_attack_prompts(
    evalset_path: str,
    out_path: str,
    *,
    spec: str,
    name: str,
    template: str | None = None,
    retain_path: str | None = None,
    attack_revision: int = 0,
) -> pl.DataFrame:
    """Rule attack_prompts: the family of prompts the prompt attack ``spec`` makes of every question
    of an eval set, for models with ``template``, written as an eval set (one row per question and
    member: the eval set's columns, ``id`` = ``<id>::<member>``, ``base_id``, ``member``,
    ``prompt``). ``name``: the family's name (in messages); ``attack_revision``: a rerun trigger
    only (:attr:`~probunlearn.attacks.Attack.revision`)."""
    s = parse_spec(spec)
    if ATTACKS.get(s.kind).transforms != "prompts":
        raise ValueError(f"attack {s.canonical!r} changes the model, not prompts: rule attack")
    data = {"retain": read_rows(retain_path)} if retain_path is not None else {}
    target = Target(name=name, template=template, retain="retain" in data)
    result = apply_attack(s, Inputs(target=target, evalset=read_rows(evalset_path), data=data))
    assert result.family is not None
    write_parquet(result.family.rows, out_path)
    return result.family.rows
