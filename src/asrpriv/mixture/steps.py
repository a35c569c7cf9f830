"""The entries of the steps ``perplexity`` and ``interpolate`` (CLI and API call them).

Both score text with one or more LMs (:mod:`asrpriv.mixture.streams`: neural model files,
ARPA/kenlm n-grams, class LMs) under one convention: natural-log probabilities, ``</s>``
predicted and counted, OOV words scored as each LM's ``<unk>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from asrpriv.errors import AsrprivError, arg

#: above this OOV rate perplexity gets a warning that it does not compare across vocabularies
HIGH_OOV_RATE = 0.10


def _check_common(lm_paths: Sequence[str], batch_size: int, threads: int) -> None:
    if not lm_paths:
        raise AsrprivError(f"give at least one {arg('lm')}")
    if batch_size < 1:
        raise AsrprivError(f"{arg('batch_size')} must be >= 1, got {batch_size}")
    if threads < 0:
        raise AsrprivError(f"{arg('threads')} must be >= 0, got {threads}")


def _load_lms(lm_paths, class_files, batch_size, threads):
    from asrpriv.mixture.streams import load_lm, pair_classes

    lms = [load_lm(p, classes=c, batch_size=batch_size)  # before stdin: fail fast
           for p, c in zip(lm_paths, pair_classes(lm_paths, class_files))]
    if any(lm.kind == "nnlm" for lm in lms):
        from asrpriv.nnlm.runtime import use_threads

        use_threads(threads)
    return lms


@dataclass
class PerplexitySettings:
    """The settings of ``perplexity``: ``lm_paths`` (several: their dynamic interpolation
    with ``weights``, text ``W1,W2,...``), ``class_files`` one per LM (``-`` for a word LM),
    ``per_word`` a per-token TSV, ``as_json`` one JSON object instead of one line;
    ``threads`` 0 = OMP_NUM_THREADS or min(CPUs, 4); ``bootstrap`` N adds the perplexity's
    percentile interval at ``confidence_level`` over N resamples of the sentences
    (:func:`asrpriv.mixture.report.bootstrap_perplexity`, drawn with ``seed``)."""

    text: str = "-"
    lm_paths: Sequence[str] = ()
    class_files: Sequence[str] = ()
    weights: str | None = None
    per_word: str | None = None
    ids: bool = False
    as_json: bool = False
    batch_size: int = 64
    threads: int = 0
    max_words: int = 1000
    output: str | None = "-"
    allow_seeded: bool = False
    bootstrap: int | None = None
    confidence_level: float = 0.95
    seed: int | None = None


def perplexity(s: PerplexitySettings, warn=None) -> dict:
    """The step ``perplexity`` (:func:`_perplexity`); an LM given as ``-`` is read from
    standard input (copied once: LM files are read twice)."""
    import dataclasses

    from asrpriv.io.lines import stdin_spooled

    with stdin_spooled(*s.lm_paths, streamed=(s.text,)) as lm_paths:
        return _perplexity(dataclasses.replace(s, lm_paths=tuple(lm_paths)), warn)


def _perplexity(s: PerplexitySettings, warn=None) -> dict:
    """The step ``perplexity``: ppl = exp(-logprob / (words + sentences)), logprob the
    natural-log total; returns the summary (also OOV rate, SRILM's ppl and ppl1) and writes
    it to ``output`` (a line, or JSON with ``as_json``; None: not written)."""
    import json

    from asrpriv.errors import InputError, display_name
    from asrpriv.io.output import open_output
    from asrpriv.mixture import report
    from asrpriv.mixture.em import mix_logprobs
    from asrpriv.mixture.streams import compute_streams
    from asrpriv.mixture.weights import parse_weights
    from asrpriv.nnlm.data import read_corpus

    if warn is None:
        from asrpriv.talk import warn
    _check_common(s.lm_paths, s.batch_size, s.threads)
    if s.max_words < 1:
        raise AsrprivError(f"{arg('max_words')} must be >= 1, got {s.max_words}")
    if s.bootstrap is not None and s.bootstrap < 1:
        raise AsrprivError(f"{arg('bootstrap')} must be >= 1, got {s.bootstrap}")
    if not 0.0 < s.confidence_level < 1.0:
        raise AsrprivError(f"{arg('confidence_level')} must lie in (0, 1), got {s.confidence_level}")
    from asrpriv.provenance import check_read_files

    lm_paths, text = tuple(s.lm_paths), s.text
    check_read_files(lm_paths, s.allow_seeded)
    weights = parse_weights(s.weights, len(lm_paths))
    lms = _load_lms(lm_paths, tuple(s.class_files), s.batch_size, s.threads)
    neural = any(lm.kind == "nnlm" for lm in lms)
    corpus = read_corpus(text, ids=s.ids, max_words=s.max_words if neural else None)
    for note in corpus.notes:
        warn(f"{display_name(text)}: {note}")
    sentences = corpus.sentences
    if not sentences:
        raise InputError(text, None, "empty input: expected sentences")
    logp, oov_each = compute_streams(lms, sentences)
    words = sum(len(x) for x in sentences)
    if len(lms) == 1:
        ln_p, oov = logp[0], oov_each[0]
    else:
        ln_p = mix_logprobs(logp, weights)
        oov = oov_each.all(axis=0)
        partly = int((oov_each.any(axis=0) & ~oov).sum())
        if partly:
            warn(f"{partly} tokens are outside some LMs' vocabularies but not all: those LMs score "
                 "them as <unk> (vocabularies differ, so per-LM perplexities do not compare)")
    summary = report.summarize(ln_p, oov, words, len(sentences))
    if summary["oov_rate"] > HIGH_OOV_RATE:
        warn(f"{100 * summary['oov_rate']:.1f}% of the words are outside the vocabulary (scored "
             "as <unk>): this perplexity does not compare with an LM of a larger vocabulary "
             "(see srilm_ppl, which leaves OOVs out, and the oov_rate)")
    if len(lms) == 1:
        summary = {"lm": display_name(lm_paths[0]), "text": display_name(text),
                   "lm_type": lms[0].kind, **summary}
    else:
        components = []
        for k, lm in enumerate(lms):
            alone = report.summarize(logp[k], oov_each[k], words, len(sentences))
            components.append({"lm": lm.name, "lm_type": lm.kind, "weight": weights[k],
                               **{key: alone[key] for key in ("ppl", "logprob", "oovs", "srilm_ppl")}})
        summary = {"lm": [lm.name for lm in lms], "weights": weights, "text": display_name(text),
                   "lm_type": "mixture", "components": components, **summary}
    if s.bootstrap is not None:
        lp, tokens = report.sentence_totals(ln_p, sentences)
        summary["bootstrap"] = report.bootstrap_perplexity(lp, tokens, s.bootstrap, s.confidence_level, s.seed)
    if s.per_word:
        with open_output(s.per_word) as stream:
            report.write_per_word(stream, sentences, corpus.ids, ln_p, oov,
                                  logp if len(lms) > 1 else None)
    if s.output is not None:
        with open_output(s.output) as out:
            if s.as_json:
                out.write(json.dumps(summary, sort_keys=True) + "\n")
            else:
                out.write(report.format_line(summary, display_name(text)) + "\n")
    return summary


@dataclass
class InterpolateSettings:
    """The settings of ``interpolate``: with ``heldout``, EM estimates the weights of
    ``lm_paths`` (from ``init``, until the per-token log-likelihood gains less than ``tol``
    or ``max_iter`` steps; ``oov_policy`` ``unk`` or ``exclude``) and ``output`` optionally
    gets the static ARPA mixture; with ``weights`` (``W1,W2,...``) only the mixture is
    written. ``precision``: digits of the ARPA's log10 numbers."""

    lm_paths: Sequence[str] = ()
    class_files: Sequence[str] = ()
    heldout: str | None = None
    ids: bool = False
    weights: str | None = None
    init: str | None = None
    tol: float = 1e-6
    max_iter: int = 10000
    oov_policy: str = "unk"
    precision: int = 7
    batch_size: int = 64
    threads: int = 0
    output: str | None = None
    allow_seeded: bool = False
    public_heldout: bool = False


@dataclass
class InterpolateResult:
    """The EM report (None with fixed weights) and the mixture's weights."""

    report: dict | None
    weights: list[float]


def interpolate(s: InterpolateSettings, info=None, warn=None,
                on_report=None) -> InterpolateResult:
    """The step ``interpolate`` (:func:`_interpolate`); an LM given as ``-`` is read from
    standard input (copied once)."""
    import dataclasses

    from asrpriv.io.lines import stdin_spooled

    with stdin_spooled(*s.lm_paths, streamed=(s.heldout,)) as lm_paths:
        return _interpolate(dataclasses.replace(s, lm_paths=tuple(lm_paths)), info, warn,
                            on_report)


def _interpolate(s: InterpolateSettings, info=None, warn=None,
                 on_report=None) -> InterpolateResult:
    """The step ``interpolate`` (paper 003 Eq. 3): interpolation weights by EM on held-out
    text, P(w|h) = sum_k w_k P_k(w|h) per word; a static ARPA mixture of n-gram LMs.
    ``on_report(report)`` is called with the EM report before the mixture is written (the
    CLI prints it on stdout)."""
    import math

    if info is None:
        from asrpriv.talk import info
    if warn is None:
        from asrpriv.talk import warn
    _check_common(s.lm_paths, s.batch_size, s.threads)
    if not (math.isfinite(s.tol) and s.tol > 0):
        raise AsrprivError(f"{arg('tol')} must be > 0, got {s.tol}")
    if s.max_iter < 1:
        raise AsrprivError(f"{arg('max_iter')} must be >= 1, got {s.max_iter}")
    if s.oov_policy not in ("unk", "exclude"):
        raise AsrprivError(f"{arg('oov')} must be 'unk' or 'exclude', got {s.oov_policy!r}")
    if not 1 <= s.precision <= 17:
        raise AsrprivError(f"{arg('precision')} must be in 1..17, got {s.precision}")
    lm_paths = tuple(s.lm_paths)
    if len(lm_paths) < 2:
        raise AsrprivError(f"give at least two {arg('lm')}")
    if s.heldout is None and s.weights is None:
        raise AsrprivError(f"give {arg('heldout')} TEXT (estimate weights) or {arg('weights')} W1,W2,... with -o "
                           "(write the static mixture)")
    if s.heldout is not None and s.weights is not None:
        raise AsrprivError(f"give {arg('heldout')} (estimate weights) or {arg('weights')} (fixed), not both; "
                           f"'perplexity --lm .. --weights ..' scores fixed weights, {arg('init')} starts EM")
    if s.heldout is not None and s.output == "-":
        raise AsrprivError(f"with {arg('heldout')}, stdout carries the JSON report: give -o a file name")
    if s.heldout is None and s.class_files:
        raise AsrprivError("a class LM cannot join a static ARPA mixture (its words are classes): "
                           f"estimate weights with {arg('heldout')}, score with perplexity --weights")
    from asrpriv.mixture.weights import weights_with_state
    from asrpriv.provenance import check_read_files, state_to_json, text_state

    lm_state = check_read_files(lm_paths, s.allow_seeded)
    if s.heldout is None:
        weights, weights_state = weights_with_state(s.weights, len(lm_paths))
        write_mixture(lm_paths, weights, s.output or "-", s.precision, info,
                      [(s.weights[1:], weights_state)] if s.weights.startswith("@") else [])
        return InterpolateResult(None, list(weights))
    fitted: list = []  # what the weights depend on besides the LMs: held-out text, --init @FILE
    init = None
    if s.init:
        init, init_state = weights_with_state(s.init, len(lm_paths), arg("init"))
        fitted.append((s.init[1:] if s.init.startswith("@") else arg("init"), init_state))
    fitted.append((s.heldout, text_state(s.public_heldout)))
    result = estimate(lm_paths, tuple(s.class_files), s.heldout, s.ids, init, s.tol, s.max_iter,
                      s.oov_policy, s.batch_size, s.threads, info, warn)
    from asrpriv.privacy.state import combine

    result["privacy_state"] = state_to_json(combine([lm_state, *(st for _, st in fitted)]))
    if on_report is not None:
        on_report(result)
    if s.output:
        write_mixture(lm_paths, result["weights"], s.output, s.precision, info, fitted)
    return InterpolateResult(result, result["weights"])


def write_mixture(lm_paths, weights, output, precision, info, fitted=()) -> None:
    """The static mixture of ARPA LMs (exact, :func:`asrpriv.ngram.mix.mix_models`);
    ``fitted``: ``(name, state)`` of what the weights were fitted on or read from (held-out
    text, a weights report), whose state the mixture inherits."""
    from asrpriv.io.output import open_output
    from asrpriv.ngram.mix import mix_models
    from asrpriv.ngram.packed import read_packed
    from asrpriv.provenance import Inputs, write_arpa_header

    inputs = Inputs(allow_seeded=True)  # seeded LMs were refused (or allowed) above
    for path in lm_paths:  # even at weight 0 an LM's vocabulary joins the mixture's
        inputs.add_arpa(path)
    for name, state in fitted:
        inputs.add(name, state)
    models = [read_packed(p) for p in lm_paths]
    mixed = mix_models(models, weights)
    with open_output(output) as out:
        write_arpa_header(out, "interpolate", inputs.state())
        mixed.write(out, precision)
    info(f"interpolate: static mixture of {len(models)} LMs, weights "
         f"{','.join(f'{w:g}' for w in weights)}: n-grams {mixed.counts()}")


def estimate(lm_paths, class_files, heldout, ids, init, tol, max_iter, oov_policy, batch_size,
             threads, info, warn) -> dict:
    """EM weights on held-out text; the report (weights, perplexity, OOVs, timings)."""
    import time

    import numpy as np

    from asrpriv.errors import InputError, display_name
    from asrpriv.mixture import report
    from asrpriv.mixture.em import estimate_weights, mix_logprobs
    from asrpriv.mixture.streams import compute_streams
    from asrpriv.nnlm.data import read_corpus

    lms = _load_lms(lm_paths, class_files, batch_size, threads)
    sentences = read_corpus(heldout, ids=ids).sentences
    if not sentences:
        raise InputError(heldout, None, "empty input: expected held-out sentences")
    start = time.perf_counter()
    logp, oov_each = compute_streams(lms, sentences)
    t_streams = time.perf_counter() - start
    oov = oov_each.all(axis=0)
    partly = int((oov_each.any(axis=0) & ~oov).sum())
    if partly:
        warn(f"{partly} held-out tokens are outside some LMs' vocabularies but not all: those LMs "
             "score them as <unk>, which favours an LM with a small vocabulary (--oov exclude "
             "leaves out only words outside every vocabulary)")
    use = ~oov if oov_policy == "exclude" else np.ones(oov.shape, dtype=bool)
    dead = use & ~np.isfinite(logp).any(axis=0)
    use &= ~dead
    if not use.any():
        raise AsrprivError(f"{display_name(heldout)}: no held-out token to estimate weights on")
    start = time.perf_counter()
    fit = estimate_weights(logp[:, use], init=init, tol=tol, max_iter=max_iter)
    t_em = time.perf_counter() - start
    if not fit.converged:
        warn(f"EM stopped after {max_iter} steps without converging to --tol {tol:g}")
    words = sum(len(x) for x in sentences)
    summary = report.summarize(mix_logprobs(logp, fit.weights), oov, words, len(sentences))
    tokens = int(use.sum())
    perplexity = float(np.exp(-fit.ln_mix.sum() / tokens))
    info(f"interpolate: streams {t_streams:.2f} s, EM {t_em:.3f} s ({fit.iterations} steps) "
         f"on {tokens} tokens")
    alone = [float(np.exp(-logp[k, use].sum() / tokens)) for k in range(len(lms))]
    return {
        "weights": [float(w) for w in fit.weights],
        "perplexity": perplexity,
        "lms": [lm.name for lm in lms], "lm_types": [lm.kind for lm in lms],
        "component_perplexities": alone,
        "heldout": display_name(heldout),
        "iterations": fit.iterations, "converged": fit.converged, "tolerance": tol,
        "tokens": tokens, "words": words, "sentences": len(sentences),
        "oovs": summary["oovs"], "oov_rate": summary["oov_rate"], "oov_policy": oov_policy,
        "oov_tokens_with_partial_coverage": partly, "zeroprob_tokens": int(dead.sum()),
        "srilm_ppl": summary["srilm_ppl"], "srilm_ppl1": summary["srilm_ppl1"],
        "log_base": "e",
        "conventions": "perplexity = exp(-sum ln P_mix / tokens) over the EM tokens: words and </s>, "
                       + ("OOVs scored as each LM's <unk>" if oov_policy == "unk"
                          else "words outside every LM's vocabulary left out"),
        "seconds": {"streams": round(t_streams, 4), "em": round(t_em, 4)},
    }
