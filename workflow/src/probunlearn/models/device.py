"""The device a job runs on, checked without importing torch where the answer needs none: a CPU-only
build of torch (``torch/version.py`` says ``cuda = None``) has no CUDA device whatever the machine."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


class DeviceError(ValueError):
    """A ``--device`` that this machine does not have; the message says which to use instead."""


def torch_build() -> dict[str, str | None]:
    """``{"version", "cuda"}`` of the installed torch, read from ``torch/version.py`` (no import);
    ``cuda`` is None for a CPU-only build. Both None where torch is not installed."""
    spec = importlib.util.find_spec("torch")
    out: dict[str, str | None] = {"version": None, "cuda": None}
    if spec is None or not spec.submodule_search_locations:
        return out
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        import torch

        return {"version": torch.__version__, "cuda": torch.version.cuda}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            if target.id == "__version__":
                out["version"] = value.value
            elif target.id == "cuda":
                out["cuda"] = value.value
    return out


def cuda_devices() -> int:
    """How many CUDA devices torch sees here (0 for a CPU-only build, without importing torch)."""
    if torch_build()["cuda"] is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_device(device: str) -> None:
    """Raise :class:`DeviceError` unless ``--device`` names a device this machine has."""
    if not isinstance(device, str) or not DEVICE.match(device):
        raise DeviceError(f"--device {device!r}: expected auto, cpu, cuda or cuda:N (or mps)")
    if device in ("auto", "cpu"):
        return
    if device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise DeviceError("--device mps: no MPS device here; use --device cpu or auto")
        return
    build = torch_build()
    count = cuda_devices()
    if count == 0:
        why = (
            f"torch {build['version']} is a CPU-only build"
            if build["cuda"] is None
            else f"torch {build['version']} (CUDA {build['cuda']}) finds no GPU"
        )
        raise DeviceError(
            f"--device {device}: no CUDA device ({why}); use --device cpu or auto, or run the "
            "jobs where there is one (--profile)"
        )
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        raise DeviceError(
            f"--device {device}: this machine has {count} CUDA device(s), cuda:0 to "
            f"cuda:{count - 1}"
        )


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` where torch sees a GPU, else ``cpu`` (as the jobs resolve it)."""
    if device != "auto":
        return device
    return "cuda" if cuda_devices() > 0 else "cpu"
