"""In-memory conveniences over the step entries, re-exported by :mod:`asrpriv.api`.

Each function here takes Python values (lists of sentences, :class:`Counts`) where a step's
entry takes files, and goes through that entry (or, for a step's part, the library function
the entry uses) -- never around it: ``add_laplace_noise`` runs ``add-noise``'s entry,
``score_hypotheses`` checks and resolves weights as ``rescore-nbest`` does and combines the
scores with the same :meth:`asrpriv.rescore.combine.Weights.total`, ``import_nbest`` returns
the rows (a list) or writes a path and prints nothing. No click, no torch at import.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from asrpriv.errors import AsrprivError

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
class NoiseResult:
    """A noisy release: the new counts and what the mechanism did."""

    counts: Counts
    scale: float
    sensitivity: float
    sensitivity_source: str
    epsilon: float


# ---------------------------------------------------------------------------- files

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


def read_nbest(path: str) -> list[Utterance]:
    """Read an N-best TSV (``utt_id``, ``text``, optional ``rank`` and score columns).

    Raises:
        InputError: bad content (file and line), and a path that cannot be read (missing, a
            directory, no permission), as the library's error type, not a raw ``OSError``.
    """
    from asrpriv.errors import InputError
    from asrpriv.io.nbest import FLOAT_COLUMNS, NbestReader

    try:
        reader = NbestReader(path)
        out = []
        for utt in reader:
            hyps = []
            for h in utt.hyps:
                scores = {name: reader.float_column(h, name) for name in FLOAT_COLUMNS
                          if name in reader.index}
                hyps.append(Hypothesis(h.rank, list(h.words), scores))
            out.append(Utterance(utt.utt_id, hyps))
    except OSError as err:
        raise InputError(path, None, f"cannot read: {err.strerror or err}") from None
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


def count_nbest(path: str, sigma: float = 5.0, top: int | None = None,
                max_l1: float | None = None, grid: float = DEFAULT_GRID) -> Counts:
    """Kernel-weighted unigram pseudo-counts of an N-best TSV (paper 000 Eq. 3-5).

    Each hypothesis of rank r adds K(r) c_s(w) to word w, K the Gaussian kernel of width
    ``sigma`` over ranks; ``top`` keeps the first ranks only. ``max_l1`` as in :func:`count_text`.
    """
    from asrpriv.unigram.driver import CountSettings, count_unigrams

    return _one_counts(count_unigrams(CountSettings(path, sigma=sigma, top=top, max_l1=max_l1,
                                                    grid=grid, output=None), warn=_silent))


def aggregate_counts(paths: Sequence[str], disjoint: bool = False) -> Counts:
    """Sum counts files (``asrpriv aggregate``); metadata checked, histories composed.

    ``disjoint=True`` composes the inputs' privacy in parallel, only if their partition labels
    prove them disjoint (else :class:`AsrprivError`).
    """
    from asrpriv.unigram.aggregate import aggregate_files

    meta, counts = aggregate_files(list(paths), disjoint=disjoint)
    return Counts(dict(meta), dict(counts))


def add_laplace_noise(counts: Counts, vocab: Sequence[str], epsilon: float,
                      seed: int | None = None, clamp: bool = True,
                      allow_seeded: bool = False) -> NoiseResult:
    """Release ``counts`` with epsilon-DP discrete Laplace noise over every word of ``vocab``:
    ``add-noise``'s entry (:func:`asrpriv.unigram.noise.add_noise_counts`), on temporary files.

    The scale is (the recorded ``max_l1``) / epsilon; ``vocab`` must be public (its words are
    the output's keys). Without ``seed`` the noise comes from the OS's secure source; a seed
    makes it repeatable and NOT private (the release is marked seeded, and a seeded input is
    refused unless ``allow_seeded``). The release is appended to the privacy history.
    """
    from asrpriv.unigram.noise import LaplaceSettings, add_noise_counts

    words = list(dict.fromkeys(vocab))
    if not words:
        raise AsrprivError("empty vocabulary")
    with tempfile.TemporaryDirectory(prefix="asrpriv-api-") as tmp:
        counts_path, vocab_path = os.path.join(tmp, "in.counts"), os.path.join(tmp, "vocab")
        write_counts(counts_path, counts)
        with open(vocab_path, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(w + "\n" for w in words)
        release = add_noise_counts(LaplaceSettings(input=counts_path, epsilon=epsilon,
                                                   vocab=vocab_path, clamp=clamp, seed=seed,
                                                   allow_seeded=allow_seeded, output=None))
    report = release.report
    return NoiseResult(Counts(dict(release.meta), dict(release.counts)), float(report.scale),
                       float(report.sensitivity), report.sensitivity_source,
                       float(release.epsilon))


# ---------------------------------------------------------------------------- adaptation

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
    from asrpriv.rescore.pipeline import RescoreSettings, check_rescore_settings, resolve_weights

    settings = RescoreSettings(ngram=[ngram] if ngram is not None else (), nnlm=nnlm,
                               weights=weights, lm_weight=lm_weight, nnlm_weight=nnlm_weight,
                               word_penalty=word_penalty, device=device)
    check_rescore_settings(settings)   # rescore-nbest's checks and its weights, not a copy
    chosen = resolve_weights(settings)
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


def import_nbest(source: str, path: str, output: str | None = None,
                 drop: str | Iterable[str] | None = None, **options):
    """Another recognizer's N-best lists (``import-nbest --from SOURCE PATH``).

    With ``output=None`` (the default) nothing is written or printed: the result's ``rows``
    is a list of :class:`asrpriv.io.importers.common.Row` (utt_id, rank, text, natural-log
    scores). With a path the TSV is written there (``"-"``: standard output, only when asked).
    ``drop``: tokens removed from every text (a specification such as ``"srilm"``, or the
    tokens); ``options``: the source's settings (:class:`asrpriv.io.importers.ImportSettings`:
    ``manifest=``, ``words=``, ``mapping=``...). Returns an
    :class:`asrpriv.io.importers.ImportResult`.
    """
    from asrpriv.io.importers import ImportSettings, run_import

    if drop is not None and not isinstance(drop, str):
        drop = ",".join(sorted(set(drop)))
    return run_import(ImportSettings(source=source, path=path, output=output, drop_tokens=drop,
                                     **options))


def privacy_epsilon(noise_multiplier: float, sample_rate: float, rounds: int,
                    delta: float) -> dict[str, float]:
    """Epsilon at ``delta`` of the Poisson-subsampled Gaussian over ``rounds`` (dp-accounting):
    ``{"epsilon_rdp": ..., "epsilon_pld": ...}``, as ``asrpriv privacy-report`` prints."""
    from asrpriv.privacy import accounting

    return accounting.gaussian_epsilons(noise_multiplier, sample_rate, rounds, delta)

