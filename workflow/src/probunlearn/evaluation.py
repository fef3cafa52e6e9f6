"""Greedy evaluation: one greedy answer per question, scored, as rows of metrics.csv."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import torch
from rouge_score import rouge_scorer

from probunlearn import models, qa
from probunlearn.metrics_io import write_metrics


@torch.inference_mode()
def greedy_answers(
    model,
    tokenizer,
    questions: Sequence[str],
    *,
    template: str = qa.DEFAULT_TEMPLATE,
    max_new_tokens: int = 64,
    batch_size: int = 64,
) -> list[str]:
    """Greedy (argmax) answers, batched with left padding."""
    device = next(model.parameters()).device
    out: list[str] = []
    for s in range(0, len(questions), batch_size):
        prompts = [qa.prompt_ids(tokenizer, q, template) for q in questions[s : s + batch_size]]
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), tokenizer.pad_token_id, dtype=torch.long)
        attn = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p)
            attn[i, width - len(p) :] = 1
        gen = model.generate(
            input_ids=ids.to(device),
            attention_mask=attn.to(device),
            do_sample=False,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        out += [t.strip() for t in tokenizer.batch_decode(gen[:, width:], skip_special_tokens=True)]
    return out


def rouge_recall(predictions: Sequence[str], references: Sequence[str]) -> list[float]:
    """ROUGE-L recall as TOFU computes it (rouge_score, stemming on)."""
    sc = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return [sc.score(r, p)["rougeL"].recall for p, r in zip(predictions, references, strict=True)]


def keyword_hits(texts: Sequence[str], keywords: Sequence[Sequence[str]]) -> list[int]:
    """1 where a text names any of its keywords (case-insensitive, on word boundaries)."""
    import re

    hits = []
    for t, kws in zip(texts, keywords, strict=True):
        pat = [rf"(?<!\w){re.escape(k)}(?!\w)" for k in kws if k]
        hits.append(int(bool(pat) and re.search("|".join(pat), t, flags=re.IGNORECASE) is not None))
    return hits


def run_greedy_eval(
    model_dir: str,
    evalset_paths: Sequence[str],
    out_csv: str,
    out_answers: str,
    *,
    model_name: str,
    method: str,
    split: str,
    evalsets: Sequence[str],
    template: str,
    max_new_tokens: int,
    batch_size: int = 64,
    threads: int | None = None,
) -> None:
    """Greedy answers of one model for each eval set → one answers parquet and metric rows."""
    models.set_threads(threads)
    tok = models.load_tokenizer(model_dir)
    model = models.load_model(model_dir, device="auto")
    base = {"model": model_name, "method": method, "split": split}
    frames, rows = [], []
    for name, path in zip(evalsets, evalset_paths, strict=True):
        df = pl.read_parquet(path)
        answers = greedy_answers(
            model,
            tok,
            df["question"].to_list(),
            template=template,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
        )
        rouge = rouge_recall(answers, df["answer"].to_list())
        leak = keyword_hits(answers, df["keywords"].to_list())
        frames.append(
            df.select("id", "question", "answer").with_columns(
                pl.lit(name).alias("evalset"),
                pl.Series("greedy", answers),
                pl.Series("rougeL_recall", rouge, dtype=pl.Float64),
                pl.Series("keyword_leak", leak, dtype=pl.Int64),
            )
        )
        rows.append(
            {
                **base,
                "evalset": name,
                "metric": "greedy_rougeL_recall",
                "value": float(sum(rouge) / len(rouge)),
            }
        )
        if any(len(k) for k in df["keywords"].to_list()):
            rows.append(
                {
                    **base,
                    "evalset": name,
                    "metric": "greedy_keyword_leak",
                    "value": float(sum(leak) / len(leak)),
                }
            )
    tmp = Path(out_answers).with_name(f".{Path(out_answers).name}.tmp")
    Path(out_answers).parent.mkdir(parents=True, exist_ok=True)
    pl.concat(frames).write_parquet(tmp, statistics=False)
    os.replace(tmp, out_answers)
    write_metrics(rows, out_csv)


def run_logprobs_sets(
    model_dir: str,
    evalset_paths: Sequence[str],
    out_paths: Sequence[str],
    *,
    template: str,
    dtype: str = "float32",
    device: str | None = "auto",
    threads: int | None = None,
    batch_size: int = 64,
) -> None:
    """Teacher-forced log-probabilities of one model on several eval sets (one parquet each)."""
    from probunlearn.rows import write_parquet_atomic
    from probunlearn.sampling import teacher_forced_logprobs

    models.set_threads(threads)
    tok = models.load_tokenizer(model_dir)
    model = models.load_model(model_dir, dtype=dtype, device=device)
    for src, dst in zip(evalset_paths, out_paths, strict=True):
        df = teacher_forced_logprobs(
            model, tok, pl.read_parquet(src), template=template, batch_size=batch_size
        )
        write_parquet_atomic(df, dst)
