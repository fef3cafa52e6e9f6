"""RWKU's membership-inference statistics of one model (eval_mia.py, lines 10-57): per text the
log-probabilities of its tokens after the first, tokenised as RWKU tokenises it
(``tokenizer.encode``: the tokenizer's own special tokens, no EOS; here ``tokenizer(text)["input_ids"]``,
the same ids, which the project's native tokenizer gives too), and the mean and variance of
``log p(z | x<t)`` under the model's next-token distribution (the variance as E[(lp - mu)^2],
which equals eval_mia.py's E[lp^2] - mu^2 but does not lose its digits to cancellation in float32:
on a flat distribution that difference keeps about three); then
:func:`probunlearn.benchmarks.rwku.metrics.text_statistics`. Needs torch (imported on use)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from probunlearn.benchmarks.rwku.metrics import text_statistics

__all__ = ["mia_statistics"]


def mia_statistics(
    model: Any,
    tokenizer: Any,
    rows: pl.DataFrame,
    *,
    batch_size: int = 8,
    max_length: int | None = None,
) -> pl.DataFrame:
    """One row per MIA text of ``rows`` (RWKU's MIA rows: id, answer = the text, group =
    forget_mia / retain_mia): id, set, then RWKU's statistics (loss in RWKU's sign, zlib,
    ``mink_<r>``, ``mink++_<r>``). ``max_length``: truncate longer texts (None: the model's
    context length when it has one; RWKU truncates nothing). Texts are scored in batches of
    ``batch_size``, right-padded (the padding never enters a statistic)."""
    import torch

    texts = rows["answer"].to_list()
    if not texts:
        raise ValueError("no RWKU MIA texts to score")
    limit = max_length or getattr(model.config, "max_position_embeddings", None)
    enc = [list(tokenizer(t, add_special_tokens=True)["input_ids"]) for t in texts]
    if limit:
        enc = [e[: int(limit)] for e in enc]
    short = [i for i, e in enumerate(enc) if len(e) < 2]
    if short:
        raise ValueError(f"RWKU MIA text {rows['id'][short[0]]!r} has fewer than 2 tokens")
    device = next(model.parameters()).device
    order = sorted(range(len(enc)), key=lambda i: -len(enc[i]))  # similar lengths per batch
    stats: list[dict[str, float] | None] = [None] * len(enc)
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            width = max(len(enc[i]) for i in idx)
            ids = torch.zeros((len(idx), width), dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(enc[i])] = torch.tensor(enc[i])
                mask[r, : len(enc[i])] = 1
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            logp = torch.log_softmax(logits.float(), dim=-1)
            for r, i in enumerate(idx):
                n = len(enc[i])
                lp_all = logp[r, : n - 1]  # predictions of tokens 1 .. n-1
                target = ids[r, 1:n].to(lp_all.device)
                lp = lp_all.gather(-1, target[:, None])[:, 0]
                probs = lp_all.exp()
                mu = (probs * lp_all).sum(-1)
                # E[(lp - mu)^2]: RWKU's E[lp^2] - mu^2 without its cancellation in float32
                var = (probs * (lp_all - mu[:, None]).square()).sum(-1)
                stats[i] = text_statistics(
                    lp.double().cpu().numpy(),
                    texts[i],
                    mu.double().cpu().numpy(),
                    np.maximum(var.double().cpu().numpy(), 0.0),
                )
    return pl.DataFrame(
        [
            {"id": rid, "set": g, **s}
            for rid, g, s in zip(rows["id"], rows["group"], stats, strict=True)
        ]
    )
