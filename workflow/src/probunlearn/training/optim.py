"""AdamW and learning-rate schedules with torch's arithmetic, without ``torch.optim``.

``torch.optim``'s optimizers import ``torch._dynamo`` when first used (1.0–1.9 s of every training job on two
CPU cores, for a compiler these jobs never run). :class:`AdamW` performs the update of
``torch.optim.AdamW``'s single-tensor implementation (the one torch runs on CPU) operation for operation,
and :class:`Schedule` sets the learning rates ``torch.optim.lr_scheduler.LambdaLR`` sets: the tests
check both bit for bit against torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch


class AdamW:
    """Adam with decoupled weight decay (Loshchilov & Hutter), torch's defaults.

    ``groups``: dicts with ``params`` and optionally ``lr``, ``weight_decay``, ``betas`` or ``eps``
    overriding the defaults given here, as for torch's optimizers. Parameters without a gradient are
    skipped, and get no state, as in torch.
    """

    def __init__(
        self,
        groups: Iterable[dict],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        if lr < 0 or eps < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"AdamW: invalid lr={lr}, betas={betas} or eps={eps}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        self.param_groups = [{**defaults, **g, "params": list(g["params"])} for g in groups]
        self.state: dict[torch.Tensor, dict] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) every parameter's gradient."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            lr, (beta1, beta2) = group["lr"], group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                state = self.state.get(p)
                if state is None:
                    state = self.state[p] = {
                        "step": 0.0,
                        "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                        "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
                    }
                # torch counts steps in a float32 tensor and reads them back as a Python float
                state["step"] += 1.0
                step = state["step"]
                grad, exp_avg, exp_avg_sq = p.grad, state["exp_avg"], state["exp_avg_sq"]
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step_size = lr / (1 - beta1**step)
                bias_correction2_sqrt = (1 - beta2**step) ** 0.5
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)


def decayed_adamw(params: Iterable[torch.Tensor], lr: float, weight_decay: float) -> AdamW:
    """AdamW with weight decay on matrices (``ndim >= 2``) and none on vectors (norms, biases), as
    the training loops of this package and the Hugging Face Trainer use it."""
    params = list(params)
    return AdamW(
        [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=lr,
    )


class Schedule:
    """Each group's learning rate is its initial one times ``factor(k)`` after ``k`` calls of
    :meth:`step` (``factor(0)`` from the start), as ``LambdaLR`` sets it; works on any optimizer
    with ``param_groups``."""

    def __init__(self, optimizer: Any, factor: Callable[[int], float]) -> None:
        self.optimizer, self.factor, self.count = optimizer, factor, 0
        self.base_lrs = [float(g["lr"]) for g in optimizer.param_groups]
        self._apply()

    def _apply(self) -> None:
        self._last_lr = [base * self.factor(self.count) for base in self.base_lrs]
        for group, lr in zip(self.optimizer.param_groups, self._last_lr, strict=True):
            group["lr"] = lr

    def step(self) -> None:
        """Advance one optimizer step."""
        self.count += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        """The learning rates in use now, one per group."""
        return list(self._last_lr)
