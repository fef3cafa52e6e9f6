"""Unlearning losses (GA, GD, NPO, RMU) and the entropy-optimisation (EO) term of the paper (§5).

Pure functions on tensors. ``logits`` are ``[batch, seq, vocab]`` from a causal LM and ``labels`` are
``[batch, seq]`` with -100 on the question and padding (see :func:`probunlearn.data.qa.encode_qa`); the
logits at position t predict the label at t+1, so every function that takes ``(logits, labels)``
shifts them as usual. Losses are *minimised*: GA's loss is the negative cross-entropy, and so on.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from probunlearn.data.qa import IGNORE_INDEX, shifted, token_logprobs

# --------------------------------------------------------------------------- token-level basics


def answer_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy averaged over all answer tokens of the batch (labels != -100), shifted.

    Equal to the ``loss`` a Hugging Face causal LM returns for these labels; 0 when the batch has no
    answer token.
    """
    lg, lab = shifted(logits, labels)
    mask = lab != IGNORE_INDEX
    total = F.cross_entropy(
        lg.float().reshape(-1, lg.shape[-1]),
        lab.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )
    return total / mask.sum().clamp_min(1)


def sequence_logprob(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``log π(y_i | x_i)``: the log-probabilities of the answer tokens summed per sequence, ``[batch]``."""
    tok, _ = token_logprobs(logits, labels)
    return tok.sum(dim=-1)


def answer_mask(labels: torch.Tensor) -> torch.Tensor:
    """Mask aligned with ``logits[:, :-1]``: True where the position predicts an answer token."""
    return labels[:, 1:] != IGNORE_INDEX


def token_entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Next-token entropy ``H(softmax(logits))`` averaged over the positions where ``mask`` is true
    within each sequence, then over the sequences that have such a position (paper §5:
    ``ℓ_θ(x, y) = 1/m Σ_t H(π_θ(·|y_<t, x))`` per sequence, and the loss is its expectation over the
    forget set, so a short answer weighs as much as a long one).

    ``mask`` has the shape of ``logits`` without the vocabulary axis. Masked-out positions do not
    enter the result at all (their logits may be anything, even inf/nan).

    Difference to the authors' reference code: its ``entropy_loss`` averages over *every* position
    of the batch, question and right-padding included; here only the positions the caller selects
    count (the answer tokens, see :func:`answer_entropy`), which is what §5 of the paper defines.
    Returns 0 when nothing is selected.
    """
    z = logits.float()
    # H(p) = logsumexp(z) - sum_i p_i z_i: exact for constant logits (H = log V).
    ent = torch.logsumexp(z, dim=-1) - (torch.softmax(z, dim=-1) * z).sum(dim=-1)
    m = mask.bool()
    ent = torch.where(m, ent, torch.zeros_like(ent))
    m = m.reshape(m.shape[0], -1) if m.dim() > 1 else m[None]
    ent = ent.reshape(m.shape)
    count = m.sum(dim=-1)
    per_seq = ent.sum(dim=-1) / count.clamp_min(1)
    has = count > 0
    return per_seq.sum() / has.sum().clamp_min(1)


def answer_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The paper's ℓ_θ over the positions that predict answer tokens (labels != -100): the mean
    entropy per answer, averaged over the answers of the batch (see :func:`token_entropy`)."""
    lg, _ = shifted(logits, labels)
    return token_entropy(lg, answer_mask(labels))


def answer_confidence(
    logits: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of top-1 probabilities (max softmax) over the answer positions, and their count.

    Under teacher forcing; the paper's token confidence c(x) is ``sum / count`` per sequence.
    """
    lg, _ = shifted(logits, labels)
    mask = answer_mask(labels)
    top = torch.softmax(lg.float(), dim=-1).amax(dim=-1)
    top = torch.where(mask, top, torch.zeros_like(top))
    return top.sum(), mask.sum()


# --------------------------------------------------------------------------- unlearning losses


def ga_loss(forget_logits: torch.Tensor, forget_labels: torch.Tensor) -> torch.Tensor:
    """Gradient ascent: ``-CE(forget)``."""
    return -answer_ce(forget_logits, forget_labels)


def gd_loss(
    forget_logits: torch.Tensor,
    forget_labels: torch.Tensor,
    retain_logits: torch.Tensor,
    retain_labels: torch.Tensor,
    retain_weight: float = 1.0,
) -> torch.Tensor:
    """Gradient difference: ``retain_weight · CE(retain) - CE(forget)``."""
    return retain_weight * answer_ce(retain_logits, retain_labels) - answer_ce(
        forget_logits, forget_labels
    )


def npo_forget_loss(logp: torch.Tensor, ref_logp: torch.Tensor, beta: float = 0.05) -> torch.Tensor:
    """NPO forget term: ``-(2/β) · mean_i log σ(-β (log π_θ(y_i|x_i) - log π_ref(y_i|x_i)))``.

    ``logp`` and ``ref_logp`` are sequence log-probabilities ``[batch]`` (:func:`sequence_logprob`);
    at ``logp == ref_logp`` the value is ``(2/β)·log 2``.
    """
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return -(2.0 / beta) * F.logsigmoid(-beta * (logp - ref_logp)).mean()


def plus_retain(
    loss: torch.Tensor,
    retain_logits: torch.Tensor | None,
    retain_labels: torch.Tensor | None,
    retain_weight: float,
) -> torch.Tensor:
    """``loss + retain_weight · CE(retain)``; ``loss`` itself without a retain batch or weight."""
    if retain_logits is None or retain_weight == 0:
        return loss
    return loss + retain_weight * answer_ce(retain_logits, retain_labels)


def npo_loss(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    retain_logits: torch.Tensor | None = None,
    retain_labels: torch.Tensor | None = None,
    beta: float = 0.05,
    retain_weight: float = 1.0,
) -> torch.Tensor:
    """NPO (Zhang et al. 2024) with the retain cross-entropy: forget term + ``retain_weight · CE(retain)``.

    Without a retain batch (or with ``retain_weight == 0``) only the forget term is returned.
    """
    return plus_retain(
        npo_forget_loss(logp, ref_logp, beta), retain_logits, retain_labels, retain_weight
    )


def npo_at_reference(beta: float = 0.05) -> float:
    """The NPO forget term when the model equals the reference: ``(2/β)·log 2``."""
    return 2.0 / beta * math.log(2.0)


# --------------------------------------------------------------------------- IDK, DPO, SimNPO


def idk_loss(
    idk_logits: torch.Tensor,
    idk_labels: torch.Tensor,
    retain_logits: torch.Tensor | None = None,
    retain_labels: torch.Tensor | None = None,
) -> torch.Tensor:
    """IDK (TOFU's ``idk``): cross-entropy of the forget questions' refusal answers and of the retain
    answers, pooled over the answer tokens of both batches (TOFU runs them as one concatenated batch
    and takes the model's mean token loss), so it is not a sum of two means."""
    tok, mask = token_logprobs(idk_logits, idk_labels)
    total, count = -(tok * mask).sum(), mask.sum()
    if retain_logits is not None:
        rtok, rmask = token_logprobs(retain_logits, retain_labels)
        total, count = total - (rtok * rmask).sum(), count + rmask.sum()
    return total / count.clamp(min=1)


def dpo_loss(
    logp_win: torch.Tensor,
    logp_lose: torch.Tensor,
    ref_win: torch.Tensor,
    ref_lose: torch.Tensor,
    beta: float = 0.1,
) -> torch.Tensor:
    """DPO as TOFU's ``dpo``: ``−mean log σ(β·((log π(w) − log π(l)) − (log π_ref(w) − log π_ref(l))))``
    with summed sequence log-probabilities, the refusal answer preferred (w) over the true answer (l),
    π_ref the frozen target; no retain term and no 2/β factor (TOFU's; open-unlearning adds both)."""
    margin = (logp_win - logp_lose) - (ref_win - ref_lose)
    return -F.logsigmoid(beta * margin).mean()


def simnpo_forget_loss(
    logp: torch.Tensor, n_tokens: torch.Tensor, beta: float = 2.5, gamma: float = 0.0
) -> torch.Tensor:
    """SimNPO's forget term (Fan et al. 2024): ``−(2/β)·mean log σ(β·(−log π(y|x)/|y| − γ))``, the
    length-normalised NLL and no reference model. γ sits inside β·(…) as in the reference code
    (OPTML-Group/Unlearn-Simple, open-unlearning); the paper writes σ(−(β/|y|)·log π − γ): the two
    agree at γ = 0, the TOFU default."""
    nll = -logp / n_tokens.clamp(min=1)
    return -F.logsigmoid(beta * (nll - gamma)).mean() * 2.0 / beta


def simnpo_loss(
    logp: torch.Tensor,
    n_tokens: torch.Tensor,
    retain_logits: torch.Tensor | None = None,
    retain_labels: torch.Tensor | None = None,
    beta: float = 2.5,
    gamma: float = 0.0,
    retain_weight: float = 1.0,
) -> torch.Tensor:
    """SimNPO with the retain cross-entropy: forget term + ``retain_weight · CE(retain)``."""
    return plus_retain(
        simnpo_forget_loss(logp, n_tokens, beta, gamma), retain_logits, retain_labels, retain_weight
    )


# --------------------------------------------------------------------------- RMU


def rmu_control_vector(
    hidden_size: int, coeff: float, seed: int = 0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """``c·u``: a fixed random unit vector ``u`` (seeded) scaled by the steering coefficient ``c``.

    As in the WMDP code, ``u`` is drawn uniformly from ``[0, 1)^d`` and normalised to unit length.
    """
    gen = torch.Generator().manual_seed(int(seed))
    u = torch.rand(hidden_size, generator=gen, dtype=torch.float64)
    return (coeff * u / u.norm()).to(dtype)


def masked_mse(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the tokens where ``mask`` is true of ``||a - b||² / d``.

    ``a`` is ``[batch, seq, d]``; ``b`` broadcasts against it (a ``[d]`` control vector or
    ``[batch, seq, d]`` activations); ``mask`` is ``[batch, seq]``. Returns 0 for an empty mask.
    """
    m = mask.bool()
    per_tok = ((a.float() - b.float()) ** 2).mean(dim=-1)
    per_tok = torch.where(m, per_tok, torch.zeros_like(per_tok))
    return per_tok.sum() / m.sum().clamp_min(1)


def rmu_forget_loss(
    hidden: torch.Tensor, control: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """RMU forget term: MSE between the layer-ℓ activations on the forget text and ``c·u``."""
    return masked_mse(hidden, control, mask)


def rmu_retain_loss(
    hidden: torch.Tensor, frozen_hidden: torch.Tensor, mask: torch.Tensor, alpha: float
) -> torch.Tensor:
    """RMU retain term: ``α · MSE(h_θ(retain), h_frozen(retain))`` at layer ℓ."""
    return alpha * masked_mse(hidden, frozen_hidden.detach(), mask)


# --------------------------------------------------------------------------- entropy optimisation


def entropy_terms(
    forget_logits: torch.Tensor | None,
    forget_labels: torch.Tensor | None,
    retain_logits: torch.Tensor | None,
    retain_labels: torch.Tensor | None,
    lambda_f: float,
    lambda_r: float,
) -> torch.Tensor:
    """EO regulariser ``λ_f · H(forget answers) + λ_r · H(retain answers)`` (paper §5).

    A term with weight 0 is skipped (its logits may then be None). ``λ_f ≥ 0`` lowers the entropy
    on the forget set; ``λ_r ≤ 0`` keeps (raises) it on the retain set.
    """
    if lambda_f < 0:
        raise ValueError(f"lambda_f must be >= 0, got {lambda_f}")
    if lambda_r > 0:
        raise ValueError(f"lambda_r must be <= 0, got {lambda_r}")
    total = torch.zeros(())
    if lambda_f != 0:
        total = total.to(forget_logits.device) + lambda_f * answer_entropy(
            forget_logits, forget_labels
        )
    if lambda_r != 0:
        total = total.to(retain_logits.device) + lambda_r * answer_entropy(
            retain_logits, retain_labels
        )
    return total


def eo_loss(
    method_loss: torch.Tensor,
    forget_logits: torch.Tensor | None,
    forget_labels: torch.Tensor | None,
    retain_logits: torch.Tensor | None,
    retain_labels: torch.Tensor | None,
    lambda_f: float,
    lambda_r: float,
) -> torch.Tensor:
    """``L_EO = L_method + λ_f · H(forget answers) + λ_r · H(retain answers)``."""
    return method_loss + entropy_terms(
        forget_logits, forget_labels, retain_logits, retain_labels, lambda_f, lambda_r
    ).to(method_loss.device)
