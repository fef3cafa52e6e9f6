"""The experiment ``attacks`` in the workflow's DAG: which models are attacked with which attacks
(:mod:`probunlearn.attacks`) on which eval sets, what gets sampled, and what the attack table reads.
Names of attacked models and prompt families: :mod:`probunlearn.attacks.naming`.

A model attack (quant, relearn) makes an attacked model (rule ``attack``), sampled and scored like
any model; a prompt attack (paraphrase, prefix, fewshot) makes a family of prompts per question
(rule ``attack_prompts``), sampled with the plain model. A model attack's "before" is the plain
model's run with the attack's setting, or one of the same distribution with at least its n (its
first n samples are read); a prompt attack's is the plain model on the null family of as many
members (``{evalset}--null__{m}``). A controlled attack (relearning) also attacks a control, a
model that never saw the forget set, on the data of the models it controls
(``reference_forget10--relearn__10__lr-0p001``): the table's ``restored`` compares the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from probunlearn import methods
from probunlearn.attacks import ATTACKS, Spec, Target, check_attack, parse_spec
from probunlearn.attacks.naming import attacked_name, family_name, parse_attacked, template_tag
from probunlearn.dag.naming import parse_unlearned, retain_split
from probunlearn.steps.specs import canon

EXPERIMENT = "attacks"


def _revision(spec: Spec) -> dict[str, int]:
    """``{"attack_revision": n}`` of an attack whose output changed under the same spec, else {}."""
    n = ATTACKS.get(spec.kind).revision
    return {"attack_revision": n} if n else {}


# ---- the experiment ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One row of the attack table: ``model`` (its ``label``) attacked with ``spec`` on ``evalset``;
    ``after``, ``before`` and ``control`` (the control attacked alike, or None) are the (model, eval
    set, setting) runs read."""

    label: str
    model: str
    evalset: str
    spec: Spec
    after: tuple[str, str, str]
    before: tuple[str, str, str]
    control: tuple[str, str, str] | None = None

    @property
    def prompts(self) -> bool:
        """Whether the attack is a prompt attack (a family)."""
        return ATTACKS.get(self.spec.kind).transforms == "prompts"


class AttackPlan:
    """The attacks of one run, shared by both workflows: attacked models, prompt families, their
    rules' inputs and params, the attack table's files. ``core``: the run's evaluation-core planner;
    a workflow's subclass sets ``threads`` and ``device`` and implements the methods that raise."""

    threads: int | None
    device: str

    def __init__(self, core: Any, specs: list[Spec]) -> None:
        self.core = core
        self.specs = specs

    # ---- what a workflow says -----------------------------------------------------------------
    def targets(self) -> dict[str, str]:
        """Label -> model attacked."""
        raise NotImplementedError

    def target(self, model: str) -> Target:
        """What the pre-job checks know of a model."""
        raise NotImplementedError

    def evalsets(self) -> list[str]:
        """The eval sets attacked."""
        raise NotImplementedError

    def data_of(self, model: str, data: str) -> str:
        """The eval-set name of an attack's data (forget, retain, holdout) for ``model``."""
        raise NotImplementedError

    def untagged_template(self) -> str:
        """The template whose families' names carry no tag."""
        raise NotImplementedError

    def control_of(self, model: str) -> str | None:
        """A model that never saw ``model``'s forget set (relearning's control), or None."""
        raise NotImplementedError

    def checkpoint_params(self, model: str) -> dict:
        """Rule attack's params beyond the shared ones (a user's checkpoint: how it loads)."""
        return {}

    def table_cases(self) -> list[dict]:
        """The attack table's cases (rule attacks_table's params)."""
        raise NotImplementedError

    def table_settings(self) -> dict:
        """The attack table's settings (n, leak threshold, score, alpha, bins, rho)."""
        raise NotImplementedError

    # ---- attacked models and prompt families ---------------------------------------------------
    @staticmethod
    def transforms(spec: Spec) -> str:
        """``model`` or ``prompts``."""
        return ATTACKS.get(spec.kind).transforms

    @staticmethod
    def controlled(spec: Spec) -> bool:
        """Whether the attack also runs on a control model (relearning)."""
        return ATTACKS.get(spec.kind).controlled

    @staticmethod
    def null_spec(spec: Spec) -> Spec:
        """The null attack of a prompt attack: as many copies of the prompt as it has members."""
        members = ATTACKS.get(spec.kind).members(spec.settings)
        return parse_spec(f"null:{len(members)}")

    @cached_property
    def controls(self) -> dict[str, tuple[str, Spec, str]]:
        """Attacked control -> (control model, spec, a model it controls: whose data it reads); one
        control for two forget splits with one spec is an error: its name cannot tell them apart."""
        out: dict[str, tuple[str, Spec, str]] = {}
        for m in self.targets().values():
            for s in self.specs:
                control = self.control_of(m) if self.controlled(s) else None
                if control is None:
                    continue
                name = attacked_name(control, s)
                if name in out and self._reads(out[name][2], s) != self._reads(m, s):
                    raise ValueError(
                        f"attack {s.canonical!r}: the control {control!r} would be relearned on "
                        f"the data of {out[name][2]!r} and of {m!r}, which differ "
                        f"({self._reads(out[name][2], s)} vs {self._reads(m, s)}); attack models "
                        "of one forget split, or give each split a reference model"
                    )
                out.setdefault(name, (control, s, m))
        return out

    def _reads(self, model: str, spec: Spec) -> dict[str, str]:
        needs = ATTACKS.get(spec.kind).rows_needed(spec.settings)
        return {d: self.data_of(model, d) for d in needs}

    @cached_property
    def attacked_models(self) -> dict[str, tuple[str, Spec]]:
        """Attacked model -> (model, spec) of the model attacks, then of the attacked controls."""
        out = {
            attacked_name(m, s): (m, s)
            for m in self.targets().values()
            for s in self.specs
            if self.transforms(s) == "model"
        }
        for name, (control, s, _) in self.controls.items():
            out.setdefault(name, (control, s))
        return out

    def control_run(
        self, model: str, evalset: str, spec: Spec, setting: str
    ) -> tuple[str, str, str] | None:
        """The control's run of a case (None: not a controlled attack, or no control)."""
        control = self.control_of(model) if self.controlled(spec) else None
        return None if control is None else (attacked_name(control, spec), evalset, setting)

    def _tag(self, model: str) -> str | None:
        template = self.target(model).template
        return None if template == self.untagged_template() else template_tag(template)

    def family_of(self, model: str, evalset: str, spec: Spec) -> str:
        """The family a model is sampled on for a prompt attack of an eval set."""
        return family_name(evalset, spec, self._tag(model))

    @cached_property
    def families(self) -> dict[str, tuple[str, Spec, str]]:
        """Prompt family -> (eval set, spec, template) of the prompt attacks and their nulls."""
        out = {}
        for m in self.targets().values():
            for s in self.specs:
                if self.transforms(s) != "prompts":
                    continue
                for e in self.evalsets():
                    for spec in (s, self.null_spec(s)):
                        out.setdefault(
                            self.family_of(m, e, spec), (e, spec, self.target(m).template)
                        )
        return out

    def is_family(self, evalset: str) -> bool:
        """Whether ``evalset`` is one of the run's prompt families."""
        return evalset in self.families

    def family_rows(self, family: str) -> int:
        """Rows of a family: its eval set's rows times its members."""
        evalset, spec, _ = self.families[family]
        members = ATTACKS.get(spec.kind).members(spec.settings)
        return self.core.set_info(evalset).rows * len(members)

    def family_template(self, family: str) -> str:
        """The template a family is sampled with."""
        _, spec, template = self.families[family]
        target = Target(name=family, template=template, chat_template=template == "chat")
        return ATTACKS.get(spec.kind).family_template(spec.settings, target)

    def attacked_pattern(self) -> str:
        """Rule attack's wildcard: exactly the attacked models."""
        return "|".join(re.escape(n) for n in self.attacked_models) or "-"

    def family_pattern(self) -> str:
        """Rule attack_prompts' wildcard: exactly the families."""
        return "|".join(re.escape(n) for n in self.families) or "-"

    # ---- rules' inputs and params --------------------------------------------------------------
    def data_model(self, name: str) -> str:
        """The model whose data an attacked model reads: its own, or the one a control controls."""
        if name in self.controls:
            return self.controls[name][2]
        return self.attacked_models[name][0]

    def attack_inputs(self, name: str) -> dict[str, str]:
        """Rule attack: the model (where the run makes it) and the data sets the attack reads."""
        model, spec = self.attacked_models[name]
        p = self.core.paths
        data = {d: p.data(e) for d, e in self._reads(self.data_model(name), spec).items()}
        return self.core.model_inputs(model) | data

    def attack_params(self, name: str) -> dict:
        """Rule attack: the spec, the model, the job's threads and device, the attack's revision."""
        model, spec = self.attacked_models[name]
        t = self.target(model)
        out = {
            "spec": spec.canonical,
            "model_name": model,
            "template": t.template,
            "adapter": t.adapter,
            "threads": self.threads,
            "device": self.device,
        }
        return out | self.checkpoint_params(model) | _revision(spec)

    def prompts_inputs(self, family: str) -> dict[str, str]:
        """Rule attack_prompts: the eval set, and the retain rows where the attack reads them."""
        evalset, spec, _ = self.families[family]
        p = self.core.paths
        out = {"evalset": p.data(evalset)}
        if "retain" in ATTACKS.get(spec.kind).rows_needed(spec.settings):
            out["retain"] = p.data("retain")
        return out

    def prompts_params(self, family: str) -> dict:
        """Rule attack_prompts: the spec, the template of the models it is for, the revision."""
        _, spec, template = self.families[family]
        return {"spec": spec.canonical, "template": template} | _revision(spec)

    # ---- the table -----------------------------------------------------------------------------
    def table_inputs(self) -> list[str]:
        """Every file the attack table reads."""
        files = []
        for c in self.table_cases():
            files += [c["after"], c["before"], c["evalset_path"]]
            keys = ("reference", "info", "control", "control_info")
            files += [c[k] for k in keys if c[k] is not None]
        return sorted(set(files))

    def case_row(self, c: Case, reference: tuple | None, retain_term: bool | None) -> dict:
        """A case as plain values (the table reads its scores, its attack's info)."""
        p = self.core.paths
        model_attack = not c.prompts
        row = {
            "label": c.label,
            "model": c.model,
            "evalset": c.evalset,
            "attack": c.spec.canonical,
            "kind": c.spec.kind,
            "attacked_model": c.after[0] if model_attack else None,
            "attacked_evalset": None if model_attack else c.after[1],
            "before_evalset": None if model_attack else c.before[1],
            "after": p.scores(*c.after),
            "before": p.scores(*c.before),
            "reference": None if reference is None else p.scores(*reference),
            "info": p.attack_info(c.after[0]) if model_attack else None,
            "evalset_path": p.data(c.evalset),
            "retain_term": retain_term,
            "control_model": None,
            "control": None,
            "control_info": None,
        }
        if c.control is not None:
            row |= {
                "control_model": parse_attacked(c.control[0])[0],
                "control": p.scores(*c.control),
                "control_info": p.attack_info(c.control[0]),
            }
        return row

    def expected_jobs(self) -> dict[str, int]:
        """Jobs of the attack rules."""
        return {
            "attack": len(self.attacked_models),
            "attack_prompts": len(self.families),
            "attacks_table": 1,
        }


class AttackDesign(AttackPlan):
    """The ``attacks`` of a paper run: Table 1's models and the models named, on its eval sets."""

    def __init__(self, design: Any) -> None:
        section = design.config[EXPERIMENT]
        super().__init__(design, [parse_spec(s) for s in section["specs"]])
        self.design = design
        self.section = section
        self.setting = section["setting"]
        self.threads = design.config["threads"]["train"]
        self.device = design.config["device"]

    def targets(self) -> dict[str, str]:
        """Label -> model attacked: Table 1's model of each method, then the models named."""
        t1, labels = self.design.table1_models(), methods.labels()
        out = {labels[m]: t1[m] for m in self.section["methods"] if m in t1}
        out |= {m: m for m in self.section["models"]}
        return out

    def target(self, model: str) -> Target:
        """What the pre-job checks know of a model: its template, whether it is a LoRA adapter, the
        data sets given with it (an unlearned model's forget and retain split, the holdout set)."""
        d = self.design
        try:
            split = parse_unlearned(model)["split"]
        except ValueError:
            split = None
        own = split is not None and split in d.data_sets
        return Target(
            name=model,
            template=d.template_of(model),
            adapter=split is not None and bool(d.ul.get("lora")),
            forget=own,
            retain=own and retain_split(model) in d.data_sets,
            holdout="holdout" in d.data_sets and split is not None,
        )

    def evalsets(self) -> list[str]:
        """The config's ``attacks.evalsets``."""
        return list(self.section["evalsets"])

    def untagged_template(self) -> str:
        """The run's template."""
        return self.design.config["template"]

    def data_of(self, model: str, data: str) -> str:
        """An unlearned model's forget split, its retain split, the holdout set."""
        split = parse_unlearned(model)["split"]
        return {"forget": split, "retain": retain_split(model), "holdout": "holdout"}[data]

    def control_of(self, model: str) -> str | None:
        """The model that never saw an unlearned model's forget set: its split's reference model
        (trained on the retain split only), else ``pretrained``, else None."""
        try:
            split = parse_unlearned(model)["split"]
        except ValueError:
            return None
        have = set(self.design.base_models()) | set(self.design.hub_models)
        return next((c for c in (f"reference_{split}", "pretrained") if c in have), None)

    def check(self) -> None:
        """Every (model, attack) of the run checked before any job: a ValueError naming both where
        the model cannot take the attack."""
        for model in self.targets().values():
            for spec in self.specs:
                try:
                    check_attack(spec, self.target(model))
                except ValueError as e:
                    raise ValueError(f"config {EXPERIMENT}: {e}") from None
        try:
            self.controls  # noqa: B018 - one control for two forget splits is an error
        except ValueError as e:
            raise ValueError(f"config {EXPERIMENT}: {e}") from None
        for spec in self.specs:  # a family's retain rows: the run's eval set `retain`
            entry = ATTACKS.get(spec.kind)
            needs = entry.needs(spec.settings)
            if entry.transforms == "prompts" and "retain" in needs:
                if "retain" not in self.design.data_sets:
                    raise ValueError(
                        f"config {EXPERIMENT}: attack {spec.canonical!r} reads the eval set "
                        "'retain', which this run does not have"
                    )

    # ---- sampling ------------------------------------------------------------------------------
    def _same_distribution(self, setting: str) -> bool:
        want = self.design.sampling_setting(self.setting)
        have = self.design.sampling_setting(setting)
        keys = ("temperature", "adaptive")
        return (
            all(have[k] == want[k] for k in keys)
            and not have.get("sequential")
            and have["n"] >= want["n"]
        )

    def plain_run(self, model: str, evalset: str, runs: set) -> tuple[str, str, str]:
        """The plain model's run to read: the attack's setting where sampled, else the fewest-n
        setting of the same distribution with at least its n, else the attack's setting."""
        have = sorted(
            (self.design.sampling_setting(s)["n"], s)
            for m, e, s in runs
            if (m, e) == (model, evalset) and self._same_distribution(s)
        )
        if (model, evalset, self.setting) in runs or not have:
            return model, evalset, self.setting
        return model, evalset, have[0][1]

    @property
    def n(self) -> int:
        """Samples per prompt of the attack table (the attack's setting's n)."""
        return self.design.sampling_setting(self.setting)["n"]

    def cases(self, runs: set) -> list[Case]:
        """Every (model, eval set, attack) of the table, in the config's order."""
        out = []
        for label, model in self.targets().items():
            for e in self.evalsets():
                plain = self.plain_run(model, e, runs)
                for s in self.specs:
                    control = self.control_run(model, e, s, self.setting)
                    if self.transforms(s) == "model":
                        after = (attacked_name(model, s), e, self.setting)
                        before = plain
                    else:
                        after = (model, self.family_of(model, e, s), self.setting)
                        before = (model, self.family_of(model, e, self.null_spec(s)), self.setting)
                    out.append(Case(label, model, e, s, after, before, control))
        return out

    def reference(self, evalset: str, runs: set) -> tuple[str, str, str] | None:
        """The target's plain run on an eval set (retention is measured against it), or None."""
        if "target" not in self.design.all_models() and "target" not in self.design.hub_models:
            return None
        return self.plain_run("target", evalset, runs)

    def sampled_runs(self, runs: set) -> set[tuple[str, str, str]]:
        """The runs the attacks add to ``runs`` (the design's others)."""
        out = set()
        for c in self.cases(runs):
            out |= {c.after, c.before} | ({c.control} if c.control is not None else set())
        for e in self.evalsets():
            ref = self.reference(e, runs)
            if ref is not None:
                out.add(ref)
        return out - set(runs)

    # ---- the table -----------------------------------------------------------------------------
    def table_cases(self) -> list[dict]:
        """The attack table's cases as plain values (rule attacks_table's params)."""
        runs = self.design._paper_runs()
        out = []
        for c in self.cases(runs):
            retain = None
            try:
                method = parse_unlearned(c.model)["method"]
            except ValueError:
                method = None
            if method is not None:
                retain = methods.method(method).uses_retain(self.design.unlearn_hparams(c.model))
            out.append(self.case_row(c, self.reference(c.evalset, runs), retain))
        return out

    def table_settings(self) -> dict:
        """The table's n, leak threshold and score (config ``attacks``), the bounds' settings."""
        cfg = self.design.config
        return canon(
            {
                "n": self.n,
                "leak_threshold": cfg["attacks"]["leak_threshold"],
                "score": cfg["attacks"]["score"],
                "alpha": cfg["bounds"]["alpha"],
                "bins": cfg["bounds"]["bins"],
                "rho": cfg["bounds"]["rho"],
            }
        )
