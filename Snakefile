# probunlearn: probabilistic evaluation of LLM unlearning and alignment.
# Run the embedded default with `snakemake --cores 2`; settings live in config.yaml.


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"


rule all:
    input:
        all_targets(),
    default_target: True
