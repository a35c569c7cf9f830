"""The ``finetune-lm`` step: one entry for its two modes.

:func:`finetune_lm` takes a :class:`asrpriv.federated.finetune.FinetuneRequest`: with
``by_client`` it fine-tunes the initial model once per client and writes every client's delta
(:func:`asrpriv.federated.by_client.run_by_client`), else it trains or fine-tunes one model
(:func:`asrpriv.federated.finetune.run_finetune`). The mode rules (which settings belong to
which mode) and what the step says live here.
"""

from __future__ import annotations

import sys
from typing import Callable

from asrpriv.errors import AsrprivError, arg


def finetune_lm(req, progress: Callable | None = None, talk: Callable[[str], None] | None = None,
                warn: Callable[[str], None] | None = None):
    """The step ``finetune-lm``.

    Args:
        req: the :class:`asrpriv.federated.finetune.FinetuneRequest`.
        progress: ``progress(label, total)`` makes a progress meter (``total`` None: unknown).
        talk, warn: what the step says and warns (default: :mod:`asrpriv.talk`).

    Returns:
        The by-client summary (``written``, ``words``, ``clipped``, ``skipped``) with
        ``by_client``; else what :func:`~asrpriv.federated.finetune.run_finetune` returns.
    """
    import dataclasses

    from asrpriv.io.lines import stdin_spooled

    # the start model given as '-' is read from standard input (copied once: read twice)
    with stdin_spooled(req.init_path, streamed=(req.train_path, req.valid_path)) as (init,):
        return _finetune_lm(dataclasses.replace(req, init_path=init), progress, talk, warn)


def _finetune_lm(req, progress, talk, warn):
    if talk is None:
        from asrpriv.talk import info as talk
    if warn is None:
        from asrpriv.talk import warn
    if req.by_client is None:
        for name, value in (("utt2client", req.utt2client), ("clients", req.clients_path)):
            if value is not None:
                raise AsrprivError(f"{arg(name)} goes with {arg('by_client')} DIR")
        if req.output is None:
            raise AsrprivError("missing -o FILE (the trained model)")
        if req.output == "-" and sys.stdout is not None and sys.stdout.isatty():
            raise AsrprivError("refusing to write a binary model file to a terminal; use -o FILE")
        from asrpriv.federated.finetune import run_finetune

        try:
            return run_finetune(req, progress=(lambda: progress("tokens", None)) if progress else None,
                                talk=talk, warn=warn)
        except ValueError as err:  # inconsistent options or data, found by the library
            raise AsrprivError(str(err)) from None
    from asrpriv.federated.by_client import run_by_client

    try:
        summary = run_by_client(req, progress=progress, talk=talk, warn=warn)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    stats = []
    if req.debug_private:  # un-noised statistics of the clients' data
        stats.append(f"{summary.words:,} words")
        if req.clip is not None:
            stats.append(f"{summary.clipped} clipped to L2 {req.clip:g}")
    if summary.skipped:
        stats.append(f"{len(summary.skipped)} clients without words skipped")
    talk(f"finetune-lm: wrote {len(summary.written)} client deltas to {req.by_client}"
         + (f" ({'; '.join(stats)})" if stats else ""))
    return summary
