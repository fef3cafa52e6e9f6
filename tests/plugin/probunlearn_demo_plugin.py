"""A researcher's own method, scorer, benchmark and membership statistic, registered from outside
probunlearn through the entry points of its distribution
(tests/plugin/probunlearn_demo_plugin-0.1.dist-info). docs/extending.md shows the same four."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from probunlearn.benchmarks import Benchmark
from probunlearn.data.rows import make_row, to_frame
from probunlearn.methods import Method, Setting
from probunlearn.metrics.membership import Statistic
from probunlearn.scoring import BINARY_METRICS, Scorer


class ScaledAscent(Method):
    """Gradient ascent on the forget answers, scaled: ``-scale · CE(forget)``."""

    name = "scaled_ga"
    label = "Scaled GA"
    color = "#117733"
    settings = {"scale": Setting(0.5, {"type": "number", "exclusiveMinimum": 0}, "Ascent scale.")}

    def loss(self, step):
        from probunlearn.unlearning import losses

        return step.settings["scale"] * losses.ga_loss(step.forget_logits, step.forget["labels"])


class ShortAnswer(Scorer):
    """1 where the answer has at most three words."""

    name = "short_answer"
    binary = True
    metrics = BINARY_METRICS
    order = 90

    def score(self, texts, rows, context):
        return np.asarray([float(len(t.split()) <= 3) for t in texts])


class Capitals(Benchmark):
    """Capital cities: ``capitals.json`` (a list of {question, answer}) in a local copy."""

    name = "capitals"
    directory = "capitals"
    order = 90
    spec = {
        "dataset": {
            "where": "the demo's own capitals.json",
            "files": {"capitals": {"name": "capitals.json", "url": "https://example.org/c.json"}},
            "default": ["capitals"],
        },
        "sets": ["capitals"],
        "primary_scorer": "rougeL_recall",
        "config": {"type": ["object", "boolean", "null"]},
    }

    def rows(self, source: Path):
        records = json.loads((Path(source) / "capitals.json").read_text())
        return to_frame(
            [
                make_row(id=f"cap-{i}", question=r["question"], answer=r["answer"], kind="capitals")
                for i, r in enumerate(records)
            ]  # fmt: skip
        )

    def sizes(self, cfg):
        return {"capitals": int(cfg.get("size", 4))}

    def build(self, cfg, source):
        return {"capitals": self.rows(source)}

    def evaluate_sets(self, choice, source):
        return {"capitals": self.rows(source)}


class MedianLogprob(Statistic):
    """The median log-probability of an example's scored tokens; members high."""

    name = "median_logprob"
    label = "Median log-prob"
    member_high = True

    def compute(self, tokens):
        return np.array([np.median(v) for v in tokens.logprobs])
