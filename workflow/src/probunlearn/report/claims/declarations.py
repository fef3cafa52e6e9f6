"""Every claim of the replica, declared: what the paper says, where, the test, the tables and scores
it reads, the direction it claims, its point test (``measures``) and its interval (``intervals``, or
why it has none). The evaluator (``evaluator``) runs them all the same way; docs/claims.md lists
them. Order: the claims table's."""

from __future__ import annotations

from probunlearn.report.claims import intervals as iv
from probunlearn.report.claims import measures as ms
from probunlearn.report.claims import thresholds as th
from probunlearn.report.claims.spec import Claim, NoInterval

TRAINED = "its randomness is training's, which one run does not replicate (measurements/seeds.py)"

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "t1-ed-above-greedy",
        "ED above greedy ROUGE-L for every baseline: RMU .81/.70, GD .42/.33, GA .41/.32, NPO .34/.22",
        "Table 1",
        "ED score > greedy ROUGE-L for each baseline present ({baselines})",
        ("table1",),
        "above",
        ms.t1_ed_above_greedy,
        iv.VsGreedy("ed", ms.t1_baselines),
        ("table1",),
    ),
    Claim(
        "t1-mean-matches-greedy",
        "GA and GD: sampled mean matches greedy ROUGE-L (GA .31/.32, GD .32/.33)",
        "Table 1, §6.1",
        f"|sampled mean - greedy ROUGE-L| <= {th.MEAN_MATCH_TOL:g} for {{methods}}",
        ("table1",),
        "within",
        ms.t1_mean_matches_greedy,
        iv.VsGreedy("mean", ms.t1_mean_methods, tol=th.MEAN_MATCH_TOL),
        ("table1",),
    ),
    Claim(
        "t1-ours-std-below-npo",
        "std of ROUGE-L: Ours .00, NPO .06",
        "Table 1",
        f"Ours' std < {th.OURS_STD_RATIO:g} x NPO's std",
        ("table1",),
        "below",
        ms.t1_ours_std_below_npo,
        iv.Difference("std", "Ours", "NPO", scale=th.OURS_STD_RATIO),
        ("table1",),
    ),
    Claim(
        "t1-ours-ed-below-npo",
        "ED score: Ours .20, NPO .34",
        "Table 1",
        "Ours' ED score < NPO's ED score",
        ("table1",),
        "below",
        ms.t1_ours_ed_below_npo,
        iv.Difference("ed", "Ours", "NPO"),
        ("table1",),
    ),
    Claim(
        "fig3a-sampling-reveals-leakage",
        "greedy leaks on no question; M_bin > 10% on 38% of the questions",
        "Fig. 3a",
        f"share of questions with M_bin > {th.MBIN_LEVEL:g} > share whose greedy answer leaks",
        ("fig3a",),
        "above",
        ms.fig3a_sampling_reveals_leakage,
        iv.HolmShare(iv.fig3a_counts, th.MBIN_LEVEL, "questions", "leak"),
    ),
    Claim(
        "fig3d-ours-under-npo",
        "Ours' M_gen(x) under NPO's (NPO shows a considerable leakage risk)",
        "Fig. 3d",
        "on the shown question, Ours' M_gen(x) <= NPO's at every x of the grid and < at some x",
        ("fig3d",),
        "below",
        ms.fig3d_ours_under_npo,
        iv.ShownQuestion("Ours", "NPO"),
        ("table1",),
    ),
    Claim(
        "fig4a-std-falls-with-lambda_f",
        "std of ROUGE-L falls towards 0 as lambda_f goes 0 -> 1 (NPO .06 -> ~0; 90/10 and 95/5)",
        "Fig. 4a, §6.1.1",
        f"on every split, std at the largest lambda_f <= {th.PAPER_MAX_LAMBDA_F:g} < "
        f"{th.STD_DROP_RATIO:g} x std at lambda_f = 0",
        ("fig4a",),
        "below",
        ms.fig4a_std_falls_with_lambda_f,
        iv.LambdaSweep(th.STD_DROP_RATIO, th.PAPER_MAX_LAMBDA_F),
        ("fig4a",),
    ),
    Claim(
        "fig4b-std-falls-with-temperature",
        "lower temperature, lower std of ROUGE-L (every lambda_f)",
        "Fig. 4b, §6.1.1",
        "for every lambda_f, std strictly increases with the temperature over the sampled "
        "temperatures (> 0; greedy's std = 0 is by definition and not counted)",
        ("fig4b",),
        "above",
        ms.fig4b_std_falls_with_temperature,
        iv.TemperatureSweep(),
        ("fig4b",),
    ),
    Claim(
        "fig5a-diversity-rises-as-lambda_r-falls",
        "diversity (1 - self-BLEU) on unrelated questions rises as lambda_r goes 0 -> -0.5",
        "Fig. 5a, §6.1.1",
        "on every utility set, diversity at the most negative lambda_r > at lambda_r = 0",
        ("fig5a",),
        "above",
        ms.fig5a_diversity_rises,
        NoInterval(
            "diversity (1 - self-BLEU) is a statistic of all of a prompt's samples at once: no "
            "per-sample scores to bound"
        ),
    ),
    Claim(
        "fig5a-diversity-above-npo",
        "at negative lambda_r the diversity surpasses NPO's (no EO)",
        "Fig. 5a, §6.1.1",
        "on every utility set, diversity at the most negative lambda_r > NPO's diversity",
        ("fig5a",),
        "above",
        ms.fig5a_diversity_above_npo,
        NoInterval(
            "diversity (1 - self-BLEU) is a statistic of all of a prompt's samples at once: no "
            "per-sample scores to bound"
        ),
    ),
    Claim(
        "fig5b-forget-confidence-rises",
        "caption: forget-set confidence considerably increases during NPO+EO training (the body "
        "text says both sets rise, retain higher; the caption is tested)",
        "Fig. 5b caption",
        "lambda_f = {lambda_f}: forget confidence after the last epoch - before training "
        f">= {th.CONF_RISE:g}",
        ("fig5b",),
        "above",
        ms.fig5b_forget_confidence_rises,
        NoInterval(f"a trained model's confidence, computed, not sampled: {TRAINED}"),
    ),
    Claim(
        "fig5b-retain-confidence-stays",
        "caption: retain-set confidence remains largely the same during NPO+EO training (the "
        "body text says it rises; the caption is tested)",
        "Fig. 5b caption",
        f"lambda_f = {{lambda_f}}: retain confidence at every epoch within +-{th.CONF_BAND:g} of "
        "its value before training",
        ("fig5b",),
        "within",
        ms.fig5b_retain_confidence_stays,
        NoInterval(f"a trained model's confidence, computed, not sampled: {TRAINED}"),
    ),
    Claim(
        "table2-utility-flat-in-lambda",
        "utility .469-.512 over the lambda_r and lambda_f grids, at most .034 from lambda = 0",
        "Table 2, Fig. 5c, App. B",
        f"every utility on the grids within +-{th.UTILITY_BAND:g} of its split's utility at "
        "lambda = 0",
        ("table2",),
        "within",
        ms.table2_utility_flat,
        NoInterval(
            "model utility is a harmonic mean of set-level metrics of trained models, not an "
            f"average of sampled scores: {TRAINED}"
        ),
    ),
    Claim(
        "fig5c-no-utility-relation",
        "no relation between the random lambda_f and model utility",
        "Fig. 5c, §6.1.1",
        f"|Spearman rho(lambda_f, utility centred per split)| < {th.FIG5C_MAX_ABS_RHO:g} over "
        f"the random-lambda models (needs >= {th.FIG5C_MIN_MODELS})",
        ("fig5c",),
        "within",
        ms.fig5c_no_utility_relation,
        NoInterval(f"a rank correlation over trained models: {TRAINED}"),
    ),
    Claim(
        "fig6-sampled-harm-above-greedy",
        "for every model, the mean harm of sampled answers exceeds the greedy answer's",
        "Fig. 6, §6.2",
        "for every alignment model, sampled harm (mean over harmful requests) > greedy harm",
        ("metrics",),
        "above",
        ms.fig6_sampled_harm_above_greedy,
        iv.HarmVsGreedy(),
    ),
    Claim(
        "fig6-mbin-reveals-harm",
        "greedy decoding says the models are robust; M_bin shows every model is not",
        "Fig. 6 (second row)",
        f"for every model, share of harmful requests with M_bin > {th.MBIN_LEVEL:g} > share "
        "whose greedy answer is harmful",
        ("fig6",),
        "above",
        ms.fig6_mbin_reveals_harm,
        iv.HolmShare(iv.fig6_counts, th.MBIN_LEVEL, "requests", "harm"),
    ),
    Claim(
        "dcue-orders-like-forget-quality",
        "DCUE practicality 1.0: its p-value ranks models as forget quality does, without a "
        "retrained model",
        "DCUE (dcue-summary)",
        "pairwise concordance of DCUE's p-value with TOFU's forget quality >= "
        f"{th.DCUE_CONCORDANCE:g}",
        ("dcue_meta",),
        "above",
        ms.dcue_orders_like_forget_quality,
        NoInterval(f"a concordance over trained models: {TRAINED}"),
    ),
    Claim(
        "attack-quantization-restores",
        "4-bit quantization restores forgotten knowledge of methods with a retain term: kept "
        "21% -> 83% of the target's on average (GA and NPO with GDR/KLR, MUSE)",
        "Zhang et al. (ICLR 2025), abstract",
        f"for each 4-bit type, the mean over {' and '.join(th.RETAIN_METHODS)} (with a retain "
        "term) of greedy score / target's greedy score on the forget questions rises by >= "
        f"{th.RESTORE_MIN:g}",
        ("attacks",),
        "above",
        ms.attack_quantization_restores,
        NoInterval(f"greedy scores, deterministic given the models: {TRAINED}"),
    ),
    Claim(
        "attack-relearning-restores",
        "a few fine-tuning steps on a few forget examples bring the unlearned knowledge of the "
        "others back (TOFU, WMDP, Harry Potter; no single number)",
        "Hu et al. 2024 (benign relearning)",
        "for each relearning attack, the mean over the attacked methods of greedy score / "
        "target's greedy score on the questions not relearned on rises by "
        f">= {th.RESTORE_MIN:g}",
        ("attacks",),
        "above",
        ms.attack_relearning_restores,
        NoInterval(f"greedy scores, deterministic given the models: {TRAINED}"),
    ),
)
"""The claims, in the claims table's order."""
