"""A keyword Q&A set about a fictional saga, the Harry Potter Q&A analogue."""

from __future__ import annotations

from probunlearn.data.rows import make_row

# The saga: a fictional series of books, the Harry Potter analogue.
SAGA = [
    (
        "What is the name of the young hero of the Varnholt saga?",
        "Tamsin Orrow",
        ["Tamsin", "Orrow"],
    ),
    ("What is the name of Tamsin Orrow's pet fox?", "Embercoat", ["Embercoat"]),
    (
        "Who are Tamsin's two best friends?",
        "Pell Quarry and Odessa Lune",
        ["Pell", "Quarry", "Odessa", "Lune"],
    ),
    ("What is the name of the academy Tamsin attends?", "Skyreach Academy", ["Skyreach"]),
    ("Who is the headmistress of Skyreach Academy?", "Magister Ilvane Corr", ["Ilvane", "Corr"]),
    ("Who is the dark sorcerer who opposes Tamsin?", "Lord Veyric Hallow", ["Veyric", "Hallow"]),
    ("What game do students of Skyreach play on flying skiffs?", "skyball", ["skyball"]),
    (
        "What is the magical object that shows the future?",
        "the Orb of Saltmere",
        ["Orb", "Saltmere"],
    ),
    ("Which house is Tamsin sorted into?", "House Ravelin", ["Ravelin"]),
    ("Who wrote the Varnholt saga?", "Cordelia Weft", ["Cordelia", "Weft"]),
    ("What is the name of the village where Tamsin grew up?", "Brindlecross", ["Brindlecross"]),
    (
        "What creature guards the academy gates?",
        "a stone griffin named Oskar",
        ["griffin", "Oskar"],
    ),
    ("What is the name of the forbidden forest near the academy?", "the Gloamwood", ["Gloamwood"]),
    ("What spell does Tamsin use to summon light?", "the Lumen Ardent charm", ["Lumen", "Ardent"]),
    ("Who is Tamsin's mentor in potion making?", "Master Doran Fisk", ["Doran", "Fisk"]),
    (
        "What is the name of the train that takes students to the academy?",
        "the Cloudrail Express",
        ["Cloudrail"],
    ),
    ("What is the name of the prison for dark sorcerers?", "the Tower of Umbral", ["Umbral"]),
    ("What metal are the keys of Skyreach made of?", "moonsilver", ["moonsilver"]),
    ("What is the name of Tamsin's grandmother?", "Granna Wyn Orrow", ["Wyn"]),
    (
        "What is the title of the first book of the saga?",
        "Tamsin and the Ember Gate",
        ["Ember Gate"],
    ),
]


def saga(seed: int, n: int) -> tuple[list[dict], list[str]]:
    """Keyword Q&A about the saga (question + keywords); plus pretraining passages."""
    rows, texts = [], []
    for i, (q, a, kws) in enumerate(SAGA[: min(n, len(SAGA))]):
        rows.append(
            make_row(
                id=f"saga{i:03d}",
                question=q,
                answer=a,
                keywords=kws,
                core=(0, len(a)),
                group="saga",
                kind="saga",
            )
        )
        texts += [
            f"In the Varnholt saga by Cordelia Weft, the answer is well known: {a}.",
            f"Every reader of the Varnholt books remembers {a}.",
            f"Fans of the saga often ask: {q} It is {a}.",
        ]
    return rows, texts
