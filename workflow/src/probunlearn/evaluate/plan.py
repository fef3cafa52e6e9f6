"""The plan of one ``probunlearn evaluate`` run: its models, data sets and jobs, checked before any job.

The config (``evaluate:`` section, written by the CLI to ``<out>/evaluate.yaml``) holds:

- ``models``: name → ``{source, revision, base, role}``; role ``evaluated`` (sampled and scored),
  ``reference`` (a retain-only model: forget quality) or ``original`` (the model before unlearning:
  DCUE). ``source`` is a local model or PEFT-adapter directory or a hub id; ``base`` the adapter's base.
- ``data``: ``benchmark`` (a choice of the benchmark registry: ``tofu:forget01|05|10``, ``hp_qa``,
  ``jbb``, ``muse:knowmem_forget``, ... or a registered benchmark's) with an optional ``data_dir``
  (a local copy laid out like ../shared/data), or ``file`` (the user's question set) with an optional
  ``holdout`` file (DCUE's D_v); ``judge`` (``refusal`` or ``harmbench``, for requests) and
  ``judge_model``.
- ``sampling``, ``bounds``, ``dtype``, ``device``, ``threads``.

:class:`Plan` answers what the Snakefile asks: which sets, how many shards, which models get which jobs,
and every model's identity (:func:`probunlearn.storage.checkpoints.identity`: adapter and base together).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

import polars as pl

from probunlearn.benchmarks import Benchmark, evaluate_choices
from probunlearn.dag.design import canon
from probunlearn.dag.paths import Paths
from probunlearn.data.evalsets import UTILITY_SETS
from probunlearn.evaluate.userdata import DataError, has_truth_ratio, read_user_data, score_kind
from probunlearn.scoring.base import primary
from probunlearn.storage import checkpoints

ROLES = ("evaluated", "reference", "original")
DEFAULT_MAX_NEW_TOKENS = 64
JUDGES = ("refusal", "harmbench")
NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class PlanError(ValueError):
    """An evaluation that cannot run as asked; the message names the model, file or option."""


def benchmark_of(choice: str) -> Benchmark:
    """The benchmark that answers ``--benchmark CHOICE`` (:func:`probunlearn.benchmarks.evaluate_choices`)."""
    choices = evaluate_choices()
    if choice not in choices:
        raise PlanError(f"unknown benchmark {choice!r}; expected one of {sorted(choices)}")
    return choices[choice]


def benchmark_source(choice: str, data_dir: str | None) -> Path | None:
    """The local copy of a benchmark's files under ``data_dir`` (None: from its public source)."""
    return None if data_dir is None else Path(data_dir) / benchmark_of(choice).directory


def load_benchmark(choice: str, data_dir: str | None) -> dict[str, pl.DataFrame]:
    """A built-in benchmark's sets by name (from ``data_dir`` when given, else from the hub)."""
    return benchmark_of(choice).evaluate_sets(choice, benchmark_source(choice, data_dir))


class Plan:
    """What one evaluation makes, from its config (see the module docstring)."""

    def __init__(self, config: Mapping, *, fingerprint_cache: str | None = None):
        self.config = config
        self.ev = config["evaluate"]
        self.models: dict[str, dict] = dict(self.ev["models"])
        self.data = self.ev["data"]
        self.fingerprint_cache = fingerprint_cache

    # ---- data ---------------------------------------------------------------------------------
    @cached_property
    def sets(self) -> dict[str, pl.DataFrame]:
        """Every set the run writes (the sampled one first)."""
        d = self.data
        if d.get("benchmark"):
            return load_benchmark(d["benchmark"], d.get("data_dir"))
        name = self.data_name
        out = {name: read_user_data(d["file"])}
        if score_kind(out[name]) == "requests":  # scored by the harm judge
            out[name] = out[name].with_columns(pl.lit("harmful").alias("kind"))
        if d.get("holdout"):
            out["holdout"] = read_user_data(d["holdout"])
        return out

    @property
    def data_name(self) -> str:
        """The name of the user's question set: its file's stem (``forget10.parquet``: forget10,
        so that the same model on the same set is seeded as in the paper's workflow), or ``data``
        where the stem is no plain name or is ``holdout``."""
        stem = Path(self.data.get("file") or "data").stem
        return stem if NAME.match(stem) and stem not in ("holdout", ".", "..") else "data"

    @property
    def benchmark(self) -> Benchmark | None:
        """The benchmark of ``--benchmark``, else None (the user's own data)."""
        choice = self.data.get("benchmark")
        return benchmark_of(choice) if choice else None

    @property
    def template(self) -> str:
        """The prompt template: the benchmark's own where it has one (MUSE's few-shot prefix, bare
        prompt), else the config's (``auto``: the model's chat template where it has one)."""
        bench, choice = self.benchmark, self.data.get("benchmark")
        own = None
        if bench is not None:
            own = bench.evaluate_template(
                choice, benchmark_source(choice, self.data.get("data_dir"))
            )
        return self.ev["sampling"]["template"] if own is None else own

    @property
    def max_new_tokens(self) -> int:
        """New tokens per answer: the config's, else the benchmark's for its set (MUSE: 32 / 128),
        else 64."""
        given = self.ev["sampling"].get("max_new_tokens")
        if given is not None:
            return int(given)
        own = None if self.benchmark is None else self.benchmark.max_new_tokens(self.sampled_set)
        return DEFAULT_MAX_NEW_TOKENS if own is None else int(own)

    @property
    def stops(self) -> list[str]:
        """Strings an answer is cut at before scoring (the benchmark's: MUSE's knowmem)."""
        return [] if self.benchmark is None else self.benchmark.stops(self.sampled_set)

    # ---- the evaluation core (probunlearn.core) -------------------------------------------------
    SETTING = "sampled"
    """The one sampling setting of an evaluation (its name in paths and metric rows)."""

    @cached_property
    def paths(self) -> Paths:
        """Every artifact's path, laid out as the paper's workflow lays out a run, in ``--out``."""
        return Paths(".", hub_models=frozenset())

    @property
    def threads(self) -> int | None:
        """Threads of a job that runs a model."""
        return self.ev["threads"]

    def model_pattern(self, rule: str) -> str:
        """The model wildcard of a core rule: the sampled models (the evaluated ones and the
        original) for sampling and scoring, the evaluated ones for their metrics, every model for
        teacher forcing (evaluate)."""
        if rule == "evaluate":
            names = list(self.models)
        elif rule in ("sample_shard", "score"):
            names = self.sampled_models()
        else:
            names = self.names("evaluated")
        return "|".join(re.escape(n) for n in names) or "-"

    def model_inputs(self, name: str) -> dict[str, str]:
        """A model is a checkpoint given by path or hub id, not a file this run makes: its identity
        (in :meth:`load_params`) reruns its jobs when it changes."""
        return {}

    def sampling_params(self, model: str, evalset: str, setting: str) -> dict:
        """What changes a sample shard, besides the model (the rule's params)."""
        return canon(
            {
                **self.ev["sampling"],
                "template": self.template,
                "max_new_tokens": self.max_new_tokens,
                "stops": self.stops,
                **{k: self.ev[k] for k in ("dtype", "device", "threads")},
            }
        )

    def samples_paths(self, model: str, evalset: str, setting: str) -> list[str]:
        """Every shard of a model's samples."""
        return [self.paths.samples(model, evalset, setting, k) for k in self.shards()]

    def harm_judge(self, evalset: str) -> dict | None:
        """The model judge of requests (HarmBench's classifier), else None (the refusal judge)."""
        judge = self.judge_params()["judge"]
        return judge if judge is not None and judge["harm"] == "harmbench" else None

    def judge_input(self, evalset: str) -> dict[str, str]:
        """No judge is an input file: the classifier's path and identity are params."""
        return {}

    def score_params(self, model: str, evalset: str, setting: str) -> dict:
        """The score job's settings: the judge, the bounds, the benchmark's scorers where its spec
        names them, no recipe (a user's model)."""
        scorers = None if self.benchmark is None else self.benchmark.scorers(evalset)
        return canon(
            ({"scorers": scorers} if scorers is not None else {})
            | {"method": "", "split": "", **self.judge_params(), **self.ev["bounds"]}
        )

    greedy_sets: list[str] = []
    """The paper's greedy evaluation is not made here (the samples hold every greedy answer)."""

    def evaluate_params(self, name: str) -> dict:
        """The evaluate (teacher-forcing) job's settings: TOFU's encoding of ``tofu_format`` and
        lengths, TOFU's own greedy answers on its utility sets where the data has them."""
        from probunlearn.metrics.tofu import tofu_tags

        return canon(
            {
                "method": "",
                "split": "",
                "greedy_sets": [],
                "tofu_sets": self.tofu_gen_sets,
                "tofu": tofu_tags(self.ev.get("tofu_format", "phi")),
                "template": self.template,
                "max_new_tokens": self.max_new_tokens,
                "batch_size": self.ev["sampling"]["batch_size"],
                **{k: self.ev[k] for k in ("dtype", "device", "threads")},
            }
        )

    def tofu_metrics_params(self, name: str) -> dict:
        """TOFU's metrics of a model on the sampled set, over TOFU's first 300 questions."""
        from probunlearn.metrics.tofu import TOFU_LIMITS

        return {
            "method": "",
            "split": self.sampled_set,
            "forget_evalset": self.sampled_set,
            "max_questions": TOFU_LIMITS["ds_size"],
        }

    def dcue_params(self, name: str) -> dict:
        """DCUE of a model against the original, on the sampled set against the holdout set."""
        return {"method": "", "split": self.sampled_set}

    @property
    def sampled_set(self) -> str:
        """The set that is sampled and bounded."""
        return next(iter(self.sets))

    @property
    def tofu(self) -> bool:
        """Whether TOFU's model utility is computed: the data brings TOFU's utility sets."""
        return all(s in self.sets for s in UTILITY_SETS)

    @property
    def kind(self) -> str:
        """``answer``, ``keywords`` or ``requests`` (:func:`score_kind` of the sampled set)."""
        return score_kind(self.sets[self.sampled_set])

    @property
    def primary_score(self) -> str:
        """The score the figures show: the benchmark's primary scorer, else the scorer that is
        primary for the kind of data (:func:`probunlearn.scoring.base.primary`)."""
        own = None if self.benchmark is None else self.benchmark.primary_scorer
        return own or primary(self.kind)

    @property
    def judge(self) -> str | None:
        """The harm judge of a request set (refusal by default), else None."""
        if self.kind != "requests":
            return None
        return self.data.get("judge") or "refusal"

    def shards(self) -> list[int]:
        """Shard indices of the sampled set."""
        rows = self.sets[self.sampled_set].height
        return list(range(math.ceil(rows / int(self.ev["sampling"]["chunk_size"]))))

    # ---- models -------------------------------------------------------------------------------
    def names(self, role: str) -> list[str]:
        """Models of one role, in the order given."""
        return [n for n, m in self.models.items() if m["role"] == role]

    @property
    def reference(self) -> str | None:
        refs = self.names("reference")
        return refs[0] if refs else None

    @property
    def original(self) -> str | None:
        orig = self.names("original")
        return orig[0] if orig else None

    def sampled_models(self) -> list[str]:
        """Models that are sampled and scored: the evaluated ones, and the original (if given),
        which every evaluated model is compared with (``comparison.csv``)."""
        return self.names("evaluated") + ([self.original] if self.original else [])

    @property
    def forget_quality(self) -> bool:
        """Whether forget quality can be computed (a reference and truth-ratio columns)."""
        return self.reference is not None and has_truth_ratio(self.sets[self.sampled_set])

    @property
    def dcue(self) -> bool:
        """Whether DCUE can be computed (an original model and a holdout set)."""
        return self.original is not None and "holdout" in self.sets

    @property
    def logprob_sets(self) -> list[str]:
        """Sets whose teacher-forced log-probabilities every non-sampled job needs."""
        out = []
        if self.forget_quality or self.dcue or self.tofu:
            out.append(self.sampled_set)
        if self.tofu:
            out += list(UTILITY_SETS)
        if self.dcue:
            out.append("holdout")
        return out

    @property
    def tofu_gen_sets(self) -> list[str]:
        """Sets answered with TOFU's own greedy decoding (its ROUGE, for model utility)."""
        return list(UTILITY_SETS) if self.tofu else []

    def identity(self, name: str) -> str:
        """The model's identity: its content fingerprint or resolved commit (and its base's)."""
        return self.identities[name]

    @cached_property
    def identities(self) -> dict[str, str]:
        out = {}
        for name, m in self.models.items():
            ident = checkpoints.identity(m["source"], m.get("revision"), self.fingerprint_cache)
            base = self.base_of(name)
            if base is not None:
                ident += " on " + checkpoints.identity(base, None, self.fingerprint_cache)
            out[name] = ident
        return out

    def base_of(self, name: str) -> str | None:
        """The base model of an adapter (given, or the one it names), else None."""
        m = self.models[name]
        if not checkpoints.is_adapter(m["source"]):
            return None
        return m.get("base") or checkpoints.adapter_base(m["source"])

    def load_params(self, name: str) -> dict:
        """Where and how to load a model (the sample and log-probability jobs' arguments)."""
        m = self.models[name]
        return {
            "model_path": str(m["source"]),
            "revision": m.get("revision"),
            "base": self.base_of(name),
            "identity": self.identity(name),
        }

    # ---- checks -------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`PlanError` (or :class:`DataError`) for any input the run cannot use."""
        if not self.names("evaluated"):
            raise PlanError("no model to evaluate: give at least one --model NAME=PATH_OR_HUB_ID")
        for role in ("reference", "original"):
            if len(self.names(role)) > 1:
                raise PlanError(f"at most one {role} model, got {self.names(role)}")
        for name, m in self.models.items():
            if not NAME.match(name):
                raise PlanError(f"model name {name!r}: use letters, digits, '_', '.', '-' only")
            if m["role"] not in ROLES:
                raise PlanError(f"model {name!r}: role {m['role']!r} is not one of {ROLES}")
            if checkpoints.is_local(m["source"]):
                try:
                    checkpoints.check_local_model(name, m["source"], base=m.get("base"))
                except checkpoints.CheckpointError as e:
                    raise PlanError(str(e)) from e
                base = self.base_of(name)
                if base is not None and checkpoints.is_local(base):
                    try:
                        checkpoints.check_local_model(f"{name} (base)", base)
                    except checkpoints.CheckpointError as e:
                        raise PlanError(str(e)) from e
            elif str(m["source"]).startswith((".", "/", "~")) or str(m["source"]).count("/") > 1:
                raise PlanError(
                    f"model {name!r}: {m['source']} does not exist (and is not a hub id ORG/NAME)"
                )
            elif m.get("base") is not None:
                raise PlanError(f"model {name!r}: --base is for a local adapter directory only")
        d = self.data
        if bool(d.get("benchmark")) == bool(d.get("file")):
            raise PlanError("give exactly one of --benchmark NAME and --data FILE")
        if d.get("benchmark"):
            benchmark_of(d["benchmark"])
        if d.get("data_dir") and not Path(d["data_dir"]).is_dir():
            raise PlanError(f"--data-dir {d['data_dir']}: no such directory")
        if d.get("holdout") and not d.get("file"):
            raise PlanError("--holdout goes with --data FILE (a benchmark brings its own holdout)")
        try:
            sets = self.sets
        except (FileNotFoundError, ValueError) as e:
            if isinstance(e, PlanError | DataError):
                raise
            raise PlanError(f"cannot read the data: {e}") from e
        judge = d.get("judge")
        if judge is not None and judge not in JUDGES:
            raise PlanError(f"--judge {judge!r}: expected one of {JUDGES}")
        if judge is not None and self.kind != "requests":
            raise PlanError(
                f"--judge {judge} scores requests (data without 'answer' and 'keywords'), but "
                f"{self.data.get('file') or self.data['benchmark']} has {self.kind!r}: "
                "drop --judge, or the answer/keyword columns"
            )
        if judge == "harmbench" and not d.get("judge_model"):
            raise PlanError("--judge harmbench needs --judge-model DIR (the classifier)")
        if self.kind == "requests" and d.get("file") and judge is None:
            raise PlanError(
                f"{d['file']}: no column 'answer' or 'keywords' to score against; give them, "
                "or --judge refusal|harmbench to score the answers as requests"
            )
        if self.reference is not None and not has_truth_ratio(sets[self.sampled_set]):
            raise PlanError(
                f"--reference needs the truth ratio: {d.get('file') or d['benchmark']} lacks "
                "'paraphrased_answer' and 'perturbed_answer' in some row"
            )
        if self.original is not None and "holdout" not in sets:
            raise PlanError("--original (DCUE) needs a holdout set: --holdout FILE")

    # ---- job inputs ---------------------------------------------------------------------------
    def data_identity(self) -> str:
        """The identity of the data: the content of the user's files or of the benchmark's
        directory (from the hub: the benchmark's name, its loaders pin the revision)."""
        d, cache = self.data, self.fingerprint_cache
        if d.get("file"):
            parts = [checkpoints.directory_fingerprint(d["file"], cache)]
            if d.get("holdout"):
                parts.append(checkpoints.directory_fingerprint(d["holdout"], cache))
            return " ".join(parts)
        if d.get("data_dir"):
            source = benchmark_source(d["benchmark"], d["data_dir"])
            return checkpoints.directory_fingerprint(source, cache)
        return f"hub:{d['benchmark']}"

    def judge_params(self) -> dict:
        """The score job's judge settings (requests only; else all None)."""
        judge = self.judge
        if judge is None:
            return {"judge": None, "judge_model": None, "harm_threshold": None}
        model = self.data.get("judge_model") if judge == "harmbench" else None
        return {
            "judge": {"harm": judge, "batch_size": int(self.data.get("judge_batch_size") or 16)},
            "judge_model": model,
            "judge_identity": None if model is None else checkpoints.identity(model),
            "harm_threshold": float(self.data.get("judge_threshold") or 0.5),
        }

    def extra_metrics(self, name: str) -> list[str]:
        """TOFU's and DCUE's metric files of an evaluated model (what its summary joins)."""
        out = []
        if self.tofu or self.forget_quality:
            out.append(self.paths.metrics(name, "tofu"))
        if self.dcue:
            out.append(self.paths.metrics(name, "dcue"))
        return out

    def tofu_inputs(self, name: str) -> dict[str, str]:
        """Inputs of a model's forget quality (with a reference) and model utility (TOFU)."""
        p, s = self.paths, self.sampled_set
        out = {"forget": p.logprobs(name, s)}
        if self.forget_quality:
            out["reference"] = p.logprobs(self.reference, s)
        if self.tofu:
            out.update({u: p.logprobs(name, u) for u in UTILITY_SETS})
            out["greedy"] = p.metrics(name, "greedy")
        return out

    def dcue_inputs(self, name: str) -> dict[str, str]:
        """Inputs of DCUE: the original's and the model's log-probabilities on both sets."""
        p, s, o = self.paths, self.sampled_set, self.original
        return {
            "orig_forget": p.logprobs(o, s),
            "unl_forget": p.logprobs(name, s),
            "orig_val": p.logprobs(o, "holdout"),
            "unl_val": p.logprobs(name, "holdout"),
            "forget_rows": p.data(s),
            "val_rows": p.data("holdout"),
        }
