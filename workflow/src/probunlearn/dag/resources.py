"""Resources of the GPU rules: gpu=1 (``--gpus=1`` on SLURM), and memory and runtime that grow with
each retry (``--retries``); workflow/profiles/slurm sizes these rules up for the real presets."""

from __future__ import annotations

import glob
import os


def gpu_mem_mb(wildcards, attempt: int) -> int:
    """Memory in MB of a GPU rule's attempt."""
    return 2000 * attempt


def gpu_runtime(wildcards, attempt: int) -> int:
    """Runtime in minutes of a GPU rule's attempt."""
    return 60 * attempt


def gpus_present() -> int:
    """The GPUs this machine shows: those in CUDA_VISIBLE_DEVICES if set, else NVIDIA's devices."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    # /dev/nvidia0, /dev/nvidia1, ...: device files, not a path of the workflow's
    return len(glob.glob(os.path.join(os.sep, "dev", "nvidia[0-9]*")))
