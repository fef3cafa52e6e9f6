"""Every artifact's path, defined once: a rule passes wildcards (``"{model}"``) to get its pattern,
the design and the tests pass names to get a file."""

from __future__ import annotations

import os
from collections.abc import Container, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Paths:
    """Paths of one run: ``out`` is ``results/{run}`` (``.`` in ``probunlearn evaluate``'s output
    directory), ``res`` the shared downloads and real models."""

    out: str
    res: str = "resources"
    hub_models: Container[str] = ()

    @property
    def root(self) -> str:
        """``out`` with its trailing slash; empty for the working directory (``""`` or ``"."``)."""
        return "" if self.out in ("", ".") else f"{self.out}/"

    # ---- inputs: data sets and models ---------------------------------------------------------
    def data(self, evalset: str) -> str:
        """An eval set (or ``pretrain``, the corpus) in the shared row format."""
        return f"{self.root}data/{evalset}.parquet"

    def model(self, name: str) -> str:
        """A model's directory: resources/models/<name> for a real model of config ``models``."""
        return self.hub_model(name) if name in self.hub_models else self.run_model(name)

    def hub_model(self, name: str) -> str:
        """A real model's directory under resources/ (fetched from its hub or copied in)."""
        return f"{self.res}/models/{name}"

    def run_model(self, name: str) -> str:
        """A model the run trains itself (the output of pretrain, target, reference, unlearn)."""
        return f"{self.root}models/{name}"

    def dataset_file(self, dataset: str, file: str) -> str:
        """A downloaded (or copied) file of a real data set."""
        return f"{self.res}/data/{dataset}/{file}"

    def tofu_log(self, family: str, split: str) -> str:
        """TOFU's published eval log of its retain-only ``family`` model on ``split``."""
        return f"{self.res}/tofu_logs/{family}/{split}/eval_log_forget.json"

    # ---- per model ----------------------------------------------------------------------------
    def samples(self, model: str, evalset: str, setting: str, k: int | str) -> str:
        """One shard of sampled answers."""
        return f"{self.root}samples/{model}/{evalset}/{setting}/shard-{k}.parquet"

    def scores(self, model: str, evalset: str, setting: str) -> str:
        """Scores of every sample of a (model, eval set, sampling setting)."""
        return f"{self.root}scores/{model}/{evalset}/{setting}.parquet"

    def bounds(self, model: str, evalset: str, setting: str) -> str:
        """Per-prompt bounds of a (model, eval set, sampling setting)."""
        return f"{self.root}bounds/{model}/{evalset}/{setting}.parquet"

    def metrics(self, model: str, part: str) -> str:
        """One part of a model's metrics: greedy, tofu, dcue, postfinetune or ``{evalset}.{setting}``."""
        return f"{self.root}metrics/{model}/{part}.csv"

    def sampled_metrics(self, model: str, evalset: str, setting: str) -> str:
        """The sampled metrics of a (model, eval set, sampling setting)."""
        return self.metrics(model, f"{evalset}.{setting}")

    def logprobs(self, model: str, evalset: str) -> str:
        """Per-token log-probabilities of a model on an eval set (TOFU's encoding)."""
        return f"{self.root}logprobs/{model}/{evalset}.parquet"

    def greedy(self, model: str) -> str:
        """A model's greedy answers."""
        return f"{self.root}greedy/{model}.parquet"

    def tofu_answers(self, model: str) -> str:
        """A model's greedy answers as TOFU's evaluation generates them."""
        return f"{self.root}tofu_answers/{model}.parquet"

    def history(self, model: str) -> str:
        """An unlearned model's per-epoch training history (Fig. 5b)."""
        return f"{self.root}unlearning/{model}.csv"

    def dcue(self, model: str) -> str:
        """Per-question confidences behind a model's DCUE."""
        return f"{self.root}dcue/{model}.parquet"

    def attack_info(self, model: str) -> str:
        """What an attack did to make an attacked model (spec, notes, the pairs relearned on)."""
        return f"{self.root}attacks/{model}.json"

    def postfinetune(self, model: str, part: str) -> str:
        """Log-probabilities (forget, holdout) after the short post-unlearning fine-tune."""
        return f"{self.root}postfinetune/{model}/{part}.parquet"

    # ---- outputs: tables, figures, bookkeeping ------------------------------------------------
    @property
    def config(self) -> str:
        """The run's effective config."""
        return f"{self.root}config.yaml"

    def table(self, name: str, ext: str = "csv") -> str:
        """A table of the paper (the numbers behind a figure, or the table itself)."""
        return f"{self.root}tables/{name}.{ext}"

    def figure(self, name: str, ext: str = "png") -> str:
        """A figure of the paper."""
        return f"{self.root}figures/{name}.{ext}"

    def figure_stem(self, name: str) -> str:
        """A figure's path without its extension (for Snakemake's ``multiext``)."""
        return f"{self.root}figures/{name}"

    def table_stem(self, name: str) -> str:
        """A table's path without its extension (for Snakemake's ``multiext``)."""
        return f"{self.root}tables/{name}"

    @staticmethod
    def stem(path: str) -> str:
        """A file's path without its extension (a figure or table is stem + each extension); rules
        derive stems from outputs, so a file system rewriting output paths rewrites them too."""
        return os.path.splitext(path)[0]

    @classmethod
    def stems(cls, paths: Iterable[str], ext: str) -> dict[str, str]:
        """Name -> stem of each path ending in ``ext`` (``.../figures/fig4a.png``: ``fig4a``)."""
        stems = [cls.stem(p) for p in map(str, paths) if p.endswith(ext)]
        return {os.path.basename(s): s for s in stems}

    def log(self, *parts: str) -> str:
        """A job's log: ``log("sample", model, ...)`` is logs/sample/<model>/....log."""
        return f"{self.root}logs/{'/'.join(parts)}.log"

    def benchmark(self, *parts: str) -> str:
        """A job's time and memory record (Snakemake's ``benchmark:``)."""
        return f"{self.root}benchmarks/{'/'.join(parts)}.tsv"

    def resource_log(self, *parts: str) -> str:
        """The log of a download into resources/."""
        return f"{self.res}/logs/{'/'.join(parts)}.log"
