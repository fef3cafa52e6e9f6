# The experiment attacks (beyond the paper, docs/attacks.md): attacked models (rule attack) and
# prompt families (rule attack_prompts), sampled and scored by the evaluation core's rules, and the
# attack table and figure (rule attacks_table). The DAG is probunlearn.dag.attacks.AttackDesign.
from probunlearn.dag.attacks import ATTACKED_PATTERN, FAMILY_PATTERN

ATTACKS = D.attacks


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
            model=ATTACKED_PATTERN,
        conda:
            "../../envs/torch.yaml"
        threads: config["threads"]["train"]
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
            evalset=FAMILY_PATTERN,
        conda:
            "../../envs/analysis.yaml"
        params:
            attack=lambda wc: ATTACKS.prompts_params(wc.evalset),
        script:
            f"{CORE_SCRIPTS}/attack_prompts.py"

    rule attacks_table:
        input:
            lambda wc: D.attack_table_inputs(),
        output:
            table=report_table("attacks"),
            figure=figure_outputs("attacks"),
        log:
            P.log("figures", "attacks"),
        conda:
            "../../envs/analysis.yaml"
        params:
            cases=lambda wc: D.attack_cases(),
            figure=lambda wc, output: P.stem(output.figure[0]),
            settings=canon(
                {
                    "n": ATTACKS.n,
                    "leak_threshold": config["attacks"]["leak_threshold"],
                    "score": config["attacks"]["score"],
                    "alpha": config["bounds"]["alpha"],
                    "bins": config["bounds"]["bins"],
                    "rho": config["bounds"]["rho"],
                }
            ),
        script:
            f"{CORE_SCRIPTS}/attacks_table.py"
