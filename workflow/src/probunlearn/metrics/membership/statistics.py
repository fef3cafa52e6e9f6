"""The built-in membership statistics (open-unlearning's six MIA attacks), each as its paper defines
it; ``lp_t`` is the log-probability of scored token t, n tokens per example (the package docstring
says which tokens)."""

from __future__ import annotations

import zlib

import numpy as np

from probunlearn.metrics.membership.base import STATISTICS, Statistic, Tokens


class Loss(Statistic):
    """LOSS (Yeom et al. 2018): ``-mean_t lp_t``; members low."""

    name = "loss"
    label = "LOSS"
    member_high = False
    openunlearning = "mia_loss"
    order = 10

    def compute(self, tokens: Tokens) -> np.ndarray:
        return tokens.loss


class ZLib(Statistic):
    """zlib (Carlini et al. 2021): the log-perplexity over the zlib entropy,
    ``-mean_t lp_t / len(zlib.compress(text.encode("utf-8")))``; members low."""

    name = "zlib"
    label = "ZLib"
    member_high = False
    text = (
        "as LOSS, divided by the zlib-compressed length in bytes of the scored text without tags "
        "(the answer; a raw text: the whole text)"
    )
    openunlearning = "mia_zlib"
    order = 20

    def compute(self, tokens: Tokens) -> np.ndarray:
        z = [len(zlib.compress(str(t).encode("utf-8"))) for t in tokens.texts]
        return tokens.loss / np.asarray(z, dtype=np.float64)


class MinK(Statistic):
    """Min-K% Prob (Shi et al. 2024): the mean of the ``max(1, floor(k n))`` lowest ``lp_t``;
    members high."""

    name = "min_k"
    label = "Min-{k}%"
    member_high = True
    openunlearning = "mia_min_k"
    order = 30

    def compute(self, tokens: Tokens) -> np.ndarray:
        return np.array([tokens.lowest_mean(v) for v in tokens.logprobs], dtype=np.float64)


class MinKPlusPlus(Statistic):
    """Min-K%++ (Zhang et al. 2024): each ``lp_t`` standardised by the mean and standard deviation
    of ``log p(z|x<t)`` under the model's own next-token distribution, then the mean of the
    ``max(1, floor(k n))`` lowest; members high."""

    name = "min_k_plus_plus"
    label = "Min-{k}%++"
    member_high = True
    needs = ("vocab_stats",)
    openunlearning = "mia_min_k_plus_plus"
    order = 40

    def compute(self, tokens: Tokens) -> np.ndarray:
        assert tokens.vocab_mean is not None and tokens.vocab_std is not None
        out = []
        for i, v, mu, sd in zip(
            tokens.ids, tokens.logprobs, tokens.vocab_mean, tokens.vocab_std, strict=True
        ):
            mu, sd = np.asarray(mu, dtype=np.float64), np.asarray(sd, dtype=np.float64)
            if mu.shape != v.shape or sd.shape != v.shape:
                raise ValueError(
                    f"token table of {tokens.model!r}: id {i!r}: vocab stats per token"
                )
            out.append(tokens.lowest_mean((v - mu) / np.maximum(sd, 1e-12)))
        return np.asarray(out, dtype=np.float64)


class Reference(Statistic):
    """Reference (Carlini et al. 2021 compare with a reference model's log-perplexity; here the
    difference, as open-unlearning's ``ReferenceAttack``): ``loss(model) - loss(reference)`` of the
    same example; members low."""

    name = "reference"
    label = "Reference"
    member_high = False
    needs = ("reference",)
    text = "as LOSS, under the model and under the reference model, each with its own tokens"
    openunlearning = "mia_reference"
    order = 50

    def compute(self, tokens: Tokens) -> np.ndarray:
        assert tokens.reference is not None
        ref = np.array([-np.mean(v) for v in tokens.reference], dtype=np.float64)
        return tokens.loss - ref


class GradNorm(Statistic):
    """GradNorm (Wang et al. 2024; open-unlearning's ``GradNormAttack``): the mean over parameter
    tensors of the p-norm of the gradient of LOSS (one backward pass per example,
    :func:`probunlearn.metrics.membership.gradient_norms`); members low."""

    name = "gradnorm"
    label = "GradNorm"
    member_high = False
    needs = ("backward",)
    text = "the gradient of LOSS with respect to the model's parameters"
    openunlearning = "mia_gradnorm"
    order = 60

    def compute(self, tokens: Tokens) -> np.ndarray:
        assert tokens.gradnorm is not None
        return np.asarray(tokens.gradnorm, dtype=np.float64)


for _statistic in (Loss, ZLib, MinK, MinKPlusPlus, Reference, GradNorm):
    STATISTICS.register(_statistic())
