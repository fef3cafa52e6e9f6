"""The evaluate report's screenshots in docs/evaluate.md, at a 1,280 px window and a 390 px phone.

    python measurements/report_screenshots.py [OUT_DIR]

Builds three tiny random Llama models (the test suite's architecture, seeds 0-2: two evaluated, one
the --reference), eight questions and eight holdout questions of the user's own, runs

    probunlearn evaluate --model a=... --model b=... --reference ref=... --data questions.jsonl
        --holdout holdout.jsonl --attack quant:nf4 --leak-threshold 0.5 --n 16
        --max-new-tokens 6 --cores 2 --out OUT_DIR/eval

(issue 53's run, on tiny models: 8 questions, n = 16, a quantization attack, a holdout set) and
saves the top 1,600 px of report.html at 1,280 px and 1,600 px of it at 390 px from the M_gen
figure on, as 256-colour PNGs, in docs/images/ (tests/helpers/browser.py's screenshot; needs
Debian's chromium). Prints each file's size.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCH = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 2, "num_heads": 2,
        "max_positions": 2048}  # fmt: skip
QUESTIONS = [
    {"question": f"Who wrote the novel called book number {i}, and where did its author live?",
     "answer": f"Alice Smith wrote book {i} in Paris."}
    for i in range(8)
]  # fmt: skip
HOLDOUT = [
    {"question": f"Who painted picture number {i}?", "answer": f"Bob Jones painted it in Rome {i}."}
    for i in range(8)
]


def main(out: Path) -> None:
    from probunlearn import models
    from probunlearn.cli import main as cli

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import browser

    texts = [f"Question: {q['question']}\nAnswer: {q['answer']}" for q in QUESTIONS] * 4
    tok = models.train_tokenizer(texts + ["the cat sat on the mat"] * 5, 300)
    paths = {}
    for i, name in enumerate(["a", "b", "ref"]):
        paths[name] = models.save_model(
            models.tiny_llama(len(tok), ARCH, seed=i, tokenizer=tok), tok, out / name
        )
    for name, rows in (("questions", QUESTIONS), ("holdout", HOLDOUT)):
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc = cli([
        "evaluate", "--model", f"a={paths['a']}", "--model", f"b={paths['b']}",
        "--reference", f"ref={paths['ref']}", "--data", str(out / "questions.jsonl"),
        "--holdout", str(out / "holdout.jsonl"), "--attack", "quant:nf4",
        "--leak-threshold", "0.5", "--n", "16", "--max-new-tokens", "6", "--cores", "2",
        "--out", str(out / "eval"),
    ])  # fmt: skip
    if rc != 0:
        raise SystemExit(f"probunlearn evaluate failed ({rc}): see {out / 'eval/logs'}")
    page = out / "eval" / "report.html"
    images = ROOT / "docs" / "images"
    for png, width, anchor in (
        (images / "evaluate_report_1280.png", 1280, ""),
        (images / "evaluate_report_390.png", 390, "gen_curves"),
    ):
        browser.screenshot(page, png, width=width, height=1600, colors=256, anchor=anchor)
        print(f"{png.relative_to(ROOT)}: {png.stat().st_size:,} bytes")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory(prefix="probunlearn-shots-") as tmp:
            main(Path(tmp))
