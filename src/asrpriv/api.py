"""asrpriv's Python API: single steps for other toolchains, with typed results.

The CLI steps (``asrpriv STEP``) and these functions call the same library code: each step has
one library entry (:data:`STEP_ENTRIES`, docs/API.md) that takes typed settings, does every
check and returns a typed result; the click command only turns argv into those settings, and
this module re-exports the entries (``api.train_ngram(api.TrainSettings(...))``) beside the
functions below. So a result here equals the CLI's on the same input. Importing this module
imports neither click nor torch nor numpy; functions that need them import them when called.

Conventions (as in ``docs/FORMATS.md``): counts are pseudo-counts (kernel-weighted or plain
word counts); factors and scores are natural logs; ARPA files hold log10 values; WER is in
percent. Errors are :class:`asrpriv.errors.AsrprivError` (bad settings) or
:class:`asrpriv.errors.InputError` (bad input, with file and line) -- never ``SystemExit``.

Example::

    from asrpriv import api
    result = api.score_wer({"u1": "a b c"}, {"u1": "a x c"})
    result.wer, result.substitutions      # (33.33..., 1)

    counts = api.count_text(["hello world", "hello"], max_l1=15)
    api.write_counts("u.counts", counts)
    noisy = api.add_laplace_noise(counts, vocab=["hello", "world", "bye"], epsilon=1.0)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError, InputError

__all__ = [
    "AsrprivError", "InputError",
    "Counts", "WerResult", "UtteranceAlignment", "NoiseResult", "Hypothesis", "Utterance",
    "read_counts", "write_counts", "read_factors", "write_factors", "read_nbest",
    "count_text", "count_nbest", "aggregate_counts", "add_laplace_noise",
    "fma_factors", "fma_adapt_arpa", "rescore_nbest", "score_wer", "privacy_epsilon",
    "STEP_ENTRIES",
    "ScoredHypothesis", "score_hypotheses",
]

#: step -> "module:function" of its library entry (docs/API.md: the same table). The CLI's
#: command turns argv into the entry's settings; the names below re-export the entries.
STEP_ENTRIES: dict[str, str] = {
    "count-unigrams": "asrpriv.unigram.driver:count_unigrams",
    "aggregate": "asrpriv.unigram.aggregate:aggregate_files",
    "add-noise": "asrpriv.unigram.noise:add_noise_counts",
    "fma-adapt": "asrpriv.unigram.fma:fma_factors_files",
    "rescore-nbest": "asrpriv.rescore.pipeline:rescore_nbest",
    "tune-weights": "asrpriv.rescore.tune:tune_weights",
    "split-nbest": "asrpriv.rescore.split:split_nbest",
    "sample-clients": "asrpriv.federated.sampling:sample_clients",
    "train-ngram": "asrpriv.ngram.trainer:train_ngram",
    "sanitize": "asrpriv.sanitize.transform:sanitize",
    "confidence": "asrpriv.confidence.step:confidence",
    "perplexity": "asrpriv.mixture.steps:perplexity",
    "interpolate": "asrpriv.mixture.steps:interpolate",
    "cluster-weights": "asrpriv.audit.run:cluster_weights",
    "finetune-lm": "asrpriv.federated.finetune:run_finetune",
    "import-nbest": "asrpriv.io.importers:import_nbest",
    "approx-ngram": "asrpriv.rescore.approx:approx_ngram",
    "select-nbest": "asrpriv.io.select:select_nbest",
    "select-text": "asrpriv.io.select:select_text",
    "pick-best": "asrpriv.io.select:pick_best",
    "audit-items": "asrpriv.audit.subsets:audit_items",
    "fmp-rounds": "asrpriv.federated.fmp:fmp_rounds",
    "fl-rounds": "asrpriv.federated.rounds:run_rounds",
    # the Flower steps' entries live in the optional package asrpriv_flower, which nothing in
    # asrpriv imports (not re-exported below: import them from there)
    "fl-fmp": "asrpriv_flower.fmp:simulate_fmp",
    "fl-simulate": "asrpriv_flower.simulate:simulate",
}

#: the entries and their settings types, imported on first use (``api.train_ngram``)
_LAZY: dict[str, str] = {
    "count_unigrams": "asrpriv.unigram.driver:count_unigrams",
    "CountSettings": "asrpriv.unigram.driver:CountSettings",
    "CountResult": "asrpriv.unigram.driver:CountResult",
    "add_noise_counts": "asrpriv.unigram.noise:add_noise_counts",
    "LaplaceSettings": "asrpriv.unigram.noise:LaplaceSettings",
    "add_noise_delta": "asrpriv.federated.local_noise:noise_delta_file",
    "aggregate_files": "asrpriv.unigram.aggregate:aggregate_files",
    "fma_factors_files": "asrpriv.unigram.fma:fma_factors_files",
    "adapt_arpa_file": "asrpriv.ngram.fma_file:adapt_arpa_file",
    "RescoreSettings": "asrpriv.rescore.pipeline:RescoreSettings",
    "tune_weights": "asrpriv.rescore.tune:tune_weights",
    "split_nbest": "asrpriv.rescore.split:split_nbest",
    "sample_clients": "asrpriv.federated.sampling:sample_clients",
    "train_ngram": "asrpriv.ngram.trainer:train_ngram",
    "TrainSettings": "asrpriv.ngram.trainer:TrainSettings",
    "sanitize": "asrpriv.sanitize.transform:sanitize",
    "SanitizeSettings": "asrpriv.sanitize.transform:SanitizeSettings",
    "confidence": "asrpriv.confidence.step:confidence",
    "ConfidenceSettings": "asrpriv.confidence.step:ConfidenceSettings",
    "perplexity": "asrpriv.mixture.steps:perplexity",
    "PerplexitySettings": "asrpriv.mixture.steps:PerplexitySettings",
    "interpolate": "asrpriv.mixture.steps:interpolate",
    "InterpolateSettings": "asrpriv.mixture.steps:InterpolateSettings",
    "cluster_weights": "asrpriv.audit.run:cluster_weights",
    "AuditRequest": "asrpriv.audit.run:AuditRequest",
    "run_finetune": "asrpriv.federated.finetune:run_finetune",
    "FinetuneRequest": "asrpriv.federated.finetune:FinetuneRequest",
    "import_nbest": "asrpriv.io.importers:import_nbest",
    "approx_ngram": "asrpriv.rescore.approx:approx_ngram",
    "ApproxSettings": "asrpriv.rescore.approx:ApproxSettings",
    "select_nbest": "asrpriv.io.select:select_nbest",
    "SelectNbestSettings": "asrpriv.io.select:SelectNbestSettings",
    "select_text": "asrpriv.io.select:select_text",
    "SelectTextSettings": "asrpriv.io.select:SelectTextSettings",
    "SelectResult": "asrpriv.io.select:SelectResult",
    "pick_best": "asrpriv.io.select:pick_best",
    "PickSettings": "asrpriv.io.select:PickSettings",
    "PickResult": "asrpriv.io.select:PickResult",
    "audit_items": "asrpriv.audit.subsets:audit_items",
    "AuditItemsSettings": "asrpriv.audit.subsets:AuditItemsSettings",
    "AuditItems": "asrpriv.audit.subsets:AuditItems",
    "fmp_rounds": "asrpriv.federated.fmp:fmp_rounds",
    "FmpRoundsSettings": "asrpriv.federated.fmp:FmpRoundsSettings",
    "FmpSettings": "asrpriv.federated.fmp:FmpSettings",
    "FmpRoundsResult": "asrpriv.federated.fmp:FmpRoundsResult",
    "run_rounds": "asrpriv.federated.rounds:run_rounds",
    "RoundSettings": "asrpriv.federated.rounds:RoundSettings",
    "RoundsResult": "asrpriv.federated.rounds:RoundsResult",
}
__all__ += list(_LAZY)


# ---------------------------------------------------------------------------- errors
_OPTION = None


def _argument_names(message: str) -> str:
    """``--max-l1`` -> ``max_l1``: the library's checks name CLI options (so the CLI's stderr
    is the same); a Python caller gets the names of the arguments it passed."""
    import re

    global _OPTION
    if _OPTION is None:
        _OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
    return _OPTION.sub(lambda m: m.group(1).replace("-", "_"), message)


def _named_errors(func):
    """Re-raise AsrprivError (not InputError: it names a file and line) with argument names."""
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except InputError:
            raise
        except AsrprivError as err:
            renamed = _argument_names(str(err))
            if renamed == str(err):
                raise
            raise AsrprivError(renamed) from None

    return wrapper


def __getattr__(name: str):
    """The step entries, imported when first used (importing asrpriv.api loads neither click
    nor torch nor numpy)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'asrpriv.api' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name].split(":")
    value = getattr(importlib.import_module(module), attr)
    if callable(value) and not isinstance(value, type):  # entries; settings classes stay
        value = _named_errors(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

#: the default grid of count-unigrams --max-l1 (counts are floored onto its multiples)
DEFAULT_GRID = 2.0 ** -10


@dataclass
class Counts:
    """A counts file: ``meta`` (``#key=value`` metadata, strings) and ``counts`` (word -> count).

    ``meta`` carries the contribution bound (``max_l1``, ``grid``, ``unit``), the noise and the
    privacy history (``privacy_history``, JSON; ``epsilon``, its pure-DP total).
    """

    meta: dict[str, str]
    counts: dict[str, float]

    @property
    def epsilon(self) -> float | None:
        """Total pure-DP epsilon of the releases in the history (None: no noise)."""
        value = self.meta.get("epsilon")
        return float(value) if value not in (None, "") else None


@dataclass
class UtteranceAlignment:
    """One utterance's word alignment, as sclite makes it (``score-wer --details``).

    ``ops``: ``(op, ref_index, hyp_index)`` in order; ``op`` is ``C`` (hit), ``S``, ``D`` or
    ``I``; an index is -1 on the side that has no word (``D``: hypothesis, ``I``: reference).
    ``ref``/``hyp`` are the words as compared (after case folding).
    """

    id: str
    ref: list[str]
    hyp: list[str]
    ops: list[tuple[str, int, int]]

    def count(self, op: str) -> int:
        """Number of ``op`` (``C``, ``S``, ``D`` or ``I``) steps."""
        return sum(1 for o, _r, _h in self.ops if o == op)

    def pairs(self) -> list[tuple[str, str | None, str | None]]:
        """``(op, ref_word or None, hyp_word or None)`` per step."""
        return [(o, self.ref[r] if r >= 0 else None, self.hyp[h] if h >= 0 else None)
                for o, r, h in self.ops]


@dataclass
class WerResult:
    """Word error counts (sclite's alignment: insertion/deletion cost 3, substitution 4).

    ``wer`` is in percent: 100 (S + D + I) / N, N = ``ref_words`` = hits + S + D.
    ``signature`` says how it was computed (sacrebleu-style ``key:value|...``: case folding,
    punctuation, alignment, version), as ``score-wer`` prints it. ``alignments`` (computed
    on first use) holds every reference utterance's :class:`UtteranceAlignment`, in reference
    order.
    """

    wer: float | None
    substitutions: int
    deletions: int
    insertions: int
    ref_words: int
    sentences: int
    sentence_errors: int
    missing_hypotheses: list[str] = field(default_factory=list)
    signature: str = ""
    _words: tuple = field(default=((), {}, {}), repr=False, compare=False)

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def hits(self) -> int:
        """Reference words matched exactly: N - S - D."""
        return self.ref_words - self.substitutions - self.deletions

    @property
    def alignments(self) -> list[UtteranceAlignment]:
        """Per-utterance sclite alignments (computed once, on first use)."""
        cached = self.__dict__.get("_alignments")
        if cached is None:
            from asrpriv.wer.alignment import sclite_align

            ids, refs, hyps = self._words
            cached = [UtteranceAlignment(u, refs[u], hyps.get(u, []),
                                         sclite_align(refs[u], hyps.get(u, [])))
                      for u in ids]
            self.__dict__["_alignments"] = cached
        return cached


@dataclass
class NoiseResult:
    """A noisy release: the new counts and what the mechanism did."""

    counts: Counts
    scale: float
    sensitivity: float
    sensitivity_source: str
    epsilon: float


# ---------------------------------------------------------------------------- files

@_named_errors
def read_counts(path: str, allow_empty: bool = False) -> Counts:
    """Read a counts file (format asrpriv-counts/2; old files are read too)."""
    from asrpriv.io import counts as io_counts

    meta, counts = io_counts.read_counts(path, allow_empty=allow_empty)
    return Counts(dict(meta), dict(counts))


def write_counts(path: str, counts: Counts) -> None:
    """Write ``counts`` to ``path`` atomically (``-`` = stdout), words escaped as the CLI does."""
    from asrpriv.io import counts as io_counts
    from asrpriv.io.output import open_output

    with open_output(path) as stream:
        io_counts.write_counts(stream, counts.meta, counts.counts)


@_named_errors
def read_factors(path: str) -> tuple[dict[str, str], dict[str, float]]:
    """Read FMA factors: (metadata, word -> natural-log factor)."""
    from asrpriv.io.factors import read_factors as _read

    meta, factors = _read(path)
    return dict(meta), dict(factors)


def write_factors(path: str, meta: Mapping[str, str], factors: Mapping[str, float]) -> None:
    """Write FMA factors (natural log) atomically."""
    from asrpriv.io.factors import write_factors as _write
    from asrpriv.io.output import open_output

    with open_output(path) as stream:
        _write(stream, dict(meta), dict(factors))


@dataclass
class Hypothesis:
    """One N-best entry: 1-based ``rank``, ``words``, and the TSV's scores (natural log)."""

    rank: int
    words: list[str]
    scores: dict[str, float]


@dataclass
class Utterance:
    """The N-best list of one utterance, in file order."""

    utt_id: str
    hypotheses: list[Hypothesis]


@_named_errors
def read_nbest(path: str) -> list[Utterance]:
    """Read an N-best TSV (``utt_id``, ``text``, optional ``rank`` and score columns)."""
    from asrpriv.io.nbest import FLOAT_COLUMNS, NbestReader

    reader = NbestReader(path)
    out = []
    for utt in reader:
        hyps = []
        for h in utt.hyps:
            scores = {name: reader.float_column(h, name) for name in FLOAT_COLUMNS
                      if name in reader.index}
            hyps.append(Hypothesis(h.rank, list(h.words), scores))
        out.append(Utterance(utt.utt_id, hyps))
    return out


# ---------------------------------------------------------------------------- counting

def _lines_file(lines: Iterable[str]) -> str:
    fd, path = tempfile.mkstemp(prefix="asrpriv-api-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as stream:
        for line in lines:
            stream.write(line.rstrip("\n") + "\n")
    return path


def _silent(_message: str) -> None:
    """These functions return their results and talk to nobody (as before the entries)."""


def _one_counts(result) -> Counts:
    if len(result.files) != 1:
        raise AsrprivError("expected one set of counts (no per-client split here)")
    ((meta, counts),) = result.files.values()
    return Counts(dict(meta), dict(counts))


@_named_errors
def count_text(text: str | Iterable[str], ids: bool = False, max_l1: float | None = None,
               grid: float = DEFAULT_GRID, public: bool = False) -> Counts:
    """Unigram counts of text (``count-unigrams --text``): each word weighs 1.

    Args:
        text: a file path, or an iterable of sentences (one string each).
        ids: the first field of each line is an utterance id (Kaldi text).
        max_l1: clip each utterance's count vector to this L1 norm (then ``add_laplace_noise``
            calibrates to it); counts are floored onto multiples of ``grid``.
        public: mark the counts ``#public=1`` (public data, usable as a vocabulary).
    """
    from asrpriv.unigram.driver import CountSettings, count_unigrams

    settings = CountSettings(text=True, ids=ids, max_l1=max_l1, grid=grid, public=public,
                             output=None)
    path, temp = (text, None) if isinstance(text, str) else (None, _lines_file(text))
    settings.input = path or temp
    try:
        return _one_counts(count_unigrams(settings, warn=_silent))
    finally:
        if temp:
            os.unlink(temp)


@_named_errors
def count_nbest(path: str, sigma: float = 5.0, top: int | None = None,
                max_l1: float | None = None, grid: float = DEFAULT_GRID) -> Counts:
    """Kernel-weighted unigram pseudo-counts of an N-best TSV (paper 000 Eq. 3-5).

    Each hypothesis of rank r adds K(r) c_s(w) to word w, K the Gaussian kernel of width
    ``sigma`` over ranks; ``top`` keeps the first ranks only. ``max_l1`` as in :func:`count_text`.
    """
    from asrpriv.unigram.driver import CountSettings, count_unigrams

    return _one_counts(count_unigrams(CountSettings(path, sigma=sigma, top=top, max_l1=max_l1,
                                                    grid=grid, output=None), warn=_silent))


@_named_errors
def aggregate_counts(paths: Sequence[str], disjoint: bool = False) -> Counts:
    """Sum counts files (``asrpriv aggregate``); metadata checked, histories composed.

    ``disjoint=True`` composes the inputs' privacy in parallel, only if their partition labels
    prove them disjoint (else :class:`AsrprivError`).
    """
    from asrpriv.unigram.aggregate import aggregate_files

    meta, counts = aggregate_files(list(paths), disjoint=disjoint)
    return Counts(dict(meta), dict(counts))


@_named_errors
def add_laplace_noise(counts: Counts, vocab: Sequence[str], epsilon: float,
                      seed: int | None = None, clamp: bool = True) -> NoiseResult:
    """Release ``counts`` with epsilon-DP discrete Laplace noise over every word of ``vocab``.

    The scale is (the recorded ``max_l1``) / epsilon; ``vocab`` must be public (its words are
    the output's keys). Without ``seed`` the noise comes from the OS's secure source; a seed
    makes it repeatable and NOT private (the release is marked seeded). The release is
    appended to the privacy history, as ``asrpriv add-noise`` does.
    """
    from asrpriv.unigram.noise import exact_fraction, laplace_release

    eps = exact_fraction(str(epsilon), "epsilon")
    words = list(dict.fromkeys(vocab))
    if not words:
        raise AsrprivError("empty vocabulary")
    meta, noisy, report = laplace_release(dict(counts.meta), dict(counts.counts), words, eps,
                                          seed, None, clamp=clamp)
    return NoiseResult(Counts(meta, noisy), float(report.scale), float(report.sensitivity),
                       report.sensitivity_source, float(eps))


# ---------------------------------------------------------------------------- adaptation

@_named_errors
def fma_factors(background: Counts, global_counts: Counts | None = None,
                personal: Counts | None = None, alpha: float = 0.5, beta: float = 0.25,
                lam: float = 1.0, smoothing: float = 0.0) -> dict[str, float]:
    """FMP factors (paper 000 Eq. 6-8, ``fma-adapt`` factor mode): word -> natural-log factor
    ``lam * (ln g(w) - ln u(w))``, g = (1 - alpha - beta) u + alpha qbar + beta q, for every
    word of the background vocabulary (u = ``background``, qbar = ``global_counts`` (the
    federated, possibly noisy counts), q = ``personal``, the client's own)."""
    from asrpriv.unigram.fma import FmaSettings, adaptation_factors

    settings = FmaSettings(alpha, beta, lam, smoothing)
    settings.validate(global_counts is not None, personal is not None)
    return dict(adaptation_factors(background.counts,
                                   global_counts.counts if global_counts else None,
                                   personal.counts if personal else None, settings))


@_named_errors
def fma_adapt_arpa(arpa: str, adapt: Counts | str, output: str, beta: float = 0.5,
                   reversed: bool = False, prior: float = 0.1) -> None:
    """Adapt a back-off ARPA LM to a unigram (paper 003 Eq. 1, or Eq. 2 with ``reversed``).

    Exact back-off normalization (Kneser et al. 1997); writes an ARPA (log10) that kenlm
    loads. ``adapt`` is a counts file or :class:`Counts`; ``prior`` mixes the background
    marginal into the adaptation marginal. Same code as ``asrpriv fma-adapt --arpa``.
    """
    from asrpriv.ngram.fma_file import adapt_arpa_file

    if isinstance(adapt, Counts):
        fd, path = tempfile.mkstemp(prefix="asrpriv-api-", suffix=".counts")
        os.close(fd)
        try:
            write_counts(path, adapt)
            adapt_arpa_file(arpa, path, output, beta=beta, reversed_=reversed, prior=prior)
        finally:
            os.unlink(path)
    else:
        adapt_arpa_file(arpa, adapt, output, beta=beta, reversed_=reversed, prior=prior)


@_named_errors
def rescore_nbest(nbest, output: str | None = None, ngram: str | Sequence[str] | None = None,
                  nnlm: str | None = None, lm_weight: float | None = None, **options):
    """Rescore an N-best TSV with an n-gram (ARPA/kenlm) and/or a neural LM: ``rescore-nbest``.

    ``nbest`` may instead be a :class:`asrpriv.rescore.pipeline.RescoreSettings` (the step's
    settings, all of them): then it is the step's entry and returns its result.

    ``options`` are the step's other settings by their Python names
    (:class:`asrpriv.rescore.pipeline.RescoreSettings`, e.g. ``nnlm_weight=0.5``,
    ``best=True``, ``factors="f.tsv"``; ``classes`` = ``class_files``). torch is imported
    only with ``nnlm``, kenlm with ``ngram``. Errors raise :class:`AsrprivError`.
    """
    import dataclasses

    from asrpriv.rescore.pipeline import RescoreSettings, rescore_nbest as run

    if isinstance(nbest, RescoreSettings):
        return run(nbest)
    if output is None:
        raise AsrprivError("rescore_nbest: give the output file")
    fields = {f.name for f in dataclasses.fields(RescoreSettings)}
    if "classes" in options:
        options["class_files"] = options.pop("classes")
    if "weights_file" in options:
        options["weights"] = options.pop("weights_file")
    unknown = sorted(set(options) - fields | set(options) & {"inputs", "output", "ngram", "nnlm"})
    if unknown:
        raise AsrprivError(f"rescore_nbest: unknown option(s) {', '.join(unknown)}")
    for name in ("class_files",):
        if isinstance(options.get(name), str):
            options[name] = (options[name],)
    ngrams = (ngram,) if isinstance(ngram, str) else tuple(ngram or ())
    run(RescoreSettings(inputs=(nbest,), output=output, ngram=ngrams, nnlm=nnlm,
                        lm_weight=lm_weight, **options))


@dataclass
class ScoredHypothesis:
    """One hypothesis scored by :func:`score_hypotheses` (natural logs, higher is better).

    ``words``: the words scored (after ``drop_tokens``); ``ngram_score``/``nnlm_score``: the
    sentence log-probabilities (``<s>`` to ``</s>``), None without that LM; ``score``: the
    combined total of ``rescore-nbest``; ``weights``: the weights that made it.
    """

    words: list[str]
    acoustic: float
    ngram_score: float | None
    nnlm_score: float | None
    score: float
    weights: dict[str, float]


@_named_errors
def score_hypotheses(hypotheses: Sequence[str | Sequence[str]],
                     acoustic: Sequence[float] | None = None, ngram: str | None = None,
                     nnlm: str | None = None, weights: str | None = None,
                     lm_weight: float | None = None, nnlm_weight: float | None = None,
                     word_penalty: float | None = None, drop_tokens: str | None = None,
                     device: str = "cpu") -> list[ScoredHypothesis]:
    """Score in-memory hypotheses as ``rescore-nbest`` does, and return the scores.

    ``score = acoustic + lm_weight * ((1 - w) * ngram + w * nnlm) + word_penalty * n_words``
    (natural log; ``w`` = ``nnlm_weight``; with one LM only, its score is the LM part).

    Args:
        hypotheses: each a string (split on white space) or a list of words.
        acoustic: one acoustic (or first-pass) natural-log score per hypothesis; 0 if None.
        ngram: an ARPA/KenLM file; nnlm: a model file of ``finetune-lm``; at least one.
        weights: a ``tune-weights`` file; the keyword weights override it; what neither
            gives is ``rescore-nbest``'s default (lm_weight 6.5, nnlm_weight 0.5,
            word_penalty -0.431), which is tuned for nothing of yours: tune it.
        drop_tokens: a ``--drop-tokens`` specification (:mod:`asrpriv.io.tokens`).

    Example::

        scored = api.score_hypotheses(["the cat sat", "the cat sad"], acoustic=[-10.0, -9.5],
                                      ngram="lm.arpa", lm_weight=8.0, word_penalty=0.0)
        best = max(range(len(scored)), key=lambda i: scored[i].score)

    Raises:
        AsrprivError: no LM, mismatched lengths, a weight out of range; InputError: a bad file.
    """
    import math

    from asrpriv.io.tokens import parse_drop
    from asrpriv.rescore.combine import Weights, read_weights

    if ngram is None and nnlm is None:
        raise AsrprivError("score_hypotheses: give ngram= and/or nnlm= (nothing to score with)")
    if isinstance(hypotheses, str):
        raise AsrprivError("score_hypotheses: hypotheses must be a list (of strings or word lists)")
    drop = parse_drop(drop_tokens, "drop_tokens")
    sentences = [[w for w in (h.split() if isinstance(h, str) else list(h)) if w not in drop]
                 for h in hypotheses]
    if acoustic is None:
        acoustic = [0.0] * len(sentences)
    acoustic = [float(a) for a in acoustic]
    if len(acoustic) != len(sentences):
        raise AsrprivError(f"score_hypotheses: acoustic has {len(acoustic)} values for "
                           f"{len(sentences)} hypotheses")
    if not all(math.isfinite(a) for a in acoustic):
        raise AsrprivError("score_hypotheses: acoustic scores must be finite")
    chosen = read_weights(weights).weights if weights is not None else Weights()
    for name, value in (("lm_weight", lm_weight), ("nnlm_weight", nnlm_weight),
                        ("word_penalty", word_penalty)):
        if value is not None:
            if not math.isfinite(float(value)):
                raise AsrprivError(f"score_hypotheses: {name} must be finite, got {value}")
            setattr(chosen, name, float(value))
    if not 0.0 <= chosen.nnlm_weight <= 1.0:
        raise AsrprivError(f"score_hypotheses: nnlm_weight must lie in [0, 1], got {chosen.nnlm_weight}")
    ngram_scores: list[float | None] = [None] * len(sentences)
    nnlm_scores: list[float | None] = [None] * len(sentences)
    if ngram is not None:
        from asrpriv.rescore.ngram import NgramScorer

        ngram_scores = NgramScorer(ngram).score_many(sentences)
    if nnlm is not None and sentences:
        from asrpriv.rescore.nnlm import NnlmScorer

        scorer = NnlmScorer(nnlm, device=device)
        nnlm_scores = list(scorer.score([scorer.encode(s) for s in sentences]))
    used = {"lm_weight": chosen.lm_weight, "nnlm_weight": chosen.nnlm_weight,
            "word_penalty": chosen.word_penalty}
    return [ScoredHypothesis(s, a, g, n, chosen.total(a, g, n, len(s)), dict(used))
            for s, a, g, n in zip(sentences, acoustic, ngram_scores, nnlm_scores)]


# ---------------------------------------------------------------------------- scoring

def score_wer(refs: Sequence[str] | Mapping[str, str], hyps: Sequence[str] | Mapping[str, str],
              lowercase: bool = True, strip_punct: bool = False,
              allow_extra: bool = False) -> WerResult:
    """WER of ``hyps`` against ``refs`` (``score-wer``), from parallel lists or from dicts.

    Args:
        refs, hyps: two lists of the same length (utterance ``i`` of one against utterance
            ``i`` of the other; ids are ``"0"``, ``"1"``, ...), or two dicts ``utt_id -> text``
            matched by id. Words are white-space separated.
        lowercase: fold case (as ``score-wer`` and sclite do by default).
        strip_punct: remove punctuation at both edges of every word.
        allow_extra: with dicts, ignore ``hyps`` ids that are not in ``refs``.

    A reference without hypothesis (dicts) counts as all deletions and is listed in
    ``missing_hypotheses``. Counts equal sclite's and the CLI's. Errors are
    :class:`AsrprivError` naming the argument (``refs``, ``hyps``).

    Examples:

    >>> from asrpriv import api
    >>> r = api.score_wer(["the cat sat", "a b"], ["the hat sat down", "a b"])
    >>> round(r.wer, 2), r.hits, r.substitutions, r.deletions, r.insertions
    (40.0, 4, 1, 0, 1)
    >>> r.alignments[0].pairs()
    [('C', 'the', 'the'), ('S', 'cat', 'hat'), ('C', 'sat', 'sat'), ('I', None, 'down')]
    >>> r.signature.split("|")[:3]
    ['case:lc', 'strip:none', 'align:sclite']
    >>> api.score_wer({"u1": "a b c"}, {"u1": "a x c"}).substitutions
    1
    >>> api.score_wer(["a"], ["a", "b"])
    Traceback (most recent call last):
    ...
    asrpriv.errors.AsrprivError: refs and hyps differ in length (1 and 2); pass two lists of the same length, or two dicts
    """
    from asrpriv.wer.report import score
    from asrpriv.wer.transcripts import Normalizer, Transcript

    normalizer = Normalizer(lowercase=lowercase, strip_punct=strip_punct)
    ref_texts, hyp_texts = _wer_inputs(refs, hyps)

    def transcript(texts: dict[str, str], name: str) -> Transcript:
        words = {}
        for u, t in texts.items():
            if not isinstance(t, str):
                raise AsrprivError(f"{name}[{u!r}]: expected a string, got {type(t).__name__}")
            words[u] = normalizer.words(normalizer.line(t).split())
        return Transcript(name, "api", words, {u: i + 1 for i, u in enumerate(words)})

    ref = transcript(ref_texts, "refs")
    hyp = transcript(hyp_texts, "hyps")
    if not ref.words:
        raise AsrprivError("refs: empty (expected at least one utterance)")
    extra = [u for u in hyp.words if u not in ref.words]
    if extra and not allow_extra:
        raise AsrprivError(f"hyps: id {extra[0]!r} is not in refs ({len(extra)} such ids; "
                           "allow_extra=True ignores them)")
    report = score(ref, hyp, normalizer, allow_extra=allow_extra)
    t = report.totals
    return WerResult(t.wer, t.substitutions, t.deletions, t.insertions, t.ref_words,
                     t.sentences, t.sentence_errors, list(report.missing_hyp),
                     report.signature, (list(ref.words), ref.words, hyp.words))


def _wer_inputs(refs, hyps) -> tuple[dict[str, str], dict[str, str]]:
    """Both inputs as ``id -> text`` dicts; AsrprivError naming the argument otherwise."""
    for name, value in (("refs", refs), ("hyps", hyps)):
        if isinstance(value, (str, bytes)):
            raise AsrprivError(f"{name}: expected a list of strings or a dict id -> text, "
                               f"got a single {type(value).__name__}")
        if not isinstance(value, (Mapping, Sequence)):
            raise AsrprivError(f"{name}: expected a list of strings or a dict id -> text, "
                               f"got {type(value).__name__}")
    if isinstance(refs, Mapping) != isinstance(hyps, Mapping):
        raise AsrprivError("refs and hyps: pass two lists or two dicts, not one of each")
    if isinstance(refs, Mapping):
        return {str(u): t for u, t in refs.items()}, {str(u): t for u, t in hyps.items()}
    if len(refs) != len(hyps):
        raise AsrprivError(f"refs and hyps differ in length ({len(refs)} and {len(hyps)}); "
                           "pass two lists of the same length, or two dicts")
    return {str(i): t for i, t in enumerate(refs)}, {str(i): t for i, t in enumerate(hyps)}


@_named_errors
def privacy_epsilon(noise_multiplier: float, sample_rate: float, rounds: int,
                    delta: float) -> dict[str, float]:
    """Epsilon at ``delta`` of the Poisson-subsampled Gaussian over ``rounds`` (dp-accounting):
    ``{"epsilon_rdp": ..., "epsilon_pld": ...}``, as ``asrpriv privacy-report`` prints."""
    from asrpriv.privacy import accounting

    return accounting.gaussian_epsilons(noise_multiplier, sample_rate, rounds, delta)

