"""Every preset runs end to end, offline: tofu-phi, hp-llama2 and jbb-alignment as shipped, with
tiny stand-in models of the architectures each preset names (built here), the real data files of
../shared/data, and an overlay that only shrinks the run (n, questions, splits, grids, draws,
epochs, tokens, chunk size, TOFU's questions, how many models are post-fine-tuned) while keeping
every rule and figure of the preset."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from helpers import SHARED_DATA
from helpers.workflow import copy_workflow, job_counts, snakemake

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not SHARED_DATA.is_dir(), reason=f"needs the local data copies in {SHARED_DATA}"
    ),
]

ARCH = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 512}  # fmt: skip


def _texts() -> list[str]:
    from probunlearn.benchmarks.hp_qa import loader as hp_loader
    from probunlearn.benchmarks.jbb import loader as jbb_loader
    from probunlearn.benchmarks.tofu import loader as tofu_loader

    tofu = tofu_loader.load_tofu("full", SHARED_DATA / "tofu")
    jbb = jbb_loader.load_jbb("harmful", SHARED_DATA / "jbb")
    hp = hp_loader.load_hp_qa(SHARED_DATA / "hp_qa")
    texts = tofu["question"].to_list() + tofu["answer"].to_list() + jbb["question"].to_list()
    texts += hp["question"].to_list()
    return texts + ["[INST] [/INST] Question: Answer:"] * 50


def _tokenizer(texts: list[str], bos: bool):
    """A byte-level BPE tokenizer; ``bos``: it adds <s> by itself, as Llama's and Mistral's do
    (Phi's adds nothing)."""
    from tokenizers import processors

    from probunlearn import models

    tok = models.train_tokenizer(texts, vocab_size=600)
    if bos:
        bos_id = tok.convert_tokens_to_ids("<s>")
        tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
        )
    return tok


def _stand_in(kind: str, tok, path: Path, seed: int, layers: int = 1) -> str:
    """A tiny causal LM of the class a preset's model has, saved like a hub model."""
    import torch
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        PhiConfig,
        PhiForCausalLM,
    )

    from probunlearn import models

    ids = dict(pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
               eos_token_id=tok.eos_token_id)  # fmt: skip
    cls, cfg = {
        "phi": (PhiForCausalLM, PhiConfig),
        "llama": (LlamaForCausalLM, LlamaConfig),
        "mistral": (MistralForCausalLM, MistralConfig),
    }[kind]
    # Mistral-7B-Instruct-v0.3 has no sliding window (its config: sliding_window null)
    extra = {"sliding_window": None} if kind == "mistral" else {}
    torch.manual_seed(seed)
    model = cls(cfg(vocab_size=len(tok), **{**ARCH, "num_hidden_layers": layers}, **ids, **extra))
    models.save_model(model, tok, path)
    return str(path)


def _model(spec: str, template=None) -> dict:
    return {"id": spec, "revision": "main", "gguf": None, "trust_remote_code": False,
            "template": template}  # fmt: skip


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory) -> dict[str, str]:
    """Tiny Phi, Llama and Mistral models, and a Llama classifier for the HarmBench judge."""
    base = tmp_path_factory.mktemp("hub")
    texts = _texts()
    no_bos, bos = _tokenizer(texts, bos=False), _tokenizer(texts, bos=True)
    # Mistral-Instruct's prompts come from its chat template (the preset says `template: chat`)
    chat = copy.deepcopy(bos)
    chat.chat_template = (
        "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"
    )
    # the HarmBench judge reads p(Yes) and p(No): single tokens, as in Llama-2's vocabulary
    judge = copy.deepcopy(bos)
    judge.add_tokens(["Yes", "No"])
    return {
        # 8 layers: the preset's RMU steers layer 7, as WMDP does
        "phi": _stand_in("phi", no_bos, base / "phi", 0, layers=8),
        "phi-target": _stand_in("phi", no_bos, base / "phi-target", 1, layers=8),
        "llama": _stand_in("llama", bos, base / "llama", 2),
        "mistral": _stand_in("mistral", chat, base / "mistral", 3),
        "classifier": _stand_in("llama", judge, base / "classifier", 4),
    }


# the shrinking overlay of each preset: sizes only; every rule and figure of the preset stays
SMALL = {
    "sampling": {"chunk_size": 200, "batch_size": 64, "max_new_tokens": 8,
                 "max_new_tokens_requests": 8,
                 "settings": {s: {"n": 4} for s in ("main", "ats", "sweep", "utility", "t0.5")}},
    "greedy_eval": {"max_new_tokens": 8},
    "threads": {"pretrain": 1, "train": 1, "eval": 1},
    "dtype": "float32",
    "device": "cpu",
}  # fmt: skip
OVERLAYS = {
    "tofu-phi": {
        "benchmarks": {"tofu": {"forget": ["forget01"], "retain_authors": 1,
                                "retain_eval_size": 4, "utility_size": 4}},
        "references": ["forget01"],
        # TOFU's own metrics on the first 10 questions of each set, greedy answers of up to 96
        # tokens counting the prompt (TOFU's: 300 questions, 200 tokens)
        "tofu_eval": {"ds_size": 10, "generation_max_length": 96},
        "greedy_eval": {"evalsets": ["forget01", "retain", "holdout", "real_authors",
                                     "world_facts"]},
        "finetune": {"epochs": 1, "batch_size": 8},
        "unlearning": {
            "hparams": {"epochs": 1, "batch_size": 8},
            "table1": {"split": "forget01"},
            "lambda_f_sweep": {"splits": ["forget01"], "fig4a_splits": ["forget01"],
                               "values": [0.0, 1.0]},
            "lambda_r_sweep": {"values": [0.0, -0.5]},
            "random_lambdas": {"draws": 1, "splits": ["forget01"]},
        },
        # two of Table 1's five models post-fine-tuned (the robustness check needs two; each
        # more is four jobs more of the same rules)
        "dcue": {"postfinetune": {"methods": ["npo", "rmu"], "epochs": 1, "batch_size": 8}},
    },
    "hp-llama2": {},
    "jbb-alignment": {},
}  # fmt: skip
MODELS = {
    "tofu-phi": {"pretrained": "phi", "target": "phi-target"},
    "hp-llama2": {"whp": "llama"},
    "jbb-alignment": {"phi": "phi", "vicuna": "llama", "mistral": "mistral",
                      "harmbench": "classifier"},
}  # fmt: skip
FIGURES = {
    "tofu-phi": ["table1.csv", "table2.csv", "dcue_vs_fq.csv", "fig3b.png", "fig3c.png",
                 "fig3d.png", "fig3e.png", "fig3f.png", "fig4a.png", "fig4b.png", "fig5a.png",
                 "fig5b.png", "fig5c.png"],
    "hp-llama2": ["fig3a.png"],
    "jbb-alignment": ["fig6.png"],
}  # fmt: skip


def _overlay(preset: str, stand_ins: dict[str, str]) -> dict:
    from probunlearn.config import load_yaml, merge_config

    shipped = load_yaml(Path("workflow/presets") / f"{preset}.yaml")
    cfg = merge_config({}, SMALL)
    merge_config(cfg, OVERLAYS[preset])
    merge_config(cfg, {"benchmarks": {"local": str(SHARED_DATA)}})
    # the preset's own models, their ids pointed at the stand-ins (templates kept)
    cfg["models"] = {
        name: {**shipped["models"][name], "id": stand_ins[kind]}
        for name, kind in MODELS[preset].items()
    }
    return cfg


@pytest.mark.parametrize("preset", sorted(MODELS))
def test_preset_runs_end_to_end(root, default_config, tmp_path, stand_ins, preset, monkeypatch):
    monkeypatch.chdir(root)
    overlay = _overlay(preset, stand_ins)
    work = copy_workflow(root, tmp_path, default_config)
    (work / "small.yaml").write_text(yaml.safe_dump(overlay))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    args = ["--configfile", f"workflow/presets/{preset}.yaml", "small.yaml"]
    proc = snakemake(work, *args, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]
    run = yaml.safe_load((root / f"workflow/presets/{preset}.yaml").read_text())["run"]
    out = work / "results" / run
    for name in FIGURES[preset]:
        sub = "tables" if name.endswith(".csv") else "figures"
        assert (out / sub / name).stat().st_size > 0, name
    metrics = pl.read_csv(out / "tables/metrics.csv")
    assert metrics.height > 0 and metrics["value"].is_not_null().all()
    written = yaml.safe_load((out / "config.yaml").read_text())
    assert written["base"] == "paper" and written["run"] == run
    CHECKS[preset](work, out, metrics)
    again = snakemake(work, "-n", *args, env=env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    print(f"{preset}: {sum(job_counts(proc.stdout).values())} jobs")


def _tofu_phi(work: Path, out: Path, metrics: pl.DataFrame) -> None:
    """TOFU's files copied from the local copy and verified, the model saved as safetensors, the
    sets cut as the overlay says (1 retain author + forget01's 2), ids matched to full."""
    assert (work / "resources/data/tofu/full.json").stat().st_size > 0
    assert (work / "resources/models/pretrained/model.safetensors").is_file()
    sizes = {n: pl.read_parquet(out / f"data/{n}.parquet").height
             for n in ("full", "forget01", "retain99", "retain")}  # fmt: skip
    assert sizes == {"full": 60, "forget01": 40, "retain99": 20, "retain": 4}
    forget = pl.read_parquet(out / "data/forget01.parquet")
    assert forget["id"][0] == "tofu-3960" and forget["perturbed_answers"].list.len().min() == 5
    table1 = pl.read_csv(out / "tables/table1.csv")
    assert {"NPO", "NPO+EO", "Ours"} <= set(table1.columns)
    fq = metrics.filter(pl.col("metric") == "forget_quality")
    assert set(fq["model"]) >= {"npo-forget01-f0-r0", "npo_eo-forget01-f1-r0"}


def _jbb_alignment(work: Path, out: Path, metrics: pl.DataFrame) -> None:
    """JBB's 100 + 100 behaviors from the local copy, judged by the HarmBench classifier."""
    assert (work / "resources/data/jbb/benign-behaviors.csv").is_file()
    sizes = {n: pl.read_parquet(out / f"data/{n}.parquet").height for n in ("harmful", "benign")}
    assert sizes == {"harmful": 100, "benign": 100}
    harm = metrics.filter(pl.col("evalset").is_in(["harmful", "benign"]))
    assert set(harm["model"]) == {"phi", "vicuna", "mistral"}
    assert harm.filter(pl.col("metric").str.contains("harm")).height > 0


def _hp_llama2(work: Path, out: Path, metrics: pl.DataFrame) -> None:
    """The 54 questions of the Harry Potter Q&A, scored by the keyword judge only (its answers are
    affirmative prefixes, not references: ROUGE-L does not apply)."""
    assert pl.read_parquet(out / "data/saga.parquet").height == 54
    scores = set(metrics.filter(pl.col("evalset") == "saga")["metric"])
    assert "m_bin_keyword_leak" in scores


CHECKS = {"tofu-phi": _tofu_phi, "jbb-alignment": _jbb_alignment, "hp-llama2": _hp_llama2}


def test_a_preset_model_changed_in_place_is_fetched_again(
    root, default_config, tmp_path, stand_ins, monkeypatch
):
    """fetch_model's params hold the checkpoint's identity (its content), not only its path: the
    same path with new weights refetches the model and plans every job after it again."""
    import shutil

    import safetensors.torch as st

    monkeypatch.chdir(root)
    local = tmp_path / "whp"
    shutil.copytree(stand_ins["llama"], local)
    overlay = _overlay("hp-llama2", {**stand_ins, "llama": str(local)})
    (tmp_path / "work").mkdir()
    work = copy_workflow(root, tmp_path / "work", default_config)
    (work / "small.yaml").write_text(yaml.safe_dump(overlay))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    args = ["--configfile", "workflow/presets/hp-llama2.yaml", "small.yaml"]
    target = "resources/models/whp"
    assert snakemake(work, target, *args, env=env).returncode == 0
    assert "Nothing to be done" in snakemake(work, "-n", target, *args, env=env).stdout
    weights = next(local.glob("*.safetensors"))
    tensors = st.load_file(weights)
    name = next(k for k in tensors if k.endswith("norm.weight"))
    tensors[name] = tensors[name] * 2
    st.save_file(tensors, weights, metadata={"format": "pt"})
    dry = snakemake(work, "-n", target, *args, env=env)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert job_counts(dry.stdout) == {"fetch_model": 1, "total": 1}
    assert "params have changed since last execution:\n        fetch_model" in dry.stdout
