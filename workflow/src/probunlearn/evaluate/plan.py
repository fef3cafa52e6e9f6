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
        out = {"data": read_user_data(d["file"])}
        if score_kind(out["data"]) == "requests":  # scored by the harm judge
            out["data"] = out["data"].with_columns(pl.lit("harmful").alias("kind"))
        if d.get("holdout"):
            out["holdout"] = read_user_data(d["holdout"])
        return out

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

    def sampling_params(self) -> dict:
        """What changes a sample shard, besides the model (the rule's params)."""
        return {
            **self.ev["sampling"],
            "template": self.template,
            "max_new_tokens": self.max_new_tokens,
            "stops": self.stops,
        }

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

    def reference_sets(self) -> list[str]:
        """Sets the reference and original models need log-probabilities on (forget quality: the
        sampled set; DCUE: it and the holdout set)."""
        return [self.sampled_set] + (["holdout"] if self.dcue else [])

    def tofu_gen_sets(self) -> list[str]:
        """Sets answered with TOFU's own greedy decoding (its ROUGE, for model utility)."""
        return list(UTILITY_SETS) if self.tofu else []

    def teacher_models(self) -> list[str]:
        """Evaluated models that need log-probabilities (all, when a metric uses them)."""
        return self.names("evaluated") if self.logprob_sets() else []

    def reference_models(self) -> list[str]:
        """The reference (forget quality) and original (DCUE) models that are used."""
        return [self.reference] * self.forget_quality + [self.original] * self.dcue

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

    def tofu_inputs(self, name: str) -> dict[str, str]:
        """Inputs of a model's forget quality (with a reference) and model utility (TOFU)."""
        out = {"forget": f"logprobs/{name}/{self.sampled_set}.parquet"}
        if self.forget_quality:
            out["reference"] = f"logprobs/{self.reference}/{self.sampled_set}.parquet"
        if self.tofu:
            out.update({s: f"logprobs/{name}/{s}.parquet" for s in UTILITY_SETS})
            out["greedy"] = f"tofu/{name}/greedy.csv"
        return out

    def dcue_inputs(self, name: str) -> dict[str, str]:
        """Inputs of DCUE: the original's and the model's log-probabilities on both sets."""
        s, o = self.sampled_set, self.original
        return {
            "orig_forget": f"logprobs/{o}/{s}.parquet",
            "unl_forget": f"logprobs/{name}/{s}.parquet",
            "orig_val": f"logprobs/{o}/holdout.parquet",
            "unl_val": f"logprobs/{name}/holdout.parquet",
            "forget_rows": f"sets/{s}.parquet",
            "val_rows": "sets/holdout.parquet",
        }
