"""The figures and the HTML report of an evaluation (one self-contained file, images inline)."""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from probunlearn.storage.atomic import atomic_write, write_csv, write_text


def _save(fig, path: str | os.PathLike) -> None:
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=Path(path).suffix[1:], dpi=120))


def plot_gen_curves(curves: pl.DataFrame, score: str, path: str | os.PathLike) -> None:
    """M_gen (average over prompts) against the threshold, one line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for (model,), c in curves.filter(pl.col("score") == score).group_by(
        "model", maintain_order=True
    ):
        ax.plot(c["threshold"], c["m_gen"], marker="o", ms=3, label=str(model))
    ax.set(
        xlabel=f"threshold t on {score}",
        ylabel="M_gen(t): bound on P(score > t)",
        ylim=(0, 1.02),
        title="General leakage bound, mean over prompts",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_greedy_vs_sampled(
    per_prompt: Mapping[str, pl.DataFrame], score: str, path: str | os.PathLike
) -> None:
    """Per prompt: the greedy answer's score against the mean sampled score, one panel per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(per_prompt)
    fig, axes = plt.subplots(1, k, figsize=(3.4 * k + 0.6, 3.4), squeeze=False)
    for ax, (model, t) in zip(axes[0], per_prompt.items(), strict=True):
        t = t.filter(pl.col("score") == score)
        ax.scatter(t["greedy"], t["mean"], s=12, alpha=0.7)
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        ax.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), title=model, xlabel=f"greedy {score}")
        ax.set_ylabel(f"mean sampled {score}")
        ax.grid(alpha=0.3)
    fig.suptitle("Greedy vs sampled answers, one point per prompt", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_worst_prompt(
    scores: Mapping[str, pl.DataFrame],
    per_prompt: Mapping[str, pl.DataFrame],
    score: str,
    path: str | os.PathLike,
) -> None:
    """For each model, the histogram of the sampled scores of its worst prompt (highest M_mu)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(scores)
    fig, axes = plt.subplots(1, k, figsize=(3.4 * k + 0.6, 3.2), squeeze=False)
    for ax, model in zip(axes[0], scores, strict=True):
        t = per_prompt[model].filter(pl.col("score") == score).sort("m_mu", descending=True)
        worst = t["id"][0]
        s = scores[model].filter((pl.col("id") == worst) & ~pl.col("greedy"))[score]
        g = scores[model].filter((pl.col("id") == worst) & pl.col("greedy"))[score]
        ax.hist(s.to_numpy(), bins=20, range=(0, 1), color="tab:blue", alpha=0.8)
        if g.len():
            ax.axvline(float(g[0]), color="tab:red", lw=1.5, label="greedy")
            ax.legend(fontsize=8)
        ax.set(title=f"{model}: prompt {worst}", xlabel=score, ylabel="samples")
    fig.suptitle("Sampled scores of the worst prompt (highest M_mu)", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _img(path: str | os.PathLike) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img src="data:image/png;base64,{data}" style="max-width:100%">'


def _table(df: pl.DataFrame, digits: int = 4) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.{digits}g}"
        return html.escape("" if v is None else str(v))

    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in df.iter_rows()
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def write_report(
    *,
    summary: pl.DataFrame,
    models: pl.DataFrame,
    figures: Mapping[str, str],
    config_text: str,
    alpha: float,
    out_html: str | os.PathLike,
    comparison: pl.DataFrame | None = None,
) -> None:
    """One HTML page: the summary, the models and their identities, the figures, the config, and
    with an original model the comparison of every evaluated model with it."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>probunlearn evaluation</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:"
        "collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
        "</style></head><body>",
        "<h1>probunlearn evaluation</h1>",
        f"<p>Bounds hold with probability at least 1 &minus; &alpha; = {1 - alpha:g} per prompt "
        "(M_bin: Clopper-Pearson; M_gen: DKW; M_mu, M_sigma: the DKW band). Values are averages "
        "over the prompts; worst_m_bin holds for all prompts at once.</p>",
        f"<p>Levels: each per-prompt bound holds at 1 &minus; &alpha; for its prompt (of m "
        "prompts' bounds about &alpha; m may fail, and their averages are no 1 &minus; &alpha; "
        "statements); set_m_mu holds at 1 &minus; &alpha; for the set; worst_m_bin for all prompts "
        "at once (Bonferroni). Each interval of the comparison with the original holds at "
        f"1 &minus; &alpha; = {1 - alpha:g} on its own; to read several as one family, reject only "
        "those that Holm's procedure keeps (probunlearn.bounds.holm on p_value).</p>",
        "<h2>Summary</h2>",
        _table(summary.drop("identity")),
        "<h2>Models</h2>",
        _table(models),
    ]
    if comparison is not None:
        parts += [
            "<h2>Compared with the original</h2>",
            "<p>Average over the prompts of model &minus; original (mean, std, ED of each score), "
            f"with a {1 - alpha:g} interval (paired over prompts, jackknife over samples); "
            "p_value: of &ldquo;below the original&rdquo;.</p>",
            _table(comparison),
        ]
    for title, path in figures.items():
        parts += [f"<h2>{html.escape(title)}</h2>", _img(path)]
    parts += ["<h2>Config</h2>", f"<pre>{html.escape(config_text)}</pre>", "</body></html>"]
    write_text("\n".join(parts), out_html)


def write_models(rows: list[dict], path: str | os.PathLike) -> pl.DataFrame:
    """The models table (name, role, source, revision, base, identity), written as CSV."""
    cols = ["name", "role", "source", "revision", "base", "identity"]
    df = pl.DataFrame(
        [{c: r.get(c) for c in cols} for r in rows], schema=dict.fromkeys(cols, pl.String)
    )
    write_csv(df, path)
    return df
