"""Every CUDA path of the library in one command (issue 37), then the realistic sampler benchmark.

    python measurements/gpu_check.py                      # on a GPU: at most 5 minutes on one H100
    python measurements/gpu_check.py --device cpu --tiny  # the smoke test of the suite, in seconds

Each check prints ``PASS`` or ``FAIL`` with its figures and its time; the command exits with 1 if
any failed. All models have random weights (no download). The checks, on ``--device`` against the
CPU where a comparison is made:

  load          the native Llama (GQA) and Phi load in float32 and bfloat16 on the device, and
                their logits on a left-padded batch equal transformers' bit for bit
  sampling      ``sampling.draw_tokens`` (``sample_answers`` without its table) in float32 draws
                the same samples on the device as on the CPU: Llama and Phi, unpacked, and packed
                with adaptive temperature
  tofu_losses   TOFU's per-answer losses (``token_scores.score_encodings``, what ``tofu_losses``
                runs on the model) on the device are within 1e-5 of the CPU's
  finetune      ``training.train_lm`` on a model loaded on the device (as ``run_finetune`` loads
                it): every batch on the parameters' device, the loss falls; in bf16 mixed precision
                too (autocast on, weights float32); the step's time in both precisions
  unlearn       ``unlearning.unlearn`` on the device: NPO, NPO+EO, RMU (MLP and ``down``), NPO with
                gradient checkpointing (close to without), NPO with LoRA, whose adapter loads back
                for the losses and for sampling; every batch on the parameters' device
  judge         ``judges.HarmBenchJudge`` on a tiny stand-in: the device's probabilities (bfloat16,
                its default there, and float32) against the CPU's
  presets       each GPU preset's unlearning step (``measurements/unlearning_memory.py``'s PRESETS:
                tofu-phi, tofu-llama2, muse-news) at reduced depth with the preset's widths,
                sequences and settings, through ``unlearn``: the measured peak memory beside
                ``unlearning_memory.as_run``'s estimate for the same scale (and the full one's)

then ``bench_realistic.py`` (llama-7b's shapes in bfloat16 on CUDA; ``--bench-arch``), with the
static KV cache and CUDA graph table. ``--only`` runs some of the checks; ``--no-bench`` skips the
benchmark.

It imports torch, transformers, peft, safetensors, tokenizers, tqdm, numpy and the probunlearn
package, and none of probunlearn's modules that import polars: a GPU machine without polars (or
Snakemake) runs every check. What it leaves out for that reason: ``sample_answers``' table (the
tokens are checked), ``tofu_losses``' table (the losses are checked), ``steps.train.run_finetune``
(reads parquet; the loader and the loop it calls are checked), the unlearning log file.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_realistic  # noqa: E402

from probunlearn import models, sampling, training, unlearning  # noqa: E402
from probunlearn.data import qa  # noqa: E402
from probunlearn.metrics import token_scores  # noqa: E402
from probunlearn.scoring import harmbench as judges  # noqa: E402
from probunlearn.training import optim  # noqa: E402

CHECKS = ("load", "sampling", "tofu_losses", "finetune", "unlearn", "judge", "presets")
LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
WORDS = (
    "Ada Lin wrote the red book about the sea in a small town by the harbour . Where was she born ? "
    "What did her parents do ? Which genre does Basil Mahfouz write in ? Yes No yes no"
).split()
# the correctness checks' models: small, with real head dims on a GPU (flash and cuDNN kernels)
SMALL = {
    False: dict(hidden_size=512, intermediate_size=1024, num_hidden_layers=2, num_attention_heads=8,
                num_key_value_heads=2),
    True: dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2),
}  # fmt: skip


class Frame:
    """What ``unlearning.unlearn`` reads of its polars frames (``height``, ``columns``, a column's
    ``to_list``), for a machine without polars."""

    def __init__(self, **columns: list) -> None:
        self._columns = columns

    @property
    def height(self) -> int:
        return len(next(iter(self._columns.values())))

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def __getitem__(self, name: str) -> Frame._Column:
        return Frame._Column(self._columns[name])

    class _Column(list):
        def to_list(self) -> list:
            return list(self)


# ---- helpers -------------------------------------------------------------------------------------


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def tokenizer():
    """A byte-level BPE tokenizer whose words (Yes and No among them) are single tokens."""
    from probunlearn.scoring.harmbench import LLAMA2_CLS_PROMPT

    texts = [" ".join(WORDS)] * 50 + [LLAMA2_CLS_PROMPT] * 5 + [qa.DEFAULT_TEMPLATE] * 20
    return models.train_tokenizer(texts, 600)


def checkpoint(tok, kind: str, where: Path, dims: dict, scale: float = 4.0) -> str:
    """A transformers checkpoint of a random Llama or Phi (weights times ``scale``: peaked logits)."""
    import transformers

    cls = {"llama": "LlamaForCausalLM", "phi": "PhiForCausalLM"}[kind]
    extra = {"partial_rotary_factor": 0.5} if kind == "phi" else {"tie_word_embeddings": True}
    config = getattr(transformers, cls.replace("ForCausalLM", "Config"))(
        vocab_size=len(tok), max_position_embeddings=512, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **dims, **extra,
    )  # fmt: skip
    torch.manual_seed(0)
    model = getattr(transformers, cls)(config)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale)
    out = where / kind
    models.save_model(model, tok, out)
    return str(out)


def watch(model, seen: list) -> None:
    """Record, at every forward pass, whether its token ids are on the parameters' device, and
    whether autocast is on: a hook on the input embedding, which every forward pass calls as a
    module (a LoRA model's wrapper calls its base model's ``forward`` directly, past any hook)."""
    emb = model.get_input_embeddings()

    def hook(module, args):
        dev = module.weight.device
        seen.append((args[0].device == dev, dev, torch.is_autocast_enabled(dev.type)))

    emb.register_forward_pre_hook(hook)


@contextlib.contextmanager
def watched_loader(seen: list, devices: list):
    """``models.load_model`` recording the device it is asked for and watching the model's batches."""
    load = models.load_model

    def loader(path, **kw):
        devices.append(kw.get("device"))
        model = load(path, **kw)
        watch(model, seen)
        return model

    models.load_model = loader
    try:
        yield
    finally:
        models.load_model = load


def on_device(seen: list, device: torch.device) -> bool:
    return bool(seen) and all(on and d.type == device.type for on, d, _ in seen)


def qa_rows(count: int, words: int = 6, offset: int = 0) -> tuple[list[str], list[str]]:
    """``count`` questions and answers of ``words`` words each, from WORDS."""
    qs, ans = [], []
    for i in range(count):
        pick = [WORDS[(offset + i * 7 + j * 3) % len(WORDS)] for j in range(words)]
        qs.append(" ".join(pick[: words // 2]) + " ?")
        ans.append(" ".join(pick[words // 2 :]) + " .")
    return qs, ans


def questions(count: int) -> list[str]:
    """``count`` questions of 3, 5, 7, ... words: prompts of different lengths (padding)."""
    return [" ".join(WORDS[i : i + 3 + 2 * i]) + " ?" for i in range(count)]


def left_padded(tok, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The prompts of ``texts``, left-padded to the longest: (ids, attention mask)."""
    seqs = [qa.prompt_ids(tok, t) for t in texts]
    width = max(len(x) for x in seqs)
    ids = torch.full((len(seqs), width), tok.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, width - len(x) :] = torch.tensor(x)
        mask[i, width - len(x) :] = 1
    return ids, mask


def draw(model, tok, questions, **kw) -> dict:
    ids = [f"q{i}" for i in range(len(questions))]
    settings = dict(n=16, max_new_tokens=12, seed_key="gpu-check", batch_size=64, progress=False)
    return sampling.draw_tokens(model, tok, ids, questions, **{**settings, **kw}).rows


def same_share(a: dict, b: dict) -> float:
    return sum(a[k] == b[k] for k in a) / len(a)


# ---- the checks --------------------------------------------------------------------------------


class Check:
    """One check's context: the device, the tokenizer, the checkpoints, a scratch directory."""

    def __init__(self, device: torch.device, tiny: bool, work: Path):
        self.device, self.tiny, self.work = device, tiny, work
        self.tok = tokenizer()
        self.dims = SMALL[tiny]
        self.paths = {k: checkpoint(self.tok, k, work, self.dims) for k in ("llama", "phi")}

    # load: native vs transformers logits, fp32 and bf16
    def load(self) -> tuple[bool, str]:
        tok, dev, ok, figs = self.tok, self.device, True, []
        ids, mask = (t.to(dev) for t in left_padded(tok, questions(3)))
        for kind, path in self.paths.items():
            for dtype in ("float32", "bfloat16"):
                nat = models.load_model(path, dtype=dtype, device=str(dev))
                hf = models.load_model(path, dtype=dtype, device=str(dev), native=False)
                native_cls = type(nat).__module__.startswith("probunlearn.")
                right = next(nat.parameters()).device.type == dev.type and nat.dtype == getattr(
                    torch, dtype
                )
                with torch.inference_mode():
                    a = nat(input_ids=ids, attention_mask=mask).logits
                    b = hf(input_ids=ids, attention_mask=mask).logits
                equal = torch.equal(a, b)
                ok &= native_cls and right and equal
                diff = float((a.float() - b.float()).abs().max())
                figs.append(f"{kind} {dtype}: bit-equal {equal} (max |diff| {diff:.1e})")
        return ok, "; ".join(figs)

    # sampling: the device against the CPU, fp32
    def sampling(self) -> tuple[bool, str]:
        tok, ok, figs = self.tok, True, []
        qs = questions(4)
        for kind, path in self.paths.items():
            cpu = models.load_model(path, device="cpu")
            dev = models.load_model(path, device=str(self.device))
            for label, kw in (
                ("unpacked", {}),
                ("packed, adaptive", dict(pack_prompts=True, adaptive_threshold=0.5)),
            ):
                a, b = draw(cpu, tok, qs, **kw), draw(dev, tok, qs, **kw)
                share = same_share(a, b)
                ok &= share >= 0.98  # issue 37 measured 100%; another GPU may flip a rare draw
                figs.append(f"{kind} {label}: {share:.1%} of {len(a)} rows the same")
        return ok, "; ".join(figs)

    # tofu_losses: the device against the CPU
    def tofu_losses(self) -> tuple[bool, str]:
        tok = self.tok
        qs, ans = qa_rows(12, words=8)
        encs = [
            token_scores.encode_pair(tok, q, a, token_scores.TOFU_PHI)
            for q, a in zip(qs, ans, strict=True)
        ]
        worst = 0.0
        for path in self.paths.values():
            losses = []
            for device in ("cpu", str(self.device)):
                model = models.load_model(path, device=device)
                scores = token_scores.score_encodings(
                    model, encs, batch_size=5, pad_token_id=tok.pad_token_id
                )
                losses.append([-float(lp.sum()) / len(lp) for lp, _ in scores])
            worst = max(
                worst, *(abs(x - y) / max(1.0, abs(x)) for x, y in zip(*losses, strict=True))
            )
        return (
            worst <= 1e-5,
            f"max |loss difference| / max(1, |loss|) {worst:.2e} over {len(encs)} answers x 2 "
            "models (issue 37 measured 3e-6)",
        )

    # finetune: train_lm on the device, fp32 and bf16 autocast
    def finetune(self) -> tuple[bool, str]:
        tok, dev, figs, ok = self.tok, self.device, [], True
        qs, ans = qa_rows(32, words=10)
        examples = list(zip(qs, ans, strict=True))
        for mixed in (False, True):
            seen, devices = [], []
            with watched_loader(seen, devices):
                model = models.load_model(self.paths["llama"], device=str(dev))
            log = training.train_lm(model, tok, examples, epochs=2 if self.tiny else 3, lr=3e-3, batch_size=8,
                                    progress=False, mixed_precision=mixed)  # fmt: skip
            fp32 = all(p.dtype == torch.float32 for p in model.parameters())
            autocast = {a for _, _, a in seen} == {mixed}
            falls = log[-1]["loss"] < log[0]["loss"]
            ok &= on_device(seen, dev) and fp32 and autocast and falls and devices == [str(dev)]
            figs.append(f"{'bf16 autocast' if mixed else 'fp32'}: {len(seen)} steps on "
                        f"{dev.type}: {on_device(seen, dev)}, loss {log[0]['loss']:.3f} -> "
                        f"{log[-1]['loss']:.3f}, weights fp32 {fp32}")  # fmt: skip
        figs.append(self._step_times())
        return ok, "; ".join(figs)

    def _step_times(self) -> str:
        """ms per training step (batch 16 x 128 tokens) of a model of Phi-1.5's widths with 4 layers
        (tiny: the small model), fp32 against bf16 autocast."""
        from transformers import PhiConfig, PhiForCausalLM

        dims = dict(self.dims) if self.tiny else dict(hidden_size=2048, intermediate_size=8192,
                                                      num_hidden_layers=4, num_attention_heads=32)  # fmt: skip
        dims.pop("num_key_value_heads", None)
        torch.manual_seed(0)
        with torch.device(self.device):
            model = PhiForCausalLM(PhiConfig(vocab_size=51200, **dims))
        opt = optim.decayed_adamw(model.parameters(), 1e-5, 0.01)
        ids = torch.randint(4, 51200, (4 if self.tiny else 16, 32 if self.tiny else 128),
                            device=self.device)  # fmt: skip
        out = []
        for mixed in (False, True):
            times = []
            for _ in range(2 if self.tiny else 6):
                sync(self.device)
                t0 = time.perf_counter()
                with training.autocast(self.device, mixed):
                    logits = model(input_ids=ids).logits
                loss = torch.nn.functional.cross_entropy(
                    logits[:, :-1].float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)
                )
                opt.zero_grad()
                loss.backward()
                opt.step()
                sync(self.device)
                times.append(time.perf_counter() - t0)
            out.append(min(times[1:] or times))
        widths = "the small model's widths" if self.tiny else "Phi-1.5's widths"
        return (f"training step {ids.shape[0]}x{ids.shape[1]} tokens, {widths}, "
                f"{dims['num_hidden_layers']} layers: fp32 {out[0] * 1e3:.1f} ms, bf16 autocast "
                f"{out[1] * 1e3:.1f} ms ({out[0] / out[1]:.2f}x)")  # fmt: skip

    # unlearn: the methods on the device
    def _unlearn(self, name: str, target: str, **kw) -> tuple[dict, list, list]:
        qs, ans = qa_rows(8, words=10)
        forget = Frame(question=qs[:4], answer=ans[:4])
        retain = Frame(question=qs[4:], answer=ans[4:])
        seen, devices = [], []
        settings = dict(
            lr=1e-3,
            epochs=1 if self.tiny else 2,
            batch_size=2,
            progress=False,
            device=str(self.device),
        )
        with watched_loader(seen, devices):
            res = unlearning.unlearn(
                target, forget, retain, str(self.work / name), **{**settings, **kw}
            )
        return res, seen, devices

    def unlearn(self) -> tuple[bool, str]:
        dev, target, ok, figs = self.device, self.paths["llama"], True, []
        runs = {
            "npo": dict(method="npo"),
            "npo_eo": dict(method="npo_eo", lambda_f=1.0, lambda_r=-0.25),
            "rmu_mlp": dict(method="rmu", rmu_layer=1, rmu_c=2.0, rmu_alpha=1.0),
            "rmu_down": dict(method="rmu", rmu_layer=1, rmu_span=2, rmu_weights="down"),
            "npo_gc": dict(method="npo", gradient_checkpointing=True),
            "npo_lora": dict(method="npo", lora=LORA),
        }
        hist = {}
        for name, kw in runs.items():
            res, seen, devices = self._unlearn(name, target, **kw)
            h = res["history"]
            finite = all(math.isfinite(e["loss"]) for e in h)
            moved = h[-1]["forget_nll"] != h[0]["forget_nll"]
            good = on_device(seen, dev) and finite and moved and devices == [str(dev)]
            ok &= good
            hist[name] = h
            figs.append(f"{name} {'ok' if good else 'FAILED'} (forget NLL {h[0]['forget_nll']:.2f}"
                        f" -> {h[-1]['forget_nll']:.2f})")  # fmt: skip
        # checkpointing recomputes the same values: the losses agree up to the device's rounding
        gap = max(
            abs(a["loss"] - b["loss"]) for a, b in zip(hist["npo"], hist["npo_gc"], strict=True)
        )
        ok &= gap <= 1e-3 * max(1.0, abs(hist["npo"][-1]["loss"]))
        figs.append(f"checkpointing vs not: max |loss difference| {gap:.1e}")
        # the adapter loads back (unmerged, on its base) for the losses and for sampling
        adapter = models.load_model(str(self.work / "npo_lora"), device=str(dev))
        base = models.load_model(target, device=str(dev))
        qs, ans = qa_rows(4, words=8)
        encs = [token_scores.encode_pair(self.tok, q, a, token_scores.TOFU_PHI)
                for q, a in zip(qs, ans, strict=True)]  # fmt: skip
        pad = self.tok.pad_token_id
        la = token_scores.score_encodings(adapter, encs, pad_token_id=pad)
        lb = token_scores.score_encodings(base, encs, pad_token_id=pad)
        differs = any(not (a[0] == b[0]).all() for a, b in zip(la, lb, strict=True))
        rows = draw(adapter, self.tok, qs[:2], n=4)
        # unmerged: the native LoRA layers (models.native.lora), or peft's for what they do not compute
        from probunlearn.models.native import lora

        kind = "native LoRA layers" if lora.is_lora(adapter) else type(adapter).__name__
        unmerged = models.is_unmerged_adapter(adapter)
        loaded = unmerged and differs and len(rows) == 10
        ok &= loaded
        figs.append(f"LoRA adapter reloaded unmerged ({kind}): {unmerged}, its losses differ from "
                    f"the base's: {differs}, sampled {len(rows)} rows")  # fmt: skip
        return ok, "; ".join(figs)

    # judge: the device against the CPU
    def judge(self) -> tuple[bool, str]:
        behaviors = ["Write a tutorial", "Describe the sea"] * 3
        gens = [" ".join(WORDS[i : i + 9]) for i in range(0, 54, 9)]
        path = self.paths["llama"]
        cpu = judges.HarmBenchJudge(path, device="cpu", batch_size=4).score(behaviors, gens)
        fp32 = judges.HarmBenchJudge(path, device=str(self.device), dtype="float32", batch_size=4)
        default = judges.HarmBenchJudge(path, device=str(self.device), batch_size=4)
        d32 = float(abs(fp32.score(behaviors, gens) - cpu).max())
        dflt = float(abs(default.score(behaviors, gens) - cpu).max())
        ok = d32 <= 1e-5 and dflt <= 0.1 and ((cpu >= 0) & (cpu <= 1)).all()
        return bool(ok), (f"{len(gens)} pairs; |p - CPU's| max {d32:.1e} in float32, {dflt:.1e} "
                          f"in the device's default dtype ({default.model.dtype})")  # fmt: skip

    # presets: each GPU preset's unlearning step at reduced depth, peak memory against the estimate
    def presets(self) -> tuple[bool, str]:
        import unlearning_memory as um

        ok, figs = True, []
        for preset, spec in um.PRESETS.items():
            layers = 2 if self.tiny else (4 if spec["arch"] == "phi-1.5" else 2)
            sequences = 4 if self.tiny else spec["sequences"]
            seq = 16 if self.tiny else spec["seq"]
            path, length = self._preset_checkpoint(preset, spec, layers, seq)
            words = length  # one token per word (the tokenizer's words)
            qs, ans = qa_rows(sequences, words=words)
            half = sequences // 2
            kw = dict(method="npo", lr=1e-5, epochs=1, batch_size=half, gradient_checkpointing=True,
                      max_length=seq, lora=um.LORA if spec["lora"] else None)  # fmt: skip
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(self.device)
                base = torch.cuda.memory_allocated(self.device)
            forget = Frame(question=qs[:half], answer=ans[:half])
            retain = Frame(question=qs[half:], answer=ans[half:])
            res = unlearning.unlearn(path, forget, retain, str(self.work / f"p-{preset}"),
                                     progress=False, device=str(self.device), **kw)  # fmt: skip
            tokens = half * (min(seq, self._padded(qs[:half], ans[:half]))
                             + min(seq, self._padded(qs[half:], ans[half:])))  # fmt: skip
            finite = all(math.isfinite(e["loss"]) for e in res["history"])
            line = f"{preset} ({layers} layers, {sequences} x {tokens // sequences} tokens): step ran {finite}"
            if self.device.type == "cuda":
                peak = (torch.cuda.max_memory_allocated(self.device) - base) / 1e9
                est = um.as_run(preset, True, layers=layers, sequences=sequences,
                                seq=tokens // sequences)["total"]  # fmt: skip
                full = um.as_run(preset, True)["total"]
                close = abs(peak / est - 1) <= 0.15
                ok &= close
                line += (f", peak {peak:.2f} GB against {est:.2f} GB estimated "
                         f"({peak / est - 1:+.1%}); full scale estimated {full:.1f} GB")  # fmt: skip
            else:
                line += ", peak memory: CUDA only"
            ok &= finite
            figs.append(line)
        return ok, "; ".join(figs)

    def _padded(self, qs: list[str], ans: list[str]) -> int:
        return int(qa.encode_qa(self.tok, qs, ans)["input_ids"].shape[1])

    def _preset_checkpoint(self, preset: str, spec: dict, layers: int, seq: int) -> tuple[str, int]:
        """A random checkpoint of the preset's architecture at ``layers`` decoder layers (its widths;
        tiny: the small ones) and the words per QA pair that make about ``seq`` tokens."""
        import transformers
        import unlearning_memory as um

        if self.tiny:
            dims = {k: v for k, v in self.dims.items() if k != "num_key_value_heads"}
            vocab = len(self.tok)
        elif spec["arch"] == "phi-1.5":
            dims = {k: v for k, v in um.PHI_15.items() if k != "vocab_size"}
            vocab = um.PHI_15["vocab_size"]
        else:
            dims = {k: v for k, v in um.ARCHS[spec["arch"]].items() if k != "vocab_size"}
            vocab = um.ARCHS[spec["arch"]]["vocab_size"]
        dims["num_hidden_layers"] = layers
        kind = "Phi" if spec["arch"] == "phi-1.5" else "Llama"
        config = getattr(transformers, f"{kind}Config")(
            vocab_size=vocab, max_position_embeddings=max(4096, seq + 8),
            pad_token_id=self.tok.pad_token_id, bos_token_id=self.tok.bos_token_id,
            eos_token_id=self.tok.eos_token_id, **dims,
        )  # fmt: skip
        torch.manual_seed(0)
        with torch.device(self.device):
            model = getattr(transformers, f"{kind}ForCausalLM")(config)
        out = self.work / f"preset-{preset}"
        models.save_model(model, self.tok, out)
        del model
        # words per pair: each word is one token; the template adds a few
        overhead = self._padded(["x"], ["y"]) - 2
        return str(out), max(2, seq - overhead)


# ---- running -------------------------------------------------------------------------------------


def run_check(name: str, fn: Callable[[], tuple[bool, str]], verbose: bool) -> bool:
    t0 = time.perf_counter()
    try:
        ok, figures = fn()
    except Exception as e:  # noqa: BLE001 - a check that raises fails, the others still run
        ok, figures = False, f"{type(e).__name__}: {e}"
        if verbose:
            traceback.print_exc()
    print(f"{'PASS' if ok else 'FAIL'} {name} ({time.perf_counter() - t0:.1f} s): {figures}",
          flush=True)  # fmt: skip
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny models and sizes (a smoke test)")
    ap.add_argument("--only", default=",".join(CHECKS), help=f"comma-separated subset of {CHECKS}")
    ap.add_argument("--bench", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--bench-arch", default=None, help="default: llama-7b (tiny: tiny)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all)")
    ap.add_argument("--verbose", action="store_true", help="print the traceback of a failure")
    a = ap.parse_args(argv)
    only = [c for c in a.only.split(",") if c]
    if any(c not in CHECKS for c in only):
        ap.error(f"--only: a comma-separated subset of {','.join(CHECKS)}")
    if a.threads:
        torch.set_num_threads(a.threads)
    import transformers

    transformers.utils.logging.disable_progress_bar()
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here (use --device cpu --tiny for the smoke test)")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"gpu_check on {name}: torch {torch.__version__}, "
          f"transformers {transformers.__version__}; polars "
          f"{'imported' if sys.modules.get('polars') else 'not imported'}", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        check = Check(device, a.tiny, Path(d))
        for c in only:
            results[c] = run_check(c, getattr(check, c), a.verbose)
    if a.bench:
        arch = a.bench_arch or ("tiny" if a.tiny else "llama-7b")
        bench = ["--arch", arch, "--device", a.device]
        if a.tiny:
            bench += ["--n", "4", "--prompts", "3", "--max-new-tokens", "8", "--roofline-rows", "5",
                      "--threads", str(torch.get_num_threads())]  # fmt: skip
        else:
            bench += ["--dtype", "bfloat16", "--static-table", "--threads", "4"]
        print(f"realistic sampler benchmark: bench_realistic.py {' '.join(bench)}", flush=True)
        results["bench"] = run_check("bench", lambda: _bench(bench), a.verbose)
    failed = [c for c, ok in results.items() if not ok]
    print(f"{len(results) - len(failed)} of {len(results)} passed"
          f"{' (failed: ' + ', '.join(failed) + ')' if failed else ''}; "
          f"{time.perf_counter() - t0:.0f} s in all")  # fmt: skip
    return 1 if failed else 0


def _bench(argv: list[str]) -> tuple[bool, str]:
    figures = bench_realistic.main(argv)
    same = figures.get("same_samples")
    rates = ", ".join(f"{m} {r:.1f}" for m, r in figures["samples_per_s"].items())
    return bool(same), (f"samples/s {rates}; ours / generate(n) "
                        f"{figures.get('ours_vs_generate', float('nan')):.2f}x; the same samples "
                        f"on both models: {same} (targets: the table above)")  # fmt: skip


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
