"""TOFU (Maini et al. 2024) as a benchmark: ``spec.yaml`` (files, rows, splits), :mod:`.loader`
(the rows), :mod:`.eval_logs` (TOFU's published retain-model logs, forget quality's reference).

A run's ``benchmarks.tofu`` block yields ``full``, ``forgetNN``, ``retainNN``, ``retain`` (TOFU's
retain_perturbed rows of the kept authors), ``holdout`` (TOFU's holdout set of the largest forget
split) and ``real_authors`` / ``world_facts`` (their perturbed files, which carry the options of
TOFU's normalised probability). ``retain_authors`` keeps a subset: the first k retain authors plus
the forget authors of the largest forget split (the last authors of ``full``, as TOFU's forget
splits are), so that a CPU run can fine-tune on a few authors and unlearn the last ones with TOFU's
own paraphrased and perturbed answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probunlearn.benchmarks.base import BENCHMARKS, Benchmark
from probunlearn.data.evalsets import HOLDOUT_OF, RETAIN_OF


class TOFU(Benchmark):
    name = "tofu"
    directory = "tofu"
    order = 10

    @property
    def forget_authors(self) -> dict[str, int]:
        return dict(self.spec["forget_authors"])

    def plan(self, cfg: Mapping[str, Any]) -> tuple[str, int, int]:
        """(largest forget split, forget authors, kept retain authors) of a config block."""
        splits = list(cfg["forget"])
        unknown = [s for s in splits if s not in self.forget_authors]
        if not splits or unknown:
            raise ValueError(
                f"benchmarks.tofu.forget: expected some of {list(self.forget_authors)}, got {splits}"
            )
        largest = max(splits, key=self.forget_authors.get)
        n_forget = self.forget_authors[largest]
        total = int(self.spec["authors"])
        keep = cfg.get("retain_authors")
        n_retain = total - n_forget if keep is None else int(keep)
        if not 1 <= n_retain <= total - n_forget:
            raise ValueError(
                f"benchmarks.tofu.retain_authors: expected 1..{total - n_forget} with {largest}, "
                f"got {keep}"
            )
        return largest, n_forget, n_retain

    def files(self, cfg: Mapping[str, Any]) -> list[str]:
        largest, _, _ = self.plan(cfg)
        return [
            "full",
            f"{largest}_perturbed",
            "retain_perturbed",
            "real_authors_perturbed",
            "world_facts_perturbed",
            HOLDOUT_OF[largest],
        ]

    def sets(self, cfg: Mapping[str, Any]) -> list[str]:
        forget = list(cfg["forget"])
        names = ["full", *forget, *(RETAIN_OF[s] for s in forget)]
        return names + ["retain", "holdout", "real_authors", "world_facts"]

    def sizes(self, cfg: Mapping[str, Any]) -> dict[str, int]:
        q = int(self.spec["questions_per_author"])
        largest, n_forget, n_retain = self.plan(cfg)
        sizes = {"full": (n_retain + n_forget) * q}
        for s in cfg["forget"]:
            sizes[s] = self.forget_authors[s] * q
            sizes[RETAIN_OF[s]] = sizes["full"] - sizes[s]
        retain = min(n_retain * q, int(self.spec["retain_perturbed_rows"]))
        sizes["retain"] = min(retain, cfg.get("retain_eval_size") or retain)
        sizes["holdout"] = n_forget * q
        for s, full in self.spec["utility_rows"].items():
            sizes[s] = min(full, cfg.get("utility_size") or full)
        return sizes

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict:
        import polars as pl

        from probunlearn.benchmarks.tofu.loader import load_tofu

        q = int(self.spec["questions_per_author"])
        total = int(self.spec["authors"])
        largest, n_forget, n_retain = self.plan(cfg)
        full = load_tofu("full", source)
        idx = full.with_row_index("_i")
        first_forget = total * q - n_forget * q
        kept = idx.filter((pl.col("_i") < n_retain * q) | (pl.col("_i") >= first_forget))
        # forget rows with TOFU's paraphrased and perturbed answers (forgetNN_perturbed matches full
        # by id)
        forget = load_tofu(f"{largest}_perturbed", source)
        out = {"full": kept.drop("_i")}
        for s in cfg["forget"]:
            ids = full["id"][total * q - self.forget_authors[s] * q :]
            out[s] = forget.filter(pl.col("id").is_in(ids.implode()))
            out[RETAIN_OF[s]] = out["full"].filter(~pl.col("id").is_in(ids.implode()))
        retain = load_tofu("retain_perturbed", source)
        retain = retain.filter(pl.col("id").is_in(kept["id"].implode()))
        size = self.sizes(cfg)
        out["retain"] = retain.head(size["retain"])
        out["holdout"] = load_tofu(HOLDOUT_OF[largest], source)
        for s in self.spec["utility_rows"]:
            out[s] = load_tofu(f"{s}_perturbed", source).head(size[s])
        return out

    def check_config(self, config: Mapping[str, Any]) -> None:
        bench = config["benchmarks"]
        if bench and bench.get(self.name) and "pretrained" not in config["models"]:
            raise ValueError(
                f"config: benchmarks.{self.name} needs a real model to fine-tune: set "
                "models.pretrained (the synthetic pretraining runs on the synthetic world only)"
            )

    def refusal_file(self, source: Path) -> Path | None:
        """TOFU's ``idontknow.jsonl`` in a local copy (IDK and DPO's refusal answers), if there."""
        path = source / "idontknow.jsonl"
        return path if path.is_file() else None

    # ---- probunlearn evaluate -----------------------------------------------------------------
    def choices(self) -> list[str]:
        return [f"{self.name}:{s}" for s in self.forget_authors]

    def evaluate_sets(self, choice: str, source: Path | None) -> dict:
        from probunlearn.benchmarks.tofu.loader import load_tofu

        split = choice.split(":", 1)[1]
        sets = {
            split: load_tofu(f"{split}_perturbed", source),
            "retain": load_tofu("retain_perturbed", source),
            "holdout": load_tofu(HOLDOUT_OF[split], source),
        }
        for s in self.spec["utility_rows"]:
            sets[s] = load_tofu(f"{s}_perturbed", source)
        return sets


BENCHMARKS.register(TOFU())
