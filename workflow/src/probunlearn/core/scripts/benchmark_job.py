"""Rule benchmark_job: a benchmark's own job on one model (RWKU: its MIA statistics)."""

from probunlearn.steps.benchmark_job import run_benchmark_job
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
load = {k: v for k, v in sm.params.load.items() if k != "identity"}  # identity: reruns only
with log_to(sm.log[0]):
    run_benchmark_job(
        sets_paths=dict(zip(sm.params.sets, sm.input.sets, strict=True)),
        out_path=sm.output[0],
        **load,
        **sm.params.run,
    )
