"""Cross-checks of a run's config that its JSON schema cannot express, naming the key at fault."""

from __future__ import annotations

from collections.abc import Mapping

from probunlearn.benchmarks import benchmarks

WORLD_KEYS = ("world", "tokenizer", "model", "pretrain")


def check_config(config: Mapping) -> None:
    """Raise ValueError, naming the config key, where the settings contradict each other."""
    experiments = set(config["experiments"])
    needs_tofu = sorted(experiments & {"random_lambdas", "dcue"})
    if needs_tofu and "tofu" not in experiments:
        raise ValueError(
            f"config experiments: {needs_tofu} use TOFU's metrics: add 'tofu' to experiments"
        )
    settings = config["sampling"]["settings"]
    if "sequential" in experiments and "sequential" not in settings.get("seq", {}):
        raise ValueError(
            "config experiments: 'sequential' samples with the setting sampling.settings.seq, which "
            "must exist and have a 'sequential' block (q, leak_threshold, round_size, score)"
        )
    for name, setting in settings.items():
        seq = setting.get("sequential")
        if seq and (setting["n"] % seq["round_size"] or setting["adaptive"]):
            raise ValueError(
                f"config sampling.settings.{name}: a sequential setting needs adaptive: false and "
                f"round_size ({seq['round_size']}) dividing n ({setting['n']})"
            )
        if seq and setting["temperature"] <= 0:
            raise ValueError(f"config sampling.settings.{name}: sequential needs temperature > 0")
    bench, hub = config["benchmarks"], config["models"]
    missing = [k for k in WORLD_KEYS if k not in config]
    if not bench and missing:
        raise ValueError(
            f"config: the synthetic world (benchmarks: null) needs the keys {missing}; a file "
            "with `base: paper` has none of them: set benchmarks, or drop `base` to lay the file over "
            "config.yaml"
        )
    for b in benchmarks():
        b.check_config(config)
    judge = config["judge"]
    if judge["harm"] == "harmbench" and judge["model"] not in hub:
        raise ValueError(
            "config judge.model: the HarmBench classifier must be a model named in `models`, "
            f"got {judge['model']!r}"
        )
    if "attacks" in experiments:
        check_attacks(config)
    if "membership" in experiments:  # its block against the run (probunlearn.dag.membership)
        from probunlearn.dag.design import Design

        Design(config).experiment_design("membership").check()
    sweep = config["unlearning"]["lambda_f_sweep"]
    fig4a = set(sweep["fig4a_splits"]) - set(sweep["splits"])
    if fig4a:
        raise ValueError(
            f"config unlearning.lambda_f_sweep.fig4a_splits: {sorted(fig4a)} not in its splits"
        )


def check_attacks(config: Mapping) -> None:
    """The experiment ``attacks`` checked before any job: its specs, setting, models and eval sets,
    and that every model can take every attack; an error names the key, or the model and attack."""
    from probunlearn.attacks import parse_spec
    from probunlearn.attacks.naming import attack_slug
    from probunlearn.dag.design import Design

    sec, experiments = config["attacks"], set(config["experiments"])
    seen: dict[str, str] = {}
    for i, text in enumerate(sec["specs"]):
        try:
            spec = parse_spec(text)
            attack_slug(spec)
        except ValueError as e:
            raise ValueError(f"config attacks.specs[{i}]: {e}") from None
        if spec.canonical in seen:
            raise ValueError(
                f"config attacks.specs[{i}]: {text!r} is the attack {seen[spec.canonical]!r} again "
                f"({spec.canonical})"
            )
        seen[spec.canonical] = text
    settings = config["sampling"]["settings"]
    setting = sec["setting"]
    if setting not in settings or settings[setting].get("sequential"):
        raise ValueError(
            f"config attacks.setting: {setting!r} must be a sampling setting of sampling.settings "
            f"without a sequential block; have {sorted(settings)}"
        )
    table1 = config["unlearning"]["table1"]["methods"] if "table1" in experiments else []
    extra = sorted(set(sec["methods"]) - set(table1))
    if extra:
        raise ValueError(
            f"config attacks.methods: {extra} attack Table 1's models, so they must be in "
            f"unlearning.table1.methods (experiment table1 on); have {table1}"
        )
    design = Design(config)
    known = set(design.all_models()) | set(config["models"])
    unknown = sorted(set(sec["models"]) - known)
    if unknown:
        raise ValueError(
            f"config attacks.models: {unknown} are no models of this run; expected the run's "
            f"own (target, pretrained, reference_<split>) or a name of `models`: {sorted(known)}"
        )
    missing = sorted(set(sec["evalsets"]) - set(design.data_sets))
    if missing:
        raise ValueError(
            f"config attacks.evalsets: {missing} are no eval sets of this run; have "
            f"{design.data_sets}"
        )
    assert design.attacks is not None
    design.attacks.check()
