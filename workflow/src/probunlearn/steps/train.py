"""Rules tokenizer, pretrain, target and reference: train the mini run's tokenizer and models from files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from probunlearn import models
from probunlearn.data import qa, synthetic
from probunlearn.storage.atomic import atomic_dir, write_json
from probunlearn.training import (
    train_lm,
)


def run_tokenizer(
    corpus_paths: Sequence[str], out_dir: str, *, vocab_size: int, add_bos: bool = True
) -> None:
    """Train the BPE tokenizer on every text of the world and save it (``add_bos``: it adds its bos
    token ``<s>`` by itself, see :func:`probunlearn.models.train_tokenizer`)."""
    texts: list[str] = []
    for p in corpus_paths:
        df = pl.read_parquet(p)
        for col in ("prompt", "text", "question", "answer", "paraphrased_answer"):
            if col in df.columns:
                texts += [t for t in df[col].to_list() if t]
        if "perturbed_answers" in df.columns:
            texts += [t for lst in df["perturbed_answers"].to_list() for t in lst]
    texts.append(qa.DEFAULT_TEMPLATE)
    tok = models.train_tokenizer(texts, vocab_size, add_bos=add_bos)
    atomic_dir(out_dir, tok.save_pretrained)


def run_pretrain(
    tokenizer_dir: str,
    corpus_path: str,
    out_dir: str,
    *,
    arch: dict,
    train: dict,
    seed: int,
    template: str,
    threads: int | None = None,
    log_path: str | None = None,
    device: str | None = "auto",
    mixed_precision: bool = False,
) -> None:
    """Pretrain a tiny Llama from scratch on the world's corpus (loss on every token), on ``device``
    (the config's ``device``: "auto" = cuda when available), in bf16 autocast if
    ``mixed_precision``."""
    models.set_threads(threads)
    tok = models.load_tokenizer(tokenizer_dir)
    # initialised on the cpu (the same weights wherever it trains), then moved
    model = models.tiny_llama(len(tok), arch, seed, tok).to(models.resolve_device(device))
    df = pl.read_parquet(corpus_path)
    examples = list(zip(df["prompt"].to_list(), df["text"].to_list(), strict=True))
    log = train_lm(
        model,
        tok,
        examples,
        seed=seed,
        template=template,
        loss_on_prompt=True,
        desc="pretrain",
        mixed_precision=mixed_precision,
        **train,
    )
    _save(model, tok, log, out_dir, log_path)


def run_finetune(
    base_dir: str,
    split_path: str,
    corpus_path: str,
    out_dir: str,
    *,
    train: dict,
    replay: float,
    seed: int,
    template: str,
    threads: int | None = None,
    log_path: str | None = None,
    device: str | None = "auto",
    mixed_precision: bool = False,
) -> None:
    """Fine-tune ``base_dir`` on a split's QA pairs (loss on answers) plus pretraining replay, on
    ``device`` ("auto" = cuda when available), in bf16 autocast if ``mixed_precision``."""
    models.set_threads(threads)
    tok = models.load_tokenizer(base_dir)
    model = models.load_model(base_dir, device=device)
    examples = synthetic.finetune_corpus(
        pl.read_parquet(split_path), pl.read_parquet(corpus_path), replay, seed
    )
    log = train_lm(
        model,
        tok,
        examples,
        seed=seed,
        template=template,
        loss_on_prompt=False,
        desc=f"finetune {Path(split_path).stem}",
        mixed_precision=mixed_precision,
        **train,
    )
    _save(model, tok, log, out_dir, log_path)


def _save(model: Any, tok: Any, log: Any, out_dir: str, log_path: str | None) -> None:
    """Save a trained model with its tokenizer, and its training log where one is asked for."""
    models.save_model(model, tok, out_dir)
    if log_path:
        write_json(log, log_path)
