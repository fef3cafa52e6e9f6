"""One file of a Hugging Face hub repository, the one way data sets and models are fetched from the hub.

``huggingface_hub`` caches the file; an unreachable hub (no network, ``HF_HUB_OFFLINE=1``) raises
:class:`OfflineError`, so callers can say where to put the file by hand; a missing repository, revision or
file raises the hub's own error.
"""

from __future__ import annotations

from pathlib import Path


class OfflineError(RuntimeError):
    """The source cannot be reached; the message says which files to put where."""


def hub_offline(e: BaseException) -> bool:
    """Whether ``e`` means the hub cannot be reached (rather than that what was asked for is not there)."""
    from huggingface_hub import errors

    if isinstance(e, errors.LocalEntryNotFoundError | errors.OfflineModeIsEnabled):
        return True
    if isinstance(
        e,
        errors.RepositoryNotFoundError | errors.RevisionNotFoundError | errors.EntryNotFoundError,
    ):
        return False
    # the hub's HTTP client (httpx, or httpx2 in newer huggingface_hub) raises a TransportError
    # (ConnectError, timeouts) when no connection is made
    if any(c.__name__ == "TransportError" for c in type(e).__mro__):
        return True
    return isinstance(e, ConnectionError | TimeoutError)


def hub_file(
    repo_id: str, filename: str, *, revision: str | None, repo_type: str = "dataset"
) -> Path:
    """The cached local path of ``filename`` in the hub repository ``repo_id`` at ``revision``."""
    import huggingface_hub  # looked up at call time, so tests can monkeypatch it

    try:
        return Path(
            huggingface_hub.hf_hub_download(
                repo_id=repo_id, filename=filename, repo_type=repo_type, revision=revision
            )
        )
    except Exception as e:
        if hub_offline(e):
            raise OfflineError(
                f"cannot reach the Hugging Face hub for {repo_id}/{filename} at revision {revision} "
                f"({type(e).__name__})"
            ) from e
        raise
