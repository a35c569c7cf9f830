"""``finetune-lm --by-client DIR``: one process, one model load, one delta per client.

Clients come from the training TSV's ``client`` column or from ``--utt2client`` (Kaldi
``utt_id client`` lines; it overrides the column); ``--clients LIST`` (one id a line, e.g.
``asrpriv sample-clients``'s output) restricts the run to those clients. Every client is
fine-tuned from the same initial weights with the same ``--seed`` as the single-client mode
(``finetune-lm --init MODEL --train CLIENT_PART --delta-out``) would use, so each delta equals
that mode's bit for bit (CPU, same thread count); see :mod:`asrpriv.federated.client`.

All or nothing: each delta is written to a temporary file in DIR as soon as it is computed
(memory: one model, its initial copy and one delta), and all are renamed to
``DIR/<client>.delta.pt`` only after the last client; on any error the temporary files are
removed (and DIR, if this run created it).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Callable

from asrpriv.errors import AsrprivError, InputError, arg, display_name
from asrpriv.federated.clip import check_clip

#: file name suffix of a client's delta (what ``aggregate DIR`` reads)
SUFFIX = ".delta.pt"


@dataclass
class ClientData:
    """One client's training sentences (input order) and their word confidences (or None)."""

    sentences: list = field(default_factory=list)
    confidences: list | None = None


@dataclass
class RunSummary:
    """What a many-clients run wrote (for the stderr summary)."""

    written: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    clipped: int = 0
    words: int = 0


def check_client_name(name: str) -> None:
    """A client id must be usable as a file name in DIR (AsrprivError otherwise)."""
    if (not name or "/" in name or os.sep in name or name.startswith(".") or "\0" in name
            or len((name + SUFFIX).encode("utf-8", "surrogateescape")) > 255):
        raise AsrprivError(f"client name {name!r} cannot be a file name")


def group_by_client(corpus, train_path: str, client_of: dict | None) -> dict[str, ClientData]:
    """Split a corpus (:class:`asrpriv.nnlm.data.Corpus`) by client, in input order."""
    if client_of is None:
        if corpus.clients is None:
            raise InputError(train_path, None, f"no 'client' column: give {arg('utt2client')} FILE "
                                               "(or an N-best TSV with a client column)")
        names = corpus.clients
    else:
        if corpus.ids is None:
            raise AsrprivError(f"{arg('utt2client')} needs utterance ids: Kaldi text with {arg('ids')}, or a TSV")
        names = []
        for utt_id in corpus.ids:
            if utt_id not in client_of:
                raise InputError(train_path, None, f"utterance {utt_id!r} has no client in {arg('utt2client')}")
            names.append(client_of[utt_id])
    groups: dict[str, ClientData] = {}
    for i, (name, sentence) in enumerate(zip(names, corpus.sentences)):
        data = groups.get(name)
        if data is None:
            data = groups[name] = ClientData(confidences=None if corpus.confidences is None else [])
        data.sentences.append(sentence)
        if corpus.confidences is not None:
            data.confidences.append(corpus.confidences[i])
    return groups


def read_client_list(path: str, known: dict) -> list[str]:
    """Client ids of ``path`` (one a line; blank and ``#`` lines skipped), each one of ``known``."""
    from asrpriv.io.lines import iter_lines

    chosen: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in iter_lines(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if len(line.split()) != 1:
            raise InputError(path, lineno, "expected one client id per line")
        if line in seen:
            raise InputError(path, lineno, f"client {line!r} repeats line {seen[line]}")
        if line not in known:
            raise InputError(path, lineno, f"unknown client {line!r}: it has no utterance in the "
                                           "training input")
        seen[line] = lineno
        chosen.append(line)
    return chosen


def check_directory(directory: str, clients: list[str]) -> None:
    """Refuse a DIR that is not a directory, or that holds deltas of clients not in this run
    (``aggregate DIR`` would average them in)."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise AsrprivError(f"{arg('by_client')} {directory}: exists and is not a directory")
    if not os.path.isdir(directory):
        return
    names = {c + SUFFIX for c in clients}
    stale = sorted(f for f in os.listdir(directory) if f.endswith(SUFFIX) and f not in names)
    if stale:
        raise AsrprivError(f"{arg('by_client')} {directory}: holds {len(stale)} delta file(s) of clients "
                           f"not in this run (e.g. {stale[0]}), which aggregate would read too; "
                           "give a new or empty directory")


def run_by_client(req, progress: Callable[..., object] | None = None,
                  talk: Callable[[str], None] = lambda s: None,
                  warn: Callable[[str], None] | None = None) -> RunSummary:
    """Run ``finetune-lm --by-client`` (``req``: :class:`asrpriv.federated.finetune.FinetuneRequest`).

    Args:
        progress: ``progress(label, total)`` makes a meter over clients.
    """
    from asrpriv.federated.finetune import check_init_options
    from asrpriv.nnlm import losses
    from asrpriv.nnlm.data import read_corpus
    from asrpriv.nnlm.runtime import check_device, use_threads
    from asrpriv.nnlm.train import RECIPES

    warn = warn or talk
    if not req.init_path:
        raise AsrprivError(f"{arg('by_client')} needs {arg('init')} MODEL (each client's delta is init - new)")
    if req.delta_out or req.output not in (None, "-") or req.valid_path:
        raise AsrprivError(f"{arg('by_client')} writes DIR/<client>.delta.pt only; drop -o, {arg('delta_out')} "
                           f"and {arg('valid')}")
    check_init_options(req)
    try:
        mode, _ = losses.parse_confidence(req.confidence)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    if req.clip is not None:
        check_clip(req.clip)
    settings = dict(RECIPES[req.recipe])
    settings.update({k: v for k, v in req.overrides.items() if v is not None})

    corpus = read_corpus(req.train_path, ids=req.ids, max_words=req.max_words)
    for note in corpus.notes:
        warn(f"{display_name(req.train_path)}: {note}")
    if mode != "none" and corpus.confidences is None:
        raise InputError(req.train_path, None, f"{arg('confidence')} {req.confidence} needs an N-best TSV "
                                               "with a 'confidence' column")
    client_of = None
    if req.utt2client:
        from asrpriv.io.kaldi import read_map

        client_of = read_map(req.utt2client, "client")
    groups = group_by_client(corpus, req.train_path, client_of)
    if req.clients_path:
        clients = read_client_list(req.clients_path, groups)
    else:
        clients = sorted(groups)
    if not clients and not req.clients_path:
        raise InputError(req.train_path, None, "empty input: expected training sentences")
    for name in clients:
        check_client_name(name)
    check_directory(req.by_client, clients)

    from asrpriv.federated import client

    check_device(req.device)
    use_threads(req.threads)
    init = client.load_init(req.init_path, req.device)
    client.refuse_seeded_init(init, req.allow_seeded)
    talk(f"{init.config['arch']} LM {display_name(req.init_path)}, "
         f"{sum(p.numel() for p in init.model.parameters()):,} parameters; {len(clients)} of "
         f"{len(groups)} clients, {settings['optimizer']} lr {settings['lr']:g}, batch "
         f"{settings['batch_size']}, {settings['epochs']} epoch(s), confidence {req.confidence}"
         + (f", clip L2 {req.clip:g}" if req.clip is not None else "") + f", device {req.device}")
    summary = RunSummary()
    meter = progress("clients", len(clients)) if progress is not None and clients else None
    created = not os.path.isdir(req.by_client)
    from asrpriv.io.output import atomic_path

    try:
        os.makedirs(req.by_client, exist_ok=True)
        with contextlib.ExitStack() as stack:  # every rename happens at the end, after all writes
            for name in clients:
                data = groups[name]
                try:
                    update = client.client_update(
                        init, data.sentences, data.confidences, settings=settings, seed=req.seed,
                        clip=req.clip, confidence=req.confidence, train_only=req.train_only)
                except ValueError as err:
                    if "no training sentences" not in str(err):
                        raise AsrprivError(f"client {name}: {err}") from None
                    update = None
                if update is None or update.weight == 0:
                    summary.skipped.append(name)
                    warn(f"client {name}: no training words (confidence {req.confidence}): "
                         "no delta written")
                else:
                    tmp = stack.enter_context(atomic_path(os.path.join(req.by_client, name + SUFFIX)))
                    result = update.train
                    client.write_delta(tmp, init, update, name, train_words=result.words,
                                       train_sentences=result.sentences, confidence=req.confidence,
                                       train_only=req.train_only, seed=req.seed,
                                       epochs_run=len(result.history))
                    summary.written.append(name)
                    summary.words += update.weight
                    summary.clipped += update.clip_l2 is not None and update.norm > update.clip_l2
                if meter is not None:
                    meter.update(1)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(req.by_client)
        raise
    finally:
        if meter is not None:
            meter.close()
    return summary
