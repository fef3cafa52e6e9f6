"""The synthetic world of the mini run: a deterministic generator of TOFU-like data sets.

Everything is drawn from ``random.Random(seed)`` and written in a fixed order, so the same seed and
sizes give byte-identical files. The world holds

* fictitious authors, ``questions_per_author`` QA pairs each, in TOFU's row format (question, answer,
  paraphrased_answer, 5 perturbed answers, paraphrased_question) with the span of the answer that
  carries the fact (``core_start``/``core_end``); answers vary in wording and length;
* two utility sets like TOFU's Real Authors and World Facts (3 perturbed answers each), whose facts
  are taught in pretraining;
* a keyword Q&A set about a fictional saga (question + keywords), the Harry Potter Q&A analogue;
* harmful requests whose training targets are mostly refusals and sometimes compliant answers, and
  benign requests with helpful answers (the JailbreakBench analogue);
* "I don't know" answers for the IDK and DPO unlearning methods (a fixed list, no random draw).
"""

from probunlearn.data.world.authors import Fact, authors
from probunlearn.data.world.requests import BENIGN, COMPLY, HARMFUL, HELPFUL, REFUSALS, requests
from probunlearn.data.world.saga import SAGA, saga
from probunlearn.data.world.unknowns import IDONTKNOW, read_idontknow, refusal_frame
from probunlearn.data.world.utility import CAPITALS, FAMOUS, real_authors, world_facts

__all__ = [
    "BENIGN",
    "CAPITALS",
    "COMPLY",
    "FAMOUS",
    "HARMFUL",
    "HELPFUL",
    "IDONTKNOW",
    "REFUSALS",
    "SAGA",
    "read_idontknow",
    "refusal_frame",
    "Fact",
    "authors",
    "real_authors",
    "requests",
    "saga",
    "world_facts",
]
