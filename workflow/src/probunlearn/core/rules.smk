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
# encoding) of one model: every set any metric reads, whatever roles the model has (its script keeps
# the name it had when the rule was called `evaluate`: a new script file would rerun every job of the
# rule, and all after it, in the results made before)
rule greedy_logprobs:
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
        P.log("greedy_logprobs", "{model}"),
    benchmark:
        P.benchmark("greedy_logprobs", "{model}")
    wildcard_constraints:
        model=CORE.model_pattern("greedy_logprobs"),
    conda:
        core_env("torch")
    threads: CORE.threads
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        load=lambda wc: CORE.load_params(wc.model),
        run=lambda wc: CORE.greedy_logprobs_params(wc.model),
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


# A benchmark's own job per model (RWKU: its MIA statistics of its MIA texts;
# probunlearn.benchmarks.Benchmark.evaluate_job and run_evaluate_job), where the run has one
# (CORE.benchmark_job: None for most), read by that benchmark's tables.
JOB = CORE.benchmark_job


if JOB is not None:

    rule benchmark_job:
        input:
            unpack(lambda wc: CORE.model_inputs(wc.model)),
            sets=[P.data(s) for s in JOB.sets],
        output:
            CORE.benchmark_job_path("{model}"),
        log:
            P.log("benchmark_job", "{model}"),
        benchmark:
            P.benchmark("benchmark_job", "{model}")
        wildcard_constraints:
            model=CORE.model_pattern("benchmark_job"),
        conda:
            core_env("torch")
        threads: CORE.threads
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            load=lambda wc: CORE.load_params(wc.model),
            sets=list(JOB.sets),
            run=CORE.benchmark_job_params(),
        script:
            "scripts/benchmark_job.py"


# (the scripts below are named through CORE_SCRIPTS, as they were when each workflow declared these
# rules: Snakemake reruns a job whose script directive's text changed)
from probunlearn.core import SCRIPTS as CORE_SCRIPTS

# Attacks on a model (beyond the paper, docs/attacks.md): attacked models (rule attack) and prompt
# families (rule attack_prompts), sampled and scored by the rules above, and the table of bounds
# before and after (rule attacks_table). CORE.attacks: probunlearn.dag.attacks.AttackPlan (None:
# the run has no attack). The including Snakefile defines report_table(name) and
# figure_outputs(name), where its tables and figures go.
ATTACKS = CORE.attacks


if ATTACKS is not None:

    rule attack:
        input:
            unpack(lambda wc: ATTACKS.attack_inputs(wc.model)),
        output:
            model=directory(P.run_model("{model}")),
            info=P.attack_info("{model}"),
        log:
            P.log("attack", "{model}"),
        benchmark:
            P.benchmark("attack", "{model}")
        wildcard_constraints:
            model=ATTACKS.attacked_pattern(),
        conda:
            core_env("torch")
        threads: ATTACKS.threads
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            attack=lambda wc: ATTACKS.attack_params(wc.model),
        script:
            f"{CORE_SCRIPTS}/attack.py"

    rule attack_prompts:
        input:
            unpack(lambda wc: ATTACKS.prompts_inputs(wc.evalset)),
        output:
            P.data("{evalset}"),
        log:
            P.log("attack_prompts", "{evalset}"),
        wildcard_constraints:
            evalset=ATTACKS.family_pattern(),
        conda:
            core_env("analysis")
        params:
            attack=lambda wc: ATTACKS.prompts_params(wc.evalset),
        script:
            f"{CORE_SCRIPTS}/attack_prompts.py"

    rule attacks_table:
        input:
            lambda wc: ATTACKS.table_inputs(),
        output:
            table=report_table("attacks"),
            figure=figure_outputs("attacks"),
        log:
            P.log("figures", "attacks"),
        conda:
            core_env("analysis")
        params:
            cases=lambda wc: ATTACKS.table_cases(),
            figure=lambda wc, output: P.stem(output.figure[0]),
            settings=ATTACKS.table_settings(),
        script:
            f"{CORE_SCRIPTS}/attacks_table.py"


# Membership inference (beyond the paper, docs/membership.md): per model, the teacher-forced attack
# statistics of the forget set's and the holdout set's examples; the table of AUCs with intervals
# and PrivLeak against the retrained model, and its figure. CORE.membership:
# probunlearn.dag.membership.MembershipPlan (None or off: the run has none).
MEMBERSHIP = (
    CORE.membership if CORE.membership is not None and CORE.membership.on else None
)


if MEMBERSHIP is not None:

    rule membership:
        input:
            unpack(lambda wc: MEMBERSHIP.inputs(wc.model)),
        output:
            MEMBERSHIP.path("{model}"),
        log:
            P.log("membership", "{model}"),
        benchmark:
            P.benchmark("membership", "{model}")
        wildcard_constraints:
            model=MEMBERSHIP.pattern(),
        conda:
            core_env("torch")
        threads: CORE.threads
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            load=lambda wc: CORE.load_params(wc.model),
            # one dict: Snakemake compares a rule's params as a set of values
            run=lambda wc: MEMBERSHIP.params(wc.model),
        script:
            f"{CORE_SCRIPTS}/membership.py"

    rule membership_table:
        input:
            lambda wc: list(MEMBERSHIP.parts().values()),
        output:
            table=report_table("membership"),
            figure=figure_outputs("membership"),
        log:
            P.log("figures", "membership"),
        conda:
            core_env("analysis")
        params:
            parts=lambda wc: MEMBERSHIP.parts(),
            figure=lambda wc, output: P.stem(output.figure[0]),
            run=MEMBERSHIP.table_params(),
        script:
            f"{CORE_SCRIPTS}/membership_table.py"
