"""Rule refusals: the "I don't know" answers of the IDK and DPO unlearning methods (no torch)."""

from __future__ import annotations

from probunlearn.storage.atomic import write_parquet


def run_refusals(out_path: str, *, source: str | None = None) -> None:
    """Rule refusals: TOFU's idontknow.jsonl where ``source`` names a local copy, else the world's own
    "I don't know" answers, as a one-column parquet (``answer``)."""
    from probunlearn.data.world import IDONTKNOW, read_idontknow, refusal_frame

    answers = read_idontknow(source) if source is not None else list(IDONTKNOW)
    write_parquet(refusal_frame(answers), out_path)
