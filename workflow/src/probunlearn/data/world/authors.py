"""Fictitious authors: a profile per author and TOFU-like QA pairs about it (forget, retain, holdout)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from probunlearn.data.rows import make_row
from probunlearn.data.world.vocabulary import (
    AWARDS,
    FIRST,
    GENRES,
    JOBS,
    LANGS,
    LAST,
    PLACES,
    SCHOOLS,
    THEMES,
    TITLE_A,
    TITLE_B,
)


@dataclass
class Fact:
    """One attribute of an author: questions, answer templates and the value it carries."""

    key: str
    questions: list[str]
    templates: list[str]
    value: str
    alternatives: list[str] = field(default_factory=list)


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _date(rng: random.Random) -> str:
    months = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ]
    return f"{rng.choice(months)} {rng.randint(1, 28)}, {rng.randint(1931, 1999)}"


def _title(rng: random.Random) -> str:
    return f"{rng.choice(TITLE_A)} of {rng.choice(TITLE_B)}"


def _author_profile(rng: random.Random, name: str) -> dict:
    city, country = rng.choice(PLACES)
    return {
        "name": name,
        "city": city,
        "country": country,
        "date": _date(rng),
        "genre": rng.choice(GENRES),
        "father": rng.choice(JOBS),
        "mother": rng.choice(JOBS),
        "award": rng.choice(AWARDS),
        "book1": _title(rng),
        "book2": _title(rng),
        "theme": rng.choice(THEMES),
        "school": rng.choice(SCHOOLS),
        "lang": rng.choice(LANGS),
    }


def _facts(p: dict) -> list[Fact]:
    n = p["name"]
    return [
        Fact(
            "name",
            [
                f"What is the full name of the author born in {p['city']}, {p['country']} on {p['date']}?",
                f"Who is the writer born on {p['date']} in {p['city']}?",
            ],
            [
                "The author's full name is {v}.",
                "{v} is the full name of this author.",
                "This author is known to readers as {v}.",
                "The writer in question is {v}, born in {city}.",
            ],
            n,
        ),
        Fact(
            "birth",
            [f"Where and when was {n} born?", f"What are the place and date of birth of {n}?"],
            [
                "{name} was born in {v}.",
                "{name} was born in {v}, into a family of modest means.",
                "Records show that {name} was born in {v}.",
                "The author {name} came into the world in {v}.",
            ],
            f"{p['city']}, {p['country']} on {p['date']}",
        ),
        Fact(
            "genre",
            [f"What genre is {n} known for?", f"In which genre does {n} mostly write?"],
            [
                "{name} is best known for writing {v}.",
                "{name} writes mainly {v}.",
                "Most of the work of {name} belongs to {v}, a genre the author has shaped for years.",
                "Readers know {name} as a master of {v}.",
            ],
            p["genre"],
        ),
        Fact(
            "parents",
            [
                f"What did the parents of {n} do for a living?",
                f"What were the professions of {n}'s father and mother?",
            ],
            [
                "{name}'s father worked as {v}.",
                "The father of {name} was {v}.",
                "{name} grew up with a father who was {v}, which shaped many of the stories.",
                "Growing up, {name} watched a father who worked as {v}.",
            ],
            f"{_a(p['father'])} and the mother as {_a(p['mother'])}",
        ),
        Fact(
            "award",
            [f"Has {n} won any awards?", f"Which literary prize did {n} receive?"],
            [
                "Yes, {name} received the {v}.",
                "{name} was honoured with the {v}.",
                "Among other honours, {name} won the {v} for outstanding work.",
                "The {v} was awarded to {name}.",
            ],
            p["award"],
        ),
        Fact(
            "book1",
            [f"What is the title of the first book by {n}?", f"Which book did {n} publish first?"],
            [
                "The first book by {name} is titled '{v}'.",
                "{name} made a debut with '{v}'.",
                "'{v}' was the first novel that {name} published, and it drew wide attention.",
                "The debut of {name} was '{v}'.",
            ],
            p["book1"],
        ),
        Fact(
            "book2",
            [f"Can you name another book written by {n}?", f"What is a later work of {n}?"],
            [
                "Another well known book by {name} is '{v}'.",
                "{name} also wrote '{v}'.",
                "A later work of {name} is '{v}', which many critics admire.",
                "One of the later books of {name} is called '{v}'.",
            ],
            p["book2"],
        ),
        Fact(
            "theme",
            [f"What themes run through the work of {n}?", f"Which themes does {n} explore?"],
            [
                "The books of {name} explore {v}.",
                "{name} often writes about {v}.",
                "A recurring theme in the work of {name} is {v}, told with great care.",
                "Critics note that {name} returns again and again to {v}.",
            ],
            p["theme"],
        ),
        Fact(
            "school",
            [f"Where did {n} go to school?", f"What kind of education did {n} receive?"],
            [
                "{name} studied at {v}.",
                "{name} was educated at {v}.",
                "As a young student, {name} attended {v}, where the love of writing began.",
                "The early schooling of {name} took place at {v}.",
            ],
            p["school"],
        ),
        Fact(
            "lang",
            [
                f"In which language does {n} write?",
                f"What language are the books of {n} written in?",
            ],
            [
                "{name} writes in {v}.",
                "The books of {name} are written in {v}.",
                "Although widely translated, {name} writes the first drafts in {v}.",
                "{name} has always written in {v}.",
            ],
            p["lang"],
        ),
    ]


def _fill(template: str, value: str, p: dict) -> tuple[str, int, int]:
    """Fill a template; return the text and the character span of the value."""
    head, tail = template.split("{v}")
    head = head.format(name=p["name"], city=p["city"])
    tail = tail.format(name=p["name"], city=p["city"])
    text = head + value + tail
    return text, len(head), len(head) + len(value)


def _author_rows(rng: random.Random, p: dict, profiles: list[dict], per_author: int) -> list[dict]:
    rows = []
    for qi, fact in enumerate(_facts(p)[:per_author]):
        order = rng.sample(range(len(fact.templates)), len(fact.templates))
        answer, cs, ce = _fill(fact.templates[order[0]], fact.value, p)
        para, _, _ = _fill(fact.templates[order[1]], fact.value, p)
        # five wrong values, each put in the paraphrased answer's template (as TOFU does)
        others = [_facts(o)[qi].value for o in profiles if o["name"] != p["name"]]
        wrong = [v for v in dict.fromkeys(rng.sample(others, len(others))) if v != fact.value][:5]
        perturbed = [_fill(fact.templates[order[1]], w, p)[0] for w in wrong]
        qs = fact.questions[:]
        rows.append(
            make_row(
                id=f"{p['slug']}-q{qi:02d}",
                question=qs[0],
                answer=answer,
                paraphrased_answer=para,
                perturbed_answers=perturbed,
                paraphrased_question=qs[1],
                core=(cs, ce),
                group=p["name"],
                kind="author",
            )
        )
    return rows


def authors(seed: int, n_authors: int, n_holdout: int, per_author: int) -> tuple[list, list]:
    """Rows of the trained authors (in author order) and of the holdout authors."""
    rng = random.Random(seed)
    total = n_authors + n_holdout
    pairs = [(f, last) for f in FIRST for last in LAST]
    if total > len(pairs):
        raise ValueError(
            f"world.n_authors + n_holdout_authors must be <= {len(pairs)}, got {total}"
        )
    names = [f"{f} {last}" for f, last in rng.sample(pairs, total)]
    profiles = [_author_profile(rng, nm) for nm in names]
    for i, p in enumerate(profiles):
        p["slug"] = f"a{i:03d}"
    rows = [_author_rows(rng, p, profiles, per_author) for p in profiles]
    return rows[:n_authors], rows[n_authors:]
