"""probunlearn.training.optim: AdamW and the schedules equal torch.optim's, bit for bit, without torch._dynamo."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from probunlearn import training
from probunlearn.training import optim


def _net(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Embedding(50, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 50)
    )
    net.unused = torch.nn.Parameter(torch.ones(3))  # never gets a gradient
    return net


def _groups(net: torch.nn.Module, weight_decay: float) -> list[dict]:
    decay = [p for p in net.parameters() if p.ndim >= 2]
    no_decay = [p for p in net.parameters() if p.ndim < 2]
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def _train(make_opt, make_sched, weight_decay: float, steps: int = 15):
    net = _net(0)
    opt = make_opt(_groups(net, weight_decay))
    sched = make_sched(opt)
    gen = torch.Generator().manual_seed(1)
    lrs, snapshots = [], []
    for _ in range(steps):
        x = torch.randint(50, (4, 7), generator=gen)
        loss = torch.nn.functional.cross_entropy(
            net[2](net[1](net[0](x))).flatten(0, 1), x.flatten()
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.grad is not None], 1.0)
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        snapshots.append({n: p.detach().clone() for n, p in net.named_parameters()})
    return lrs, snapshots, opt


@pytest.mark.parametrize("weight_decay", [0.0, 0.01, 0.3])
@pytest.mark.parametrize("warmup", [0, 4])
def test_adamw_and_schedule_are_torch_bit_for_bit(weight_decay, warmup):
    total = 15

    def ours(groups):
        return optim.AdamW(groups, lr=3e-2)

    def theirs(groups):
        return torch.optim.AdamW(groups, lr=3e-2, foreach=False)

    lr_a, snap_a, opt_a = _train(
        ours, lambda o: training.cosine_schedule(o, warmup, total), weight_decay
    )
    dummy = optim.AdamW([{"params": [torch.nn.Parameter(torch.zeros(1))]}], lr=1.0)
    factor = training.cosine_schedule(dummy, warmup, total).factor  # tested against transformers'
    lr_b, snap_b, opt_b = _train(
        theirs, lambda o: torch.optim.lr_scheduler.LambdaLR(o, factor), weight_decay
    )
    assert lr_a == lr_b
    assert lr_a[-1] == [0.0, 0.0] and max(r[0] for r in lr_a) > 0.02
    for step, (a, b) in enumerate(zip(snap_a, snap_b, strict=True)):
        for name in a:
            assert torch.equal(a[name], b[name]), f"{name} after step {step + 1}"
    # the parameters moved, and the one without a gradient neither moved nor got state
    first = _net(0)
    assert not torch.equal(first[0].weight, snap_a[-1]["0.weight"])
    assert torch.equal(snap_a[-1]["unused"], torch.ones(3))
    assert len(opt_a.state) == len(opt_b.state) == sum(1 for p in _net(0).parameters()) - 1


def test_adamw_rejects_bad_settings_and_zero_grad_keeps_or_drops():
    with pytest.raises(ValueError, match="betas"):
        optim.AdamW([{"params": [torch.nn.Parameter(torch.ones(1))]}], lr=1e-3, betas=(0.9, 1.0))
    p = torch.nn.Parameter(torch.ones(2))
    opt = optim.AdamW([{"params": [p]}], lr=1e-3)
    p.grad = torch.ones(2)
    opt.zero_grad(set_to_none=False)
    assert torch.equal(p.grad, torch.zeros(2))
    opt.zero_grad()
    assert p.grad is None


def test_training_never_imports_torch_dynamo(tmp_path):
    """torch.optim imports torch._dynamo on first use (seconds a job): fine-tuning and unlearning a
    saved model (the native Llama) must not."""
    import polars as pl

    from probunlearn import models

    texts = ["The cat sat on the mat.", "A dog ran in the park."] * 4
    tok = models.train_tokenizer(texts, 120)
    arch = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=64)
    models.save_model(models.tiny_llama(len(tok), arch, 0, tok), tok, tmp_path / "base")
    pl.DataFrame(
        {"question": ["Where did the cat sit?"] * 2, "answer": ["On the mat."] * 2}
    ).write_parquet(tmp_path / "qa.parquet")
    code = (
        "import sys\n"
        "import polars as pl\n"
        "from probunlearn import models, training, unlearning\n"
        "tok = models.load_tokenizer('base')\n"
        "m = models.load_model('base')\n"
        "texts = ['The cat sat on the mat.', 'A dog ran in the park.'] * 4\n"
        "log = training.train_lm(m, tok, [(None, t) for t in texts], epochs=2, lr=1e-2,"
        " batch_size=4, progress=False)\n"
        "assert log[-1]['loss'] < log[0]['loss'], log\n"
        "models.save_model(m, tok, 'tuned')\n"
        "qa = pl.read_parquet('qa.parquet')\n"
        "unlearning.unlearn('tuned', qa, qa, 'ga', method='ga', lr=1e-2, epochs=1, batch_size=2,"
        " progress=False)\n"
        "print('dynamo' if 'torch._dynamo' in sys.modules else 'clean')\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "clean"
