"""Load and save Hugging Face causal LMs; the tiny Llama-style model and BPE tokenizer of the mini run."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probunlearn.storage.atomic import atomic_dir

if TYPE_CHECKING:
    import torch
    from transformers import LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerFast

# transformers is imported only where it is used: a job that loads a plain local Llama, Mistral or Phi
# with the native implementation (probunlearn.models.native.llama, probunlearn.models.native.phi) never imports it.
# PROBUNLEARN_NATIVE=0 forces transformers.
NATIVE_ENV = "PROBUNLEARN_NATIVE"

SPECIAL_TOKENS = {
    "pad_token": "<pad>",
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
}

# torch is imported where it is used: what only reads a model directory (probunlearn.models.files,
# evaluate's checks) does not load it
DTYPES = ("float32", "bfloat16", "float16")


def resolve_device(device: str | None = None) -> torch.device:
    """``"auto"``/None → cuda when available, else cpu; otherwise the named device."""
    import torch

    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    """Map a config string (float32, bfloat16, float16) to a torch dtype."""
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return getattr(torch, dtype)


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, add_bos: bool = True
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on ``texts`` (deterministic for the same input).

    With ``add_bos`` (the mini run's choice) the tokenizer adds its bos token ``<s>`` by itself, as
    Llama's does: a ``TemplateProcessing`` post-processor puts ``<s>`` first whenever it encodes with
    ``add_special_tokens=True``. The workflow tokenises prompts with exactly the special tokens the
    tokenizer adds by itself and prepends nothing, so without it the mini models would see no bos.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    if add_bos:
        bos = SPECIAL_TOKENS["bos_token"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A",
            pair=f"{bos} $A {bos} $B:1",
            special_tokens=[(bos, tok.token_to_id(bos))],
        )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIAL_TOKENS)
    fast.padding_side = "left"
    return fast


def tiny_llama(
    vocab_size: int, arch: dict[str, Any], seed: int, tokenizer=None
) -> LlamaForCausalLM:
    """A small Llama-style causal LM from a transformers config, initialised with ``seed``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=int(arch["hidden_size"]),
        intermediate_size=int(arch["intermediate_size"]),
        num_hidden_layers=int(arch["num_layers"]),
        num_attention_heads=int(arch["num_heads"]),
        num_key_value_heads=int(arch["num_heads"]),
        max_position_embeddings=int(arch["max_positions"]),
        tie_word_embeddings=True,
        pad_token_id=getattr(tokenizer, "pad_token_id", None),
        bos_token_id=getattr(tokenizer, "bos_token_id", None),
        eos_token_id=getattr(tokenizer, "eos_token_id", None),
    )
    import torch

    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def load_tokenizer(
    name_or_path: str, revision: str | None = None, base: str | None = None, native: bool = True
) -> PreTrainedTokenizerFast:
    """Load a tokenizer from a local directory or a hub id at ``revision``; pad on the left.

    A PEFT adapter directory without tokenizer files reads its base's tokenizer (``base``, or the
    base the adapter names). A plain local ``tokenizer.json`` loads with
    :mod:`probunlearn.models.native.tokenizer` (the same ids and texts, no transformers import) unless
    ``PROBUNLEARN_NATIVE=0`` or ``native=False``."""
    from probunlearn.models.native import tokenizer as native_tokenizer
    from probunlearn.storage import checkpoints

    source = name_or_path
    if checkpoints.is_adapter(name_or_path) and not _has_tokenizer(Path(name_or_path)):
        source, revision = base or checkpoints.adapter_base(name_or_path), None
    if native and os.environ.get(NATIVE_ENV, "1") != "0" and native_tokenizer.supports(source):
        return native_tokenizer.load(source)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(source, revision=revision)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def _has_tokenizer(directory: Path) -> bool:
    return any((directory / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))


def load_model(
    name_or_path: str,
    revision: str | None = None,
    dtype: str | torch.dtype | None = "float32",
    device: str | None = "auto",
    base: str | None = None,
    merge: bool = False,
    native: bool = True,
) -> PreTrainedModel:
    """Load a causal LM from a local directory or a hub id at ``revision``, in eval mode.

    A PEFT adapter directory (adapter_config.json) is loaded on top of ``base`` (default: the base it
    names) without merging: the adapter stays a separate module, as it was trained; ``merge=True``
    folds it into the weights (for fine-tuning the adapted model further). A plain local Llama,
    Mistral or Phi checkpoint loads with :mod:`probunlearn.models.native.llama` or :mod:`probunlearn.models.native.phi` (the same
    numbers, no transformers import), and a LoRA adapter on one, unmerged, in float32, with
    :mod:`probunlearn.models.native.lora` (no transformers or peft import), unless
    ``PROBUNLEARN_NATIVE=0`` or ``native=False`` (peft needs a transformers model)."""
    from probunlearn.models.native import llama, lora, phi
    from probunlearn.storage import checkpoints

    adapter = checkpoints.is_adapter(name_or_path)
    source = (base or checkpoints.adapter_base(name_or_path)) if adapter else name_or_path
    use_native = native and os.environ.get(NATIVE_ENV, "1") != "0" and source is not None
    if adapter and (merge or not lora.supports(name_or_path, resolve_dtype(dtype))):
        use_native = False  # peft merges, and computes what the native LoRA layer does not
    for arch in (llama, phi) if use_native else ():
        if arch.supports(source):
            model = arch.load(source, resolve_dtype(dtype))
            if adapter:
                lora.apply(model, name_or_path)
            return model.to(resolve_device(device))
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        source, revision=None if adapter else revision, dtype=resolve_dtype(dtype)
    )
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, name_or_path)
        if merge:  # a plain model again, all of whose weights train (peft froze them)
            model = model.merge_and_unload().requires_grad_(True)
    model.to(resolve_device(device))
    model.eval()
    return model


def is_unmerged_adapter(model) -> bool:
    """Whether ``model``, as :func:`load_model` returns it, carries an unmerged adapter: a PEFT
    model, or a native model with the layers of :mod:`probunlearn.models.native.lora`."""
    from probunlearn.models.native import lora

    return (hasattr(model, "peft_config") and hasattr(model, "merge_and_unload")) or lora.is_lora(
        model
    )


def merge_adapter(model):
    """``model`` with its unmerged adapter folded into the weights, in place (peft's
    ``merge_and_unload``, or :func:`probunlearn.models.native.lora.merge`: the same bits)."""
    from probunlearn.models.native import lora

    return lora.merge(model) if lora.is_lora(model) else model.merge_and_unload()


def save_model(model: PreTrainedModel, tokenizer, out_dir: str | os.PathLike) -> Path:
    """Save model (safetensors) and tokenizer to ``out_dir`` atomically: temp dir, then rename."""

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)

    return atomic_dir(out_dir, write)


def set_threads(threads: int | None) -> None:
    """Use exactly ``threads`` CPU threads in torch (the rule's ``threads``)."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))
