"""The ``finetune-lm`` step as a library call: read inputs, build or load, train, write.

No click here: the command module passes a progress meter and a ``talk`` function (stderr).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable

from asrpriv.errors import AsrprivError, InputError, display_name
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


def choose_threads(requested: int) -> int:
    """torch CPU threads: ``requested``, else OMP_NUM_THREADS, else min(available CPUs, 4).

    Small LMs gain little beyond a few threads, and more threads than free cores make every
    step slower (spin-waiting), so the default stays modest.
    """
    if requested:
        return requested
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def run_finetune(req: FinetuneRequest, progress: Callable[[], object] | None = None,
                 talk: Callable[[str], None] = lambda s: None,
                 warn: Callable[[str], None] | None = None):
    """Run the step; returns the :class:`asrpriv.nnlm.train.TrainResult`.

    Args:
        progress: makes a progress meter (``update(n, postfix)``, ``close()``), one per epoch.
        talk: prints a line for the user (stderr).
        warn: prints a warning (stderr); default ``talk``.
    """
    from asrpriv.nnlm.train import RECIPES

    if req.delta_out and not req.init_path:
        raise AsrprivError("--delta-out needs --init (a delta is init - new)")
    try:
        mode, _ = losses.parse_confidence(req.confidence)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    settings = dict(RECIPES[req.recipe])
    settings.update({k: v for k, v in req.overrides.items() if v is not None})

    warn = warn or talk
    corpus = read_corpus(req.train_path, ids=req.ids, max_words=req.max_words)
    for note in corpus.notes:
        warn(f"{display_name(req.train_path)}: {note}")
    if not corpus.sentences:
        raise InputError(req.train_path, None, "empty input: expected training sentences")
    if mode != "none" and corpus.confidences is None:
        raise InputError(req.train_path, None, f"--confidence {req.confidence} needs an N-best TSV "
                                               "with a 'confidence' column")
    valid = None
    if req.valid_path:
        valid = read_corpus(req.valid_path, ids=req.ids, max_words=req.max_words).sentences
        if not valid:
            raise InputError(req.valid_path, None, "empty input: expected validation sentences")

    import torch

    from asrpriv.nnlm import modelfile, train

    torch.set_num_threads(choose_threads(req.threads))
    if req.seed is not None:
        torch.manual_seed(req.seed)
    if req.init_path:
        given = {k: v for k, v in req.model_options.items() if v is not None}
        if given:
            raise AsrprivError(f"--init keeps the model's shape; drop {', '.join('--' + k.replace('_', '-') for k in given)}")
        model, vocab, config = modelfile.load_model(req.init_path)
        init_state = {k: v.clone() for k, v in model.state_dict().items()}
    else:
        vocab = train.vocab_from_sentences(corpus.sentences, req.vocab_size or None, req.min_count)
        try:
            model, config = train.new_model(req.arch, vocab, seed=req.seed, **req.model_options)
        except ValueError as err:
            raise AsrprivError(str(err)) from None
        init_state = None

    n_params = sum(p.numel() for p in model.parameters())
    talk(f"{config['arch']} LM, {n_params:,} parameters, vocabulary {len(vocab):,}; "
         f"{len(corpus):,} training sentences, {corpus.words:,} words ({corpus.kind}); "
         f"{settings['optimizer']} lr {settings['lr']:g}, batch {settings['batch_size']} "
         f"({'sentences' if settings['batch_by'] == 'sentences' else 'sentences on average, by tokens'}), "
         f"{settings['epochs']} epoch(s), confidence {req.confidence}, train {req.train_only}")

    bar = [None]  # the current epoch's progress meter, made on its first step

    def on_step(ntok: int, ppl: float | None) -> None:
        if progress is None:
            return
        if bar[0] is None:
            bar[0] = progress()
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

    result = train.train_lm(
        model, vocab, corpus.sentences, corpus.confidences, valid=valid, confidence=req.confidence,
        optimizer=settings["optimizer"], lr=settings["lr"], epochs=settings["epochs"],
        batch_size=settings["batch_size"], batch_by=settings["batch_by"], loss_norm=settings["loss_norm"],
        max_grad_norm=settings["max_grad_norm"], train_only=req.train_only, seed=req.seed,
        lr_decay=req.lr_decay, patience=req.patience, on_step=on_step, on_epoch=on_epoch)
    if result.dropped:
        talk(f"confidence {req.confidence}: dropped {result.dropped} of "
             f"{result.dropped + result.sentences} sentences")
    if valid is not None:
        talk(f"kept epoch {result.best_epoch}" + (" (stopped early)" if result.stopped_early else ""))

    meta = {"train_words": result.words, "train_sentences": result.sentences,
            "confidence": req.confidence, "train_only": req.train_only, "seed": req.seed,
            "epochs_run": len(result.history)}
    if init_state is not None:
        delta, snapped = train.make_delta(init_state, model.state_dict())
        if req.delta_out:
            modelfile.save_delta(req.delta_out, delta, vocab, config, weight=result.words, **meta)
        modelfile.save_model(req.output, snapped, vocab, config, **meta)
    else:
        modelfile.save_model(req.output, model, vocab, config, **meta)
    return result
