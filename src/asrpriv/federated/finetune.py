"""The ``finetune-lm`` step as a library call: read inputs, build or load, train, write.

It lives in ``federated/`` because ``--init`` runs the client update of paper 001
(:mod:`asrpriv.federated.client`); the training loop it calls is :mod:`asrpriv.nnlm.train`.

No click here: the command module passes a progress meter and a ``talk`` function (stderr).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from asrpriv.errors import AsrprivError, InputError, arg, display_name
from asrpriv.nnlm import losses
from asrpriv.nnlm.data import read_corpus


@dataclass
class FinetuneRequest:
    """Everything ``finetune-lm`` was asked to do (see the command's --help for each field)."""

    train_path: str = "-"
    output: str = "-"
    valid_path: str | None = None
    ids: bool = False
    init_path: str | None = None
    delta_out: str | None = None
    arch: str = "transformer"
    vocab_size: int = 0
    min_count: int = 2
    vocab_path: str | None = None
    model_options: dict = field(default_factory=dict)
    recipe: str = "server"
    overrides: dict = field(default_factory=dict)
    confidence: str = "none"
    train_only: str = "all"
    lr_decay: float = 0.5
    patience: int = 2
    threads: int = 0
    seed: int | None = None
    max_words: int | None = None
    device: str = "cpu"
    clip: float | None = None
    by_client: str | None = None
    utt2client: str | None = None
    clients_path: str | None = None
    public: bool = False
    public_valid: bool = False
    allow_seeded: bool = False
    client: str | None = None
    debug_private: bool = False  # say un-noised statistics of the clients' data (not private)


def run_finetune(req: FinetuneRequest, progress: Callable[[], object] | None = None,
                 talk: Callable[[str], None] = lambda s: None,
                 warn: Callable[[str], None] | None = None):
    """Run the step; returns the :class:`asrpriv.nnlm.train.TrainResult`.

    Four stages: the settings and the text (:func:`_read_inputs`), the start model
    (:func:`_start_model`: ``--init`` or a new one), training (the client update of the
    many-clients mode for one client with ``--init``, else :func:`asrpriv.nnlm.train.train_lm`),
    and the files (:func:`_write_outputs`).

    Args:
        progress: makes a progress meter (``update(n, postfix)``, ``close()``), one per epoch.
        talk: prints a line for the user (stderr).
        warn: prints a warning (stderr); default ``talk``.
    """
    settings, corpus, valid = _read_inputs(req, warn or talk)

    import torch

    from asrpriv.federated import client
    from asrpriv.nnlm import train
    from asrpriv.nnlm.runtime import check_device, use_threads

    check_device(req.device)
    use_threads(req.threads)
    if req.seed is not None:
        torch.manual_seed(req.seed)
    init, model, vocab, config, vocab_state = _start_model(req, corpus)
    n_params = sum(p.numel() for p in model.parameters())
    talk(f"{config['arch']} LM, {n_params:,} parameters, vocabulary {len(vocab):,}; "
         f"{len(corpus):,} training sentences, {corpus.words:,} words ({corpus.kind}); "
         f"{settings['optimizer']} lr {settings['lr']:g}, batch {settings['batch_size']} "
         f"({'sentences' if settings['batch_by'] == 'sentences' else 'sentences on average, by tokens'}), "
         f"{settings['epochs']} epoch(s), confidence {req.confidence}, train {req.train_only}")
    # every sentence's words and its </s> are predicted once per epoch (hard:C drops some)
    per_epoch = None if str(req.confidence).startswith("hard") else corpus.words + len(corpus)
    on_step, on_epoch = _epoch_talk(progress, talk, per_epoch)
    update = None
    if init is not None:  # the client update of the many-clients mode, for one client
        update = client.client_update(
            init, corpus.sentences, corpus.confidences,
            settings={**settings, "lr_decay": req.lr_decay, "patience": req.patience},
            seed=req.seed, clip=req.clip, confidence=req.confidence, train_only=req.train_only,
            keep_model=True, valid=valid, on_step=on_step, on_epoch=on_epoch)
        result = update.train
    else:
        result = train.train_lm(
            model, vocab, corpus.sentences, corpus.confidences, valid=valid, confidence=req.confidence,
            train_only=req.train_only, seed=req.seed, lr_decay=req.lr_decay, patience=req.patience,
            on_step=on_step, on_epoch=on_epoch, **settings)
    if result.dropped:
        talk(f"confidence {req.confidence}: dropped {result.dropped} of "
             f"{result.dropped + result.sentences} sentences")
    if valid is not None:
        talk(f"kept epoch {result.best_epoch}" + (" (stopped early)" if result.stopped_early else ""))
    _write_outputs(req, init, update, model, vocab, config, result, talk, vocab_state)
    return result


def _read_inputs(req: FinetuneRequest, warn: Callable[[str], None]):
    """The checks that need no model, the recipe's settings with the overrides, the training
    corpus and the validation sentences (None without ``valid_path``)."""
    from asrpriv.nnlm.train import RECIPES

    if req.delta_out and not req.init_path:
        raise AsrprivError(f"{arg('delta_out')} needs {arg('init')} (a delta is init - new)")
    if req.client is not None and not req.delta_out:
        raise AsrprivError(f"{arg('client')} labels a delta: give it with {arg('delta_out')}")
    if req.client is not None and not (1 <= len(req.client) <= 200 and req.client.isprintable()):
        raise AsrprivError(f"{arg('client')}: expected a short printable label, got {req.client[:60]!r}")
    if req.clip is not None and not req.delta_out:
        raise AsrprivError(f"{arg('clip')} bounds a delta: give it with {arg('delta_out')} or {arg('by_client')}")
    try:
        mode, _ = losses.parse_confidence(req.confidence)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    settings = dict(RECIPES[req.recipe])
    settings.update({k: v for k, v in req.overrides.items() if v is not None})

    corpus = read_corpus(req.train_path, ids=req.ids, max_words=req.max_words)
    for note in corpus.notes:
        warn(f"{display_name(req.train_path)}: {note}")
    if not corpus.sentences:
        raise InputError(req.train_path, None, "empty input: expected training sentences")
    if mode != "none" and corpus.confidences is None:
        raise InputError(req.train_path, None, f"{arg('confidence')} {req.confidence} needs an N-best TSV "
                                               "with a 'confidence' column")
    valid = None
    if req.valid_path:
        valid = read_corpus(req.valid_path, ids=req.ids, max_words=req.max_words).sentences
        if not valid:
            raise InputError(req.valid_path, None, "empty input: expected validation sentences")
    return settings, corpus, valid


def _start_model(req: FinetuneRequest, corpus):
    """``(init, model, vocab, config, vocab_state)``: the ``--init`` model (its seeded marks
    refused unless allowed; ``init`` holds its copy and fingerprint), or a new model (``init``
    None) on a vocabulary from ``vocab_path`` (``vocab_state``: the privacy state that file
    records, read by its own reader) or the training text."""
    from asrpriv.federated import client
    from asrpriv.nnlm import train

    if req.init_path:
        check_init_options(req)
        init = client.load_init(req.init_path, req.device)
        client.refuse_seeded_init(init, req.allow_seeded)
        return init, init.model, init.vocab, init.config, None
    vocab_state = None
    if req.vocab_path:
        from asrpriv.nnlm.vocab import read_word_list_state

        vocab, vocab_state = read_word_list_state(req.vocab_path)
    else:
        vocab = train.vocab_from_sentences(corpus.sentences, req.vocab_size or None, req.min_count)
    try:
        model, config = train.new_model(req.arch, vocab, seed=req.seed, **req.model_options)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    model.to(req.device)
    return None, model, vocab, config, vocab_state


def _epoch_talk(progress, talk, per_epoch: int | None = None):
    """``(on_step, on_epoch)`` for the training loop: a progress meter per epoch (made on its
    first step; ``per_epoch`` tokens, when known, its total: done/total and an ETA) and one
    line per finished epoch."""
    bar = [None]  # the current epoch's progress meter, made on its first step

    def on_step(ntok: int, ppl: float | None) -> None:
        if progress is None:
            return
        if bar[0] is None:
            bar[0] = progress()
            if getattr(bar[0], "total", 0) is None:
                bar[0].total = per_epoch
        bar[0].update(ntok, None if ppl is None else f"loss {math.log(ppl):.3f} ppl {ppl:.1f}")

    def on_epoch(rec: dict) -> None:
        if bar[0] is not None:
            bar[0].close()
            bar[0] = None
        line = (f"epoch {rec['epoch']}: train loss {rec['train_loss']:.4f} ppl {rec['train_ppl']:.2f}, "
                f"lr {rec['lr']:g}, {rec['seconds']:.1f} s")
        if "valid_loss" in rec:
            line += f"; valid loss {rec['valid_loss']:.4f} ppl {rec['valid_ppl']:.2f}"
        talk(line)

    return on_step, on_epoch


def _write_outputs(req: FinetuneRequest, init, update, model, vocab, config, result, talk,
                   vocab_state=None):
    """The trained model (``output``) and, with ``delta_out``, the delta, each with the
    training's record and the privacy state of its inputs."""
    from asrpriv.federated import client
    from asrpriv.nnlm import modelfile

    meta = {"train_words": result.words, "train_sentences": result.sentences,
            "confidence": req.confidence, "train_only": req.train_only, "seed": req.seed,
            "epochs_run": len(result.history)}
    privacy = _output_privacy(req, init, vocab_state)
    if update is None:
        modelfile.save_model(req.output, model, vocab, config, privacy=privacy, **meta)
        return
    if req.delta_out:
        if update.clip_l2 is not None:
            talk(f"delta L2 norm {update.norm:.6g}, clipped to {update.clip_l2:g}"
                 if update.norm > update.clip_l2 else
                 f"delta L2 norm {update.norm:.6g} <= clip {update.clip_l2:g}")
        public = req.public and (not req.valid_path or req.public_valid)
        client.write_delta(req.delta_out, init, update, req.client or "", public=public, **meta)
    modelfile.save_model(req.output, update.model_state, vocab, config, privacy=privacy, **meta)


def _output_privacy(req: FinetuneRequest, init, vocab_state=None):
    """The trained model's privacy state: the start model's (``--init``), the vocabulary
    file's (``vocab_state``, read with it: counts, factors and ARPA files record one; a word
    list is asserted public), the training text's (raw unless ``--public``) and the
    validation text's (it picks the kept epoch: raw unless ``--public-valid``)."""
    from asrpriv.provenance import Inputs

    inputs = Inputs(allow_seeded=True)  # seeded inputs were refused when they were read
    if init is not None:
        inputs.add(req.init_path, init.privacy)
    if vocab_state is not None:
        inputs.add(req.vocab_path, vocab_state)
    inputs.add_text(req.train_path, req.public)
    if req.valid_path:
        inputs.add_text(req.valid_path, req.public_valid)
    return inputs.state()


def check_init_options(req: FinetuneRequest) -> None:
    """--init keeps the model's shape: refuse architecture options (AsrprivError)."""
    given = {k: v for k, v in req.model_options.items() if v is not None}
    if req.vocab_path:
        given["vocab"] = req.vocab_path
    if given:
        raise AsrprivError(f"{arg('init')} keeps the model's shape; drop {', '.join('--' + k.replace('_', '-') for k in given)}")
