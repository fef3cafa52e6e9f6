# probunlearn: probabilistic evaluation of LLM unlearning and alignment.
# Run the embedded default with `snakemake --cores 2`; settings live in config.yaml.


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/unlearn.smk"
include: CORE_RULES
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"


# the experiments the registered benchmarks bring (MUSE-News's)
for rules_file in benchmark_rules():

    include: rules_file


rule all:
    default_target: True
    input:
        all_targets(),
