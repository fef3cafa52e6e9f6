"""The attacks of one ``probunlearn evaluate`` run (``--attack SPEC``, issue 40): which attacked
models and prompt families it makes, their jobs' inputs and settings, the checks before any job,
and the attack table's cases.

Every evaluated model is attacked with every spec (:func:`probunlearn.attacks.parse_spec`). The
names, the rules' steps and the table are the paper workflow's (:mod:`probunlearn.dag.attacks`,
:mod:`probunlearn.steps.attack`, :mod:`probunlearn.report.attacks`): a model attack (quant, relearn)
makes ``models/{model}--{attack}``, sampled and scored by the evaluation core like any model; a
prompt attack (paraphrase, prefix, fewshot) makes the family ``data/{set}--{attack}.parquet`` of the
sampled set, sampled with the plain model and bounded on its worst member. "Before" is the plain
model's own samples of the sampled set (the same n); the original model (``--original``), where
given, is the table's ``target_greedy``. The data an attack may read: the sampled set as the forget
set (where it has answers), TOFU's retain set and the holdout set where the data has them.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

from probunlearn.attacks import ATTACKS, Spec, Target, check_attack, parse_spec
from probunlearn.dag.attacks import attacked_name, family_name, template_tag
from probunlearn.evaluate.environment import AUTO, CHAT, DEFAULT_TEMPLATE

DEFAULT_LEAK_THRESHOLD = 0.5
"""The attack table's leak (score >= T) without ``--leak-threshold``: a 0/1 score's own leak."""


def parse_specs(texts: list[str]) -> list[Spec]:
    """The ``--attack`` specs parsed (a ValueError naming the option and the spec), each once."""
    out: dict[str, Spec] = {}
    for text in texts:
        try:
            spec = parse_spec(text)
        except ValueError as e:
            raise ValueError(f"--attack {text!r}: {e}") from None
        if spec.canonical in out:
            raise ValueError(f"--attack {text!r}: the attack {spec.canonical!r} is given twice")
        out[spec.canonical] = spec
    return list(out.values())


def _alternatives(names) -> str:
    """A wildcard constraint matching exactly ``names`` (``-`` where there is none)."""
    return "|".join(re.escape(n) for n in names) or "-"


class EvaluateAttacks:
    """The attacks of an evaluation (``plan``: its :class:`probunlearn.evaluate.plan.Plan`)."""

    def __init__(self, plan: Any, specs: list[str]) -> None:
        self.plan = plan
        self.specs = parse_specs(list(specs))

    # ---- what each model is ----------------------------------------------------------------
    def template_of(self, model: str) -> str:
        """The template a model's prompts are written with: the benchmark's own, ``chat`` for a
        model whose tokenizer has a chat template under ``auto`` (or with ``chat``), else the
        default template for ``auto``, else the given one."""
        from probunlearn.evaluate.environment import has_chat_template

        plan = self.plan
        if plan.benchmark_template is not None:
            return plan.benchmark_template
        template = plan.template
        if template not in (AUTO, CHAT):
            return template
        m = plan.models[model]
        chat = has_chat_template(str(m["source"]), plan.base_of(model))
        if template == CHAT or chat:
            return CHAT
        return DEFAULT_TEMPLATE if chat is False else AUTO

    def target(self, model: str) -> Target:
        """What the checks know of a model: its template, whether it is an adapter, the data sets
        given with it (the sampled set is the forget set where it has answers; the retain and
        holdout sets where the data has them)."""
        plan = self.plan
        qa = plan.kind == "answer"
        template = self.template_of(model)
        return Target(
            name=model,
            template=template,
            chat_template=template == CHAT,
            adapter=plan.base_of(model) is not None,
            forget=qa,
            retain=qa and "retain" in plan.sets,
            holdout=qa and "holdout" in plan.sets,
        )

    def data_of(self, data: str) -> str:
        """The set an attack reads as ``data`` (forget, retain, holdout)."""
        return self.plan.sampled_set if data == "forget" else data

    @property
    def models(self) -> list[str]:
        """The models attacked: this call's evaluated ones."""
        return self.plan.names("evaluated")

    def check(self) -> None:
        """Every (model, attack) before any job: a ValueError naming both where the model cannot
        take the attack (:func:`probunlearn.attacks.check_attack`), a relearning attack that
        leaves no question to attack, a family that reads a set the data lacks."""
        plan = self.plan
        for model in self.models:
            target = self.target(model)
            for spec in self.specs:
                where = f"--attack {spec.text!r}"
                try:
                    check_attack(spec, target)
                    if self.transforms(spec) == "model":
                        attacked_name(model, spec)
                except ValueError as e:
                    raise ValueError(f"{where}: {e}") from None
                if spec.kind == "relearn":
                    source = plan.sets[self.data_of(spec.settings["source"])]
                    k, rows = spec.settings["examples"], plan.sets[plan.sampled_set].height
                    if k > source.height or (spec.settings["source"] == "forget" and k >= rows):
                        raise ValueError(
                            f"{where}: model {model!r}: relearning on {k} examples of the "
                            f"{spec.settings['source']} set ({source.height} rows) leaves no "
                            f"question of {plan.sampled_set!r} ({rows}) to attack; lower examples"
                        )
        for spec in self.specs:
            needs = ATTACKS.get(spec.kind).needs(spec.settings)
            if self.transforms(spec) == "prompts" and "retain" in needs:
                if "retain" not in plan.sets:
                    raise ValueError(
                        f"--attack {spec.text!r} reads a retain set's questions, and the data has "
                        "none (TOFU's benchmarks have one: --benchmark tofu:forget01)"
                    )

    def notes(self) -> list[str]:
        """What the attacks will do that a user should read (a merged adapter), one per model."""
        out = []
        for model in self.models:
            for spec in self.specs:
                out += check_attack(spec, self.target(model))
        return out

    @staticmethod
    def transforms(spec: Spec) -> str:
        """``model`` or ``prompts``."""
        return ATTACKS.get(spec.kind).transforms

    # ---- attacked models and families ---------------------------------------------------------
    @cached_property
    def attacked_models(self) -> dict[str, tuple[str, Spec]]:
        """Attacked model -> (model, spec), for the model attacks."""
        return {
            attacked_name(m, s): (m, s)
            for m in self.models
            for s in self.specs
            if self.transforms(s) == "model"
        }

    def _tag(self, model: str) -> str | None:
        first = self.template_of(self.models[0])
        template = self.template_of(model)
        return None if template == first else template_tag(template)

    def family_of(self, model: str, spec: Spec) -> str:
        """The family a model is sampled on for a prompt attack."""
        return family_name(self.plan.sampled_set, spec, self._tag(model))

    @cached_property
    def families(self) -> dict[str, tuple[Spec, str]]:
        """Prompt family -> (spec, the template of the models it is for)."""
        return {
            self.family_of(m, s): (s, self.template_of(m))
            for m in self.models
            for s in self.specs
            if self.transforms(s) == "prompts"
        }

    def attacked_pattern(self) -> str:
        """Rule attack's wildcard: exactly the attacked models."""
        return _alternatives(self.attacked_models)

    def family_pattern(self) -> str:
        """Rule attack_prompts' wildcard: exactly the families."""
        return _alternatives(self.families)

    def family_rows(self, family: str) -> int:
        """Rows of a family: the sampled set's rows times its members."""
        spec, _ = self.families[family]
        members = ATTACKS.get(spec.kind).members(spec.settings)
        return self.plan.sets[self.plan.sampled_set].height * len(members)

    def family_template(self, family: str) -> str:
        """The template a family is sampled with."""
        spec, template = self.families[family]
        target = Target(name=family, template=template, chat_template=template == CHAT)
        return ATTACKS.get(spec.kind).family_template(spec.settings, target)

    # ---- rules' inputs and params ---------------------------------------------------------------
    def attack_inputs(self, name: str) -> dict[str, str]:
        """Rule attack: the data sets the attack reads (the model is a checkpoint: its identity is
        in :meth:`attack_params`)."""
        _, spec = self.attacked_models[name]
        needs = ATTACKS.get(spec.kind).rows_needed(spec.settings)
        return {d: self.plan.paths.data(self.data_of(d)) for d in needs}

    def attack_params(self, name: str) -> dict:
        """Rule attack: the spec, the model (where and how it is loaded, its identity) and the
        job's threads and device."""
        model, spec = self.attacked_models[name]
        t = self.target(model)
        load = self.plan.load_params(model)
        template = t.template if t.template not in (AUTO, CHAT) else None
        return {
            "spec": spec.canonical,
            "model_name": model,
            "template": template,
            "adapter": t.adapter,
            "threads": self.plan.threads,
            "device": self.plan.ev["device"],
            "model_dir": load["model_path"],
            "revision": load["revision"],
            "base": load["base"],
            "identity": load["identity"],
        }

    def attacked_identity(self, name: str) -> str:
        """An attacked model's identity: its model's and the attack's."""
        model, spec = self.attacked_models[name]
        return f"{self.plan.identity(model)} attacked {spec.canonical}"

    def prompts_inputs(self, family: str) -> dict[str, str]:
        """Rule attack_prompts: the sampled set, and the retain rows where the attack reads them."""
        spec, _ = self.families[family]
        p = self.plan.paths
        out = {"evalset": p.data(self.plan.sampled_set)}
        if "retain" in ATTACKS.get(spec.kind).rows_needed(spec.settings):
            out["retain"] = p.data("retain")
        return out

    def prompts_params(self, family: str) -> dict:
        """Rule attack_prompts: the spec and the template of the models it is for."""
        spec, template = self.families[family]
        return {"spec": spec.canonical, "template": template}

    # ---- the table ------------------------------------------------------------------------------
    def table_cases(self) -> list[dict]:
        """The attack table's cases (rule attacks_table; :func:`probunlearn.report.attacks.attack_row`),
        every evaluated model with every attack, in the order given."""
        plan, p = self.plan, self.plan.paths
        s, st = plan.sampled_set, plan.SETTING
        ref = None if plan.original is None else p.scores(plan.original, s, st)
        out = []
        for model in self.models:
            for spec in self.specs:
                model_attack = self.transforms(spec) == "model"
                attacked = attacked_name(model, spec) if model_attack else None
                family = None if model_attack else self.family_of(model, spec)
                after = p.scores(attacked, s, st) if model_attack else p.scores(model, family, st)
                out.append(
                    {
                        "label": model,
                        "model": model,
                        "evalset": s,
                        "attack": spec.canonical,
                        "kind": spec.kind,
                        "attacked_model": attacked,
                        "attacked_evalset": family,
                        "after": after,
                        "before": p.scores(model, s, st),
                        "reference": ref,
                        "info": p.attack_info(attacked) if model_attack else None,
                        "evalset_path": p.data(s),
                        "retain_term": None,
                    }
                )
        return out

    def table_inputs(self) -> list[str]:
        """Every file the attack table reads."""
        files = []
        for c in self.table_cases():
            files += [c["after"], c["before"], c["evalset_path"]]
            files += [c[k] for k in ("reference", "info") if c[k] is not None]
        return sorted(set(files))

    def table_settings(self) -> dict:
        """The attack table's settings: n, the leak threshold, the score, alpha, bins, rho."""
        ev = self.plan.ev
        t = ev["bounds"].get("leak_threshold")
        return {
            "n": int(ev["sampling"]["n"]),
            "leak_threshold": DEFAULT_LEAK_THRESHOLD if t is None else float(t),
            "score": self.plan.primary_score,
            "alpha": float(ev["bounds"]["alpha"]),
            "bins": int(ev["bounds"].get("bins", 100)),
            "rho": float(ev["bounds"].get("rho", 2.0)),
        }
