"""The attacks of one ``probunlearn evaluate`` run (``--attack SPEC``): every evaluated model with
every spec, on the sampled set; their jobs' settings, the checks before any job, the table's cases.

Names, rules and table are the paper workflow's (:mod:`probunlearn.dag.attacks`). A model attack
makes ``models/{model}--{attack}``; a prompt attack the family ``data/{set}--{attack}.parquet``,
sampled with the plain model and bounded on its worst member; its "before" is the null family of as
many members (``data/{set}--null__{m}.parquet``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from probunlearn.attacks import ATTACKS, Spec, Target, check_attack, parse_spec
from probunlearn.attacks.naming import attacked_name
from probunlearn.dag.attacks import AttackPlan, Case
from probunlearn.models.files import AUTO, CHAT, DEFAULT_TEMPLATE

DEFAULT_LEAK_THRESHOLD = 0.5
"""The attack table's leak (score >= T) without ``--leak-threshold``: a 0/1 score's own leak."""


def _data_flags(target: Target) -> dict[str, bool]:
    return {d: target.has(d) for d in ("forget", "retain", "holdout")}


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


class EvaluateAttacks(AttackPlan):
    """The attacks of an evaluation (``plan``: its :class:`probunlearn.evaluate.plan.Plan`)."""

    def __init__(self, plan: Any, specs: list[str]) -> None:
        super().__init__(plan, parse_specs(list(specs)))
        self.plan = plan
        self.threads = plan.ev.get("threads")
        self.device = plan.ev.get("device", "auto")

    # ---- what each model is ----------------------------------------------------------------
    def template_of(self, model: str) -> str:
        """The template of a model's prompts: the benchmark's own, a given text, ``chat`` (given, or
        under ``auto`` where the tokenizer has one), else the default (``auto`` where unknown)."""
        from probunlearn.models.files import has_chat_template

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
        """What the checks know of a model; the sampled set is its forget set if it has answers."""
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

    def data_of(self, model: str, data: str) -> str:
        """The set an attack reads as ``data`` (forget, retain, holdout)."""
        return self.plan.sampled_set if data == "forget" else data

    @property
    def models(self) -> list[str]:
        """The models attacked: this call's evaluated ones."""
        return self.plan.names("evaluated")

    def targets(self) -> dict[str, str]:
        """Every evaluated model, under its own name."""
        return {m: m for m in self.models}

    def evalsets(self) -> list[str]:
        """The sampled set."""
        return [self.plan.sampled_set]

    def untagged_template(self) -> str:
        """The first evaluated model's template."""
        return self.template_of(self.models[0])

    def control_of(self, model: str) -> str | None:
        """The control of a relearning attack: the ``--reference`` model, or None."""
        return self.plan.reference

    def checkpoint_params(self, model: str) -> dict:
        """How the model loads; a template only as text (``auto``, ``chat`` resolve in the job)."""
        t = self.target(model)
        load = self.plan.load_params(model)
        return {
            "template": t.template if t.template not in (AUTO, CHAT) else None,
            "model_dir": load["model_path"],
            "revision": load["revision"],
            "base": load["base"],
            "identity": load["identity"],
        }

    def check(self) -> None:
        """Every (model, attack) before any job: a ValueError where the model cannot take the
        attack, relearning leaves nothing to attack, or a family reads a set the data lacks."""
        plan = self.plan
        for model in self.models:
            target = self.target(model)
            for spec in self.specs:
                where = f"--attack {spec.text!r}"
                control = self.control_of(model) if self.controlled(spec) else None
                try:
                    check_attack(spec, target)
                    if self.transforms(spec) == "model":
                        attacked_name(model, spec)
                    if control is not None:  # relearned on the same pairs: the model's data
                        check_attack(spec, replace(self.target(control), **_data_flags(target)))
                        attacked_name(control, spec)
                except ValueError as e:
                    raise ValueError(f"{where}: {e}") from None
                if spec.kind == "relearn":
                    self._check_relearn(model, spec, where)
        for spec in self.specs:
            needs = ATTACKS.get(spec.kind).needs(spec.settings)
            if self.transforms(spec) == "prompts" and "retain" in needs:
                if "retain" not in plan.sets:
                    raise ValueError(
                        f"--attack {spec.text!r} reads a retain set's questions, and the data has "
                        "none (TOFU's benchmarks have one: --benchmark tofu:forget01)"
                    )

    def _check_relearn(self, model: str, spec: Spec, where: str) -> None:
        """A relearning attack that leaves no question to judge is an error before any job."""
        from probunlearn.attacks.relearn import relearn_split

        plan, st = self.plan, spec.settings
        source = plan.sets[self.data_of(model, st["source"])]
        evalset = plan.sets[plan.sampled_set]
        k = st["examples"]
        if k > source.height or not relearn_split(source, evalset, st)[2]:
            raise ValueError(
                f"{where}: model {model!r}: relearning on {k} examples of the {st['source']} set "
                f"({source.height} rows) leaves no question of {plan.sampled_set!r} "
                f"({evalset.height}) to attack (exclude={st['exclude']}: the pairs' "
                f"{'subjects' if st['exclude'] == 'subject' else 'questions'} are not judged); "
                f"lower examples{', or exclude=question' if st['exclude'] == 'subject' else ''}"
            )

    def notes(self) -> list[str]:
        """What the attacks will do that a user should read (a merged adapter), one per model."""
        out = []
        for model in self.models:
            for spec in self.specs:
                out += check_attack(spec, self.target(model))
        return out

    def attacked_identity(self, name: str) -> str:
        """An attacked model's identity: its model's and the attack's."""
        model, spec = self.attacked_models[name]
        return f"{self.plan.identity(model)} attacked {spec.canonical}"

    # ---- the table ------------------------------------------------------------------------------
    def table_cases(self) -> list[dict]:
        """The attack table's cases, in the order given: a model attack's "before" is the model's
        own samples of the sampled set; the reference (``target_greedy``) is ``--original``'s."""
        plan = self.plan
        s, st = plan.sampled_set, plan.SETTING
        ref = None if plan.original is None else (plan.original, s, st)
        out = []
        for model in self.models:
            for spec in self.specs:
                if self.transforms(spec) == "model":
                    after = (attacked_name(model, spec), s, st)
                    before = (model, s, st)
                else:
                    after = (model, self.family_of(model, s, spec), st)
                    before = (model, self.family_of(model, s, self.null_spec(spec)), st)
                control = self.control_run(model, s, spec, st)
                case = Case(model, model, s, spec, after, before, control)
                out.append(self.case_row(case, ref, None))
        return out

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
