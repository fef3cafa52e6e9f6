"""probunlearn.dag: model names, path patterns and the experiment design, without Snakemake.

These tests catch a figure wired to the wrong model: every input of a table or figure is traced back
to the model name it belongs to and checked against the recipe the figure claims to show.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest

from helpers import design_of
from probunlearn.config import effective_config, load_yaml
from probunlearn.dag import Design, Paths, check_config, parse_unlearned, unlearned_name
from probunlearn.dag.naming import method_labels, model_recipe, retain_split, unlearned_pattern

SCORES = re.compile(
    r"results/(?P<run>[^/]+)/scores/(?P<model>[^/]+)/(?P<evalset>[^/]+)/(?P<setting>[^/]+)\.parquet"
)


def model_of_scores(path: str) -> tuple[str, str, str]:
    m = SCORES.fullmatch(path)
    assert m, path
    return m["model"], m["evalset"], m["setting"]


# ---- names ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "split", "lf", "lr", "name"),
    [
        ("npo_eo", "forget10", 1.0, 0.0, "npo_eo-forget10-f1-r0"),
        ("npo_eo", "forget05", 0.25, 3.0, "npo_eo-forget05-f0.25-r3"),
        ("npo_eo", "forget10", 0.0, 0.0, "npo-forget10-f0-r0"),  # plain NPO is named so
        ("rmu", "saga", 0.0, 0.0, "rmu-saga-f0-r0"),
        ("ga", "forget01", 1e-5, 0.0, "ga-forget01-f1e-05-r0"),
    ],
)
def test_names_parse_back(method, split, lf, lr, name):
    assert unlearned_name(method, split, lf, lr) == name
    rec = parse_unlearned(name)
    assert (rec["split"], rec["lambda_f"], rec["lambda_r"]) == (split, lf, lr)
    assert rec["method"] == ("npo" if (method, lf, lr) == ("npo_eo", 0, 0) else method)
    assert re.fullmatch(unlearned_pattern(), name)


def test_bad_name_says_what_was_expected():
    with pytest.raises(ValueError, match=r"'target-x'.*\{method\}-\{split\}"):
        parse_unlearned("target-x")


def test_recipes_and_retain_sets():
    assert model_recipe("target") == ("target", "")
    assert model_recipe("reference_forget05") == ("reference", "forget05")
    assert model_recipe("llama", {"llama"}) == ("hub", "")
    assert model_recipe("gd-forget10-f0-r0") == ("gd", "forget10")
    assert retain_split("gd-forget01-f0-r0") == "retain99"
    assert retain_split("ga-saga-f0-r0") == "retain90"
    assert not re.fullmatch(unlearned_pattern(), "reference_forget10")


def test_paths_patterns_and_files_agree():
    p = Paths("results/x", hub_models={"llama"})
    assert p.scores("{model}", "{evalset}", "{setting}").format(
        model="m", evalset="e", setting="s"
    ) == p.scores("m", "e", "s")
    assert p.model("llama") == "resources/models/llama"
    assert p.model("target") == "results/x/models/target"
    assert p.log("sample", "m", "shard-3") == "results/x/logs/sample/m/shard-3.log"
    assert p.hub_model("llama") == "resources/models/llama"


def test_rules_use_only_names_the_design_and_paths_have(root, mini):
    """A rule file that calls P.x or D.x for a missing x fails only where that branch is parsed
    (e.g. only for presets with hub models): check every name of every rule file here."""
    missing = []
    for smk in sorted((root / "workflow/rules").glob("*.smk")):
        for obj, name in re.findall(r"\b([PD])\.(\w+)", smk.read_text()):
            target = mini.paths if obj == "P" else mini
            if not hasattr(target, name):
                missing.append(f"{smk.name}: {obj}.{name}")
    assert missing == []


# ---- the design of the mini run -------------------------------------------------------------------
def test_table1_rows_are_the_methods_they_name(mini):
    t1 = mini.config["unlearning"]["table1"]
    scores = mini.table1_scores()
    assert set(scores) == {method_labels()[m] for m in t1["methods"]} | {"Ours"}
    for label, path in scores.items():
        model, evalset, setting = model_of_scores(path)
        method = (
            "npo_eo"
            if label == "Ours"
            else next(m for m, lab in method_labels().items() if lab == label)
        )
        rec = parse_unlearned(model)
        assert rec["method"] == method and evalset == t1["split"]
        # Ours is NPO+EO at the paper's lambda_f with adaptive temperature; NPO+EO the same model
        assert setting == ("ats" if label == "Ours" else "main")
        if method == "npo_eo":
            assert rec["lambda_f"] == mini.config["unlearning"]["lambda_f"] > 0
        else:
            assert rec["lambda_f"] == 0


def test_fig3_compares_ga_gd_npo_and_ours(mini):
    methods = {
        k: parse_unlearned(model_of_scores(v)[0])["method"] for k, v in mini.fig3_scores().items()
    }
    assert methods == {"GA": "ga", "GD": "gd", "NPO": "npo", "Ours": "npo_eo"}
    assert model_of_scores(mini.fig3_scores()["Ours"])[2] == "ats"


def test_fig4_points_come_from_their_lambda_and_temperature(mini):
    runs = mini.fig4_runs()
    sweep = mini.config["unlearning"]["lambda_f_sweep"]
    assert {(s, lf) for s, lf, _ in runs["lambda_f"]} == {
        (s, lf) for s in sweep["fig4a_splits"] for lf in sweep["values"]
    }
    for split, lf, path in runs["lambda_f"]:
        model, evalset, setting = model_of_scores(path)
        rec = parse_unlearned(model)
        assert (rec["split"], rec["lambda_f"], evalset) == (split, lf, split)
        assert setting in ("main", "sweep")  # temperature 1 either way
    for lf, t, path in runs["temperature"]:
        model, _, setting = model_of_scores(path)
        assert parse_unlearned(model)["lambda_f"] == lf
        assert setting in ({"main", "sweep"} if t == 1 else {f"t{t:g}"})
        if setting.startswith("t"):
            assert mini.sampling_setting(setting)["temperature"] == t


def test_fig5_inputs_match_their_lambdas(mini):
    for lr, evalset, shards in mini.fig5a_runs()["runs"]:
        for path in shards:
            model = path.split("/")[3]
            assert parse_unlearned(model)["lambda_r"] == lr
            assert f"/{evalset}/utility/" in path
    for label, path in mini.fig5b_histories().items():
        model = path.rsplit("/", 1)[1].removesuffix(".csv")
        assert label == f"λf={parse_unlearned(model)['lambda_f']:g}"
    for split, lf, lr, sampled, tofu in mini.fig5c_runs()["random"]:
        for path in (sampled, tofu):
            rec = parse_unlearned(path.split("/")[3])
            assert (rec["split"], rec["lambda_f"], rec["lambda_r"]) == (split, lf, lr)
    for which, value, other, split, tofu in mini.fig5c_runs()["grid"]:
        rec = parse_unlearned(tofu.split("/")[3])
        mine = rec["lambda_f"] if which == "lambda_f" else rec["lambda_r"]
        fixed = rec["lambda_r"] if which == "lambda_f" else rec["lambda_f"]
        assert (mine, fixed, rec["split"]) == (value, other, split)


def test_every_input_of_a_figure_is_made(mini):
    """Each scores file a table or figure reads belongs to a sampled run, each model to the run."""
    made = {mini.paths.scores(*r) for r in mini.sampled_runs()}
    wanted = list(mini.table1_scores().values())
    wanted += [p for runs in mini.fig4_runs().values() for *_, p in runs]
    assert wanted and set(wanted) <= made
    models = set(mini.all_models()) | set(mini.attacks.attacked_models)  # experiment attacks
    assert {m for m, _, _ in mini.sampled_runs()} <= models | set(mini.hub_models)
    for part in mini.metric_parts():
        assert part.split("/")[3] in models


def test_sampled_runs_use_known_settings_and_sets(mini):
    for _, evalset, setting in mini.sampled_runs():
        assert evalset in mini.data_sets
        mini.sampling_setting(setting)  # raises for an unknown one
        assert mini.shards(evalset)


def test_experiments_switch_their_models_and_figures(root, mini):
    drop = design_of({"experiments": [e for e in mini.experiments if e != "lambda_r"]})
    assert drop.lambda_r_models() == {} and "fig5a" not in drop.figure_names()
    assert set(drop.unlearned_models()) < set(mini.unlearned_models())
    assert "fig5a" in mini.figure_names()
    seq = design_of({"experiments": [*mini.config["experiments"], "sequential"]})
    assert {s for _, _, s in seq.sampled_runs()} - {s for _, _, s in mini.sampled_runs()} == {"seq"}
    assert set(seq.sequential_bounds()) == {"target", "NPO", "NPO+EO"}
    assert "sequential" in seq.figure_names() and "sequential" not in mini.figure_names()


def test_claims_read_only_tables_the_run_makes(mini):
    inputs = mini.claims_inputs()
    assert {"table1", "fig4a", "fig5b", "dcue_meta"} <= set(inputs)
    assert all(p.startswith("results/mini/tables/") for p in inputs.values())


def test_sampling_params_name_every_setting_value(mini):
    params = mini.sampling_params("target", "forget10", "ats")
    s = mini.config["sampling"]
    assert params["adaptive_threshold"] == s["adaptive_threshold"]
    assert params["top_p"] == s["top_p"] and params["n"] == s["settings"]["ats"]["n"]
    assert list(params) == sorted(params)  # canonical: reordering config.yaml reruns nothing
    assert (
        mini.sampling_params("target", "harmful", "main")["max_new_tokens"]
        == s["max_new_tokens_requests"]
    )


def test_random_numbers_are_common_by_default_and_independent_on_request(root):
    from probunlearn.steps.sample import seed_key

    mini = design_of()
    assert mini.config["sampling"]["random_numbers"] == "common"
    # the default adds no param: every shard's params, and so its samples, stay as they were
    assert "random_numbers" not in mini.sampling_params("target", "forget10", "main")
    assert seed_key("target", "forget10", "main") == seed_key("target", "forget10", "sweep")
    ind = design_of({"sampling": {"random_numbers": "independent"}})
    params = ind.sampling_params("target", "forget10", "main")
    assert params["random_numbers"] == "independent" and list(params) == sorted(params)
    keys = {seed_key("target", "forget10", s, "independent") for s in ("main", "sweep")}
    assert keys == {"target/forget10/main", "target/forget10/sweep"}
    with pytest.raises(ValueError, match="sampling.random_numbers must be one of"):
        seed_key("target", "forget10", "main", "shared")


# ---- checks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ({"experiments": ["dcue"]}, "add 'tofu' to experiments"),
        (
            {"experiments": ["tofu", "sequential"], "sampling": {"settings": {"seq": {"n": 8}}}},
            "sampling.settings.seq",
        ),
        (
            {
                "unlearning": {
                    "lambda_f_sweep": {"fig4a_splits": ["forget01"], "splits": ["forget10"]}
                }
            },
            "fig4a_splits",
        ),
    ],
)
def test_contradictions_name_the_key(root, overlay, message):
    cfg = effective_config(overlay, root, None)
    with pytest.raises(ValueError, match=re.escape(message)):
        check_config(cfg)


def test_design_imports_without_torch():
    code = "import sys, probunlearn.dag; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_design_does_not_change_the_config(root):
    cfg = effective_config({}, root, None)
    before = copy.deepcopy(cfg)
    d = Design(cfg)
    d.sampled_runs(), d.metric_parts(), d.fig5c_runs()
    assert cfg == before


def test_load_yaml_of_presets_gives_designs(root):
    for preset in sorted((root / "workflow/presets").glob("*.yaml")):
        if preset.stem == "local-data":  # an overlay of the presets, not a run
            continue
        overlay = load_yaml(preset)
        d = design_of(overlay)
        assert d.paths.out == f"results/{d.config['run']}"


def test_training_rules_get_the_device_and_mixed_precision_only_when_set(root, mini):
    """The params of pretrain, target, reference, unlearn and postfinetune: a run on "auto" without
    mixed precision keeps the params it had; a named device and mixed precision reach the jobs."""
    template = mini.config["template"]
    assert mini.run_params(2) == {"seed": 0, "template": template, "threads": 2}
    gpu = design_of({"device": "cuda:1", "mixed_precision": True})
    assert gpu.run_params(1) == {
        "device": "cuda:1", "mixed_precision": True, "seed": 0, "template": template, "threads": 1
    }  # fmt: skip
    for name in ("tofu-phi", "tofu-llama2", "muse-news"):  # every GPU preset: auto, fp32
        preset = design_of(preset=name)
        assert set(preset.run_params(4)) == {"seed", "template", "threads"}
