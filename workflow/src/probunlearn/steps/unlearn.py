"""Rule unlearn: one unlearned model from the target and its recipe (method, split, lambdas)."""

from __future__ import annotations

import polars as pl

from probunlearn.unlearning import (
    unlearn,
)


def run_unlearn(
    target_dir: str,
    forget_path: str,
    retain_path: str,
    out_dir: str,
    history_path: str,
    *,
    recipe: dict,
    hparams: dict,
    seed: int,
    template: str,
    threads: int | None = None,
    refusals_path: str | None = None,
    device: str | None = "auto",
    mixed_precision: bool = False,
) -> dict:
    """Rule unlearn: read the forget and retain sets and call :func:`unlearn` for one recipe.

    ``recipe`` holds method, lambda_f and lambda_r (from the model name); ``hparams`` the
    optimiser and method settings shared by every unlearned model of a run. ``refusals_path``: the
    refusal answers of IDK and DPO (rule ``refusals``). ``device`` and ``mixed_precision``: the
    config's (:func:`probunlearn.dag.Design.run_params`).
    """
    forget, retain = pl.read_parquet(forget_path), pl.read_parquet(retain_path)
    if refusals_path is not None:
        hparams = {**hparams, "refusals": pl.read_parquet(refusals_path)["answer"].to_list()}
    return unlearn(
        target_dir,
        forget,
        retain,
        out_dir,
        method=recipe["method"],
        lambda_f=recipe["lambda_f"],
        lambda_r=recipe["lambda_r"],
        seed=seed,
        template=template,
        threads=threads,
        log_path=history_path,
        device=device,
        mixed_precision=mixed_precision,
        **hparams,
    )
