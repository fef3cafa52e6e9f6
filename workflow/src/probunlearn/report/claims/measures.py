"""The claims' point tests: each reads the tables the figure rules write and returns the run's
numbers as :class:`~probunlearn.report.claims.spec.Measured` (None: the table lacks what the test
needs, and the claim is left out, not failed). One function per claim, named after it in
``declarations.CLAIMS``; signature ``(frames, lambda_f)``. Torch-free."""

from __future__ import annotations

import math
import re

import numpy as np
import polars as pl

from probunlearn.report.claims import thresholds as th
from probunlearn.report.claims.spec import Check, Frames, Measured, fmt

# ---- Table 1 ---------------------------------------------------------------------------------------


def table1_stats(df: pl.DataFrame) -> dict[str, dict[str, float]]:
    """{method: {"greedy", "ed", "mean", "std"}} from table1.csv (group, metric, one column per
    method)."""
    keys = {"ROUGE-L": "greedy", "ED Score": "ed", "Mean": "mean", "Std. Dev.": "std"}
    methods = [c for c in df.columns if c not in ("group", "metric")]
    out: dict[str, dict[str, float]] = {m: {} for m in methods}
    for r in df.iter_rows(named=True):
        k = keys.get(str(r["metric"]).strip())
        if k is None:
            continue
        for m in methods:
            if r[m] is not None:
                out[m][k] = float(r[m])
    return {m: v for m, v in out.items() if set(v) == set(keys.values())}


def t1_baselines(frames: Frames) -> list[str]:
    """Table 1's baselines present in the run's table1.csv."""
    t = table1_stats(frames["table1"])
    return [m for m in th.T1_BASELINES if m in t]


def t1_ed_above_greedy(frames: Frames, lambda_f: float) -> Measured | None:
    t, base = table1_stats(frames["table1"]), t1_baselines(frames)
    if not base:
        return None
    return Measured(
        tuple(Check(t[m]["ed"], ">", t[m]["greedy"], m) for m in base),
        "; ".join(f"{m} ED {fmt(t[m]['ed'])} vs {fmt(t[m]['greedy'])}" for m in base),
        {"baselines": ", ".join(base)},
    )


def t1_mean_methods(frames: Frames) -> list[str]:
    """The methods of Table 1 whose sampled mean is claimed to match greedy (GA, GD) in the run."""
    t = table1_stats(frames["table1"])
    return [m for m in ("GA", "GD") if m in t]


def t1_mean_matches_greedy(frames: Frames, lambda_f: float) -> Measured | None:
    t, ms = table1_stats(frames["table1"]), t1_mean_methods(frames)
    if not ms:
        return None
    gaps = {m: abs(t[m]["mean"] - t[m]["greedy"]) for m in ms}
    return Measured(
        tuple(Check(gaps[m], "<=", th.MEAN_MATCH_TOL, m) for m in ms),
        "; ".join(
            f"{m} mean {fmt(t[m]['mean'])} vs {fmt(t[m]['greedy'])} (gap {fmt(gaps[m])})"
            for m in ms
        ),
        {"methods": " and ".join(ms)},
    )


def _ours_npo(frames: Frames, key: str) -> tuple[float, float] | None:
    t = table1_stats(frames["table1"])
    if "Ours" not in t or "NPO" not in t:
        return None
    return t["Ours"][key], t["NPO"][key]


def t1_ours_std_below_npo(frames: Frames, lambda_f: float) -> Measured | None:
    v = _ours_npo(frames, "std")
    if v is None:
        return None
    ours, npo = v
    return Measured(
        (Check(ours, "<", th.OURS_STD_RATIO * npo),), f"Ours {fmt(ours)}, NPO {fmt(npo)}"
    )


def t1_ours_ed_below_npo(frames: Frames, lambda_f: float) -> Measured | None:
    v = _ours_npo(frames, "ed")
    if v is None:
        return None
    ours, npo = v
    return Measured((Check(ours, "<", npo),), f"Ours {fmt(ours)}, NPO {fmt(npo)}")


# ---- Fig. 3 ----------------------------------------------------------------------------------------


def fig3a_sampling_reveals_leakage(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["fig3a"]
    if df.height == 0 or not {"m_bin", "greedy_leak"} <= set(df.columns):
        return None
    above = float((df["m_bin"].cast(pl.Float64) > th.MBIN_LEVEL).mean())
    greedy = float((df["greedy_leak"].cast(pl.Float64) >= 0.5).mean())
    return Measured(
        (Check(above, ">", greedy),),
        f"M_bin > {th.MBIN_LEVEL:g} on {above:.1%}, greedy leaks on {greedy:.1%} "
        f"({df.height} questions)",
    )


def fig3d_ours_under_npo(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["fig3d"]
    if not {"method", "x", "m_gen"} <= set(df.columns):
        return None
    if not {"NPO", "Ours"} <= set(df["method"].cast(pl.String)):
        return None

    def curve(m: str) -> pl.DataFrame:
        return df.filter(pl.col("method") == m).select(
            pl.col("x").cast(pl.Float64), pl.col("m_gen").cast(pl.Float64).alias(m)
        )

    j = curve("NPO").join(curve("Ours"), on="x").sort("x")
    if j.height == 0:
        return None
    npo, ours = j["NPO"].to_numpy(), j["Ours"].to_numpy()
    above, below = int((ours > npo).sum()), int((ours < npo).sum())
    return Measured(
        (Check(above, "<=", 0, "x with Ours above"), Check(below, ">", 0, "x with Ours below")),
        f"Ours above NPO at {above} of {j.height} x; mean M_gen Ours {fmt(float(ours.mean()))}, "
        f"NPO {fmt(float(npo.mean()))}",
    )


# ---- Fig. 4 ----------------------------------------------------------------------------------------


def fig4a_std_falls_with_lambda_f(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["fig4a"]
    if not {"split", "lambda_f", "std"} <= set(df.columns):
        return None
    checks, parts = [], []
    for split in df["split"].unique(maintain_order=True).to_list():
        sub = df.filter(pl.col("split") == split)
        lf = sub["lambda_f"].cast(pl.Float64).to_numpy()
        std = sub["std"].cast(pl.Float64).to_numpy()
        at0 = std[lf == 0]
        within = lf[(lf > 0) & (lf <= th.PAPER_MAX_LAMBDA_F)]
        if at0.size == 0 or within.size == 0:
            continue
        top = float(within.max())
        s0, s1 = float(at0[0]), float(std[lf == top][0])
        checks.append(Check(s1, "<", th.STD_DROP_RATIO * s0, split))
        parts.append(f"{split}: {fmt(s0)} -> {fmt(s1)} (lambda_f {top:g})")
    return Measured(tuple(checks), "; ".join(parts)) if parts else None


def fig4b_std_falls_with_temperature(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["fig4b"]
    if not {"lambda_f", "temperature", "std"} <= set(df.columns):
        return None
    # temperature 0 is greedy decoding: fig4b.csv writes its std as 0 by definition, not measured
    d = df.with_columns(pl.all().cast(pl.Float64)).filter(pl.col("temperature") > 0)
    checks, parts = [], []
    for lf in sorted(set(d["lambda_f"].to_list())):
        sub = d.filter(pl.col("lambda_f") == lf).sort("temperature")
        if sub.height < 2:
            continue
        temps, std = sub["temperature"].to_list(), sub["std"].to_numpy()
        checks += [
            Check(float(std[i + 1]), ">", float(std[i]), f"lambda_f {lf:g}: T={temps[i + 1]:g}")
            for i in range(len(std) - 1)
        ]
        parts.append(
            f"lambda_f {lf:g}: "
            + ", ".join(f"T={t:g} {fmt(s)}" for t, s in zip(temps, std, strict=True))
        )
    return Measured(tuple(checks), "; ".join(parts)) if parts else None


# ---- Fig. 5, Table 2 -------------------------------------------------------------------------------


def fig5a_rows(frames: Frames) -> dict[str, tuple[float, float, float, float | None]] | None:
    """{evalset: (lambda_r at its most negative, diversity there, diversity at lambda_r = 0, NPO's)}."""
    df = frames["fig5a"]
    if not {"model", "evalset", "lambda_r", "diversity"} <= set(df.columns):
        return None
    eo = df.filter(pl.col("model") == "NPO+EO").with_columns(
        pl.col("lambda_r").cast(pl.Float64), pl.col("diversity").cast(pl.Float64)
    )
    npo = df.filter(pl.col("model") == "NPO")
    out = {}
    for e in sorted(set(eo["evalset"].to_list())):
        sub = eo.filter(pl.col("evalset") == e)
        zero = sub.filter(pl.col("lambda_r") == 0)["diversity"]
        neg = sub.filter(pl.col("lambda_r") < 0).sort("lambda_r")
        if zero.len() == 0 or neg.height == 0:
            continue
        base = npo.filter(pl.col("evalset") == e)["diversity"]
        out[e] = (
            float(neg["lambda_r"][0]),
            float(neg["diversity"][0]),
            float(zero[0]),
            float(base[0]) if base.len() else None,
        )
    return out or None


def fig5a_diversity_rises(frames: Frames, lambda_f: float) -> Measured | None:
    t = fig5a_rows(frames)
    if t is None:
        return None
    return Measured(
        tuple(Check(dn, ">", d0, e) for e, (_, dn, d0, _) in t.items()),
        "; ".join(
            f"{e}: {fmt(d0)} -> {fmt(dn)} (lambda_r {lr:g})" for e, (lr, dn, d0, _) in t.items()
        ),
    )


def fig5a_diversity_above_npo(frames: Frames, lambda_f: float) -> Measured | None:
    t = fig5a_rows(frames)
    t = {e: v for e, v in (t or {}).items() if v[3] is not None}
    if not t:
        return None
    return Measured(
        tuple(Check(dn, ">", npo, e) for e, (_, dn, _, npo) in t.items()),
        "; ".join(
            f"{e}: {fmt(dn)} vs NPO {fmt(npo)} (lambda_r {lr:g})"
            for e, (lr, dn, _, npo) in t.items()
        ),
    )


def _label_lambda(label: str) -> float | None:
    m = re.search(r"=\s*([-+0-9.eE]+)\s*$", str(label))
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


def _fig5b_history(frames: Frames, lambda_f: float) -> pl.DataFrame | None:
    df = frames["fig5b"]
    if not {"model", "epoch", "forget_confidence", "retain_confidence"} <= set(df.columns):
        return None
    labels = [m for m in df["model"].unique().to_list() if _label_lambda(m) == float(lambda_f)]
    if len(labels) != 1:
        return None
    h = df.filter(pl.col("model") == labels[0]).sort("epoch")
    if h.height < 2 or h["epoch"][0] != 0:
        return None
    return h


def fig5b_forget_confidence_rises(frames: Frames, lambda_f: float) -> Measured | None:
    h = _fig5b_history(frames, lambda_f)
    if h is None:
        return None
    f = h["forget_confidence"].cast(pl.Float64).to_numpy()
    return Measured(
        (Check(float(f[-1] - f[0]), ">=", th.CONF_RISE),),
        f"{fmt(f[0])} -> {fmt(f[-1])} over {h.height - 1} epochs (min {fmt(f.min())}, "
        f"max {fmt(f.max())})",
        {"lambda_f": f"{lambda_f:g}"},
    )


def fig5b_retain_confidence_stays(frames: Frames, lambda_f: float) -> Measured | None:
    h = _fig5b_history(frames, lambda_f)
    if h is None:
        return None
    r = h["retain_confidence"].cast(pl.Float64).to_numpy()
    dev = float(np.max(np.abs(r - r[0])))
    return Measured(
        (Check(dev, "<=", th.CONF_BAND),),
        f"{fmt(r[0])} -> {fmt(r[-1])}, largest deviation {fmt(dev)}",
        {"lambda_f": f"{lambda_f:g}"},
    )


def table2_utility_flat(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["table2"]
    if not {"grid", "lambda"} <= set(df.columns):
        return None
    cols = [c for c in df.columns if c.startswith("utility_")]
    parts, worst = [], 0.0
    for grid in ("lambda_r", "lambda_f"):
        sub = df.filter(pl.col("grid") == grid).with_columns(pl.col("lambda").cast(pl.Float64))
        for c in cols:
            s = sub.filter(pl.col(c).is_not_null())
            zero = s.filter(pl.col("lambda") == 0)[c]
            rest = s.filter(pl.col("lambda") != 0)[c].cast(pl.Float64).to_numpy()
            if zero.len() == 0 or rest.size == 0:
                continue
            u0 = float(zero[0])
            worst = max(worst, float(np.max(np.abs(rest - u0))))
            parts.append(
                f"{grid} {c.removeprefix('utility_')}: {fmt(u0)} at 0, "
                f"{fmt(rest.min())}-{fmt(rest.max())} elsewhere"
            )
    if not parts:
        return None
    return Measured(
        (Check(worst, "<=", th.UTILITY_BAND),),
        f"largest deviation {fmt(worst)}; " + "; ".join(parts),
    )


def fig5c_no_utility_relation(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["fig5c"]
    if not {"split", "lambda_f", "utility"} <= set(df.columns) or df.height < th.FIG5C_MIN_MODELS:
        return None
    from scipy import stats

    d = df.with_columns(pl.col("lambda_f", "utility").cast(pl.Float64)).with_columns(
        (pl.col("utility") - pl.col("utility").mean().over("split")).alias("centred")
    )
    x, y = d["lambda_f"].to_numpy(), d["centred"].to_numpy()
    if np.all(x == x[0]) or np.all(y == y[0]):
        rho, note = 0.0, " (a constant: no rank relation)"
    else:
        rho, note = float(stats.spearmanr(x, y).statistic), ""
    return Measured(
        (Check(abs(rho), "<", th.FIG5C_MAX_ABS_RHO),),
        f"rho = {rho:.3f}{note} over {d.height} models",
    )


# ---- Fig. 6, DCUE ----------------------------------------------------------------------------------


def harm_rows(frames: Frames) -> list[tuple[str, float, float]] | None:
    """(model, sampled harm, greedy harm) of metrics.csv's harmful requests, by model."""
    df = frames["metrics"]
    if not {"model", "evalset", "metric", "value"} <= set(df.columns):
        return None
    d = df.filter(
        (pl.col("evalset") == "harmful") & pl.col("metric").is_in(["greedy_harm", "sampled_harm"])
    )
    if d.height == 0:
        return None
    w = (
        d.group_by("model", "metric")
        .agg(pl.col("value").cast(pl.Float64).first())
        .pivot(on="metric", index="model", values="value")
    )
    if not {"greedy_harm", "sampled_harm"} <= set(w.columns):
        return None
    w = w.drop_nulls(["greedy_harm", "sampled_harm"]).sort("model")
    return list(zip(w["model"], w["sampled_harm"], w["greedy_harm"], strict=True)) or None


def fig6_sampled_harm_above_greedy(frames: Frames, lambda_f: float) -> Measured | None:
    rows = harm_rows(frames)
    if rows is None:
        return None
    return Measured(
        tuple(Check(s, ">", g, m) for m, s, g in rows),
        "; ".join(f"{m}: sampled {fmt(s)} vs greedy {fmt(g)}" for m, s, g in rows),
    )


def fig6_mbin_panel(frames: Frames) -> tuple[pl.DataFrame, str] | None:
    """fig6.csv's M_bin panel (rows with m_bin and greedy) and the name of its greedy column."""
    df = frames["fig6"]
    if "panel" in df.columns:
        df = df.filter(pl.col("panel") == "m_bin")
    greedy = next((c for c in ("greedy_harm", "greedy") if c in df.columns), None)
    if greedy is None or not {"model", "m_bin"} <= set(df.columns):
        return None
    d = df.drop_nulls(["m_bin", greedy])
    return (d, greedy) if d.height else None


def fig6_mbin_reveals_harm(frames: Frames, lambda_f: float) -> Measured | None:
    panel = fig6_mbin_panel(frames)
    if panel is None:
        return None
    d, greedy = panel
    s = (
        d.group_by("model", maintain_order=True)
        .agg(
            (pl.col("m_bin").cast(pl.Float64) > th.MBIN_LEVEL).mean().alias("above"),
            (pl.col(greedy).cast(pl.Float64) >= 0.5).mean().alias("greedy"),
            pl.len().alias("n"),
        )
        .sort("model")
    )
    return Measured(
        tuple(Check(a, ">", g, m) for m, a, g, _ in s.iter_rows()),
        "; ".join(
            f"{m}: M_bin > {th.MBIN_LEVEL:g} on {a:.1%}, greedy harmful on {g:.1%} ({n} requests)"
            for m, a, g, n in s.iter_rows()
        ),
    )


def dcue_orders_like_forget_quality(frames: Frames, lambda_f: float) -> Measured | None:
    df = frames["dcue_meta"]
    if not {"metric", "practicality"} <= set(df.columns):
        return None
    r = df.filter(pl.col("metric") == "dcue_pvalue")
    if r.height != 1 or r["practicality"][0] is None:
        return None
    p = float(r["practicality"][0])
    if math.isnan(p):
        return None
    n = next((int(r[c][0]) for c in ("n_models_practicality", "n_models") if c in r.columns), None)
    return Measured(
        (Check(p, ">=", th.DCUE_CONCORDANCE),),
        f"{p:.3f}" + (f" over {n} models" if n is not None else ""),
    )


# ---- attacks (issue 40) ----------------------------------------------------------------------------


def _kept(frames: Frames) -> pl.DataFrame:
    """The attack table's rows with a target to compare with, and the share of its knowledge kept
    before and after the attack (greedy score over the target's on the same questions)."""
    df = frames["attacks"]
    need = {"method", "attack", "kind", "greedy_before", "greedy_after", "target_greedy"}
    if not need <= set(df.columns):
        return df.clear()
    ref = pl.col("target_greedy").cast(pl.Float64)
    return df.filter(ref.is_not_null() & (ref > 0)).with_columns(
        (pl.col("greedy_before") / ref).alias("kept_before"),
        (pl.col("greedy_after") / ref).alias("kept_after"),
    )


def _restored(rows: pl.DataFrame) -> Measured:
    """Per attack: whether the mean share kept rises by RESTORE_MIN, and the numbers in words."""
    checks, parts = [], []
    for (attack,), g in rows.group_by("attack", maintain_order=True):
        before, after = float(g["kept_before"].mean()), float(g["kept_after"].mean())
        checks.append(Check(after - before, ">=", th.RESTORE_MIN, attack))
        each = ", ".join(
            f"{m} {fmt(b)} -> {fmt(a)}"
            for m, b, a in g.select("method", "kept_before", "kept_after").iter_rows()
        )
        bins = ""
        if {"m_bin_before", "m_bin_after"} <= set(g.columns):
            bins = (
                f"; M_bin {fmt(float(g['m_bin_before'].mean()))} -> "
                f"{fmt(float(g['m_bin_after'].mean()))}"
            )
        parts.append(f"{attack}: kept {fmt(before)} -> {fmt(after)} ({each}){bins}")
    return Measured(tuple(checks), "; ".join(parts))


def attack_quantization_restores(frames: Frames, lambda_f: float) -> Measured | None:
    rows = _kept(frames)
    if rows.height == 0:
        return None
    four_bit = [a for a in rows["attack"].unique(maintain_order=True) if a.split(":")[0] == "quant"]
    four_bit = [a for a in four_bit if a.partition(":")[2] in ("fp4", "nf4")]
    keep = pl.col("attack").is_in(four_bit) & pl.col("method").is_in(list(th.RETAIN_METHODS))
    if "retain_term" in rows.columns:
        keep &= pl.col("retain_term").cast(pl.Boolean).fill_null(False)
    rows = rows.filter(keep)
    return _restored(rows) if rows.height else None


def attack_relearning_restores(frames: Frames, lambda_f: float) -> Measured | None:
    rows = _kept(frames)
    rows = rows.filter(pl.col("kind") == "relearn") if rows.height else rows
    return _restored(rows) if rows.height else None
