# The evaluation core: sample, score and bound, teacher-force, TOFU's metrics and DCUE, for any set of
# models and eval sets. Both workflows include this file: the paper's (Snakefile, CORE = its
# probunlearn.dag.Design) and `probunlearn evaluate`'s (evaluate/workflow/Snakefile, CORE = its
# probunlearn.evaluate.plan.Plan). Each planner answers the same questions (probunlearn.core): the
# paths (CORE.paths), every job's params, inputs and wildcard constraints; the including Snakefile
# defines core_env(kind), the conda environment of a job that loads a model ("torch") or not.
P = CORE.paths


rule sample_shard:
    input:
        unpack(lambda wc: CORE.model_inputs(wc.model)),
        evalset=P.data("{evalset}"),
    output:
        P.samples("{model}", "{evalset}", "{setting}", "{k}"),
    log:
        P.log("sample", "{model}", "{evalset}", "{setting}", "shard-{k}"),
    benchmark:
        P.benchmark("sample", "{model}", "{evalset}", "{setting}", "shard-{k}")
    wildcard_constraints:
        model=CORE.model_pattern("sample_shard"),
    conda:
        core_env("torch")
    threads: CORE.threads
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        load=lambda wc: CORE.load_params(wc.model),
        # one dict: Snakemake compares a rule's params as a set of values, so two scalar
        # params that swap or share a value (chunk_size 4 -> 1 beside threads 1) would look unchanged
        sampling=lambda wc: CORE.sampling_params(wc.model, wc.evalset, wc.setting),
    script:
        "scripts/sample_shard.py"


rule score:
    input:
        unpack(lambda wc: CORE.judge_input(wc.evalset)),
        samples=lambda wc: CORE.samples_paths(wc.model, wc.evalset, wc.setting),
        evalset=P.data("{evalset}"),
    output:
        scores=P.scores("{model}", "{evalset}", "{setting}"),
        bounds=P.bounds("{model}", "{evalset}", "{setting}"),
        metrics=P.sampled_metrics("{model}", "{evalset}", "{setting}"),
    log:
        P.log("score", "{model}", "{evalset}", "{setting}"),
    wildcard_constraints:
        model=CORE.model_pattern("score"),
    conda:
        core_env("analysis")
    resources:
        gpu=lambda wc: int(CORE.harm_judge(wc.evalset) is not None),
    params:
        score=lambda wc: CORE.score_params(wc.model, wc.evalset, wc.setting),
    script:
        "scripts/score.py"


# greedy answers, TOFU's own greedy answers (its ROUGE) and the per-token log-probabilities (TOFU's
# encoding) of one model: every set any metric reads, whatever roles the model has
rule evaluate:
    input:
        unpack(lambda wc: CORE.model_inputs(wc.model)),
        greedy_sets=[P.data(e) for e in CORE.greedy_sets],
        logprob_sets=[P.data(e) for e in CORE.logprob_sets],
        tofu_sets=[P.data(e) for e in CORE.tofu_gen_sets],
    output:
        metrics=P.metrics("{model}", "greedy"),
        answers=P.greedy("{model}"),
        tofu_answers=P.tofu_answers("{model}"),
        logprobs=[P.logprobs("{model}", e) for e in CORE.logprob_sets],
    log:
        P.log("evaluate", "{model}"),
    benchmark:
        P.benchmark("evaluate", "{model}")
    wildcard_constraints:
        model=CORE.model_pattern("evaluate"),
    conda:
        core_env("torch")
    threads: CORE.threads
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        load=lambda wc: CORE.load_params(wc.model),
        run=lambda wc: CORE.evaluate_params(wc.model),
    script:
        "scripts/evaluate.py"


rule tofu_metrics:
    input:
        unpack(lambda wc: CORE.tofu_inputs(wc.model)),
    output:
        P.metrics("{model}", "tofu"),
    log:
        P.log("tofu_metrics", "{model}"),
    wildcard_constraints:
        model=CORE.model_pattern("tofu_metrics"),
    conda:
        core_env("analysis")
    params:
        run=lambda wc: CORE.tofu_metrics_params(wc.model),
    script:
        "scripts/tofu_metrics.py"


rule dcue:
    input:
        unpack(lambda wc: CORE.dcue_inputs(wc.model)),
    output:
        metrics=P.metrics("{model}", "dcue"),
        confidences=P.dcue("{model}"),
    log:
        P.log("dcue", "{model}"),
    wildcard_constraints:
        model=CORE.model_pattern("dcue"),
    conda:
        core_env("analysis")
    params:
        run=lambda wc: CORE.dcue_params(wc.model),
    script:
        "scripts/dcue.py"
