"""Rule benchmark_sets: the run's eval sets from the fetched real data sets."""

from pathlib import Path

from probunlearn.benchmarks import build_benchmark_sets
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    sources = {
        ds: Path(getattr(sm.input, ds)[0]).parent
        for ds in ("tofu", "hp_qa", "jbb", "muse")
        if hasattr(sm.input, ds)
    }
    build_benchmark_sets(sm.params.benchmarks, sources, Path(sm.output[0]).parent)
