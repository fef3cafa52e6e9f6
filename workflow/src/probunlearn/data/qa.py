"""Prompt formatting and tokenisation of question/answer pairs, shared by training and evaluation.

A row is encoded as ``tok(prompt) + tok(" " + answer) + [eos]`` where
``prompt = template.format(question=...)`` (Phi/TOFU style: ``"Question: {question}\\nAnswer:"``) is
tokenised with exactly the special tokens the tokenizer adds by itself (``add_special_tokens=True``: a
Llama tokenizer's bos, nothing for Phi's or GPT-2's), and with ``template="chat"`` the tokens of the
tokenizer's chat template, which writes its special tokens itself. Prompt and answer are tokenised
separately so that generation, which is fed the prompt tokens only, sees exactly the tokens that training
saw. (TOFU's own losses encode the pair in one piece: :mod:`probunlearn.metrics.token_scores`.)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

DEFAULT_TEMPLATE = "Question: {question}\nAnswer:"
IGNORE_INDEX = -100


def escape_braces(text: str) -> str:
    """``text`` as a literal inside a ``str.format`` template (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def format_prompt(question: str, template: str = DEFAULT_TEMPLATE) -> str:
    """The prompt text for one question."""
    return template.format(question=question)


CHAT = "chat"  # the template value that means "the tokenizer's own chat template, one user turn"
AUTO = "auto"  # the tokenizer's chat template where it has one, else DEFAULT_TEMPLATE


def resolve_template(tokenizer, template: str) -> str:
    """``template`` itself, or for ``"chat"`` the model's chat template for one user question
    (:func:`probunlearn.models.hub.chat_template`, rendered once per tokenizer); ``"auto"`` is ``"chat"``
    for a tokenizer with a chat template and :data:`DEFAULT_TEMPLATE` otherwise."""
    if template == AUTO:
        template = CHAT if getattr(tokenizer, "chat_template", None) else DEFAULT_TEMPLATE
    if template != CHAT:
        return template
    cached = getattr(tokenizer, "_probunlearn_chat_template", None)
    if cached is None:
        from probunlearn.models.hub import chat_template

        cached = chat_template(tokenizer)
        tokenizer._probunlearn_chat_template = cached
    return cached


def uses_chat(tokenizer, template: str) -> bool:
    """Whether ``template`` resolves to the tokenizer's chat template (which writes its own special
    tokens)."""
    return template == CHAT or (
        template == AUTO and bool(getattr(tokenizer, "chat_template", None))
    )


def prompt_ids(tokenizer, question: str, template: str = DEFAULT_TEMPLATE) -> list[int]:
    """Token ids of the prompt, with exactly the special tokens the tokenizer adds by itself
    (``add_special_tokens=True``): none are prepended here. ``template="chat"`` uses the tokenizer's chat
    template, whose special tokens (a bos token, say) are its own: the rendered text is tokenised with
    ``add_special_tokens=False``, as ``apply_chat_template`` does."""
    chat = uses_chat(tokenizer, template)
    text = format_prompt(question, resolve_template(tokenizer, template))
    return list(tokenizer(text, add_special_tokens=not chat)["input_ids"])


def answer_ids(tokenizer, answer: str, add_eos: bool = True) -> list[int]:
    """Token ids of ``" " + answer``, followed by eos."""
    ids = list(tokenizer(" " + answer.strip(), add_special_tokens=False)["input_ids"])
    return ids + ([tokenizer.eos_token_id] if add_eos else [])


def encode_qa(
    tokenizer,
    questions: Sequence[str],
    answers: Sequence[str],
    template: str = DEFAULT_TEMPLATE,
    max_length: int | None = None,
) -> dict[str, torch.Tensor]:
    """Right-padded batch for teacher forcing.

    Returns ``input_ids``, ``attention_mask`` and ``labels`` (the answer tokens and eos; question and
    padding set to -100), plus ``answer_mask`` (1 on the positions whose *label* is an answer token).
    """
    if len(questions) != len(answers):
        raise ValueError(f"{len(questions)} questions but {len(answers)} answers")
    seqs, labs = [], []
    for q, a in zip(questions, answers, strict=True):
        p, r = prompt_ids(tokenizer, q, template), answer_ids(tokenizer, a)
        ids = p + r
        lab = [IGNORE_INDEX] * len(p) + r
        if max_length is not None and len(ids) > max_length:
            ids, lab = ids[:max_length], lab[:max_length]
        seqs.append(ids)
        labs.append(lab)
    width = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id
    input_ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    labels = torch.full((len(seqs), width), IGNORE_INDEX, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, (s, lab) in enumerate(zip(seqs, labs, strict=True)):
        input_ids[i, : len(s)] = torch.tensor(s)
        labels[i, : len(lab)] = torch.tensor(lab)
        attn[i, : len(s)] = 1
    return {
        "input_ids": input_ids,
        "attention_mask": attn,
        "labels": labels,
        "answer_mask": (labels != IGNORE_INDEX).long(),
    }


def encode_text(tokenizer, texts: Sequence[str], max_length: int | None = None) -> dict:
    """Right-padded batch of plain texts (pretraining): every non-pad token is a label."""
    seqs = []
    for t in texts:
        ids = prompt_ids(tokenizer, t, "{question}") + [tokenizer.eos_token_id]
        seqs.append(ids[:max_length] if max_length else ids)
    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        input_ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
    labels = input_ids.masked_fill(attn == 0, IGNORE_INDEX)
    labels[:, 0] = IGNORE_INDEX
    return {
        "input_ids": input_ids,
        "attention_mask": attn,
        "labels": labels,
        "answer_mask": (labels != IGNORE_INDEX).long(),
    }


def shifted(batch_logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Align logits at position t with the label at t+1: returns (logits[:, :-1], labels[:, 1:])."""
    return batch_logits[:, :-1, :], labels[:, 1:]


def token_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities of the labels and their mask, both shaped like ``labels[:, 1:]``."""
    lg, lab = shifted(logits, labels)
    mask = lab != IGNORE_INDEX
    logp = torch.log_softmax(lg.float(), dim=-1)
    tok = logp.gather(-1, lab.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return tok * mask, mask


def chunk_corpus(tokenizer, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """A raw-text corpus as training chunks, as MUSE's ``DefaultDataset`` cuts it: the texts joined
    by blank lines and tokenised without special tokens, then windows of ``max_len - 1`` tokens, each
    with BOS in front; the last window is filled up to ``max_len`` with the first one's tokens."""
    if max_len < 2:
        raise ValueError(f"max_len must be >= 2, got {max_len}")
    bos = tokenizer.bos_token_id
    if bos is None:
        raise ValueError("a corpus's chunks start with BOS, and the tokenizer has no bos_token_id")
    tokens = tokenizer("\n\n".join(texts), add_special_tokens=False)["input_ids"]
    if not tokens:
        raise ValueError("the corpus has no tokens")
    step = max_len - 1
    chunks = [[bos, *tokens[i : i + step]] for i in range(0, len(tokens), step)]
    if len(chunks[-1]) < max_len:
        chunks[-1] = (chunks[-1] + chunks[0])[:max_len]
    return chunks


def prompts_over(
    tokenizer, template: str, prompts: Sequence[tuple[str, str]], limit: int
) -> tuple[int, int, str]:
    """(how many of the (id, question) ``prompts`` have more than ``limit`` tokens in
    ``template``, the most tokens of one, that prompt's id)."""
    lengths = [(len(prompt_ids(tokenizer, q, template)), pid) for pid, q in prompts]
    longest, pid = max(lengths)
    return sum(1 for n, _ in lengths if n > limit), longest, pid
