"""The planner of the evaluation core: what the core's rules ask, answered once for both workflows.

A workflow's planner (:class:`probunlearn.dag.Design`, :class:`probunlearn.evaluate.plan.Plan`)
subclasses :class:`CorePlanner` and supplies only what differs, as typed facts: the run's settings
(:class:`RunSettings`), one model (:class:`ModelInfo`), one eval set or prompt family
(:class:`SetInfo`), each core rule's model wildcard, and its ``attacks`` and ``membership`` (None
where off). Every rule param is built here from those facts (:mod:`probunlearn.steps.specs`), so
the same model, eval set and settings get the same samples, scores and bounds in both workflows.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from probunlearn.data.evalsets import UTILITY_SETS
from probunlearn.steps.specs import (
    DcueSpec,
    SamplingSpec,
    ScoringSpec,
    TeacherForcingSpec,
)


@dataclass(frozen=True)
class Setting:
    """A named sampling setting: n samples at a temperature, adaptive (threshold) or sequential."""

    n: int
    temperature: float
    adaptive_threshold: float | None = None
    sequential: Mapping | None = None


@dataclass(frozen=True)
class BenchmarkJob:
    """A benchmark's own job per model in a run (RWKU's MIA statistics): the job, and the evaluate
    choice and sampled set that name it (:meth:`probunlearn.benchmarks.Benchmark.evaluate_job`)."""

    job: Any
    choice: str
    evalset: str


@dataclass(frozen=True)
class RunSettings:
    """What a run decides for all its jobs."""

    threads: int | None
    dtype: str
    device: str
    seed: int
    sampling: Mapping[str, Any]
    """The config's sampling block, read by name for every ``SamplingSpec`` field that no setting,
    eval set or model decides (a new sampling option needs no change here)."""
    settings: Mapping[str, Setting]
    bounds: Mapping[str, Any]
    greedy_sets: Sequence[str]
    logprob_sets: Sequence[str]
    tofu_gen_sets: Sequence[str]
    tofu: Mapping[str, Any]
    greedy_max_new_tokens: int
    greedy_batch_size: int
    max_questions: int
    dcue: Mapping[str, Any] = field(default_factory=dict)
    keep: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per kind of job (``sampling``, ``score``, ``dcue``), the optional params its results were
    made with even at their default."""
    job: BenchmarkJob | None = None
    """A benchmark's own job per model, where the run has one."""

    @property
    def chunk_size(self) -> int:
        """Prompts per sampling job."""
        return int(self.sampling["chunk_size"])


@dataclass(frozen=True)
class ModelInfo:
    """What the core's rules need to know of one model."""

    load: Mapping[str, Any]
    """Where and how its jobs load it (``model_path``; a user's checkpoint: ``revision``, ``base``
    and its content ``identity``)."""
    inputs: Mapping[str, str]
    """The files it is read from where the run makes them (its directory)."""
    template: str
    method: str = ""
    split: str = ""
    metric_split: str = ""
    """The split written into its TOFU and DCUE metric rows."""
    logprobs_as: str = ""
    """The name its log-probabilities are stored under (one checkpoint is teacher-forced once)."""
    forget: str = ""
    """The set whose forget quality is measured ('' where none is)."""
    reference: Mapping[str, str] = field(default_factory=dict)
    """The forget-quality reference's inputs (its log-probabilities, or a published log)."""
    utility: bool = False
    """Whether TOFU's model utility is computed (utility sets' log-probabilities, greedy ROUGE)."""
    dcue_forget: str = ""
    original: str = ""
    """DCUE's forget set and the model before unlearning it is compared with."""


@dataclass(frozen=True)
class SetInfo:
    """What the core's rules need to know of one eval set (or prompt family)."""

    rows: int
    max_new_tokens: int
    stops: Sequence[str] = ()
    scorers: Sequence[str] | None = None
    judge: Mapping | None = None
    """The score job's judge param (``{"harm", "batch_size"}``), or None."""
    harm_threshold: float | None = None
    judge_input: Mapping[str, str] = field(default_factory=dict)
    """The judge classifier as an input file (the paper's workflow makes it)."""
    judge_model: str | None = None
    judge_identity: str | None = None
    """The classifier as a checkpoint path and its identity (a user's)."""
    template: str | None = None
    """A prompt family's own template (None: the model's)."""
    prompts: str | None = None
    """The benchmark that builds each row's prompt from the model's chat template (RWKU)."""
    stop_tokens: Sequence[str] = ()
    """Tokens that end an answer besides eos (a benchmark's own)."""


class CorePlanner(ABC):
    """The evaluation core's planner: the shared answers, from a workflow's hooks."""

    paths: Any
    """Every artifact's path (:class:`probunlearn.dag.Paths`)."""

    # ---- the hooks: what differs between the workflows ------------------------------------------
    @abstractmethod
    def run_settings(self) -> RunSettings:
        """The run's settings (computed once: :attr:`run`)."""

    @abstractmethod
    def model_info(self, model: str) -> ModelInfo:
        """One model."""

    @abstractmethod
    def set_info(self, evalset: str) -> SetInfo:
        """One eval set or prompt family."""

    @abstractmethod
    def model_pattern(self, rule: str) -> str:
        """The model wildcard of a core rule."""

    @cached_property
    def run(self) -> RunSettings:
        """:meth:`run_settings`, computed once."""
        return self.run_settings()

    # ---- a benchmark's own job per model ---------------------------------------------------------
    @property
    def benchmark_job(self) -> Any:
        """The benchmark's job per model (a :class:`probunlearn.benchmarks.ModelJob`), or None."""
        return None if self.run.job is None else self.run.job.job

    def benchmark_job_path(self, model: str) -> str:
        """A model's table of the benchmark's job: ``<job>/<model>.parquet`` under the run."""
        if self.benchmark_job is None:
            raise ValueError("this run has no benchmark job")
        return f"{self.paths.root}{self.benchmark_job.name}/{model}.parquet"

    def benchmark_job_params(self) -> dict:
        """Rule benchmark_job's settings (its batch size, rows per forward pass: the greedy one)."""
        run, job = self.run, self.run.job
        if job is None:
            raise ValueError("this run has no benchmark job")
        return {
            "benchmark": job.choice,
            "evalset": job.evalset,
            "batch_size": int(run.greedy_batch_size),
            "dtype": run.dtype,
            "device": run.device,
            "threads": run.threads,
        }

    # ---- models -----------------------------------------------------------------------------------
    @property
    def threads(self) -> int | None:
        """Threads of a job that runs a model."""
        return self.run.threads

    def model_inputs(self, model: str) -> dict[str, str]:
        """The files a model is read from, where the run makes them."""
        return dict(self.model_info(model).inputs)

    def load_params(self, model: str) -> dict:
        """Where and how a job loads the model."""
        return dict(self.model_info(model).load)

    # ---- sampling ---------------------------------------------------------------------------------
    def shards(self, evalset: str) -> range:
        """Shard indices of an eval set (``chunk_size`` prompts each)."""
        return range(math.ceil(self.set_info(evalset).rows / self.run.chunk_size))

    def samples_paths(self, model: str, evalset: str, setting: str) -> list[str]:
        """Every shard of a (model, eval set, setting)."""
        return [self.paths.samples(model, evalset, setting, k) for k in self.shards(evalset)]

    def sampling_spec(self, model: str, evalset: str, setting: str) -> SamplingSpec:
        """Every value that changes the samples of a (model, eval set, setting); the fields nothing
        else decides come from the run's sampling block."""
        run, s, chosen = self.run, self.set_info(evalset), self.run.settings[setting]
        sequential = None
        if chosen.sequential is not None:
            sequential = {**chosen.sequential, "alpha": run.bounds["alpha"]}
        decided = {
            "n": chosen.n,
            "temperature": chosen.temperature,
            "max_new_tokens": s.max_new_tokens,
            "base_seed": run.seed,
            "template": s.template if s.template is not None else self.model_info(model).template,
            "dtype": run.dtype,
            "device": run.device,
            "threads": run.threads,
            "stops": tuple(s.stops),
            "adaptive_threshold": chosen.adaptive_threshold,
            "sequential": sequential,
            "prompts": s.prompts,
            "stop_tokens": tuple(s.stop_tokens),
        }
        names = {f.name for f in dataclasses.fields(SamplingSpec)} - set(decided)
        return SamplingSpec(**decided, **{k: run.sampling[k] for k in names if k in run.sampling})

    def sampling_params(self, model: str, evalset: str, setting: str) -> dict:
        """Rule sample_shard's params (:meth:`sampling_spec`)."""
        spec = self.sampling_spec(model, evalset, setting)
        return spec.params(self.run.keep.get("sampling", ()))

    # ---- scoring ----------------------------------------------------------------------------------
    def harm_judge(self, evalset: str) -> Mapping | None:
        """The model judge of a request set (HarmBench's classifier), else None."""
        judge = self.set_info(evalset).judge
        return judge if judge is not None and judge["harm"] == "harmbench" else None

    def judge_input(self, evalset: str) -> dict[str, str]:
        """The judge classifier where the run makes it (an input file), else nothing."""
        return dict(self.set_info(evalset).judge_input)

    def score_params(self, model: str, evalset: str, setting: str) -> dict:
        """Rule score's params: the recipe, judge, scorers, bounds, a sequential setting's block."""
        info, s = self.model_info(model), self.set_info(evalset)
        chosen = self.run.settings.get(setting)
        sequential = None
        if chosen is not None and chosen.sequential is not None:
            sequential = {**chosen.sequential, "alpha": self.run.bounds["alpha"]}
        spec = ScoringSpec(
            method=info.method,
            split=info.split,
            judge=s.judge,
            harm_threshold=s.harm_threshold,
            bounds=self.run.bounds,
            scorers=s.scorers,
            sequential=sequential,
            judge_model=s.judge_model,
            judge_identity=s.judge_identity,
        )
        return spec.params(self.run.keep.get("score", ()))

    # ---- teacher forcing, TOFU's metrics, DCUE ----------------------------------------------------
    @property
    def greedy_sets(self) -> list[str]:
        """Sets answered greedily by rule greedy_logprobs."""
        return list(self.run.greedy_sets)

    @property
    def logprob_sets(self) -> list[str]:
        """Sets whose per-token log-probabilities rule greedy_logprobs computes."""
        return list(self.run.logprob_sets)

    @property
    def tofu_gen_sets(self) -> list[str]:
        """Sets answered with TOFU's own greedy decoding (its ROUGE)."""
        return list(self.run.tofu_gen_sets)

    def teacher_forcing_spec(self, model: str) -> TeacherForcingSpec:
        """Rule greedy_logprobs' settings of a model."""
        run, info = self.run, self.model_info(model)
        return TeacherForcingSpec(
            method=info.method,
            split=info.split,
            greedy_sets=list(run.greedy_sets),
            tofu_sets=list(run.tofu_gen_sets),
            tofu=run.tofu,
            template=info.template,
            max_new_tokens=run.greedy_max_new_tokens,
            batch_size=run.greedy_batch_size,
            dtype=run.dtype,
            device=run.device,
            threads=run.threads,
        )

    def greedy_logprobs_params(self, model: str) -> dict:
        """Rule greedy_logprobs' params."""
        return self.teacher_forcing_spec(model).params()

    def tofu_inputs(self, model: str) -> dict[str, str]:
        """The inputs of a model's forget quality and model utility."""
        info, p = self.model_info(model), self.paths
        name = info.logprobs_as or model
        out: dict[str, str] = {}
        if info.utility:
            out.update({s: p.logprobs(name, s) for s in UTILITY_SETS})
            out["greedy"] = p.metrics(name, "greedy")
        if info.forget:
            out["forget"] = p.logprobs(name, info.forget)
            out.update(info.reference)
        return out

    def tofu_metrics_params(self, model: str) -> dict:
        """Rule tofu_metrics' params: the recipe, the forget set, TOFU's question count."""
        info = self.model_info(model)
        return {
            "method": info.method,
            "split": info.metric_split,
            "forget_evalset": info.forget or None,
            "max_questions": self.run.max_questions,
        }

    def dcue_inputs(self, model: str) -> dict[str, str]:
        """The original's and the model's log-probabilities on DCUE's forget and holdout sets."""
        info, p = self.model_info(model), self.paths
        name, original, fset = info.logprobs_as or model, info.original, info.dcue_forget
        return {
            "orig_forget": p.logprobs(original, fset),
            "unl_forget": p.logprobs(name, fset),
            "orig_val": p.logprobs(original, "holdout"),
            "unl_val": p.logprobs(name, "holdout"),
            "forget_rows": p.data(fset),
            "val_rows": p.data("holdout"),
        }

    def dcue_params(self, model: str) -> dict:
        """Rule dcue's params: the recipe and how core spans are found."""
        info = self.model_info(model)
        spec = DcueSpec(method=info.method, split=info.metric_split, **self.run.dcue)
        return spec.params(self.run.keep.get("dcue", ()))
