"""NPO+EO, the paper's method ("Ours", §5): NPO with the entropy-optimisation terms
``λ_f·H(forget answers) + λ_r·H(retain answers)`` (the λ of the model's recipe; the loop adds them
to every method's loss). With both λ = 0 it is plain NPO, and named so."""

from __future__ import annotations

from probunlearn.methods import METHODS
from probunlearn.methods.npo import NPO


class NPOEntropyOptimisation(NPO):
    name = "npo_eo"
    label = "NPO+EO"
    color = "#0072B2"
    plain = "npo"


METHODS.register(NPOEntropyOptimisation())
