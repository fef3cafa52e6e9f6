"""The benchmark registry: what a benchmark is, and :data:`BENCHMARKS`, every one of them.

A :class:`Benchmark` is one folder of this package (or of another distribution, registered through
an entry point of the group ``probunlearn.benchmarks``; docs/extending.md) holding

- ``spec.yaml``, the benchmark as data: its title, licence, where it comes from (hub repository and
  revision, or a pinned URL), its files with the rows (or checksum) that verify them, the files a
  run fetches by default, the eval sets it yields, their answer lengths and stop strings, its
  primary scorer, the schema of its block under the config's ``benchmarks:`` (and of any config
  section of its own);
- its loader (the rows of each eval set in the shared row format, :mod:`probunlearn.data.rows`);
- optionally an experiment of its own (rules, scripts, a table; MUSE-News's), offered to the
  workflow through :meth:`Benchmark.experiment_design` and :meth:`Benchmark.rules_file`;
- optionally its own numbers in ``probunlearn evaluate``: a job per model beside sampling
  (:meth:`Benchmark.evaluate_job`, :meth:`Benchmark.run_evaluate_job`: RWKU's MIA statistics) and
  tables of the summary step (:meth:`Benchmark.evaluate_table_names`,
  :meth:`Benchmark.evaluate_tables`: RWKU's per level, fact-family and MIA tables), written beside
  ``summary.csv`` and shown as a section of the report.

The workflow's DAG, the downloads, ``probunlearn evaluate`` and the config schema ask the registry;
no module outside a benchmark's folder imports it or branches on its name.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from probunlearn.registry import Registry

if TYPE_CHECKING:
    import polars as pl

    from probunlearn.data.downloads import Dataset


@dataclass(frozen=True)
class Corpus:
    """A raw-text forget split a benchmark offers for unlearning (MUSE-News's ``news``): its retain
    corpus, and the question set DCUE scores as its D_f."""

    split: str
    retain: str
    dcue_forget: str


@dataclass(frozen=True)
class ModelJob:
    """A job per model that a benchmark adds to ``probunlearn evaluate`` beside sampling: the model
    loaded once and run on some of the benchmark's eval sets (RWKU: teacher forcing of its MIA
    texts), one table per model, ``<name>/<model>.parquet`` under ``--out``
    (:meth:`Benchmark.run_evaluate_job`), read by :meth:`Benchmark.evaluate_tables`."""

    name: str
    """The job's name: the folder of its tables (a plain name, no ``/``)."""
    sets: tuple[str, ...]
    """The eval sets it reads (sets the benchmark's choice yields, not sampled)."""


@dataclass(frozen=True)
class SummaryInputs:
    """What the summary step of ``probunlearn evaluate`` hands :meth:`Benchmark.evaluate_tables`:
    every model of the summary (the evaluated ones, then ``--original`` where given), in order."""

    evalset: str
    """The sampled set."""
    rows: pl.DataFrame
    """Its rows (:mod:`probunlearn.data.rows`)."""
    samples: Mapping[str, pl.DataFrame]
    """Model -> its answers: the sample shards' rows (id, sample, greedy, text, ...)."""
    scores: Mapping[str, pl.DataFrame]
    """Model -> its score table (id, sample, greedy, one column per scorer)."""
    alpha: float
    """The run's significance level (``--alpha``)."""
    original: str | None = None
    """The model before unlearning (``--original``, a key of ``samples`` and ``scores``), or None."""
    jobs: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    """Model -> the table of its :class:`ModelJob` (empty without a job)."""


@dataclass(frozen=True)
class SummaryTable:
    """A table a benchmark adds to the summary: ``<name>.csv`` beside ``summary.csv`` (``frame``,
    every column), and in the report's section of the benchmark under ``title`` with ``caption``
    (``view``: the rows and columns the report shows; None: the CSV alone)."""

    title: str
    caption: str
    frame: pl.DataFrame
    columns: Mapping[str, str]
    """Every column of ``frame`` and what it holds: the report's tooltips and glossary."""
    view: pl.DataFrame | None = None


@dataclass(frozen=True)
class SummarySection:
    """A benchmark's section of the report of ``probunlearn evaluate``: its heading, a note that
    says how to read its tables, and the tables by name (:meth:`Benchmark.evaluate_table_names`)."""

    title: str
    note: str
    tables: Mapping[str, SummaryTable]


class Benchmark:
    """A benchmark; subclass it in the benchmark's folder, beside its ``spec.yaml``."""

    name: ClassVar[str]
    #: Its folder in a local copy laid out like ../shared/data (resources/data/ uses its name).
    directory: ClassVar[str]
    #: Position among the benchmarks (their eval sets are listed in this order).
    order: ClassVar[int] = 100
    #: The experiment it adds to the workflow (config ``experiments``), if any.
    experiment: ClassVar[str | None] = None
    #: Raw-text forget splits it offers for unlearning.
    corpora: ClassVar[tuple[Corpus, ...]] = ()

    @cached_property
    def spec(self) -> dict[str, Any]:
        """``spec.yaml`` beside the module that defines the class ({} if there is none)."""
        path = Path(sys.modules[type(self).__module__].__file__).with_name("spec.yaml")
        if not path.is_file():
            return {}
        with path.open(encoding="utf-8") as fh:
            return yaml.safe_load(fh) or {}

    # ---- data ---------------------------------------------------------------------------------
    def dataset(self) -> Dataset:
        """Its files, from ``spec.yaml``'s ``dataset`` (:class:`probunlearn.data.downloads.Dataset`)."""
        from probunlearn.data.downloads import dataset_from_spec

        return dataset_from_spec(self.name, self.directory, self.spec["dataset"])

    def files(self, cfg: Mapping[str, Any]) -> list[str]:
        """The keys of the files a run with this config block fetches (default: the spec's)."""
        return list(self.dataset().default)

    def sets(self, cfg: Mapping[str, Any]) -> list[str]:
        """The eval sets a config block yields."""
        return list(self.spec["sets"])

    def sizes(self, cfg: Mapping[str, Any]) -> dict[str, int]:
        """Rows of each eval set, from the config block alone (the DAG's shards come from it)."""
        return dict(self.spec["sizes"])

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict[str, pl.DataFrame]:
        """Every eval set of a config block from the fetched files in ``source``."""
        raise NotImplementedError

    # ---- generation ---------------------------------------------------------------------------
    def max_new_tokens(self, evalset: str) -> int | None:
        """Its own answer length for an eval set (None: the run's)."""
        return self.spec.get("max_new_tokens", {}).get(evalset)

    def stops(self, evalset: str) -> list[str]:
        """Strings an answer to an eval set is cut at before scoring (none by default)."""
        return list(self.spec.get("stops", {}).get(evalset, []))

    def scorers(self, evalset: str) -> list[str] | None:
        """The scorers of an eval set where the spec names them (``scorers``: a list for all its
        sets, or a mapping set -> list); None: every scorer that applies to the rows."""
        given = self.spec.get("scorers")
        if isinstance(given, Mapping):
            given = given.get(evalset)
        return None if given is None else list(given)

    @property
    def primary_scorer(self) -> str | None:
        """The scorer its figures and summaries show first."""
        return self.spec.get("primary_scorer")

    # ---- probunlearn evaluate -----------------------------------------------------------------
    def choices(self) -> list[str]:
        """The values of ``probunlearn evaluate --benchmark`` it answers (``name`` or ``name:part``)."""
        return [self.name]

    def help_choices(self) -> list[str]:
        """Its ``--benchmark`` values as the help lists them (default: every choice)."""
        return list(self.choices())

    def accepts(self, choice: str) -> bool:
        """Whether it answers a ``--benchmark`` value beyond :meth:`choices`, one that no list can
        hold (RWKU's ``rwku:1,14,55``: any list of target ids); default: no."""
        return False

    def evaluate_sets(self, choice: str, source: Path | None) -> dict[str, pl.DataFrame]:
        """The sets of a choice, the sampled one first (``source``: its local copy, or None)."""
        raise NotImplementedError

    def evaluate_template(self, choice: str, source: Path | None) -> str | None:
        """Its own prompt template for a choice (None: the user's)."""
        return None

    def builds_prompts(self, evalset: str) -> bool:
        """Whether :meth:`prompts` builds the prompts of ``evalset`` (known before any job)."""
        return False

    def stop_tokens(self, evalset: str) -> list[str]:
        """Tokens (as a tokenizer names them) that end an answer of ``evalset`` besides eos; those
        a tokenizer lacks are left out where the job resolves them."""
        return []

    def prompts(self, evalset: str, rows: pl.DataFrame, tokenizer: Any) -> list[str] | None:
        """Each row's whole prompt text for a model's tokenizer, where the benchmark builds its
        prompts from the model's chat template itself (RWKU: a suffix after the template that
        differs by row), tokenised like a ``{question}`` template's (with the tokenizer's own
        special tokens); None (the default): the rows' questions in the run's template."""
        return None

    # ---- its own numbers in probunlearn evaluate ------------------------------------------------
    def evaluate_job(self, evalset: str) -> ModelJob | None:
        """The job per model it adds to an evaluation whose sampled set is ``evalset`` (known before
        any job); None (the default): none."""
        return None

    def run_evaluate_job(
        self,
        job: ModelJob,
        model: Any,
        tokenizer: Any,
        sets: Mapping[str, pl.DataFrame],
        *,
        batch_size: int,
    ) -> pl.DataFrame:
        """One model's table of ``job`` (:meth:`evaluate_job`) from the rows of its ``sets``
        (name -> rows); ``batch_size``: the run's rows per forward pass (``--batch-size``)."""
        raise NotImplementedError(f"benchmark {self.name!r} has no job {job.name!r}")

    def evaluate_table_names(self, evalset: str) -> list[str]:
        """The tables :meth:`evaluate_tables` makes for an evaluation of ``evalset``, known before
        any job (each is ``<name>.csv`` beside ``summary.csv``); [] (the default): none."""
        return []

    def evaluate_tables(self, inputs: SummaryInputs) -> SummarySection | None:
        """Its tables of an evaluation (those :meth:`evaluate_table_names` names, every one) and
        their section of the report; None (the default): none."""
        return None

    # ---- an experiment of its own -------------------------------------------------------------
    def experiment_design(self, design: Any) -> Any:
        """The experiment's part of the DAG (models, sampled runs, metric files, tables, expected
        jobs), given the run's :class:`probunlearn.dag.Design`; None without an experiment."""
        return None

    def rules_file(self) -> str | None:
        """The Snakemake rules of its experiment, included by the workflow (None: none)."""
        return None

    def refusal_file(self, source: Path) -> Path | None:
        """Its own refusal answers in a local copy (``source``: its folder there), or None."""
        return None

    def check_config(self, config: Mapping[str, Any]) -> None:
        """Cross-checks of a run's config that involve this benchmark (ValueError naming the key)."""

    def config_schema(self) -> dict[str, Any]:
        """The JSON schema of its block under ``benchmarks:``."""
        return dict(self.spec.get("config", {"type": ["boolean", "null"]}))

    def section_schemas(self) -> dict[str, Any]:
        """Top-level config sections of its own (its experiment's settings), by key."""
        return dict(self.spec.get("sections", {}))


BENCHMARKS: Registry[Benchmark] = Registry(
    "benchmarks",
    "probunlearn.benchmarks",
    Benchmark,
    "benchmark",
    name_pattern=r"[a-z][a-z0-9_-]*",
    name_rule="a lower-case letter, then lower-case letters, digits, '_' or '-': a benchmark's "
    "name is a key of the config's benchmarks block and the prefix of its evaluate choices",
)
"""Every benchmark, built-in and registered from outside."""


def benchmarks() -> list[Benchmark]:
    """Every benchmark, in order."""
    return sorted(BENCHMARKS, key=lambda b: (b.order, b.name))


def benchmark(name: str) -> Benchmark:
    """The benchmark ``name`` (a ValueError naming the known ones if unknown)."""
    return BENCHMARKS.get(name)


def active(cfg: Mapping[str, Any] | None) -> list[tuple[Benchmark, Any]]:
    """(benchmark, its config block) of each benchmark a ``benchmarks:`` config turns on."""
    if not cfg:
        return []
    unknown = sorted(set(cfg) - {"local"} - set(BENCHMARKS.names()))
    if unknown:
        raise ValueError(
            f"config benchmarks: unknown benchmark(s) {unknown}; known: {BENCHMARKS.names()}"
        )
    return [(b, cfg[b.name]) for b in benchmarks() if cfg.get(b.name)]


def by_experiment(experiment: str) -> Benchmark | None:
    """The benchmark whose experiment this is, or None."""
    return next((b for b in benchmarks() if b.experiment == experiment), None)


def corpora() -> dict[str, Corpus]:
    """Every raw-text forget split any benchmark offers, by split name."""
    return {c.split: c for b in benchmarks() for c in b.corpora}


def evaluate_choices() -> dict[str, Benchmark]:
    """``probunlearn evaluate --benchmark`` values -> the benchmark that answers them."""
    return {c: b for b in benchmarks() for c in b.choices()}


def help_choices() -> list[str]:
    """The ``--benchmark`` values as a user reads them (a benchmark with many, RWKU's 100 targets,
    in one pattern)."""
    return [c for b in benchmarks() for c in b.help_choices()]


def evaluate_benchmark(choice: str) -> Benchmark | None:
    """The benchmark that answers ``--benchmark CHOICE``: one of :func:`evaluate_choices`, else the
    first that :meth:`Benchmark.accepts` it; None if none does."""
    exact = evaluate_choices().get(choice)
    if exact is not None:
        return exact
    return next((b for b in benchmarks() if b.accepts(choice)), None)
