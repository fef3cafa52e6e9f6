"""Training of the mini run's models: tokenizer, pretraining and fine-tuning (nanoGPT-short loop)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import torch
from tqdm.auto import tqdm

from probunlearn.data import qa
from probunlearn.training import optim

Example = tuple[str | None, str]


def _cosine_factor(step: int, warmup: int, total: int, cycles: float) -> float:
    if step < warmup:
        return float(step) / float(max(1, warmup))
    progress = float(step - warmup) / float(max(1, total - warmup))
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(cycles) * 2.0 * progress)))


def cosine_schedule(optimizer: Any, warmup: int, total: int, cycles: float = 0.5) -> optim.Schedule:
    """Linear warmup over ``warmup`` steps, then cosine decay to 0 at ``total``: the factor of
    transformers' ``get_cosine_schedule_with_warmup``, with the same float operations (tested equal)."""
    return optim.Schedule(
        optimizer, partial(_cosine_factor, warmup=warmup, total=total, cycles=cycles)
    )


def constant_schedule(optimizer: Any, warmup: int) -> optim.Schedule:
    """Linear warmup over ``warmup`` steps, then the peak learning rate: the factor of transformers'
    ``get_constant_schedule_with_warmup`` (MUSE's ``lr_scheduler_type='constant'`` has no warmup)."""

    def factor(step: int) -> float:
        return float(step) / float(max(1.0, warmup)) if step < warmup else 1.0

    return optim.Schedule(optimizer, factor)


def model_device(model: Any) -> torch.device:
    """The device of a model's (first) parameter: where its batches must go."""
    return next(model.parameters()).device


def to_device(batch: Mapping[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """``batch`` with every tensor on ``device`` (the same tensors where they are there already, so
    nothing changes on the CPU)."""
    return {k: v.to(device) for k, v in batch.items()}


def autocast(device: torch.device, mixed_precision: bool) -> contextlib.AbstractContextManager:
    """bf16 mixed precision on ``device`` when ``mixed_precision`` (``torch.autocast``: matmuls in
    bfloat16, the weights, their gradients and the optimizer's states stay float32, the master
    weights); otherwise nothing (float32 throughout, the default)."""
    if not mixed_precision:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def encode_examples(
    tokenizer, examples: Sequence[Example], template: str, loss_on_prompt: bool, max_length: int
) -> list[tuple[list[int], list[int]]]:
    """(prompt, text) pairs → (input ids, labels); a None prompt means plain text."""
    out = []
    for prompt, text in examples:
        if prompt is None:
            ids = qa.prompt_ids(tokenizer, text, "{question}") + [tokenizer.eos_token_id]
            labels = [qa.IGNORE_INDEX] + ids[1:]
        else:
            p, a = qa.prompt_ids(tokenizer, prompt, template), qa.answer_ids(tokenizer, text)
            ids = p + a
            labels = (
                [qa.IGNORE_INDEX] + p[1:] if loss_on_prompt else [qa.IGNORE_INDEX] * len(p)
            ) + a
        out.append((ids[:max_length], labels[:max_length]))
    return out


def _collate(items: list[tuple[list[int], list[int]]], pad: int) -> dict[str, torch.Tensor]:
    width = max(len(i) for i, _ in items)
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    labels = torch.full((len(items), width), qa.IGNORE_INDEX, dtype=torch.long)
    attn = torch.zeros((len(items), width), dtype=torch.long)
    for k, (i, lab) in enumerate(items):
        ids[k, : len(i)] = torch.tensor(i)
        labels[k, : len(lab)] = torch.tensor(lab)
        attn[k, : len(i)] = 1
    return {"input_ids": ids, "attention_mask": attn, "labels": labels}


def _batches(n: int, batch_size: int, lengths: list[int], gen: torch.Generator) -> list[list[int]]:
    """Seeded shuffle, then sort by length inside windows of 8 batches to cut padding."""
    order = torch.randperm(n, generator=gen).tolist()
    window = batch_size * 8
    batches = []
    for s in range(0, n, window):
        chunk = sorted(order[s : s + window], key=lambda i: lengths[i])
        batches += [chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size)]
    perm = torch.randperm(len(batches), generator=gen).tolist()
    return [batches[i] for i in perm]


def _check_train_settings(
    desc: str,
    examples: Sequence[Example],
    epochs: int,
    lr: float,
    batch_size: int,
    label_smoothing: float,
    max_steps: int | None,
) -> None:
    """Raise a ValueError, prefixed with ``desc``, for settings :func:`train_lm` cannot train with."""
    if not examples:
        raise ValueError(f"{desc}: no training examples")
    if epochs < 1 or lr <= 0 or batch_size < 1:
        raise ValueError(f"{desc}: epochs, lr and batch_size must be positive")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"{desc}: label_smoothing must be in [0, 1), got {label_smoothing}")
    if max_steps is not None and (
        isinstance(max_steps, bool) or int(max_steps) != max_steps or max_steps < 1
    ):
        raise ValueError(f"{desc}: max_steps must be a positive integer or None, got {max_steps!r}")


def _train_step(
    model: Any,
    batch: dict[str, torch.Tensor],
    opt: Any,
    sched: Any,
    *,
    label_smoothing: float,
    mixed_precision: bool,
    dev: torch.device,
) -> float:
    """One optimizer step on ``batch`` (cross-entropy on its labels, gradients clipped to 1.0);
    returns the loss."""
    with autocast(dev, mixed_precision):
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        logits, labels = qa.shifted(out.logits, batch["labels"])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(),
            labels.reshape(-1),
            ignore_index=qa.IGNORE_INDEX,
            label_smoothing=label_smoothing,
        )
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss.item()


def train_lm(
    model,
    tokenizer,
    examples: Sequence[Example],
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    warmup_ratio: float = 0.1,
    weight_decay: float = 0.01,
    seed: int = 0,
    template: str = qa.DEFAULT_TEMPLATE,
    loss_on_prompt: bool = False,
    max_length: int = 256,
    label_smoothing: float = 0.0,
    progress: bool = True,
    desc: str = "train",
    max_steps: int | None = None,
    mixed_precision: bool = False,
) -> list[dict]:
    """AdamW with a cosine schedule and warmup; returns the mean loss of every epoch.

    ``max_steps``: stop after this many optimizer steps (the schedule then spans
    ``min(epochs * steps_per_epoch, max_steps)`` steps; the last epoch's loss is the mean over the
    steps it ran); None = every step of ``epochs`` epochs.

    ``label_smoothing``: the cross-entropy target puts ``1 - label_smoothing`` on the next token and
    spreads the rest uniformly over the vocabulary (torch's ``label_smoothing``).
    The model trains where its parameters are (every batch goes to their device);
    ``mixed_precision``: the forward pass under bf16 autocast (:func:`autocast`), the loss in float32.
    """
    _check_train_settings(desc, examples, epochs, lr, batch_size, label_smoothing, max_steps)
    enc = encode_examples(tokenizer, examples, template, loss_on_prompt, max_length)
    lengths = [len(i) for i, _ in enc]
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    steps_per_epoch = math.ceil(len(enc) / batch_size)
    total = epochs * steps_per_epoch
    if max_steps is not None:
        total = min(total, int(max_steps))
    opt = optim.decayed_adamw(model.parameters(), lr, weight_decay)
    sched = cosine_schedule(opt, math.ceil(warmup_ratio * total), total)
    dev = model_device(model)
    step_args = {"label_smoothing": label_smoothing, "mixed_precision": mixed_precision, "dev": dev}
    model.train()
    log = []
    bar = tqdm(total=total, desc=desc, disable=not progress, mininterval=2.0)
    step = 0
    for epoch in range(1, epochs + 1):
        if step >= total:
            break
        losses = []
        for idx in _batches(len(enc), batch_size, lengths, gen):
            if step >= total:
                break
            batch = to_device(_collate([enc[i] for i in idx], tokenizer.pad_token_id), dev)
            losses.append(_train_step(model, batch, opt, sched, **step_args))
            step += 1
            bar.update(1)
        log.append({"epoch": epoch, "loss": sum(losses) / len(losses)})
        bar.set_postfix(loss=f"{log[-1]['loss']:.3f}")
    bar.close()
    model.eval()
    return log
