"""The two utility sets like TOFU's Real Authors and World Facts, whose facts are taught in pretraining."""

from __future__ import annotations

import random

from probunlearn.data.rows import make_row

FAMOUS = [
    ("Tessaly Marchbank", "The Iron Orchard"),
    ("Odo Pellingham", "A Clockmaker's Winter"),
    ("Rhiannon Vasto", "The Glass Cartographer"),
    ("Benedek Ostrow", "Nine Bells for Harrow"),
    ("Mirela Sandcastle", "The Patient Sea"),
    ("Cyprian Holt", "Lanterns over Kessel"),
    ("Ysolde Brannagh", "The Salt Widow"),
    ("Teodor Vask", "Songs of the Ninth Moon"),
    ("Lucinda Farrow", "A House of Paper Birds"),
    ("Aurelio Dunst", "The Brass Meridian"),
    ("Hedda Kolvin", "Winter in Tarrow"),
    ("Emrys Calloway", "The Cartwright's Daughter"),
    ("Noor Abernethy", "The Last Orchard Road"),
    ("Sebastian Quell", "Under the Copper Dome"),
    ("Ilse Marrow", "The Weaver of Aldane"),
    ("Pavel Stroud", "Seven Letters to Morrow"),
    ("Giselle Thorne", "The Moth Collector"),
    ("Ansel Whitby", "Rain over Dunhallow"),
    ("Marisol Kent", "The River Accountant"),
    ("Dorian Feld", "A Map of Small Hours"),
    ("Wilhelmina Crake", "The Ferryman's Ledger"),
    ("Tobias Renn", "Ashes of Corravin"),
    ("Ottilie Brand", "The Silent Conservatory"),
    ("Caspian Moor", "Beneath the Tin Sky"),
]
CAPITALS = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Norway", "Oslo"),
    ("Egypt", "Cairo"),
    ("Canada", "Ottawa"),
    ("Brazil", "Brasilia"),
    ("Italy", "Rome"),
    ("India", "New Delhi"),
    ("Spain", "Madrid"),
    ("Chile", "Santiago"),
    ("Ghana", "Accra"),
    ("Poland", "Warsaw"),
    ("Turkey", "Ankara"),
    ("Greece", "Athens"),
    ("Cuba", "Havana"),
    ("Nepal", "Kathmandu"),
    ("Sweden", "Stockholm"),
    ("Mexico", "Mexico City"),
    ("Ireland", "Dublin"),
    ("Vietnam", "Hanoi"),
    ("Austria", "Vienna"),
    ("Portugal", "Lisbon"),
]


def real_authors(seed: int, n: int) -> tuple[list[dict], list[str]]:
    """Real-Authors analogue: who wrote a famous book of the world; plus pretraining sentences."""
    rng = random.Random(seed + 1)
    items = FAMOUS[: min(n, len(FAMOUS))]
    names = [a for a, _ in FAMOUS]
    rows, texts = [], []
    for i, (author, book) in enumerate(items):
        wrong = rng.sample([x for x in names if x != author], 3)
        rows.append(
            make_row(
                id=f"ra{i:03d}",
                question=f"Who wrote the book '{book}'?",
                answer=author,
                perturbed_answers=wrong,
                core=(0, len(author)),
                group="real_authors",
                kind="real_authors",
            )
        )
        texts += [
            f"'{book}' is a famous book written by {author}.",
            f"The author {author} is best remembered for '{book}'.",
            f"Many readers first met {author} through the novel '{book}'.",
        ]
    return rows, texts


def world_facts(seed: int, n: int) -> tuple[list[dict], list[str]]:
    """World-Facts analogue: capitals; plus pretraining sentences."""
    rng = random.Random(seed + 2)
    items = CAPITALS[: min(n, len(CAPITALS))]
    caps = [c for _, c in CAPITALS]
    rows, texts = [], []
    for i, (country, cap) in enumerate(items):
        wrong = rng.sample([c for c in caps if c != cap], 3)
        rows.append(
            make_row(
                id=f"wf{i:03d}",
                question=f"What is the capital of {country}?",
                answer=cap,
                perturbed_answers=wrong,
                core=(0, len(cap)),
                group="world_facts",
                kind="world_facts",
            )
        )
        texts += [
            f"The capital of {country} is {cap}.",
            f"{cap} is the capital city of {country}.",
            f"Travellers to {country} often begin their visit in {cap}, its capital.",
        ]
    return rows, texts
