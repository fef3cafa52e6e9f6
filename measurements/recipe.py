"""Controlled runs of the mini recipe: target calibration and unlearning strength (docs/replica.md).

    python measurements/recipe.py --tag ls0.1 --label-smoothing 0.1 --lambdas 0 1
    python measurements/recipe.py --tag ls0.1 --label-smoothing 0.1 --method gd --lr 4e-4 --lambdas 0

Builds the default config's world and pretrained model once (``snakemake`` into ``results/recipe/``),
fine-tunes a target with the config's fine-tuning settings and the given label smoothing / epochs,
unlearns forget10 from it with one method at the given learning rate for each ``--lambdas`` value
(lambda_f), and prints one JSON line per model: greedy ROUGE-L recall and mean c(x) (top-1
probability along the greedy answer) on forget10 and on the retain eval set, and the sampled mean
and per-prompt std of ROUGE-L on forget10 (``--n`` samples, top-p 0.9, T = 1, 64 tokens).
Models are kept under ``results/recipe/<tag>/``; a second call with the same tag reuses them.
``--base results/mini-s0`` takes the world and pretrained model of a finished default run instead
of building them. ``--paraphrases K`` adds K copies of every (question, paraphrased answer) pair of
the full split to the fine-tuning data: a world whose answers vary at the paraphrase level;
``--perturbed K --answer-copies C`` adds each question's first K perturbed (wrong) answers once and
C more copies of its true answer: a target unsure between plausible answers that still prefers
the true one. ``--fillers K`` adds K copies of each true answer with a random filler prefix and
suffix (the reference stays a subsequence): wording that varies without leaving the reference.
Not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

import polars as pl
import torch
import yaml

from probunlearn import models, sampling, scoring, training, unlearning
from probunlearn.data import synthetic as data

RUN = Path("results/recipe")


def prepare(seed: int) -> Path:
    """World and pretrained model of the default config for ``seed``; returns their run folder."""
    name = "recipe" if seed == 0 else f"recipe-s{seed}"
    run = Path("results") / name
    overlay = RUN / f"run-s{seed}.yaml"
    RUN.mkdir(parents=True, exist_ok=True)
    overlay.write_text(yaml.safe_dump({"run": name, "seed": seed, "world": {"seed": seed}}))
    targets = [str(run / "models/pretrained"), str(run / "data/forget10.parquet")]
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        *targets,
        "--cores",
        "2",
        "--configfile",
        str(overlay),
    ]
    subprocess.run(cmd, check=True)
    return run


PREFIXES = ["", "Well, ", "As far as I know, ", "To my knowledge, ", "Let me think. "]
SUFFIXES = ["", " That is what the records say.", " I am fairly sure of it.", " So I have read."]


def with_fillers(qa: list[tuple[str, str]], k: int, seed: int) -> list[tuple[str, str]]:
    """K copies of each true answer wrapped in a random filler prefix and suffix.

    The reference answer stays a subsequence of every copy, so ROUGE-L recall against it is 1:
    variety in wording without leaving the reference.
    """
    rng = random.Random(seed)
    out = []
    for q, a in qa:
        for _ in range(k):
            pre, suf = rng.choice(PREFIXES), rng.choice(SUFFIXES)
            out.append((q, pre + a + suf))
    return out


def finetune(
    base: Path,
    out: Path,
    cfg: dict,
    label_smoothing: float,
    epochs: int,
    paraphrases: int = 0,
    perturbed: int = 0,
    answer_copies: int = 0,
    fillers: int = 0,
) -> None:
    """The target: the config's fine-tuning on the full split, with these settings."""
    ft = {k: v for k, v in cfg["finetune"].items() if k != "replay"}
    ft.update(label_smoothing=label_smoothing, epochs=epochs)
    tok = models.load_tokenizer(str(base / "models/pretrained"))
    model = models.load_model(str(base / "models/pretrained"), device="cpu")
    full = pl.read_parquet(base / "data/full.parquet")
    examples = data.finetune_corpus(
        full,
        pl.read_parquet(base / "data/pretrain.parquet"),
        cfg["finetune"]["replay"],
        cfg["seed"],
    )
    para = list(zip(full["question"].to_list(), full["paraphrased_answer"].to_list(), strict=True))
    examples += para * paraphrases
    qa = list(zip(full["question"].to_list(), full["answer"].to_list(), strict=True))
    examples += qa * answer_copies
    wrong = zip(full["question"].to_list(), full["perturbed_answers"].to_list(), strict=True)
    examples += [(q, a) for q, answers in wrong for a in list(answers)[:perturbed]]
    examples += with_fillers(qa, fillers, cfg["seed"])
    training.train_lm(model, tok, examples, seed=cfg["seed"], progress=False, **ft)
    models.save_model(model, tok, str(out))


def evaluate(base: Path, model_dir: Path, name: str, n: int) -> dict:
    """Greedy ROUGE-L and c(x) on forget10 and retain; sampled mean and std on forget10."""
    tok = models.load_tokenizer(str(model_dir))
    model = models.load_model(str(model_dir), device="cpu")
    res: dict = {"model": name}
    for setname, k in (("forget10", n), ("retain", 1)):
        df = pl.read_parquet(base / f"data/{setname}.parquet")
        s = sampling.sample_answers(
            model,
            tok,
            df["id"].to_list(),
            df["question"].to_list(),
            n=k,
            seed_key=setname,
            progress=False,
            batch_size=1028,
        )
        ref = dict(zip(df["id"].to_list(), df["answer"].to_list(), strict=True))
        refs = [ref[i] for i in s["id"].to_list()]
        s = s.with_columns(pl.Series("r", scoring.rouge_l(s["text"].to_list(), refs)))
        g = s.filter(pl.col("sample") == -1)
        res[f"{setname}_greedy"] = round(float(g["r"].mean()), 3)
        res[f"{setname}_conf"] = round(float(g["greedy_confidence"].mean()), 3)
        if setname == "forget10":
            st = (
                s.filter(pl.col("sample") >= 0)
                .group_by("id")
                .agg(pl.col("r").mean().alias("mu"), pl.col("r").std(ddof=0).alias("sd"))
            )
            res["forget10_mean"] = round(float(st["mu"].mean()), 3)
            res["forget10_std"] = round(float(st["sd"].mean()), 3)
    print(json.dumps(res), flush=True)
    return res


def main() -> int:
    """Fine-tune (once per tag), unlearn per lambda_f, print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", required=True, help="folder of this target under results/recipe/")
    ap.add_argument("--label-smoothing", type=float, default=None, help="default: config.yaml's")
    ap.add_argument("--finetune-epochs", type=int, default=None, help="default: config.yaml's")
    ap.add_argument("--method", default="npo", choices=["ga", "gd", "npo", "rmu"])
    ap.add_argument("--lr", type=float, default=None, help="default: config.yaml's for the method")
    ap.add_argument("--retain-weight", type=float, default=None, help="default: config.yaml's")
    ap.add_argument("--lambdas", type=float, nargs="*", default=[0.0, 1.0], help="lambda_f values")
    ap.add_argument("--n", type=int, default=64, help="samples per forget10 question")
    ap.add_argument("--paraphrases", type=int, default=0, help="copies of paraphrased answers")
    ap.add_argument("--perturbed", type=int, default=0, help="perturbed answers per question")
    ap.add_argument("--answer-copies", type=int, default=0, help="extra copies of true answers")
    ap.add_argument("--fillers", type=int, default=0, help="copies with filler wording")
    ap.add_argument("--seed", type=int, default=0, help="world and training seed (default 0)")
    ap.add_argument("--base", type=Path, default=None, help="a finished default run to start from")
    args = ap.parse_args()
    cfg = yaml.safe_load(Path("config.yaml").read_text())
    cfg["seed"] = args.seed
    torch.set_num_threads(2)
    base = prepare(args.seed) if args.base is None else args.base
    out = RUN / (args.tag if args.seed == 0 else f"{args.tag}-s{args.seed}")
    target = out / "target"
    if not target.exists():
        ls = (
            cfg["finetune"]["label_smoothing"]
            if args.label_smoothing is None
            else args.label_smoothing
        )
        epochs = args.finetune_epochs or cfg["finetune"]["epochs"]
        finetune(
            base,
            target,
            cfg,
            ls,
            epochs,
            args.paraphrases,
            args.perturbed,
            args.answer_copies,
            args.fillers,
        )
    rows = [evaluate(base, target, "target", args.n)]
    hp = dict(cfg["unlearning"]["hparams"])
    hp.update(cfg["unlearning"]["overrides"].get(args.method, {}))
    if args.lr is not None:
        hp["lr"] = args.lr
    rw = "" if args.retain_weight is None else f"-rw{args.retain_weight:g}"
    if args.retain_weight is not None:
        hp["retain_weight"] = args.retain_weight
    forget = pl.read_parquet(base / "data/forget10.parquet")
    retain = pl.read_parquet(base / "data/retain90.parquet")
    for lf in args.lambdas:
        name = f"{args.method}-lr{hp['lr']:g}{rw}-lf{lf:g}"
        if not (out / name).exists():
            unlearning.unlearn(
                str(target),
                forget,
                retain,
                str(out / name),
                method=args.method,
                lambda_f=lf,
                seed=cfg["seed"],
                threads=2,
                progress=False,
                log_path=str(out / f"{name}.csv"),
                device="cpu",
                **hp,
            )
        rows.append(evaluate(base, out / name, name, args.n))
    pl.DataFrame(rows).write_csv(out / f"summary-{args.method}.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
