"""The plan of one ``probunlearn evaluate`` run: its models, data sets and jobs, checked before any job.

The config's ``evaluate:`` section (the CLI writes it to ``<out>/evaluate.yaml``) holds:

- ``models``: name → ``{source, revision, base, role}``; role ``evaluated`` (sampled and scored),
  ``reference`` (retain-only: forget quality, PrivLeak) or ``original`` (before unlearning: DCUE);
  ``source`` a local model or PEFT-adapter directory or a hub id.
- ``data``: a ``benchmark`` choice (with an optional local ``data_dir``) or the user's ``file``
  (with an optional ``holdout``: DCUE's D_v); ``judge`` and ``judge_model`` for requests.
- ``sampling``, ``bounds``, ``dtype``, ``device``, ``threads``, ``profile``; ``attacks``,
  ``membership`` and ``openunlearning`` (the options of the same names); ``report``
  (``target_width``, ``scope``) and ``previous`` (earlier calls' models the summary lists).

:class:`Plan` answers what the Snakefile asks: which sets, how many shards, which models get which
jobs, and every model's identity (:func:`probunlearn.storage.checkpoints.identity`).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

import polars as pl

from probunlearn.benchmarks import Benchmark
from probunlearn.core.planner import (
    BenchmarkJob,
    CorePlanner,
    ModelInfo,
    RunSettings,
    SetInfo,
    Setting,
)
from probunlearn.dag.paths import Paths
from probunlearn.data.evalsets import UTILITY_SETS
from probunlearn.data.userdata import (
    DataError,
    has_truth_ratio,
    read_user_data,
    repeated_questions,
    score_kind,
)
from probunlearn.models import DTYPES
from probunlearn.report.evaluation.summary import DEFAULT_TARGET_WIDTH, small_n_warning
from probunlearn.scoring.base import primary
from probunlearn.steps.specs import SAMPLING_OPTIONS, Option
from probunlearn.storage import checkpoints

ROLES = ("evaluated", "reference", "original")
FLAGS = {"evaluated": "--model", "reference": "--reference", "original": "--original"}
DEFAULT_MAX_NEW_TOKENS = 64
JUDGES = ("refusal", "harmbench")
TOFU_FORMATS = ("phi", "llama2")
SCOPES = ("all", "this")
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
NAME_RULE = "expected letters, digits, '_', '.', '-', not starting with '.' or '-'"
NAME_MAX = 64
"""Characters in a model name: it is a folder name in every path of its results."""
RESERVED = frozenset({"summary", "gen_curves", "comparison", "questions", "models", "config",
                      "openunlearning", "attacks", "membership", "report", "evaluate", "data",
                      "samples", "scores", "bounds", "metrics", "logs", "figures", "benchmarks",
                      "logprobs", "dcue", "greedy", "tofu_answers"})  # fmt: skip
"""Names of the summary's own files and of the folders in ``--out``: no benchmark's table or job
may take one."""
# a name ending in one piece repeated 20 times or more, which Snakemake refuses as a wildcard
# value (its PeriodicityDetector: a sign of a rule that feeds on itself)
PERIODIC = re.compile(r"(.+)\1{19,}$")


def check_name(name: str) -> None:
    """A model name every path and Snakemake can take, else :class:`PlanError` saying why."""
    if not NAME.match(name):
        raise PlanError(f"model name {name!r}: {NAME_RULE}")
    if len(name) > NAME_MAX:
        raise PlanError(
            f"model name {name[:20]!r}...: {len(name)} characters; expected at most {NAME_MAX}"
        )
    if PERIODIC.search(name):
        raise PlanError(
            f"model name {name!r}: ends in one piece repeated 20 times or more, which Snakemake "
            "refuses in a file name; choose another name"
        )


class PlanError(ValueError):
    """An evaluation that cannot run as asked; the message names the model, file or option."""


#: The config's values checked besides the sampling options, in this order.
OPTIONS = (
    Option("base_seed", int, 0, minimum=0, expected="an integer >= 0", flag="--seed"),
    Option("alpha", float, 0.01, maximum=0.5, above=0, expected="a number in (0, 0.5]",
           section="bounds"),
    Option("leak_threshold", float, None, maximum=1, above=0, expected="a number in (0, 1]",
           section="bounds"),
    Option("bins", int, 100, minimum=1, expected="an integer >= 1", section="bounds",
           flag="bounds.bins"),
    Option("rho", float, 2.0, minimum=0, expected="a number >= 0", section="bounds",
           flag="bounds.rho"),
    Option("threads", int, None, minimum=1, expected="an integer >= 1", section=""),
    Option("dtype", str, "float32", choices=DTYPES, section=""),
    Option("tofu_format", str, "phi", choices=TOFU_FORMATS, section=""),
    Option("target_width", float, DEFAULT_TARGET_WIDTH, above=0, below=1,
           expected="a number in (0, 1)", section="report", flag="--target-width"),
    Option("scope", str, "all", choices=SCOPES, section="report", flag="--summary"),
)  # fmt: skip


def check_options(ev: Mapping) -> None:
    """Every number and choice of the config, before any data is read; the message names the
    option and what it expects (a section the config lacks is not checked)."""
    from probunlearn.models.device import DEVICE

    for o in (*SAMPLING_OPTIONS, *OPTIONS):
        if (not o.section or o.section in ev) and (error := o.error(o.value(ev))):
            raise PlanError(error)
    if "sampling" in ev:
        check_template(ev["sampling"]["template"])
    if not isinstance(ev.get("device", "auto"), str) or not DEVICE.match(ev.get("device", "auto")):
        raise PlanError(f"--device {ev['device']!r}: expected auto, cpu, cuda or cuda:N (or mps)")


def check_template(template: object) -> None:
    """A prompt template: ``auto``, ``chat`` or a ``str.format`` text whose one field is
    ``{question}``."""
    from probunlearn.models.files import AUTO, CHAT, DEFAULT_TEMPLATE

    if template in (AUTO, CHAT):
        return
    if not isinstance(template, str):
        raise PlanError(f"--template {template!r}: expected text with {{question}}")
    hint = (
        f"expected a template with {{question}} (e.g. {DEFAULT_TEMPLATE!r}), 'chat' or "
        "'auto'; write a literal brace as {{ or }}"
    )
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise PlanError(f"--template {template!r}: {e}; {hint}") from e
    other = [f for f in fields if f != "question"]
    if other:
        raise PlanError(
            f"--template {template!r}: unknown field {{{other[0]}}}; only {{question}} is filled "
            f"in; {hint}"
        )
    if "question" not in fields:
        raise PlanError(
            f"--template {template!r}: no {{question}} in it, so every prompt would be the same "
            f"text; {hint}"
        )


def looks_like_hub_id(source: object) -> bool:
    """Whether a model source that is no local path may be a hub id (``ORG/NAME`` or ``NAME``),
    not a path that does not exist."""
    text = str(source)
    return not text.startswith((".", "/", "~")) and text.count("/") <= 1


def benchmark_of(choice: str) -> Benchmark:
    """The benchmark that answers ``--benchmark CHOICE`` (a choice of
    :func:`probunlearn.benchmarks.evaluate_choices`, or one a benchmark accepts: RWKU's id lists)."""
    from probunlearn.benchmarks import evaluate_benchmark, help_choices

    bench = evaluate_benchmark(choice)
    if bench is None:
        raise PlanError(f"unknown benchmark {choice!r}; expected one of {help_choices()}")
    return bench


def benchmark_source(choice: str, data_dir: str | None) -> Path | None:
    """The local copy of a benchmark's files under ``data_dir`` (None: from its public source)."""
    return None if data_dir is None else Path(data_dir) / benchmark_of(choice).directory


def load_benchmark(choice: str, data_dir: str | None) -> dict[str, pl.DataFrame]:
    """A built-in benchmark's sets by name (from ``data_dir`` when given, else from the hub)."""
    return benchmark_of(choice).evaluate_sets(choice, benchmark_source(choice, data_dir))


class Plan(CorePlanner):
    """What one evaluation makes, from its config (see the module docstring); the evaluation
    core's planner of ``probunlearn evaluate`` (:class:`probunlearn.core.planner.CorePlanner`)."""

    def __init__(
        self, config: Mapping, *, fingerprint_cache: str | checkpoints.DigestCache | None = None
    ):
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
        if d.get("holdout"):  # its own default ids: no row of it shares an id with the data's
            out["holdout"] = read_user_data(d["holdout"], id_prefix="holdout-row-")
        return out

    @property
    def data_name(self) -> str:
        """The user's set's name: its file's stem (seeded as the paper's workflow seeds that set),
        or ``data`` where the stem is no plain name or is ``holdout``."""
        stem = Path(self.data.get("file") or "data").stem
        return stem if NAME.match(stem) and stem not in ("holdout", ".", "..") else "data"

    @property
    def benchmark(self) -> Benchmark | None:
        """The benchmark of ``--benchmark``, else None (the user's own data)."""
        choice = self.data.get("benchmark")
        return benchmark_of(choice) if choice else None

    @property
    def benchmark_template(self) -> str | None:
        """The benchmark's own prompt template (MUSE's few-shot prefix, bare prompt), else None."""
        bench, choice = self.benchmark, self.data.get("benchmark")
        if bench is None:
            return None
        return bench.evaluate_template(choice, benchmark_source(choice, self.data.get("data_dir")))

    @property
    def template(self) -> str:
        """The prompt template: the benchmark's own where it has one (MUSE's few-shot prefix, bare
        prompt), else the config's (``auto``: the model's chat template where it has one)."""
        own = self.benchmark_template
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

    # ---- the evaluation core (probunlearn.core.planner) -----------------------------------------
    SETTING = "sampled"
    """The one sampling setting of an evaluation (its name in paths and metric rows)."""

    @cached_property
    def paths(self) -> Paths:
        """Every artifact's path, laid out as the paper's workflow lays out a run, in ``--out``."""
        return Paths(".", hub_models=frozenset())

    def run_settings(self) -> RunSettings:
        """The command line's settings for the core's jobs; no greedy set (the samples hold the
        greedy answers); ``stops`` and ``judge_model`` kept in the params (they always were)."""
        from probunlearn.metrics.tofu import TOFU_LIMITS, tofu_tags

        ev, sp = self.ev, self.ev["sampling"]
        # a benchmark's own job per model beside sampling (Benchmark.evaluate_job), or None
        bench = self.benchmark
        job = None if bench is None else bench.evaluate_job(self.sampled_set)
        return RunSettings(
            threads=ev.get("threads"),
            dtype=ev.get("dtype", "float32"),
            device=ev.get("device", "auto"),
            seed=sp["base_seed"],
            sampling=sp,
            settings={self.SETTING: Setting(n=sp["n"], temperature=sp["temperature"])},
            bounds=ev["bounds"],
            greedy_sets=[],
            logprob_sets=self._logprob_sets(),
            tofu_gen_sets=list(UTILITY_SETS) if self.tofu else [],
            tofu=tofu_tags(ev.get("tofu_format", "phi")),
            greedy_max_new_tokens=self.max_new_tokens,
            greedy_batch_size=sp["batch_size"],
            max_questions=TOFU_LIMITS["ds_size"],
            keep={"sampling": frozenset({"stops"}), "score": frozenset({"judge_model"})},
            job=None
            if job is None
            else BenchmarkJob(job, self.data["benchmark"], self.sampled_set),
        )

    def model_pattern(self, rule: str) -> str:
        """The model wildcard of a core rule: the sampled models (the evaluated ones and the
        original) for sampling and scoring, the evaluated ones for their metrics, every checkpoint
        once for teacher forcing (:meth:`teacher_forced`)."""
        if rule == "greedy_logprobs":  # one job per checkpoint, whatever its names
            names = [n for n in self.models if self.teacher_forced(n) == n]
        elif rule in ("sample_shard", "score"):
            names = self.sampled_models() + list(self.attacked_models)
        elif rule == "benchmark_job":
            names = self.sampled_models() if self.benchmark_job is not None else []
        else:
            names = self.names("evaluated")
        return "|".join(re.escape(n) for n in names) or "-"

    def model_info(self, name: str) -> ModelInfo:
        """A user's checkpoint (its identity in the load params reruns its jobs when it changes)
        or an attacked model (rule attack's directory); the sampled set is its forget set."""
        s, tf = self.sampled_set, self.teacher_forced
        if name in self.attacked_models:
            path = self.paths.run_model(name)
            load = {"model_path": path, "revision": None, "base": None,
                    "identity": self.attacks.attacked_identity(name)}  # fmt: skip
            inputs = {"model": path}
        else:
            m = self.models[name]
            load = {"model_path": str(m["source"]), "revision": m.get("revision"),
                    "base": self.base_of(name), "identity": self.identity(name)}  # fmt: skip
            inputs = {}
        reference = {}
        if self.forget_quality:
            reference = {"reference": self.paths.logprobs(tf(self.reference), s)}
        return ModelInfo(
            load=load,
            inputs=inputs,
            template=self.template,
            metric_split=s,
            logprobs_as=tf(name),
            forget=s,
            reference=reference,
            utility=self.tofu,
            dcue_forget=s,
            original=tf(self.original) if self.original else "",
        )

    def set_info(self, evalset: str) -> SetInfo:
        """The sampled set or a prompt family of it (scored as the set), with the command line's
        or the benchmark's answer length, stops, scorers and judge."""
        family = self.attacks is not None and evalset in self.attacks.families
        if family:
            rows = self.attacks.family_rows(evalset)
        else:
            rows = self.sets[evalset if evalset in self.sets else self.sampled_set].height
        scored = self.sampled_set if family else evalset
        judge, bench = self.judge_params(), self.benchmark
        return SetInfo(
            rows=rows,
            max_new_tokens=self.max_new_tokens,
            stops=self.stops,
            scorers=None if bench is None else bench.scorers(scored),
            judge=judge["judge"],
            harm_threshold=judge["harm_threshold"],
            judge_model=judge["judge_model"],
            judge_identity=judge.get("judge_identity"),
            template=self.attacks.family_template(evalset) if family else None,
            prompts=bench.name if bench is not None and bench.builds_prompts(scored) else None,
            stop_tokens=[] if bench is None else bench.stop_tokens(scored),
        )

    def tofu_settings(self) -> dict | None:
        """TOFU's encoding and lengths where TOFU's metrics or DCUE's log-probabilities are
        computed (the effective config's ``tofu``), else None."""
        from probunlearn.metrics.tofu import tofu_tags

        if not self.logprob_sets:
            return None
        fmt = self.ev.get("tofu_format", "phi")
        return {"format": fmt, **tofu_tags(fmt)}

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

    def _logprob_sets(self) -> list[str]:
        """Sets whose teacher-forced log-probabilities every non-sampled job needs."""
        out = []
        if self.forget_quality or self.dcue or self.tofu:
            out.append(self.sampled_set)
        if self.tofu:
            out += list(UTILITY_SETS)
        if self.dcue:
            out.append("holdout")
        return out

    def identity(self, name: str) -> str:
        """The model's identity: its content fingerprint or resolved commit (and its base's)."""
        return self.identities[name]

    @cached_property
    def identities(self) -> dict[str, str]:
        """Every model's identity. The hub revisions are resolved first: one that cannot be fails
        before any local checkpoint's digests are cached (in ``--out``)."""
        known: dict[tuple[str, str | None], str] = {}

        def ident(source, revision) -> str:
            key = (str(source), revision)
            if key not in known:
                known[key] = checkpoints.identity(source, revision, self.fingerprint_cache)
            return known[key]

        pairs = [
            pair
            for name, m in self.models.items()
            for pair in ((m["source"], m.get("revision")), (self.base_of(name), None))
            if pair[0] is not None
        ]
        for source, revision in sorted(pairs, key=lambda p: checkpoints.is_local(p[0])):
            ident(source, revision)
        out = {}
        for name, m in self.models.items():
            out[name] = ident(m["source"], m.get("revision"))
            base = self.base_of(name)
            if base is not None:
                out[name] += " on " + ident(base, None)
        return out

    def base_of(self, name: str) -> str | None:
        """The base model of an adapter (given, or the one it names), else None."""
        m = self.models[name]
        if not checkpoints.is_adapter(m["source"]):
            return None
        return m.get("base") or checkpoints.adapter_base(m["source"])

    # ---- checks -------------------------------------------------------------------------------
    def check(self, *, device: bool = False) -> None:
        """Raise :class:`PlanError` (or :class:`DataError`) for any input the run cannot use: the
        options, the models, the data and how they go together. ``device``: also check that this
        machine has ``--device`` (the CLI's check, unless a profile runs the jobs elsewhere)."""
        check_options(self.ev)
        if device and self.ev.get("profile") is None:
            from probunlearn.models.device import DeviceError, check_device

            try:
                check_device(self.ev.get("device", "auto"))
            except DeviceError as e:
                raise PlanError(str(e)) from e
        self._check_models()
        self._check_data_files()
        self._check_chat_template()
        try:
            self.sets  # noqa: B018 - read now: a file that cannot be read fails here
        except (FileNotFoundError, ValueError) as e:
            if isinstance(e, PlanError | DataError):
                raise
            raise PlanError(f"cannot read the data: {e}") from e
        self._check_judge_and_roles()
        self.check_extras()

    def _check_models(self) -> None:
        """One model to evaluate at least, one reference and one original at most, each name
        usable, each local checkpoint a model or adapter (and its base), each other a hub id."""
        if not self.names("evaluated"):
            raise PlanError("no model to evaluate: give at least one --model NAME=PATH_OR_HUB_ID")
        for role in ("reference", "original"):
            if len(self.names(role)) > 1:
                raise PlanError(f"at most one {role} model, got {self.names(role)}")
        for name, m in self.models.items():
            check_name(name)
            if m["role"] not in ROLES:
                raise PlanError(f"model {name!r}: role {m['role']!r} is not one of {ROLES}")
            if checkpoints.is_local(m["source"]):
                self._check_local_model(name, m)
            elif not looks_like_hub_id(m["source"]):
                raise PlanError(
                    f"model {name!r}: {m['source']} does not exist (and is not a hub id ORG/NAME)"
                )
            elif m.get("base") is not None:
                raise PlanError(f"model {name!r}: --base is for a local adapter directory only")

    def _check_local_model(self, name: str, m: Mapping) -> None:
        try:
            checkpoints.check_local_model(name, m["source"], base=m.get("base"))
            base = self.base_of(name)
            if base is not None and checkpoints.is_local(base):
                checkpoints.check_local_model(f"{name} (base)", base)
        except checkpoints.CheckpointError as e:
            raise PlanError(str(e)) from e
        if base is not None and not checkpoints.is_local(base) and not looks_like_hub_id(base):
            named = checkpoints.adapter_base(m["source"])
            given = "its adapter_config.json" if base == named else "--base"
            raise PlanError(
                f"model {name!r} ({m['source']}): a PEFT adapter whose base {base} does "
                f"not exist (named by {given}); give the base with --base {name}=PATH_OR_ID"
            )

    def _check_data_files(self) -> None:
        """Exactly one of a benchmark and a file; every file and directory named exists."""
        d = self.data
        if bool(d.get("benchmark")) == bool(d.get("file")):
            raise PlanError("give exactly one of --benchmark NAME and --data FILE")
        if d.get("benchmark"):
            benchmark_of(d["benchmark"])
        if d.get("data_dir") and not Path(d["data_dir"]).is_dir():
            raise PlanError(f"--data-dir {d['data_dir']}: no such directory")
        if d.get("holdout") and not d.get("file"):
            raise PlanError("--holdout goes with --data FILE (a benchmark brings its own holdout)")
        for option, key in (("--data", "file"), ("--holdout", "holdout")):
            if d.get(key) and not Path(d[key]).is_file():
                what = "a directory, not a file" if Path(d[key]).is_dir() else "no such file"
                raise PlanError(f"{option} {d[key]}: {what}")
        if d.get("judge_model") and not Path(d["judge_model"]).exists():
            raise PlanError(f"--judge-model {d['judge_model']}: no such directory")

    def _check_judge_and_roles(self) -> None:
        """The judge and the data's kind agree; the reference and the original have what they
        are compared on."""
        d, judge = self.data, self.data.get("judge")
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
        if (
            self.reference is not None
            and not has_truth_ratio(self.sets[self.sampled_set])
            and not self.membership.on  # the reference is PrivLeak's retrained model
        ):
            raise PlanError(
                f"--reference needs the truth ratio: {d.get('file') or d['benchmark']} lacks "
                "'paraphrased_answer' and 'perturbed_answer' in some row (forget quality); or give "
                "--holdout FILE: membership inference's PrivLeak against the reference model"
            )
        if self.original is not None and "holdout" not in self.sets:
            if self.benchmark_job is None:  # a benchmark's job compares it (RWKU's MIA change)
                raise PlanError("--original (DCUE) needs a holdout set: --holdout FILE")

    def check_extras(self) -> None:
        """The attacks, the membership inference and open-unlearning's files (issues 40, 41),
        before any job: a :class:`PlanError` naming the option, the model, the attack or file."""
        try:
            if self.attacks is not None:
                self.attacks.check()
            self.membership.check()
            self.openunlearning_files()
            self._check_benchmark_extras()
        except PlanError:
            raise
        except ValueError as e:
            raise PlanError(str(e)) from e

    def _check_chat_template(self) -> None:
        """``--template chat`` needs a chat template in every model's tokenizer (read from the
        files of a local model; a hub model's is known only once loaded)."""
        from probunlearn.models.files import CHAT, has_chat_template

        if self.ev["sampling"]["template"] != CHAT or self.benchmark_template is not None:
            return
        for name, m in self.models.items():
            if has_chat_template(str(m["source"]), self.base_of(name)) is False:
                raise PlanError(
                    f"--template chat: model {name!r} has no chat template (its tokenizer files "
                    "name none); use --template auto or a template with {question}"
                )

    def warnings(self) -> list[str]:
        """What the run will do that may not be what was meant: one checkpoint under several
        names, repeated questions, no DCUE, n too small for ``--target-width``."""
        out = []
        for name, first in self.same_checkpoint().items():
            role, first_role = self.models[name]["role"], self.models[first]["role"]
            what = {
                "original": "; DCUE and the comparison with the original compare it with itself",
                "reference": "; forget quality compares it with itself",
            }.get(role, "; it is sampled under both names (each its own seeds)")
            out.append(
                f"{FLAGS[role]} {name!r} is the same checkpoint as {FLAGS[first_role]} {first!r} "
                f"({self.identity(name)}): it is teacher-forced once{what}"
            )
        out += self.membership.warnings()
        if self.original is not None and not self.dcue:
            out.append(
                f"--original {self.original!r}: no holdout set, so no DCUE; it is sampled and "
                f"compared with every model (comparison.csv) and in {self.data['benchmark']}'s "
                "own tables"
            )
        for name in [self.sampled_set]:  # the questions sampled (a holdout's texts are not)
            repeated = repeated_questions(self.sets[name])
            if repeated:
                pairs = ", ".join(f"{r} repeats {f}" for r, f in repeated[:5])
                more = f" (and {len(repeated) - 5} more)" if len(repeated) > 5 else ""
                out.append(
                    f"set {name!r}: {len(repeated)} question(s) asked twice ({pairs}{more}): each "
                    "copy is sampled and counts in every average; remove the copies if unintended"
                )
        n, alpha = int(self.ev["sampling"]["n"]), float(self.ev["bounds"]["alpha"])
        small = small_n_warning(n, alpha, self.target_width)
        if small is not None:
            out.append(small)
        return out

    @property
    def target_width(self) -> float:
        """The bound width the small-n warning aims at (``--target-width``)."""
        return float((self.ev.get("report") or {}).get("target_width", DEFAULT_TARGET_WIDTH))

    # ---- attacks, membership inference, open-unlearning's results -------------------------------
    @cached_property
    def attacks(self):
        """The ``--attack`` specs' plan (:class:`probunlearn.evaluate.attacks.EvaluateAttacks`), or
        None without attacks. A bad spec is a :class:`PlanError` naming it."""
        from probunlearn.evaluate.attacks import EvaluateAttacks

        specs = self.ev.get("attacks") or []
        if not specs:
            return None
        try:
            return EvaluateAttacks(self, specs)
        except ValueError as e:
            raise PlanError(str(e)) from e

    @property
    def attacked_models(self) -> dict:
        """Attacked model -> (model, spec): none without attacks."""
        return {} if self.attacks is None else self.attacks.attacked_models

    @cached_property
    def membership(self):
        """The membership inference (:class:`probunlearn.evaluate.membership.EvaluateMembership`;
        :attr:`~probunlearn.evaluate.membership.EvaluateMembership.on` says whether it runs)."""
        from probunlearn.evaluate.membership import EvaluateMembership, parse_statistics

        try:
            asked = parse_statistics(self.ev.get("membership"))
        except ValueError as e:
            raise PlanError(str(e)) from e
        return EvaluateMembership(self, asked)

    def openunlearning_files(self) -> dict[str, list[str]]:
        """Model -> open-unlearning's result files of ``--openunlearning``, each read once here:
        a file of another layout is an error naming it."""
        from probunlearn.report.evaluation.openunlearning import (
            find_openunlearning_files,
            read_openunlearning,
        )

        out = {}
        for name, given in (self.ev.get("openunlearning") or {}).items():
            where = f"--openunlearning {name}={given}"
            if name not in self.models:
                raise PlanError(f"{where}: no model named {name!r} (--model NAME=...)")
            path = Path(given)
            if not path.exists():
                raise PlanError(f"{where}: no such file or directory")
            try:
                files = find_openunlearning_files(path) if path.is_dir() else [path]
                for f in files:
                    read_openunlearning(f)
            except ValueError as e:
                raise PlanError(f"{where}: {e}") from e
            out[name] = [str(f) for f in files]
        return out

    # ---- a benchmark's own job per model and tables (RWKU's MIA statistics and tables) ----------
    def benchmark_tables(self) -> dict[str, str]:
        """The benchmark's own tables of the summary (name -> ``<name>.csv`` in ``--out``;
        :meth:`probunlearn.benchmarks.Benchmark.evaluate_table_names`), none for most."""
        bench = self.benchmark
        names = [] if bench is None else bench.evaluate_table_names(self.sampled_set)
        return {n: f"{n}.csv" for n in names}

    def benchmark_summary(self) -> dict:
        """What the summary hands the benchmark's tables ({} without any): the ``--benchmark``
        choice, the table files, and per model of the summary and the original the files read
        (``samples``, ``scores``, the job's table ``job`` or None)."""
        tables = self.benchmark_tables()
        if not tables:
            return {}
        s, st, job = self.sampled_set, self.SETTING, self.benchmark_job
        names = self.summary_models() + [m for m in [self.original] if m]
        models = {
            m: {
                "samples": self.samples_paths(m, s, st),
                "scores": self.paths.scores(m, s, st),
                "job": self.benchmark_job_path(m) if job is not None else None,
            }
            for m in dict.fromkeys(names)
        }
        return {"benchmark": self.data["benchmark"], "tables": tables, "models": models}

    def benchmark_summary_inputs(self) -> list[str]:
        """Every file :meth:`benchmark_summary` names of the models."""
        return [
            f
            for m in self.benchmark_summary().get("models", {}).values()
            for f in [*m["samples"], m["scores"], *([m["job"]] if m["job"] else [])]
        ]

    def _check_benchmark_extras(self) -> None:
        """The benchmark's job reads sets this run writes, under a plain name; its tables are plain
        names that no file of the summary has."""
        job = self.benchmark_job
        if job is not None:
            if not NAME.match(job.name) or job.name in RESERVED:
                raise PlanError(f"benchmark job {job.name!r}: expected a plain name of its own")
            missing = [x for x in job.sets if x not in self.sets]
            if missing:
                raise PlanError(
                    f"benchmark job {job.name!r} reads set(s) {missing} that "
                    f"{self.data['benchmark']} does not bring (it brings {list(self.sets)})"
                )
        for name in self.benchmark_tables():
            if not NAME.match(name) or name in RESERVED:
                raise PlanError(
                    f"{self.data['benchmark']}: table {name!r} of its summary: expected a plain "
                    f"name, none of {sorted(RESERVED)}"
                )

    # ---- one checkpoint, several names ----------------------------------------------------------
    def same_checkpoint(self) -> dict[str, str]:
        """Each model that is the same checkpoint (identity) as an earlier-named one → that one."""
        first: dict[str, str] = {}
        out = {}
        for name in self.models:
            ident = self.identity(name)
            if ident in first:
                out[name] = first[ident]
            else:
                first[ident] = name
        return out

    def teacher_forced(self, name: str) -> str:
        """The name under which a model is teacher-forced: the first name of its checkpoint."""
        return self.same_checkpoint().get(name, name)

    # ---- the summary: this call's models and earlier ones --------------------------------------
    @property
    def scope(self) -> str:
        """``all`` (every model evaluated in ``--out`` so far) or ``this`` (this call's)."""
        return (self.ev.get("report") or {}).get("scope", "all")

    @property
    def previous(self) -> dict[str, dict]:
        """Models of earlier calls that the summary lists (see the module docstring)."""
        if self.scope == "this":
            return {}
        prev = self.ev.get("previous") or {}
        return {n: dict(m) for n, m in prev.items() if n not in self.models}

    def summary_models(self) -> list[str]:
        """The models the summary lists: earlier calls' (:attr:`previous`), then this call's."""
        return list(self.previous) + self.names("evaluated")

    def summary_specs(self) -> dict[str, dict]:
        """Role, source, revision, base and identity of every model of this call and of the
        earlier ones the summary lists, in the summary's order (this call's others after)."""
        out = {n: dict(m) for n, m in self.previous.items()}
        for n, m in self.models.items():
            out[n] = {
                "role": m["role"],
                "source": str(m["source"]),
                "revision": m.get("revision"),
                "base": self.base_of(n),
                "identity": self.identity(n),
            }
        return out

    def bindings(self) -> dict[str, dict]:
        """Each model name of this call and the checkpoint it names (source, revision, base):
        what the output directory binds the name to (:mod:`probunlearn.storage.outdir`)."""
        return {
            n: {"source": str(m["source"]), "revision": m.get("revision"), "base": self.base_of(n)}
            for n, m in self.models.items()
        }

    def results_key(self) -> str:
        """A digest of everything an evaluated model's results depend on besides the model. Equal
        keys: an earlier call's results of a model are what this call would make of it."""
        any_model, s = self.names("evaluated")[0], self.sampled_set  # the same for every model
        parts = {
            "data": self.data_identity(),
            "set": s,
            "sampling": self.sampling_params(any_model, s, self.SETTING),
            "score": self.score_params(any_model, s, self.SETTING),
            "extra": [self.tofu, self.forget_quality, self.dcue],
            "reference": self.identity(self.reference) if self.forget_quality else None,
            "original": self.identity(self.original) if self.original else None,
            "evaluate": self.greedy_logprobs_params(any_model) if self.logprob_sets else None,
        }
        if self.benchmark_job is not None:  # only then: the keys of other runs stay as they were
            job = self.benchmark_job
            parts["benchmark_job"] = [job.name, list(job.sets), self.benchmark_job_params()]
        text = json.dumps(parts, sort_keys=True, default=str)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def result_paths(self, name: str) -> list[str]:
        """Every file (relative to ``--out``) the summary reads of an evaluated model."""
        p, s, st = self.paths, self.sampled_set, self.SETTING
        return [
            p.scores(name, s, st),
            p.bounds(name, s, st),
            p.sampled_metrics(name, s, st),
            *self.samples_paths(name, s, st),
            *self.extra_metrics(name),
            *self.breakdown_paths(name),
            *([self.benchmark_job_path(name)] if self.benchmark_job is not None else []),
        ]

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

    def breakdown_paths(self, name: str) -> list[str]:
        """TOFU's metric files of a model for the report's breakdown: its ``tofu`` metrics and,
        with TOFU's utility sets, the ROUGE of its greedy answers per set."""
        out = [self.paths.metrics(name, "tofu")] if (self.tofu or self.forget_quality) else []
        if self.tofu:
            out.append(self.paths.metrics(self.teacher_forced(name), "greedy"))
        return out
