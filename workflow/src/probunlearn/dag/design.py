"""The experiment design: from a run's config, which models each experiment needs, what gets sampled
with which setting, and which files every table, figure and claim reads. :class:`Design` holds no
Snakemake object: the rules call its methods, and the tests check its answers."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from probunlearn import methods
from probunlearn.attacks.naming import is_attacked, parse_attacked, plain_evalset
from probunlearn.benchmarks import (
    active,
    benchmark,
    benchmark_sets,
    benchmark_sizes,
    by_experiment,
    corpora,
    dataset_files,
)
from probunlearn.core.planner import (
    BenchmarkJob,
    CorePlanner,
    ModelInfo,
    RunSettings,
    SetInfo,
    Setting,
)
from probunlearn.dag.attacks import AttackDesign
from probunlearn.dag.membership import MembershipDesign
from probunlearn.dag.naming import (
    method_labels,
    model_recipe,
    parse_unlearned,
    unlearned_name,
    unlearned_pattern,
)
from probunlearn.dag.paths import Paths
from probunlearn.data.evalsets import (
    FORGET_SPLITS,
    REQUEST_SETS,
    UTILITY_SETS,
    WORLD_SETS,
)
from probunlearn.steps.specs import canon

# sets sampled for the utility of Table 1's models and of the lambda_r sweep (Fig. 5a)
UTILITY_SAMPLED = ("real_authors", "world_facts")
FIG3_TOFU = ("GA", "GD", "NPO", "Ours")
FIG3_NAMES = ["fig3b", "fig3c", "fig3d", "fig3e", "fig3f"]
# experiment -> the figures it draws and the tables the paper's claims read from it (Table 1 and
# Fig. 3b-f depend on the methods of table1, see Design._outputs)
EXPERIMENT_OUTPUTS = (
    ("saga", ["fig3a"], ["fig3a"]),
    ("lambda_f", ["fig4a", "fig4b", "fig5b"], ["fig4a", "fig4b", "fig5b"]),
    ("lambda_r", ["fig5a"], ["fig5a"]),
    ("random_lambdas", ["fig5c"], ["fig5c", "table2"]),
    ("alignment", ["fig6"], ["fig6"]),
    ("dcue", [], ["dcue_meta"]),
    ("sequential", ["sequential"], []),
    ("attacks", ["attacks"], ["attacks"]),
)
LOGPROB_ORDER = (*FORGET_SPLITS, "retain", "holdout", "real_authors", "world_facts")
# the workflow's own experiments with a DAG part of their own (as a benchmark's experiment has)
OWN_PARTS = {"membership": MembershipDesign}


class Design(CorePlanner):
    """What a run makes, decided from its (effective, validated) config alone (a CorePlanner)."""

    def __init__(self, config: Mapping, res: str = "resources"):
        self.config = config
        self.experiments = set(config["experiments"])
        self.bench = config["benchmarks"]
        self.hub_models = config["models"]
        self.ul = config["unlearning"]
        self.t1 = self.ul["table1"]
        self.paths = Paths(f"results/{config['run']}", res, frozenset(self.hub_models))
        self._models: dict[str, ModelInfo] = {}
        self._sets: dict[str, SetInfo] = {}

    # ---- the benchmarks' own experiments (MUSE-News's) ------------------------------------------
    @cached_property
    def extensions(self) -> dict[str, Any]:
        """Experiment -> its part of the DAG, for the run's experiments that a benchmark brings or
        that have a module of their own (:data:`OWN_PARTS`)."""
        out = {}
        for e in sorted(self.experiments):
            bench = by_experiment(e)
            if bench is not None:
                out[e] = bench.experiment_design(self)
            elif e in OWN_PARTS:
                out[e] = OWN_PARTS[e](self)
        return out

    def experiment_design(self, experiment: str) -> Any:
        """An experiment's part of the DAG (its rules file asks), or None when it is off."""
        return self.extensions.get(experiment)

    @cached_property
    def attacks(self) -> AttackDesign | None:
        """The experiment ``attacks`` (:mod:`probunlearn.dag.attacks`), or None when it is off."""
        return AttackDesign(self) if "attacks" in self.experiments else None

    @property
    def membership(self) -> Any:
        """The experiment ``membership`` (:mod:`probunlearn.dag.membership`), or None when off."""
        return self.extensions.get("membership")

    def _plain_set(self, evalset: str) -> str:
        """The eval set a name is made from (a prompt family's eval set; else itself)."""
        return plain_evalset(evalset)

    # ---- data sets ----------------------------------------------------------------------------
    @cached_property
    def data_sets(self) -> list[str]:
        """The run's eval sets: the synthetic world's, or those its benchmarks yield."""
        if not self.bench:
            return WORLD_SETS
        return benchmark_sets(self.bench)

    @cached_property
    def has_authors(self) -> bool:
        """Author sets (TOFU-like): greedy evaluation, log-probabilities, forget quality, unlearning."""
        return "full" in self.data_sets

    def run_settings(self) -> RunSettings:
        """The run's settings for the core's jobs (``keep``: optional params they always held)."""
        cfg, s = self.config, self.config["sampling"]
        asked = cfg["greedy_eval"]["evalsets"]
        greedy = asked + [u for u in UTILITY_SETS if u not in asked]
        logprobs = [
            e
            for e in LOGPROB_ORDER
            if e in self.data_sets and (e != "holdout" or "dcue" in self.experiments)
        ]
        settings = {
            name: Setting(
                n=chosen["n"],
                temperature=chosen["temperature"],
                adaptive_threshold=s["adaptive_threshold"] if chosen["adaptive"] else None,
                sequential=chosen.get("sequential"),
            )
            for name, chosen in s["settings"].items()
        }
        dc = cfg["dcue"]
        # the job per model of a benchmark's experiment (RWKU's MIA statistics), or None
        owners = [e for e in self.extensions.values() if getattr(e, "model_job", lambda: None)()]
        if len(owners) > 1:
            raise ValueError("config experiments: two experiments with a job per model each")
        job = BenchmarkJob(owners[0].model_job(), *owners[0].job_choice()) if owners else None
        return RunSettings(
            threads=cfg["threads"]["eval"],
            dtype=cfg["dtype"],
            device=cfg["device"],
            seed=cfg["seed"],
            sampling=s,
            settings=settings,
            bounds=cfg["bounds"],
            greedy_sets=[e for e in greedy if e in self.data_sets],
            logprob_sets=logprobs,
            tofu_gen_sets=[e for e in logprobs if e != "holdout"],
            tofu=self.tofu_params(),
            greedy_max_new_tokens=cfg["greedy_eval"]["max_new_tokens"],
            greedy_batch_size=cfg["greedy_eval"]["batch_size"],
            max_questions=cfg["tofu_eval"]["ds_size"],
            dcue={
                "core_model": dc["core_model"],
                "core_model_revision": dc["core_model_revision"],
                "core_prompts": {k: dc[k] for k in ("reformulation_prompt", "core_prompt")},
            },
            keep={
                "sampling": frozenset({"adaptive_threshold", "pack_prompts"}),
                "score": frozenset({"sequential"}),
                "dcue": frozenset({"core_model", "core_model_revision", "core_prompts"}),
            },
            job=job,
        )

    @cached_property
    def dataset_files(self) -> dict[str, dict[str, str]]:
        """{benchmark: {file name: key}} of the real data sets the run's benchmarks use."""
        return dataset_files(self.bench) if self.bench else {}

    def dataset_local(self, dataset: str) -> str | None:
        """A benchmark's local copy (benchmarks.local/<its directory>), or None: download it."""
        local = self.bench["local"]
        return os.path.join(local, benchmark(dataset).directory) if local else None

    def dataset_revision(self, dataset: str) -> str | None:
        """The pinned revision a benchmark's config names, or None: the loader's default."""
        spec = self.bench.get(dataset)
        return spec.get("revision") if isinstance(spec, dict) else None

    def benchmark_inputs(self) -> dict[str, list[str]]:
        """{data set: its files} that rule benchmark_sets reads."""
        return {
            ds: [self.paths.dataset_file(ds, name) for name in files]
            for ds, files in self.dataset_files.items()
        }

    def evalset_rows(self, evalset: str) -> int:
        """Rows of an eval set (or of a prompt family), from the config alone."""
        if self.attacks is not None and self.attacks.is_family(evalset):
            return self.attacks.family_rows(evalset)
        if self.bench:
            return benchmark_sizes(self.bench)[evalset]
        from probunlearn.data.synthetic import evalset_size

        return evalset_size(evalset, self.config["world"])

    # ---- models -------------------------------------------------------------------------------
    def base_models(self) -> list[str]:
        """Pretrained, target and one reference per forget split (trained, or real models of
        `models`); the references only with experiment `tofu`."""
        if not self.has_authors:
            return []
        refs = (
            [f"reference_{s}" for s in self.config["references"]]
            if "tofu" in self.experiments
            else []
        )
        return ["pretrained", "target", *refs]

    def random_lambdas(self) -> list[tuple[str, float, float]]:
        """Seeded (split, lambda_f in [0, 1], lambda_r = 0) draws (Fig. 5c draws lambda_f only)."""
        spec = self.ul["random_lambdas"]
        rng = random.Random(spec["seed"])
        return [
            (split, round(rng.uniform(0, 1), 3), 0.0)
            for split in spec["splits"]
            for _ in range(spec["draws"])
        ]

    def table1_models(self) -> dict[str, str]:
        """Method -> model name, for Table 1 (Ours = npo_eo, sampled with adaptive temperature)."""
        if "table1" not in self.experiments:
            return {}
        return {
            m: unlearned_name(m, self.t1["split"], self.ul["lambda_f"] if m == "npo_eo" else 0.0)
            for m in self.t1["methods"]
        }

    def lambda_f_models(self, split: str) -> dict[float, str]:
        """lambda_f -> NPO+EO model of the lambda_f sweep on ``split`` (Fig. 4, 5b)."""
        if "lambda_f" not in self.experiments:
            return {}
        return {
            lf: unlearned_name("npo_eo", split, lf) for lf in self.ul["lambda_f_sweep"]["values"]
        }

    def lambda_r_models(self) -> dict[float, str]:
        """lambda_r -> NPO+EO model of the lambda_r sweep (Fig. 5a)."""
        if "lambda_r" not in self.experiments:
            return {}
        sw = self.ul["lambda_r_sweep"]
        return {
            lr: unlearned_name("npo_eo", sw["split"], sw["lambda_f"], lr) for lr in sw["values"]
        }

    def lambda_r_baseline(self) -> str:
        """Plain NPO on the lambda_r sweep's split: Fig. 5a's reference line."""
        return unlearned_name("npo", self.ul["lambda_r_sweep"]["split"])

    def random_models(self) -> dict[tuple[str, float, float], str]:
        """(split, lambda_f, lambda_r) -> model of the random-lambda draws (Fig. 5c, Table 2)."""
        if "random_lambdas" not in self.experiments:
            return {}
        return {
            (s, lf, lr): unlearned_name("npo_eo", s, lf, lr) for s, lf, lr in self.random_lambdas()
        }

    @cached_property
    def saga_model(self) -> str:
        """The model whose saga answers Fig. 3a bounds (a real model, or one unlearned on the saga)."""
        return self.ul["saga_model"] or unlearned_name(self.ul["saga_method"], "saga")

    def unlearned_models(self) -> list[str]:
        """Every model the run unlearns, sorted."""
        names = set(self.table1_models().values()) | set(self.lambda_r_models().values())
        for split in self.ul["lambda_f_sweep"]["splits"]:
            names |= set(self.lambda_f_models(split).values())
        names |= set(self.random_models().values())
        if "saga" in self.experiments and self.saga_model not in self.hub_models:
            names.add(self.saga_model)
        if "lambda_r" in self.experiments:
            names.add(self.lambda_r_baseline())
        for ext in self.extensions.values():
            names |= set(ext.unlearned().values())
        return sorted(names)

    def all_models(self) -> list[str]:
        """Base models, then unlearned ones."""
        return self.base_models() + self.unlearned_models()

    def evaluated_models(self) -> list[str]:
        """Models with greedy answers, log-probabilities and TOFU's metrics (experiment `tofu`)."""
        return self.all_models() if "tofu" in self.experiments else []

    def dcue_models(self) -> list[str]:
        """Unlearned models of the author splits (DCUE needs core spans and a holdout set)."""
        if "dcue" not in self.experiments:
            return []
        skip = {"saga", *corpora()}
        return [m for m in self.unlearned_models() if parse_unlearned(m)["split"] not in skip]

    def postfinetune_models(self) -> list[str]:
        """Table 1 models whose forget quality and DCUE are re-measured after a short fine-tune."""
        if "dcue" not in self.experiments:
            return []
        t1 = self.table1_models()
        return [t1[m] for m in self.config["dcue"]["postfinetune"]["methods"] if m in t1]

    def sequential_models(self) -> dict[str, str]:
        """Label -> model sampled sequentially (experiment `sequential`): the target, NPO, NPO+EO."""
        if "sequential" not in self.experiments:
            return {}
        t1 = self.table1_models()
        out = {"target": "target"}
        labels = method_labels()
        out |= {labels[m]: t1[m] for m in ("npo", "npo_eo") if m in t1}
        return out

    @cached_property
    def fig6_models(self) -> dict[str, str]:
        """Label -> model of Fig. 6 (alignment): the config's models under their own names."""
        return {m: m for m in self.config["alignment"]["models"]}

    def recipe(self, model: str) -> tuple[str, str]:
        """(method, split) of a model for metrics.csv's rows (an attacked model's: its base's)."""
        if is_attacked(model):
            model = parse_attacked(model)[0]
        return model_recipe(model, self.hub_models)

    def run_params(self, threads: int) -> dict:
        """The params every training rule shares; ``device`` only when not "auto" (the jobs'
        default) and ``mixed_precision`` only when on, so a run with neither keeps its params."""
        cfg = self.config
        out = {"seed": cfg["seed"], "template": cfg["template"], "threads": threads}
        if cfg["device"] != "auto":
            out["device"] = cfg["device"]
        if cfg.get("mixed_precision"):
            out["mixed_precision"] = True
        return canon(out)

    def unlearn_hparams(self, model: str) -> dict:
        """Shared unlearning settings and the method's own, with its overrides (others' left out, so
        they retrain nothing here); ``lora`` only when on, so a full run's params do not change."""
        recipe = parse_unlearned(model)
        spec = methods.method(recipe["method"])
        others = set(methods.settings_schema()) - set(spec.settings)
        merged = {**self.ul["hparams"], **self.ul["overrides"].get(recipe["method"], {})}
        out = {k: v for k, v in merged.items() if k not in others}
        if self.ul.get("lora"):
            out["lora"] = canon(self.ul["lora"])
        if self.ul.get("gradient_checkpointing"):  # only when on: a run without it keeps its params
            out["gradient_checkpointing"] = True
        for ext in self.extensions.values():  # a corpus split: its experiment's chunks
            out.update(ext.unlearn_settings(recipe["split"]))
        return canon(out)

    def refusal_inputs(self, model: str) -> dict[str, str]:
        """The refusal answers of a method trained on them (rule refusals), else nothing."""
        if methods.method(parse_unlearned(model)["method"]).needs_refusals:
            return {"refusals": self.paths.data("refusals")}
        return {}

    def idontknow_source(self) -> str | None:
        """A benchmark's own refusal answers in the local copy (TOFU's idontknow.jsonl), when the
        run has one; None = the world's own "I don't know" answers."""
        local = (self.bench or {}).get("local")
        if not local:
            return None
        for b, _ in active(self.bench):
            path = b.refusal_file(Path(local) / b.directory)
            if path is not None:
                return str(path)
        return None

    def template_of(self, model: str) -> str:
        """A model's prompt template: its own (models.<name>.template) or the run's (an attacked
        model's: its base's)."""
        if is_attacked(model):
            model = parse_attacked(model)[0]
        spec = self.hub_models.get(model)
        return spec["template"] if spec and spec.get("template") else self.config["template"]

    # ---- sampling -----------------------------------------------------------------------------
    def sweep_setting(self, model: str, split: str) -> str:
        """Fig. 4's runs at temperature 1: a Table 1 model reuses its 'main' samples (more of them,
        same distribution) instead of being sampled again at the sweep's n."""
        if split == self.t1["split"] and model in self.table1_models().values():
            return "main"
        return "sweep"

    def sampled_runs(self) -> list[tuple[str, str, str]]:
        """Every (model, eval set, sampling setting) the run samples, sorted (attacks' included)."""
        runs = self._paper_runs()
        if self.attacks is not None:
            runs |= self.attacks.sampled_runs(runs)
        return sorted(runs)

    def _paper_runs(self) -> set[tuple[str, str, str]]:
        """The runs of the experiments other than ``attacks``."""
        t1, split = self.table1_models(), self.t1["split"]
        runs = {("target", split, "main")} if t1 else set()
        for model in t1.values():
            runs.add((model, split, "main"))
            if self.t1["sample_utility"]:
                runs |= {(model, s, "utility") for s in UTILITY_SAMPLED}
        if "npo_eo" in t1:
            runs.add((t1["npo_eo"], split, "ats"))
        sw = self.ul["lambda_f_sweep"]
        for s in sw["fig4a_splits"]:
            runs |= {(m, s, self.sweep_setting(m, s)) for m in self.lambda_f_models(s).values()}
        for m in self.lambda_f_models(split).values():
            runs |= {(m, split, f"t{t:g}") for t in sw["temperatures"]}
            runs.add((m, split, self.sweep_setting(m, split)))
        if "lambda_r" in self.experiments:
            for m in [*self.lambda_r_models().values(), self.lambda_r_baseline()]:
                runs |= {(m, s, "utility") for s in UTILITY_SAMPLED}
        for (s, _, _), m in self.random_models().items():
            runs.add((m, s, "sweep"))
        if "saga" in self.experiments:
            runs.add((self.saga_model, "saga", "main"))
        runs |= {(m, split, "seq") for m in self.sequential_models().values()}
        for ext in self.extensions.values():
            runs |= ext.sampled_runs()
        if "alignment" in self.experiments:
            al = self.config["alignment"]
            runs |= {(m, e, "main") for m in al["models"] for e in al["sets"]}
        return runs

    def sampling_setting(self, setting: str) -> dict:
        """A setting of config sampling.settings."""
        settings = self.config["sampling"]["settings"]
        if setting not in settings:
            raise ValueError(
                f"unknown sampling setting {setting!r}; expected one of {sorted(settings)}"
            )
        return settings[setting]

    def sequential_params(self, setting: str) -> dict | None:
        """The sequential block of a sampling setting with the bounds' alpha, or None."""
        seq = self.sampling_setting(setting).get("sequential")
        return None if seq is None else {**seq, "alpha": self.config["bounds"]["alpha"]}

    def _own_benchmark(self, evalset: str) -> Any:
        """The benchmark of the run that yields ``evalset`` (None for the world's sets)."""
        evalset = self._plain_set(evalset)
        for b, block in active(self.bench):
            if evalset in b.sets(block if isinstance(block, Mapping) else {}):
                return b
        return None

    # ---- the evaluation core (probunlearn.core.planner) -----------------------------------------
    def model_pattern(self, rule: str) -> str:
        """The model wildcard of a core rule: unlearned models for DCUE, any name otherwise."""
        return unlearned_pattern() if rule == "dcue" else "[A-Za-z0-9_.-]+"

    def model_info(self, model: str) -> ModelInfo:
        """A model of the run: its directory (made by the run, or fetched), its template and
        recipe; its forget quality on its forget split (Table 1's for a base model) against the
        split's reference; DCUE against the target on its split (a corpus: its question set)."""
        if model not in self._models:
            p = self.paths
            method, split = self.recipe(model)
            forget = self.tofu_forget_split(model)
            try:
                unlearned = parse_unlearned(model)["split"]
            except ValueError:
                unlearned = ""
            corpus = corpora().get(unlearned)
            reference = self.forget_reference(forget) if forget else {}
            if "reference_log" in reference:  # its questions are checked against the split's
                reference["forget_rows"] = p.data(forget)
            self._models[model] = ModelInfo(
                load={"model_path": p.model(model)},
                inputs={"model": p.model(model)},
                template=self.template_of(model),
                method=method,
                split=split,
                metric_split=split,
                logprobs_as=model,
                forget=forget,
                reference=reference,
                utility=True,
                dcue_forget=unlearned if corpus is None else corpus.dcue_forget,
                original="target",
            )
        return self._models[model]

    def set_info(self, evalset: str) -> SetInfo:
        """An eval set or prompt family of the run: rows, its benchmark's answer length, stops and
        scorers (else longer answers for request sets), the request sets' harm judge."""
        if evalset not in self._sets:
            plain, bench = self._plain_set(evalset), self._own_benchmark(evalset)
            own = None if bench is None else bench.max_new_tokens(plain)
            s = self.config["sampling"]
            requests = plain in REQUEST_SETS
            default = s["max_new_tokens_requests"] if requests else s["max_new_tokens"]
            judge = self.config["judge"]
            harm = requests and judge["harm"] == "harmbench"
            family = self.attacks is not None and self.attacks.is_family(evalset)
            self._sets[evalset] = SetInfo(
                rows=self.evalset_rows(evalset),
                max_new_tokens=int(own) if own is not None else default,
                stops=[] if bench is None else bench.stops(plain),
                scorers=None if bench is None else bench.scorers(plain),
                judge={"harm": judge["harm"], "batch_size": judge["batch_size"]} if harm else None,
                harm_threshold=judge["threshold"] if requests else None,
                judge_input={"judge": self.paths.model(judge["model"])} if harm else {},
                template=self.attacks.family_template(evalset) if family else None,
                prompts=bench.name if bench is not None and bench.builds_prompts(plain) else None,
                stop_tokens=[] if bench is None else bench.stop_tokens(plain),
            )
        return self._sets[evalset]

    # ---- TOFU's metrics -----------------------------------------------------------------------
    def tofu_forget_split(self, model: str) -> str:
        """The forget split a model's forget quality is measured on ('' for the saga model)."""
        _, split = self.recipe(model)
        if split == "saga":
            return ""
        return split or self.t1["split"]

    def tofu_params(self) -> dict:
        """The tofu_eval settings that change TOFU's losses and answers."""
        return canon(
            {k: v for k, v in self.config["tofu_eval"].items() if k != "published_retain_logs"}
        )

    def forget_reference(self, split: str) -> dict[str, str]:
        """The forget-quality reference of a split: TOFU's published eval log of its retain model
        (tofu_eval.published_retain_logs), or the log-probabilities of the run's reference."""
        family = self.config["tofu_eval"]["published_retain_logs"]
        if family:
            return {"reference_log": self.paths.tofu_log(family, split)}
        return {"reference": self.paths.logprobs(f"reference_{split}", split)}

    def postfinetune_inputs(self, model: str) -> dict[str, str | list[str]]:
        """Rule postfinetune's inputs (``unrelated``: the fine-tuning data)."""
        p, split = self.paths, parse_unlearned(model)["split"]
        pft = self.config["dcue"]["postfinetune"]
        return {
            **self.forget_reference(split),
            "model": p.model(model),
            "unrelated": [p.data(e) for e in pft["data"]],
            "forget_rows": p.data(split),
            "val_rows": p.data("holdout"),
            "orig_forget": p.logprobs("target", split),
            "orig_val": p.logprobs("target", "holdout"),
        }

    def dcue_parts(self) -> dict[str, tuple[str, str]]:
        """Model -> (its DCUE metrics, its TOFU metrics), for the DCUE-vs-forget-quality table."""
        p = self.paths
        return {m: (p.metrics(m, "dcue"), p.metrics(m, "tofu")) for m in self.dcue_models()}

    def postfinetune_parts(self) -> dict[str, str]:
        """Model -> its metrics after the post-unlearning fine-tune."""
        return {m: self.paths.metrics(m, "postfinetune") for m in self.postfinetune_models()}

    # ---- the metrics table --------------------------------------------------------------------
    def metric_parts(self) -> list[str]:
        """Every per-model metrics file metrics.csv concatenates."""
        p, models = self.paths, self.evaluated_models()
        parts = [p.metrics(m, "greedy") for m in models]
        parts += [p.sampled_metrics(*run) for run in self.sampled_runs()]
        parts += [p.metrics(m, "tofu") for m in models]
        if "dcue" in self.experiments:
            parts += [p.metrics(m, "dcue") for m in self.dcue_models()]
            parts += list(self.postfinetune_parts().values())
        for ext in self.extensions.values():
            parts += ext.metric_parts()
        return parts

    def expected_jobs(self) -> dict[str, int]:
        """Jobs per rule of a run from scratch, for the rules whose count the design decides
        (rules with no job left out), so a test can hold the DAG to the design."""
        runs, evaluated = self.sampled_runs(), self.evaluated_models()
        counts = {
            "sample_shard": sum(len(self.shards(e)) for _, e, _ in runs),
            "score": len(runs),
            "unlearn": len([m for m in self.unlearned_models() if m not in self.hub_models]),
            "greedy_logprobs": len(evaluated),
            "tofu_metrics": len(evaluated),
            "dcue": len(self.dcue_models()),
            "postfinetune": len(self.postfinetune_models()),
        }
        for ext in [*self.extensions.values(), *([self.attacks] if self.attacks else [])]:
            for rule, n in ext.expected_jobs().items():
                counts[rule] = counts.get(rule, 0) + n
        return {rule: n for rule, n in counts.items() if n}

    # ---- figures and tables -------------------------------------------------------------------
    def table1_scores(self) -> dict[str, str]:
        """Label -> scores of Table 1's rows (Ours: NPO+EO sampled with adaptive temperature)."""
        t1, split = self.table1_models(), self.t1["split"]
        labels = method_labels()
        out = {labels[m]: self.paths.scores(t1[m], split, "main") for m in t1}
        if "npo_eo" in t1:
            out["Ours"] = self.paths.scores(t1["npo_eo"], split, "ats")
        return out

    def has_fig3_tofu(self) -> bool:
        """Fig. 3b-f compare GA, GD, NPO and Ours: Table 1 must have those methods."""
        return {"ga", "gd", "npo", "npo_eo"} <= set(self.table1_models())

    def fig3_scores(self) -> dict[str, str]:
        """Label -> scores of Fig. 3b-f's four methods."""
        scores = self.table1_scores()
        return {k: scores[k] for k in FIG3_TOFU}

    def fig4_runs(self) -> dict[str, list]:
        """Fig. 4a: (split, lambda_f, scores); Fig. 4b: (lambda_f, temperature, scores)."""
        sw, split, p = self.ul["lambda_f_sweep"], self.t1["split"], self.paths
        lam = [
            (s, lf, p.scores(m, s, self.sweep_setting(m, s)))
            for s in sw["fig4a_splits"]
            for lf, m in self.lambda_f_models(s).items()
        ]
        models = self.lambda_f_models(split).items()
        temp = [
            (lf, t, p.scores(m, split, f"t{t:g}")) for lf, m in models for t in sw["temperatures"]
        ]
        temp += [(lf, 1.0, p.scores(m, split, self.sweep_setting(m, split))) for lf, m in models]
        return {"lambda_f": lam, "temperature": temp}

    def fig5a_runs(self) -> dict[str, list]:
        """(lambda_r, set, shards) of the lambda_r sweep, and (set, shards) of plain NPO."""
        runs = [
            (lr, e, self.samples_paths(m, e, "utility"))
            for lr, m in self.lambda_r_models().items()
            for e in UTILITY_SAMPLED
        ]
        npo = self.lambda_r_baseline()
        return {
            "runs": runs,
            "npo": [(e, self.samples_paths(npo, e, "utility")) for e in UTILITY_SAMPLED],
        }

    def fig5b_histories(self) -> dict[str, str]:
        """Legend label -> training history of each lambda_f on Table 1's split."""
        return {
            f"λf={lf:g}": self.paths.history(m)
            for lf, m in self.lambda_f_models(self.t1["split"]).items()
        }

    def fig5c_runs(self) -> dict[str, list]:
        """Random draws (split, lambda_f, lambda_r, sampled metrics, TOFU metrics), and the sweeps'
        grid (which lambda, its value, the other lambda held fixed, split, TOFU metrics)."""
        p = self.paths
        rnd = [
            (s, lf, lr, p.sampled_metrics(m, s, "sweep"), p.metrics(m, "tofu"))
            for (s, lf, lr), m in self.random_models().items()
        ]
        # the fixed value is the one the sweep's models were trained with (lambda_r_sweep.lambda_f;
        # lambda_r of the lambda_f sweep)
        sw = self.ul["lambda_r_sweep"]
        grid = [
            ("lambda_r", lr, sw["lambda_f"], sw["split"], p.metrics(m, "tofu"))
            for lr, m in self.lambda_r_models().items()
        ]
        grid += [
            ("lambda_f", lf, parse_unlearned(m)["lambda_r"], s, p.metrics(m, "tofu"))
            for s in self.ul["lambda_f_sweep"]["splits"]
            for lf, m in self.lambda_f_models(s).items()
        ]
        return {"random": rnd, "grid": grid}

    def sequential_bounds(self) -> dict[str, str]:
        """Label -> bounds of the sequentially sampled models."""
        split = self.t1["split"]
        return {
            label: self.paths.bounds(m, split, "seq")
            for label, m in self.sequential_models().items()
        }

    def _outputs(self) -> list[tuple[list[str], list[str]]]:
        """(figures drawn, tables the claims read) of each of the run's experiments, in order."""
        fig3 = self.has_fig3_tofu()
        return [
            (figs, tables)
            for experiment, figs, tables in (
                ("table1", FIG3_NAMES if fig3 else [], ["table1", *(["fig3d"] if fig3 else [])]),
                *EXPERIMENT_OUTPUTS,
            )
            if experiment in self.experiments
        ]

    def figure_names(self) -> list[str]:
        """The paper's figures the run's experiments draw."""
        return [f for figs, _ in self._outputs() for f in figs]

    def table_targets(self) -> list[str]:
        """The paper's tables the run's experiments make (besides metrics.csv and claims.csv)."""
        e, p = self.experiments, self.paths
        return (
            ([p.table("table1")] if "table1" in e else [])
            + ([p.table("table2")] if "random_lambdas" in e else [])
            + ([p.table("dcue_vs_fq")] if "dcue" in e else [])
            + ([p.table("attacks")] if "attacks" in e else [])
            + [t for ext in self.extensions.values() for t in ext.table_targets()]
        )

    def claims_inputs(self) -> dict[str, str]:
        """Table name -> CSV of the tables the claims read, for the run's experiments."""
        names = ["metrics"] if "alignment" in self.experiments else []
        names += [t for _, tables in self._outputs() for t in tables]
        return {n: self.paths.table(n) for n in names}

    def claims_scores(self) -> dict:
        """The scores the claims' intervals read: Table 1's (label -> parquet; also Fig. 3d's) and
        Fig. 4's runs ([split, lambda_f, parquet], [lambda_f, temperature, parquet])."""
        out: dict = {}
        if "table1" in self.experiments:
            out["table1"] = self.table1_scores()
        if "lambda_f" in self.experiments:
            runs = self.fig4_runs()
            out["fig4a"] = [list(r) for r in runs["lambda_f"]]
            out["fig4b"] = [list(r) for r in runs["temperature"]]
        return out

    def claims_score_paths(self) -> list[str]:
        """Every scores parquet of :meth:`claims_scores` (the claims rule's extra inputs)."""
        sc = self.claims_scores()
        paths = list(sc.get("table1", {}).values())
        paths += [r[-1] for k in ("fig4a", "fig4b") for r in sc.get(k, [])]
        return sorted(set(paths))

    def claims_targets(self) -> list[str]:
        """claims.csv where the run makes a table a claim reads."""
        return [self.paths.table("claims")] if self.claims_inputs() else []
