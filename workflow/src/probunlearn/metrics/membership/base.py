"""The membership-statistic registry: what an attack statistic is, and :data:`STATISTICS`, every one.

A :class:`Statistic` turns the teacher-forced tokens of one example (:class:`Tokens`: the scored
tokens' log-probabilities, the scored text, and, where the statistic needs them, the next-token
distribution's moments, a reference model's log-probabilities or a gradient norm) into one number.
It says which direction means "member" (``member_high``), what it needs (``needs``: keys of
:data:`NEEDS`), which text it scores (``text``), its figure label and open-unlearning's name for it.
The per-example table, the AUC table, the config schema's choices (``membership.statistics``) and
the workflow's checks are read from here. A new statistic is one module of this package that ends
with ``STATISTICS.register(MyStatistic())``, or an entry point of the group
``probunlearn.membership_statistics`` (docs/extending.md). Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from probunlearn.registry import Registry

__all__ = [
    "ANSWER_TEXT",
    "NEEDS",
    "STATISTICS",
    "Statistic",
    "Tokens",
    "statistic",
    "statistic_names",
    "statistics",
    "statistics_of",
    "uses_reference",
]

NEEDS = {
    "vocab_stats": "a token table with vocab_stats (the next-token distribution's mean and std)",
    "reference": "a reference model (its log-probabilities of the same examples)",
    "backward": "gradient norms (a backward pass per example)",
}
"""What a statistic may need besides the model's own log-probabilities, and how messages name it."""

ANSWER_TEXT = (
    "the answer given the question (TOFU's labels: answer tag, answer, eos; the question is context "
    "only); a row without a question (a raw text: MUSE's privleak texts): the whole text"
)
"""The text every built-in statistic scores (open-unlearning's MIA data: ``QADataset``,
``CompletionDataset``)."""


@dataclass(frozen=True)
class Tokens:
    """What a statistic reads, one entry per example in order: ``ids``; ``logprobs``, the scored
    tokens' log-probabilities; ``texts``, the scored text without tags (a QA row's answer, a raw
    text); ``k``, Min-K%'s fraction; and where available ``vocab_mean`` / ``vocab_std`` (per scored
    token, :data:`NEEDS`), ``reference`` (a reference model's scored-token log-probabilities of the
    same example) and ``gradnorm``."""

    ids: Sequence[str]
    logprobs: Sequence[np.ndarray]
    texts: Sequence[str]
    k: float = 0.4
    vocab_mean: Sequence[np.ndarray] | None = None
    vocab_std: Sequence[np.ndarray] | None = None
    reference: Sequence[np.ndarray] | None = None
    gradnorm: np.ndarray | None = None
    model: str = "model"

    @property
    def loss(self) -> np.ndarray:
        """The mean negative log-likelihood of each example's scored tokens."""
        return np.array([-np.mean(v) for v in self.logprobs], dtype=np.float64)

    def lowest_mean(self, values: np.ndarray) -> float:
        """The mean of the ``max(1, floor(k n))`` lowest of n values (Min-K%'s average)."""
        n = max(1, int(values.size * self.k))
        return float(np.mean(np.sort(values)[:n]))


class Statistic:
    """A per-example membership statistic; subclass it, set the class attributes, write
    :meth:`compute`."""

    name: ClassVar[str]
    #: Figure label; ``{k}`` is Min-K%'s percentage (``Min-{k}%`` -> ``Min-40%``).
    label: ClassVar[str]
    #: True: a larger value means more member-like (Min-K%); False: a smaller one (LOSS).
    member_high: ClassVar[bool]
    #: Inputs besides the model's own log-probabilities (keys of :data:`NEEDS`).
    needs: ClassVar[tuple[str, ...]] = ()
    #: The text it scores, in words.
    text: ClassVar[str] = ANSWER_TEXT
    #: open-unlearning's name of the same attack's AUC (``mia_loss``), or None.
    openunlearning: ClassVar[str | None] = None
    #: Position among the statistics (table rows and figure panels are in this order).
    order: ClassVar[int] = 100

    def compute(self, tokens: Tokens) -> np.ndarray:
        """One value per example of ``tokens``."""
        raise NotImplementedError

    def label_for(self, k: float) -> str:
        """Its label at Min-K%'s fraction ``k``."""
        return self.label.format(k=f"{100 * k:g}")


STATISTICS: Registry[Statistic] = Registry(
    "membership_statistics",
    "probunlearn.metrics.membership",
    Statistic,
    "membership statistic",
    name_pattern=r"[a-z][a-z0-9_]*",
    name_rule="a lower-case letter, then lower-case letters, digits or '_': a statistic's name "
    "is a column of the membership tables and a --membership choice",
)
"""Every membership statistic, built-in and registered from outside."""


def statistics() -> list[Statistic]:
    """Every statistic, in table order."""
    return sorted(STATISTICS, key=lambda s: (s.order, s.name))


def statistic_names() -> list[str]:
    """Every statistic's name, in table order."""
    return [s.name for s in statistics()]


def statistic(name: str) -> Statistic:
    """The statistic ``name`` (a ValueError naming the known ones if unknown)."""
    return STATISTICS.get(name)


def uses_reference(name: str) -> bool:
    """Whether the statistic ``name`` compares each model with a reference model."""
    return "reference" in statistic(name).needs


def statistics_of(names: Sequence[str], model: str, reference: str | None) -> list[str]:
    """The statistics ``model`` is scored with: ``names``, less those that compare a model with the
    reference model for the reference model itself (``model == reference``: 0 there)."""
    return [s for s in names if model != reference or not uses_reference(s)]
