"""Rule dcue_vs_fq: DCUE beside TOFU's forget quality, and DCUE's meta-evaluation."""

from probunlearn.report.experiments import make_dcue_vs_fq
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_dcue_vs_fq(
        parts=sm.params.parts,
        csv_path=sm.output.table,
        out_stem=sm.params.figure,
        postfinetune=sm.params.postfinetune,
        meta_csv=sm.output.meta,
    )
