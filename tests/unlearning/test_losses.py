"""Unit tests of the unlearning losses on hand-built logits."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from probunlearn.unlearning import losses

IGN = -100


def _case() -> tuple[torch.Tensor, torch.Tensor]:
    """One sequence of 3 tokens, vocabulary 3: question token, then answer tokens 1 and 2.

    Position 0 predicts label 1 with p = 3/5; position 1 predicts label 2 with p = 1/3.
    """
    logits = torch.tensor([[[0.0, math.log(3.0), 0.0], [0.0, 0.0, 0.0], [5.0, -1.0, 2.0]]])
    labels = torch.tensor([[IGN, 1, 2]])
    return logits, labels


def test_answer_ce_hand_computed():
    logits, labels = _case()
    expected = (-math.log(3 / 5) - math.log(1 / 3)) / 2
    assert losses.answer_ce(logits, labels).item() == pytest.approx(expected, abs=1e-6)
    ref = F.cross_entropy(logits[0, :-1], labels[0, 1:])
    assert losses.answer_ce(logits, labels).item() == pytest.approx(ref.item(), abs=1e-6)


def test_answer_ce_ignores_question_and_padding():
    logits, labels = _case()
    # a second, right-padded sequence with a single answer token predicted with p = 1/3
    logits2 = torch.cat([logits, torch.zeros(1, 3, 3)])
    logits2[1, 1] = torch.tensor([100.0, -7.0, 3.0])  # predicts a padded label: ignored
    labels2 = torch.cat([labels, torch.tensor([[IGN, 0, IGN]])])
    expected = (-math.log(3 / 5) - math.log(1 / 3) - math.log(1 / 3)) / 3
    assert losses.answer_ce(logits2, labels2).item() == pytest.approx(expected, abs=1e-6)


def test_answer_ce_without_answer_tokens_is_zero():
    assert losses.answer_ce(torch.zeros(1, 3, 4), torch.full((1, 3), IGN)).item() == 0.0


def test_sequence_logprob_sums_answer_tokens():
    logits, labels = _case()
    lp = losses.sequence_logprob(logits, labels)
    assert lp.shape == (1,)
    assert lp.item() == pytest.approx(math.log(3 / 5) + math.log(1 / 3), abs=1e-6)


def test_ga_and_gd():
    logits, labels = _case()
    ce = (-math.log(3 / 5) - math.log(1 / 3)) / 2
    assert losses.ga_loss(logits, labels).item() == pytest.approx(-ce, abs=1e-6)
    r_logits = torch.zeros(1, 3, 3)  # uniform: CE = log 3
    r_labels = torch.tensor([[IGN, IGN, 0]])
    gd = losses.gd_loss(logits, labels, r_logits, r_labels, retain_weight=2.0)
    assert gd.item() == pytest.approx(2 * math.log(3) - ce, abs=1e-6)


def test_npo_at_reference_is_two_over_beta_log_two():
    logp = torch.tensor([-3.2, -0.7, -11.0])
    for beta in (0.05, 0.1, 1.0):
        val = losses.npo_forget_loss(logp, logp.clone(), beta=beta).item()
        assert val == pytest.approx(2 / beta * math.log(2), rel=1e-6)
        assert losses.npo_at_reference(beta) == pytest.approx(2 / beta * math.log(2), rel=1e-12)


def test_npo_with_retain_term_and_hand_value():
    logits, labels = _case()
    lp = losses.sequence_logprob(logits, labels)
    r_logits = torch.zeros(1, 3, 3)
    r_labels = torch.tensor([[IGN, 1, 2]])
    total = losses.npo_loss(lp, lp.detach(), r_logits, r_labels, beta=0.05, retain_weight=0.5)
    assert total.item() == pytest.approx(2 / 0.05 * math.log(2) + 0.5 * math.log(3), rel=1e-6)
    # hand value away from the reference: Δ = 10, β = 0.1 → -(2/β) log σ(-1)
    val = losses.npo_forget_loss(torch.tensor([-5.0]), torch.tensor([-15.0]), beta=0.1).item()
    assert val == pytest.approx(-20 * math.log(1 / (1 + math.e)), rel=1e-6)
    with pytest.raises(ValueError, match="beta"):
        losses.npo_forget_loss(lp, lp, beta=0.0)


def test_npo_gradient_pushes_forget_logprob_down():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7, requires_grad=True)
    labels = torch.tensor([[IGN, IGN, 3, 1, 6], [IGN, 2, 2, 0, IGN]])
    ref = losses.sequence_logprob(logits, labels).detach()
    lp = losses.sequence_logprob(logits, labels)
    loss = losses.npo_forget_loss(lp, ref, beta=0.05)
    (g_lp,) = torch.autograd.grad(loss, lp, retain_graph=True)
    assert (g_lp > 0).all()  # descending the loss lowers log π_θ(y|x)
    (g,) = torch.autograd.grad(loss, logits)
    with torch.no_grad():
        after = losses.sequence_logprob(logits - 0.1 * g, labels)
    assert (after < ref).all()


def test_entropy_of_uniform_is_log_vocab():
    for vocab in (2, 50, 1000):
        logits = torch.zeros(3, 6, vocab)
        mask = torch.tensor([[1, 1, 0, 0, 1, 0]] * 3)
        assert losses.token_entropy(logits, mask).item() == pytest.approx(math.log(vocab), abs=1e-6)
        labels = torch.tensor([[IGN, IGN, 1, 1, IGN, IGN]] * 3)
        assert losses.answer_entropy(logits, labels).item() == pytest.approx(
            math.log(vocab), abs=1e-6
        )


def test_entropy_hand_computed():
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]])  # p = (1/4, 3/4) and (1/2, 1/2)
    h1 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert losses.token_entropy(logits, torch.tensor([[1, 0]])).item() == pytest.approx(h1, 1e-6)
    both = losses.token_entropy(logits, torch.tensor([[1, 1]])).item()
    assert both == pytest.approx((h1 + math.log(2)) / 2, abs=1e-6)
    assert losses.token_entropy(logits, torch.tensor([[0, 0]])).item() == 0.0


def test_entropy_averages_per_sequence_then_over_sequences():
    # paper §5: l(x, y) = 1/m sum_t H_t per answer, and the loss is its mean over the forget set
    h = [0.0, math.log(2), math.log(4)]
    p1 = torch.tensor([1e4, 0.0, 0.0, 0.0])  # H ~ 0
    p2 = torch.tensor([0.0, 0.0, -1e4, -1e4])  # H = log 2
    p4 = torch.zeros(4)  # H = log 4
    logits = torch.stack([torch.stack([p1, p1, p1]), torch.stack([p4, p2, p2])])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])  # a 3-token answer and a 1-token one
    per_seq = ((3 * h[0]) / 3 + h[2]) / 2
    pooled = (3 * h[0] + h[2]) / 4
    got = losses.token_entropy(logits, mask).item()
    assert got == pytest.approx(per_seq, abs=1e-6) and abs(got - pooled) > 0.3
    # a sequence with no selected position does not count
    logits3 = torch.cat([logits, torch.stack([p2, p2, p2])[None]])
    mask3 = torch.cat([mask, torch.zeros(1, 3, dtype=mask.dtype)])
    assert losses.token_entropy(logits3, mask3).item() == pytest.approx(per_seq, abs=1e-6)
    mask3[2, 1] = 1
    want = (per_seq * 2 + h[1]) / 3
    assert losses.token_entropy(logits3, mask3).item() == pytest.approx(want, abs=1e-6)


def test_entropy_ignores_masked_positions():
    torch.manual_seed(1)
    logits = torch.randn(2, 6, 11)
    labels = torch.tensor([[IGN, IGN, 4, 5, IGN, IGN], [IGN, 1, 2, 3, 9, IGN]])
    base = losses.answer_entropy(logits, labels)
    changed = logits.clone()
    mask = losses.answer_mask(labels)  # positions of logits[:, :-1] that predict answers
    keep = torch.cat([mask, torch.zeros(2, 1, dtype=torch.bool)], dim=1)
    changed[~keep] = torch.randn(int((~keep).sum()), 11) * 50
    changed[0, 0, 0] = float("inf")
    changed[1, 5] = float("nan")
    assert torch.equal(losses.answer_entropy(changed, labels), base)
    changed[0, 1] += torch.randn(11)  # position 1 predicts answer token 4: counts
    assert not torch.equal(losses.answer_entropy(changed, labels), base)


def test_answer_confidence():
    logits, labels = _case()
    total, count = losses.answer_confidence(logits, labels)
    assert count.item() == 2
    assert total.item() == pytest.approx(3 / 5 + 1 / 3, abs=1e-6)


def test_rmu_control_vector_is_seeded_and_scaled():
    a = losses.rmu_control_vector(16, 6.5, seed=3)
    assert a.shape == (16,)
    assert a.norm().item() == pytest.approx(6.5, rel=1e-6)
    assert torch.equal(a, losses.rmu_control_vector(16, 6.5, seed=3))
    assert not torch.equal(a, losses.rmu_control_vector(16, 6.5, seed=4))


def test_rmu_losses_hand_computed():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])  # last token is padding
    control = torch.tensor([1.0, 0.0])
    # token 0: ((0)^2 + 2^2)/2 = 2 ; token 1: (2^2 + 4^2)/2 = 10 → mean 6
    assert losses.rmu_forget_loss(hidden, control, mask).item() == pytest.approx(6.0)
    frozen = hidden.clone()
    assert losses.rmu_retain_loss(hidden, frozen, mask, alpha=10.0).item() == 0.0
    frozen[0, 0] += torch.tensor([1.0, 1.0])  # token 0 differs by 1 in each coordinate
    frozen[0, 2] += 1e6  # padding: ignored
    assert losses.rmu_retain_loss(hidden, frozen, mask, alpha=10.0).item() == pytest.approx(5.0)


def test_entropy_terms_and_eo_loss():
    f_logits = torch.zeros(1, 3, 4)  # H = log 4 on the forget answers
    r_logits = torch.zeros(1, 3, 8)  # H = log 8 on the retain answers
    lab = torch.tensor([[IGN, 1, 2]])
    val = losses.eo_loss(torch.tensor(1.5), f_logits, lab, r_logits, lab, 0.5, -0.25)
    assert val.item() == pytest.approx(1.5 + 0.5 * math.log(4) - 0.25 * math.log(8), abs=1e-6)
    # zero weights skip the term (logits may be absent)
    assert losses.entropy_terms(f_logits, lab, None, None, 1.0, 0.0).item() == pytest.approx(
        math.log(4), abs=1e-6
    )
    with pytest.raises(ValueError, match="lambda_f"):
        losses.entropy_terms(f_logits, lab, r_logits, lab, -0.1, 0.0)
    with pytest.raises(ValueError, match="lambda_r"):
        losses.entropy_terms(f_logits, lab, r_logits, lab, 0.0, 0.1)


# ---- IDK, DPO, SimNPO: against hand computations ------------------------------------------------


def _logits(probs: list[list[float]]) -> torch.Tensor:
    """[1, T, V] logits whose softmax at each position is the given distribution."""
    return torch.log(torch.tensor([probs], dtype=torch.float64))


def test_idk_pools_the_tokens_of_both_batches():
    # (log-probabilities are computed in float32)
    # idk batch: positions 0,1 predict answer tokens 2 and 0 (labels shifted by one)
    idk = _logits([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [1 / 3, 1 / 3, 1 / 3]])
    idk_lab = torch.tensor([[-100, 2, 0]])
    # retain batch: one answer token, 1, with probability 0.25
    ret = _logits([[0.25, 0.25, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    ret_lab = torch.tensor([[-100, 1]])
    pooled = -(math.log(0.5) + math.log(0.6) + math.log(0.25)) / 3
    assert losses.idk_loss(idk, idk_lab, ret, ret_lab).item() == pytest.approx(pooled, rel=1e-6)
    # not the sum of the two means (TOFU concatenates both halves into one batch)
    two_means = -(math.log(0.5) + math.log(0.6)) / 2 - math.log(0.25)
    assert abs(losses.idk_loss(idk, idk_lab, ret, ret_lab).item() - two_means) > 0.1
    assert losses.idk_loss(idk, idk_lab).item() == pytest.approx(
        -(math.log(0.5) + math.log(0.6)) / 2, rel=1e-6
    )


def test_dpo_hand_value_and_reference_point():
    t = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    # margin = (-2 - -1) - (-3 - -1) = 1; -log sigmoid(0.1)
    got = losses.dpo_loss(t(-2.0), t(-1.0), t(-3.0), t(-1.0), beta=0.1).item()
    assert got == pytest.approx(math.log(1 + math.exp(-0.1)), rel=1e-12)
    # at the reference (the model is the target) the loss is log 2, whatever beta
    assert losses.dpo_loss(
        t(-2.0, -4.0), t(-1.0, -0.5), t(-2.0, -4.0), t(-1.0, -0.5), beta=0.3
    ).item() == pytest.approx(math.log(2), rel=1e-12)


def test_simnpo_hand_values_and_gamma_inside_beta():
    t = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    logp, n = t(-6.0), torch.tensor([3])
    # NLL per token 2: -(2/2.5) log sigmoid(2.5 * 2)
    assert losses.simnpo_forget_loss(logp, n, beta=2.5).item() == pytest.approx(
        0.8 * math.log(1 + math.exp(-5.0)), rel=1e-12
    )
    # gamma = 0.5 sits inside beta (reference code): sigmoid(2.5 * (2 - 0.5))
    assert losses.simnpo_forget_loss(logp, n, beta=2.5, gamma=0.5).item() == pytest.approx(
        0.8 * math.log(1 + math.exp(-3.75)), rel=1e-12
    )
    # length-normalised: the same per-token NLL over twice the tokens gives the same loss
    assert losses.simnpo_forget_loss(t(-12.0), torch.tensor([6]), beta=2.5).item() == pytest.approx(
        losses.simnpo_forget_loss(logp, n, beta=2.5).item(), rel=1e-12
    )
    ret = _logits([[0.25, 0.25, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    full = losses.simnpo_loss(logp, n, ret, torch.tensor([[-100, 1]]), beta=2.5, retain_weight=2.0)
    assert full.item() == pytest.approx(
        0.8 * math.log(1 + math.exp(-5.0)) - 2 * math.log(0.25), rel=1e-6
    )
