"""Rule benchmark_sets: the run's eval sets from the fetched real data sets."""

from pathlib import Path

from probunlearn.benchmarks import build_benchmark_sets
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    # one named input per benchmark (Design.benchmark_inputs): a file of the folder its files were
    # fetched to (build_benchmark_sets finds the folder)
    sources = {name: sm.input[name][0] for name in sm.input.keys()}
    build_benchmark_sets(sm.params.benchmarks, sources, Path(sm.output[0]).parent)
