"""Unlearn a forget set from a fine-tuned causal LM: GA, GD, NPO, RMU, each optionally + entropy optimisation.

One short training loop (nanoGPT style). Batching follows TOFU and the paper's reference code: an
epoch is one pass over the shuffled forget set in batches of ``batch_size``; every forget example is
paired with a random retain example (a fresh, seeded draw each epoch) and the paired retain examples
form the retain batch. AdamW + cosine schedule with linear warmup, gradient clipping at 1.0 (the
Hugging Face Trainer default that TOFU and the reference code inherit).
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from tqdm.auto import tqdm

from probunlearn import methods, models, training
from probunlearn.data import qa
from probunlearn.methods import Method, Step
from probunlearn.models.native import llama
from probunlearn.storage.atomic import atomic_write
from probunlearn.training import optim
from probunlearn.unlearning import losses

if TYPE_CHECKING:  # polars is imported only to write the log: unlearning itself needs torch only
    import polars as pl

LOG_COLUMNS = (
    "epoch",
    "forget_confidence",
    "retain_confidence",
    "loss",
    "forget_nll",
    "retain_nll",
    "forget_entropy",
    "retain_entropy",
    "train_loss",
    "lr",
)


# --------------------------------------------------------------------------- model structure helpers


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The list of transformer blocks of a causal LM (Llama/Phi/Mistral ``model.layers``, GPT-2 ``h``)."""
    candidates = []
    get_decoder = getattr(model, "get_decoder", None)
    if callable(get_decoder):
        try:
            candidates.append(get_decoder())
        except Exception:  # noqa: BLE001 - some models raise instead of returning None
            pass
    candidates += [getattr(model, name, None) for name in ("model", "transformer", "gpt_neox")]
    for base in candidates:
        for attr in ("layers", "h"):
            layers = getattr(base, attr, None) if base is not None else None
            if isinstance(layers, nn.ModuleList):
                return layers
    raise ValueError(f"cannot find the decoder layers of {type(model).__name__}")


def retain_pairs(
    n_forget: int, n_retain: int, how: str, gen: torch.Generator
) -> torch.Tensor | None:
    """The retain example of each forget example for one epoch (None without retain examples):
    ``"random"``, a draw from ``gen`` (TOFU); ``"cyclic"``, forget i with retain i mod ``n_retain``
    every epoch (MUSE's ForgetRetainDataset), drawing nothing."""
    if not n_retain:
        return None
    if how == "cyclic":
        return torch.arange(n_forget) % n_retain
    return torch.randint(n_retain, (n_forget,), generator=gen)


class _AdapterDisabled(nn.Module):
    """The frozen reference of a LoRA run: the same model with its adapter disabled, in eval mode
    (no second copy of the weights)."""

    def __init__(self, peft_model: nn.Module) -> None:
        super().__init__()
        self.peft_model = [peft_model]  # a list: not registered as a submodule

    def forward(self, **kwargs):
        model = self.peft_model[0]
        was_training = model.training
        model.eval()
        try:
            with model.disable_adapter():
                return model(**kwargs)
        finally:
            model.train(was_training)


LORA_KEYS = ("r", "alpha", "dropout", "target_modules")


def add_lora(model: nn.Module, lora: dict, layers: Sequence[int] | None = None) -> nn.Module:
    """``model`` wrapped with a fresh LoRA adapter (peft): ``lora`` holds r, alpha, dropout and
    target_modules; ``layers`` restricts it to those decoder layers (RMU's)."""
    from peft import LoraConfig, get_peft_model

    missing = [k for k in LORA_KEYS if k not in lora]
    if missing:
        raise ValueError(f"unlearning.lora lacks {missing}; expected {list(LORA_KEYS)}")
    config = LoraConfig(
        r=int(lora["r"]),
        lora_alpha=float(lora["alpha"]),
        lora_dropout=float(lora["dropout"]),
        target_modules=list(lora["target_modules"]),
        layers_to_transform=None if layers is None else list(layers),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


# --------------------------------------------------------------------------- the objective


@dataclass
class _Objective:
    """A method's loss on one (forget, retain) batch pair, plus the entropy terms of the recipe."""

    method: Method
    settings: dict
    lambda_f: float
    lambda_r: float
    ref: nn.Module | None = None
    state: Any = None
    tap: Any = None
    ref_tap: Any = None

    def needs_retain(self) -> bool:
        """Whether the loss uses the retain batch (the method's, or the retain entropy term)."""
        return self.lambda_r != 0 or self.method.uses_retain(self.settings)

    @staticmethod
    def _forward(model: nn.Module, batch: dict, tap: Any):
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        # float32 logits for the losses (bf16 under mixed precision; the same tensor otherwise)
        return out.logits.float(), (tap.pop() if tap is not None else None)

    def __call__(
        self, model: nn.Module, fb: dict, rb: dict | None, with_retain: bool, ib: dict | None = None
    ) -> tuple[torch.Tensor, dict]:
        """The loss on one (forget, retain) batch pair, and the logits it used; ``ib``: the forget
        questions with refusal answers (methods that need refusals)."""
        f_logits, f_h = self._forward(model, fb, self.tap)
        r_logits = r_h = None
        if rb is not None and with_retain:
            r_logits, r_h = self._forward(model, rb, self.tap)
        step = Step(
            model=model,
            forward=self._forward,
            forget=fb,
            retain=rb if r_logits is not None else None,
            refusal=ib,
            forget_logits=f_logits,
            retain_logits=r_logits,
            forget_hidden=f_h,
            retain_hidden=r_h,
            reference=self.ref,
            settings=self.settings,
            state=self.state,
        )
        loss = self.method.loss(step)
        r_lab = rb["labels"] if rb is not None else None
        loss = losses.eo_loss(
            loss, f_logits, fb["labels"], r_logits, r_lab, self.lambda_f, self.lambda_r
        )
        return loss, {"f_logits": f_logits, "r_logits": r_logits}


# --------------------------------------------------------------------------- I/O helpers


def _check_rows(df: pl.DataFrame, name: str) -> None:
    missing = {"question", "answer"} - set(df.columns)
    if missing:
        raise ValueError(f"{name} split lacks columns {sorted(missing)}")


def _write_log(rows: list[dict], path: str | os.PathLike) -> None:
    """CSV (or JSON lines for a .jsonl/.json path), written to a temp file and renamed."""
    import polars as pl

    df = pl.DataFrame(
        rows, schema={c: (pl.Int64 if c == "epoch" else pl.Float64) for c in LOG_COLUMNS}
    )
    ndjson = Path(path).suffix in (".jsonl", ".json", ".ndjson")
    atomic_write(path, df.write_ndjson if ndjson else df.write_csv)


def _nan_div(a: float, b: float) -> float:
    return a / b if b else float("nan")


# --------------------------------------------------------------------------- checks and setup


def _check_settings(
    spec: Method,
    name: str,
    *,
    lr: float,
    epochs: int,
    batch_size: int,
    warmup_ratio: float,
    weight_decay: float,
    lambda_f: float,
    lambda_r: float,
    refusals: Sequence[str] | None,
    chunk_length: int | None,
    lr_schedule: str,
    retain_pairing: str,
) -> None:
    """Raise a ValueError naming the first of :func:`unlearn`'s settings out of range (and warn
    when a method with both lambdas 0 is plainly another)."""
    if spec.plain is not None and lambda_f == 0 and lambda_r == 0:
        warnings.warn(  # stacklevel 3: the caller of unlearn
            f"method {name!r} with lambda_f = lambda_r = 0 is plain {spec.plain!r}", stacklevel=3
        )
    if lambda_f < 0:
        raise ValueError(f"lambda_f must be >= 0, got {lambda_f}")
    if lambda_r > 0:
        raise ValueError(f"lambda_r must be <= 0, got {lambda_r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if int(epochs) != epochs or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size}")
    if not 0 <= warmup_ratio <= 1:
        raise ValueError(f"warmup_ratio must be in [0, 1], got {warmup_ratio}")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    if spec.needs_refusals and not refusals:
        raise ValueError(f"method {name!r} needs refusal answers (refusals), got none")
    if retain_pairing not in ("random", "cyclic"):
        raise ValueError(f"retain_pairing must be 'random' or 'cyclic', got {retain_pairing!r}")
    if lr_schedule not in ("cosine", "constant"):
        raise ValueError(f"lr_schedule must be 'cosine' or 'constant', got {lr_schedule!r}")
    if chunk_length is not None and not spec.takes_corpus:
        raise ValueError(
            f"method {name!r} trains refusal answers to questions; a corpus (chunk_length) has none"
        )


def _check_splits(
    forget: pl.DataFrame, retain: pl.DataFrame, objective: _Objective, name: str
) -> None:
    """Raise a ValueError for a forget split that is empty or lacks columns, or a retain split the
    objective needs that is empty or lacks columns."""
    _check_rows(forget, "forget")
    if forget.height == 0:
        raise ValueError("the forget split is empty")
    if retain.height == 0 and objective.needs_retain():
        raise ValueError(
            f"the retain split is empty, but method {name!r} "
            f"(settings {objective.settings}, lambda_r={objective.lambda_r}) needs it"
        )
    if retain.height:
        _check_rows(retain, "retain")


def _load_model(
    target_dir: str,
    objective: _Objective,
    *,
    seed: int,
    threads: int | None,
    device: str | None,
    lora: dict | None,
    gradient_checkpointing: bool,
) -> tuple[Any, nn.Module]:
    """The tokenizer and the model to train (with its LoRA adapter, if any); sets the objective's
    frozen reference, method state and hidden-state taps."""
    spec, hp = objective.method, objective.settings
    models.set_threads(threads)
    torch.manual_seed(seed)
    tokenizer = models.load_tokenizer(target_dir)
    # peft wraps transformers models only: with LoRA the target loads through transformers
    model = models.load_model(target_dir, dtype="float32", device=device, native=lora is None)

    if gradient_checkpointing:
        if isinstance(model, llama.CausalLM):
            model.gradient_checkpointing_enable()
        elif hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x
            model.activation_checkpointing_enable({"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
    ref = None
    if lora is not None:
        layers = spec.adapter_layers(len(decoder_layers(model)), hp)
        model = add_lora(model, lora, layers=layers)
        if spec.needs_reference:
            ref = _AdapterDisabled(model)
    elif spec.needs_reference:
        ref = copy.deepcopy(model)
        ref.eval()
        ref.requires_grad_(False)
    objective.ref = ref
    objective.state = spec.setup(model, ref, hp, seed=int(seed), lora=lora is not None)
    objective.tap, objective.ref_tap = spec.taps(objective.state)
    return tokenizer, model


# --------------------------------------------------------------------------- the examples


class _Examples:
    """The forget and retain examples of a run (QA pairs, or a corpus's chunks), their encoding into
    batches, and the seeded draws of each epoch.

    Three generators, seeded from ``seed``: the epoch's order and retain pairs; the fixed retain
    pairs of the evaluation; the refusal answers (methods trained on them: their own generator, so
    the forget / retain draws stay those of every other method)."""

    def __init__(
        self,
        tokenizer: Any,
        forget: pl.DataFrame,
        retain: pl.DataFrame,
        refusals: list[str],
        *,
        chunk_length: int | None,
        template: str,
        max_length: int | None,
        device: torch.device,
        seed: int,
    ) -> None:
        self.tokenizer, self.refusals, self.device = tokenizer, refusals, device
        self.chunk_length, self.template, self.max_length = chunk_length, template, max_length
        fq, fa = forget["question"].to_list(), forget["answer"].to_list()
        rq = retain["question"].to_list() if retain.height else []
        ra = retain["answer"].to_list() if retain.height else []
        self.questions = fq
        if chunk_length is None:
            self.forget: list = list(zip(fq, fa, strict=True))
            self.retain: list = list(zip(rq, ra, strict=True))
        else:
            self.forget = qa.chunk_corpus(tokenizer, fa, int(chunk_length))
            self.retain = qa.chunk_corpus(tokenizer, ra, int(chunk_length)) if ra else []
        n_f, n_r = len(self.forget), len(self.retain)
        self.gen = torch.Generator().manual_seed(int(seed))
        eval_gen = torch.Generator().manual_seed(int(seed) + 7919)
        self.eval_pair = torch.randint(n_r, (n_f,), generator=eval_gen) if n_r else None
        self.refusal_gen = torch.Generator().manual_seed(int(seed) + 104729)
        self.eval_refusal = (
            torch.randint(len(self.refusals), (n_f,), generator=self.refusal_gen)
            if self.refusals
            else None
        )

    def epoch_draws(
        self, retain_pairing: str
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """One epoch's order of the forget examples, their retain pairs and refusal answers."""
        n_f, n_r = len(self.forget), len(self.retain)
        perm = torch.randperm(n_f, generator=self.gen)
        pair = retain_pairs(n_f, n_r, retain_pairing, self.gen)
        pick = (
            torch.randint(len(self.refusals), (n_f,), generator=self.refusal_gen)
            if self.refusals
            else None
        )
        return perm, pair, pick

    def encode(self, items: list) -> dict:
        """A batch of QA pairs or chunks, on the device."""
        if self.chunk_length is None:
            qs, as_ = [q for q, _ in items], [a for _, a in items]
            b = qa.encode_qa(
                self.tokenizer, qs, as_, template=self.template, max_length=self.max_length
            )
        else:  # equal-length chunks: no padding, every token a label (BOS is never predicted)
            ids = torch.tensor(items, dtype=torch.long)
            b = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
        return training.to_device(b, self.device)

    def batches(
        self, idx: torch.Tensor, pair: torch.Tensor | None, pick: torch.Tensor | None
    ) -> tuple[dict, dict | None, dict | None]:
        """The forget batch of the examples ``idx``, its retain batch (None without ``pair``) and
        its refusal batch (the forget questions with the ``pick`` answers; None without)."""
        ids = idx.tolist()
        fb = self.encode([self.forget[i] for i in ids])
        rb = None if pair is None else self.encode([self.retain[i] for i in pair[idx].tolist()])
        ib = None
        if pick is not None:
            ib = self.encode([(self.questions[i], self.refusals[int(pick[i])]) for i in ids])
        return fb, rb, ib


# --------------------------------------------------------------------------- training, evaluation


@dataclass
class _Trainer:
    """A run's model, objective and optimiser: one epoch of training, and the evaluation that
    follows each epoch."""

    model: nn.Module
    objective: _Objective
    examples: _Examples
    optimizer: torch.optim.Optimizer
    scheduler: Any
    trainable: list[nn.Parameter]
    batch_size: int
    max_grad_norm: float | None
    mixed_precision: bool

    def run(self, epochs: int, retain_pairing: str, *, bar_args: dict) -> list[dict]:
        """Train ``epochs`` epochs (a tqdm progress bar made with ``bar_args``); the log rows of
        epoch 0 (before training) to ``epochs``."""
        history = [self.evaluate(0, float("nan"))]
        with_retain = self.objective.needs_retain()
        bar = tqdm(**bar_args)
        try:
            for epoch in range(1, int(epochs) + 1):
                self.model.train()
                draws = self.examples.epoch_draws(retain_pairing)
                train_loss = self.train_epoch(epoch, draws, with_retain, bar)
                history.append(self.evaluate(epoch, train_loss))
        finally:
            bar.close()
            taps = (self.objective.tap, self.objective.ref_tap)
            for tap in {id(t): t for t in taps if t is not None}.values():
                tap.remove()
        return history

    def train_epoch(
        self,
        epoch: int,
        draws: tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None],
        with_retain: bool,
        bar: Any,
    ) -> float:
        """One pass over the forget examples in the order ``draws`` gives; the mean loss."""
        perm, pair, pick = draws
        dev = self.examples.device
        losses_epoch = []
        for s in range(0, len(self.examples.forget), self.batch_size):
            fb, rb, ib = self.examples.batches(perm[s : s + self.batch_size], pair, pick)
            with training.autocast(dev, self.mixed_precision):
                loss, _ = self.objective(self.model, fb, rb, with_retain=with_retain, ib=ib)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(self.trainable, self.max_grad_norm)
            self.optimizer.step()
            self.scheduler.step()
            losses_epoch.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(epoch=epoch, loss=f"{losses_epoch[-1]:.4g}")
        return sum(losses_epoch) / len(losses_epoch)

    @torch.no_grad()
    def evaluate(self, epoch: int, train_loss: float) -> dict:
        """The log row of ``epoch``: the objective, confidence, NLL and entropy of the answers on
        the forget set and its fixed retain pairs, in eval mode."""
        model, ex = self.model, self.examples
        model.eval()
        acc = dict.fromkeys(
            ("loss", "nb", "fc", "fn", "fnll", "fent", "rc", "rn", "rnll", "rent"), 0.0
        )
        order = torch.arange(len(ex.forget))
        for s in range(0, len(ex.forget), self.batch_size):
            idx = order[s : s + self.batch_size]
            fb, rb, ib = ex.batches(idx, ex.eval_pair, ex.eval_refusal)
            with training.autocast(ex.device, self.mixed_precision):
                loss, out = self.objective(model, fb, rb, with_retain=True, ib=ib)
            acc["loss"] += float(loss)
            acc["nb"] += 1
            for key, logits, lab in (("f", out["f_logits"], fb["labels"]),) + (
                (("r", out["r_logits"], rb["labels"]),) if rb is not None else ()
            ):
                conf, cnt = losses.answer_confidence(logits, lab)
                n = float(cnt)
                acc[key + "c"] += float(conf)
                acc[key + "n"] += n
                acc[key + "nll"] += float(losses.answer_ce(logits, lab)) * n
                acc[key + "ent"] += float(losses.answer_entropy(logits, lab)) * n
        return {
            "epoch": epoch,
            "forget_confidence": _nan_div(acc["fc"], acc["fn"]),
            "retain_confidence": _nan_div(acc["rc"], acc["rn"]),
            "loss": acc["loss"] / acc["nb"],
            "forget_nll": _nan_div(acc["fnll"], acc["fn"]),
            "retain_nll": _nan_div(acc["rnll"], acc["rn"]),
            "forget_entropy": _nan_div(acc["fent"], acc["fn"]),
            "retain_entropy": _nan_div(acc["rent"], acc["rn"]),
            "train_loss": train_loss,
            "lr": self.scheduler.get_last_lr()[0],
        }


# --------------------------------------------------------------------------- the loop


def unlearn(
    target_dir: str,
    forget: pl.DataFrame,
    retain: pl.DataFrame,
    out_dir: str,
    *,
    method: str,
    lr: float,
    epochs: int = 10,
    batch_size: int = 8,
    warmup_ratio: float = 0.1,
    weight_decay: float = 0.01,
    lambda_f: float = 0.0,
    lambda_r: float = 0.0,
    seed: int = 0,
    template: str = qa.DEFAULT_TEMPLATE,
    threads: int | None = None,
    log_path: str | None = None,
    progress: bool = True,
    max_grad_norm: float | None = 1.0,
    max_length: int | None = None,
    device: str | None = "auto",
    lora: dict | None = None,
    refusals: Sequence[str] | None = None,
    chunk_length: int | None = None,
    lr_schedule: str = "cosine",
    gradient_checkpointing: bool = False,
    retain_pairing: str = "random",
    mixed_precision: bool = False,
    **settings: Any,
) -> dict:
    """Unlearn ``forget`` from the model in ``target_dir`` with ``method``; save it to ``out_dir``.

    ``method`` is a name of :data:`probunlearn.methods.METHODS` (ga, gd, npo, npo_eo, rmu, idk,
    dpo, simnpo, or one registered from outside); ``settings`` are the method's own
    (:attr:`~probunlearn.methods.Method.settings`, e.g. ``beta`` of NPO, ``rmu_c`` of RMU), its
    defaults filling in the rest; a setting the method does not have is an error. The loss of each
    method is documented in its module (:mod:`probunlearn.methods.npo`, ...).

    Entropy optimisation (paper §5) goes on top of any method when ``lambda_f > 0`` or
    ``lambda_r < 0``: ``+ λ_f·H(forget answers) + λ_r·H(retain answers)``. ``"npo_eo"`` is
    NPO under the workflow's name for NPO+EO (with both λ = 0 it is plain NPO). The NPO forget term
    uses *summed* sequence log-probabilities, so its gradient is ~answer-length times a per-token
    mean such as the entropy: on the tiny model λ_f ≈ 1 barely moves the forget entropy, λ_f ≈ 10
    clearly does.

    ``lora`` (r, alpha, dropout, target_modules; None = full fine-tuning): train a LoRA adapter
    (peft) instead of the weights, for every method, EO included; ``out_dir`` then holds the
    adapter (adapter_config.json naming ``target_dir`` as its base, adapter_model.safetensors) and
    the tokenizer, which :func:`probunlearn.models.load_model` loads on its base unmerged. Methods
    with a frozen reference use the model with its adapter disabled, not a copy of the weights; a
    method may place the adapter on some layers only (RMU: its trained layers).

    ``forget``/``retain`` have columns ``question`` and ``answer`` (others are ignored).
    ``chunk_length``: they are corpora instead (MUSE), one text per row in ``answer``, cut into
    chunks of ``chunk_length`` tokens (:func:`probunlearn.data.qa.chunk_corpus`), every token after
    BOS a label; an epoch is one pass over the forget chunks, each paired with a retain chunk as a
    question is paired with a retain question. Methods trained on refusal answers need questions
    and refuse it. ``refusals``: the refusal answers of such methods (a random line per example,
    drawn anew every epoch).
    ``lr_schedule``: ``"cosine"`` (TOFU, the paper) or ``"constant"`` (MUSE), both after the warmup.
    ``retain_pairing``: ``"random"`` (TOFU): each forget example gets a random retain example, drawn
    anew every epoch; ``"cyclic"`` (MUSE's ForgetRetainDataset): forget example i always gets retain
    example i mod the number of retain examples.
    ``gradient_checkpointing``: keep only each decoder layer's input for the backward pass and
    recompute the rest there (the same values; a 7B model's step on a GPU needs it to fit).
    ``device``: where the model is loaded and trained ("auto" = cuda when available); every batch
    goes to the device of its parameters. ``mixed_precision``: forward passes (the frozen
    reference's too) under bf16 autocast, the losses from float32 logits; the weights, gradients
    and AdamW states stay float32 (:func:`probunlearn.training.autocast`). Off: float32 throughout.

    Optimiser: AdamW, weight decay on matrices only (biases and norm weights excluded, as the HF
    Trainer does); cosine schedule with ``ceil(warmup_ratio·steps)`` linear warmup steps (so the
    first step has lr 0 when warmup > 0); gradients clipped to ``max_grad_norm`` (None: off).

    Learning rate: no default on purpose. The paper uses 1e-5 for Phi-1.5 with batch 32; the tiny
    mini-run model (hidden 128, 4 layers, trained with lr ~1e-3) needs a much larger one (~1e-4 to
    1e-3), so the config chooses.

    ``log_path`` receives, for epoch 0 (before training) to ``epochs``, computed in eval mode without
    gradients on the forget set and its fixed (seeded) paired retain examples: ``forget_confidence``
    / ``retain_confidence`` (mean over answer tokens of the top-1 probability under teacher
    forcing), ``loss`` (the method's objective), answer NLL and entropy per split, the mean training
    loss of the epoch and the learning rate at its end. CSV, or JSON lines for a ``.jsonl`` path.

    Deterministic on CPU for the same inputs, seed and thread count. Returns a summary dict with the
    per-epoch ``history``.
    """
    name = str(method).lower()
    spec = methods.method(name)
    hp = spec.resolve(settings)
    _check_settings(
        spec,
        name,
        lr=lr,
        epochs=epochs,
        batch_size=batch_size,
        warmup_ratio=warmup_ratio,
        weight_decay=weight_decay,
        lambda_f=lambda_f,
        lambda_r=lambda_r,
        refusals=refusals,
        chunk_length=chunk_length,
        lr_schedule=lr_schedule,
        retain_pairing=retain_pairing,
    )
    objective = _Objective(spec, hp, lambda_f, lambda_r)
    _check_splits(forget, retain, objective, name)
    tokenizer, model = _load_model(
        target_dir,
        objective,
        seed=seed,
        threads=threads,
        device=device,
        lora=lora,
        gradient_checkpointing=gradient_checkpointing,
    )
    trainable = [p for p in model.parameters() if p.requires_grad]
    dev = next(model.parameters()).device

    optimizer = optim.decayed_adamw(trainable, lr, weight_decay)
    answers = [str(a) for a in refusals] if spec.needs_refusals else []
    examples = _Examples(
        tokenizer,
        forget,
        retain,
        answers,
        chunk_length=chunk_length,
        template=template,
        max_length=max_length,
        device=dev,
        seed=seed,
    )
    total_steps = math.ceil(len(examples.forget) / batch_size) * int(epochs)
    warmup_steps = math.ceil(warmup_ratio * total_steps)
    if lr_schedule == "constant":
        scheduler = training.constant_schedule(optimizer, warmup_steps)
    else:
        scheduler = training.cosine_schedule(optimizer, warmup_steps, total_steps)
    trainer = _Trainer(
        model,
        objective,
        examples,
        optimizer,
        scheduler,
        trainable,
        batch_size,
        max_grad_norm,
        mixed_precision,
    )
    bar_args = {"total": total_steps, "desc": f"unlearn {method}", "disable": not progress}
    history = trainer.run(epochs, retain_pairing, bar_args=bar_args)

    model.eval()
    if lora is None:
        model.requires_grad_(True)
    models.save_model(model, tokenizer, out_dir)
    if log_path is not None:
        _write_log(history, log_path)
    return {
        "out_dir": str(out_dir),
        "method": method,
        "steps": total_steps,
        "warmup_steps": warmup_steps,
        "trainable_parameters": sum(p.numel() for p in trainable),
        "history": history,
    }
