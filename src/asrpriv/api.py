"""asrpriv's Python API: single steps for other toolchains, with typed results.

The CLI steps (``asrpriv STEP``) and these functions call the same library code, so a result
here equals the CLI's on the same input. Importing this module imports neither torch nor numpy;
functions that need them import them when called (``rescore_nbest``, ``fma_adapt_arpa``).

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
    "Counts", "WerResult", "NoiseResult", "Hypothesis", "Utterance",
    "read_counts", "write_counts", "read_factors", "write_factors", "read_nbest",
    "count_text", "count_nbest", "aggregate_counts", "add_laplace_noise",
    "fma_factors", "fma_adapt_arpa", "rescore_nbest", "score_wer", "privacy_epsilon",
]

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
class WerResult:
    """Word error counts (sclite's alignment: insertion/deletion cost 3, substitution 4).

    ``wer`` is in percent: 100 (S + D + I) / N, N = ``ref_words``.
    """

    wer: float | None
    substitutions: int
    deletions: int
    insertions: int
    ref_words: int
    sentences: int
    sentence_errors: int
    missing_hypotheses: list[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions


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


def _counts_of(accumulators, settings: dict) -> Counts:
    from asrpriv.unigram.meta import base_meta

    if len(accumulators) != 1:
        raise AsrprivError("expected one set of counts (no per-client split here)")
    (acc,) = accumulators.values()
    return Counts(base_meta(**settings, units=acc.units), dict(acc.counts))


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
    from asrpriv.unigram.counting import CountAccumulator
    from asrpriv.unigram.driver import count_text as _count

    _check_bound(max_l1, grid)
    path, temp = (text, None) if isinstance(text, str) else (None, _lines_file(text))
    try:
        result = _count(path or temp, ids, None, "utterance", False,
                        lambda: CountAccumulator(max_l1, grid))
    finally:
        if temp:
            os.unlink(temp)
    settings = {"source": "text"}
    if max_l1 is not None:
        settings.update({"unit": "utterance", "max_l1": float(max_l1), "grid": float(grid)})
    if public:
        settings["public"] = 1
    return _counts_of(result, settings)


def count_nbest(path: str, sigma: float = 5.0, top: int | None = None,
                max_l1: float | None = None, grid: float = DEFAULT_GRID) -> Counts:
    """Kernel-weighted unigram pseudo-counts of an N-best TSV (paper 000 Eq. 3-5).

    Each hypothesis of rank r adds K(r) c_s(w) to word w, K the Gaussian kernel of width
    ``sigma`` over ranks; ``top`` keeps the first ranks only. ``max_l1`` as in :func:`count_text`.
    """
    from asrpriv.unigram.counting import CountAccumulator
    from asrpriv.unigram.driver import count_nbest as _count

    _check_bound(max_l1, grid)
    if not sigma > 0:
        raise AsrprivError("sigma must be > 0")
    result = _count(path, sigma, top, None, "utterance", False,
                    lambda: CountAccumulator(max_l1, grid))
    settings = {"source": "nbest", "sigma": float(sigma), "top": top}
    if max_l1 is not None:
        settings.update({"unit": "utterance", "max_l1": float(max_l1), "grid": float(grid)})
    return _counts_of(result, settings)


def _check_bound(max_l1: float | None, grid: float) -> None:
    import math

    if max_l1 is not None and not (math.isfinite(max_l1) and max_l1 > 0):
        raise AsrprivError(f"max_l1 must be a finite number > 0, got {max_l1}")
    if not (math.isfinite(grid) and grid > 0):
        raise AsrprivError(f"grid must be a finite number > 0, got {grid}")


def aggregate_counts(paths: Sequence[str], disjoint: bool = False) -> Counts:
    """Sum counts files (``asrpriv aggregate``); metadata checked, histories composed.

    ``disjoint=True`` composes the inputs' privacy in parallel, only if their partition labels
    prove them disjoint (else :class:`AsrprivError`).
    """
    from asrpriv.unigram.aggregate import aggregate_files

    meta, counts = aggregate_files(list(paths), disjoint=disjoint)
    return Counts(dict(meta), dict(counts))


def add_laplace_noise(counts: Counts, vocab: Sequence[str], epsilon: float,
                      seed: int | None = None, clamp: bool = True) -> NoiseResult:
    """Release ``counts`` with epsilon-DP discrete Laplace noise over every word of ``vocab``.

    The scale is (the recorded ``max_l1``) / epsilon; ``vocab`` must be public (its words are
    the output's keys). Without ``seed`` the noise comes from the OS's secure source; a seed
    makes it repeatable and NOT private (the release is marked seeded). The release is
    appended to the privacy history, as ``asrpriv add-noise`` does.
    """
    from asrpriv.unigram.noise import exact_fraction, laplace_counts
    from asrpriv.privacy.randomness import noise_rng
    from asrpriv.unigram.meta import refuse_seeded

    refuse_seeded("counts", counts.meta, False)
    eps = exact_fraction(str(epsilon), "epsilon")
    words = list(dict.fromkeys(vocab))
    if not words:
        raise AsrprivError("empty vocabulary")
    meta, noisy, report = laplace_counts(dict(counts.meta), dict(counts.counts), words, eps,
                                         noise_rng(seed), None, clamp=clamp,
                                         seeded=seed is not None)
    return NoiseResult(Counts(meta, noisy), float(report.scale), float(report.sensitivity),
                       report.sensitivity_source, float(eps))


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


def rescore_nbest(nbest: str, output: str, ngram: str | None = None, nnlm: str | None = None,
                  lm_weight: float | None = None, **options) -> None:
    """Rescore an N-best TSV with an n-gram (ARPA/kenlm) and/or a neural LM: ``rescore-nbest``.

    Runs the CLI step in-process (torch/kenlm imported then); ``options`` are its other
    options by their Python names (e.g. ``nnlm_weight=0.5``, ``one_best=True``). Errors raise
    :class:`AsrprivError` instead of exiting.
    """
    args = [nbest, "-o", output, "-q"]
    if ngram:
        args += ["--ngram", ngram]
    if nnlm:
        args += ["--nnlm", nnlm]
    if lm_weight is not None:
        args += ["--lm-weight", str(lm_weight)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value not in (None, False):
            args += [flag, str(value)]
    _run_step("rescore-nbest", args)


def _run_step(step: str, args: list[str]) -> None:
    import click

    from asrpriv.cli import cli

    command = cli.get_command(click.Context(cli), step)
    try:
        command.main(args=args, prog_name=f"asrpriv {step}", standalone_mode=False)
    except click.UsageError as err:
        raise AsrprivError(f"{step}: {err.format_message()}") from None


# ---------------------------------------------------------------------------- scoring

def score_wer(reference: Mapping[str, str], hypothesis: Mapping[str, str],
              lowercase: bool = True, strip_punct: bool = False,
              allow_extra: bool = False) -> WerResult:
    """WER of ``hypothesis`` against ``reference``, both ``utt_id -> text`` (``score-wer``).

    Words are white-space separated; case is folded unless ``lowercase=False`` (as
    ``score-wer``, and sclite). A reference without hypothesis counts as all deletions
    (listed in ``missing_hypotheses``); a hypothesis without reference is an error unless
    ``allow_extra``. Counts equal sclite's.
    """
    from asrpriv.wer.report import score
    from asrpriv.wer.transcripts import Normalizer, Transcript

    normalizer = Normalizer(lowercase=lowercase, strip_punct=strip_punct)

    def transcript(texts: Mapping[str, str], name: str) -> Transcript:
        if not isinstance(texts, Mapping):
            raise AsrprivError(f"{name}: expected a dict utt_id -> text")
        words = {str(u): normalizer.words(normalizer.line(str(t)).split())
                 for u, t in texts.items()}
        return Transcript(name, "api", words, {u: i + 1 for i, u in enumerate(words)})

    ref = transcript(reference, "reference")
    hyp = transcript(hypothesis, "hypothesis")
    if not ref.words:
        raise AsrprivError("reference: empty (expected at least one utterance)")
    report = score(ref, hyp, normalizer, allow_extra=allow_extra)
    t = report.totals
    return WerResult(t.wer, t.substitutions, t.deletions, t.insertions, t.ref_words,
                     t.sentences, t.sentence_errors, list(report.missing_hyp))


def privacy_epsilon(noise_multiplier: float, sample_rate: float, rounds: int,
                    delta: float) -> dict[str, float]:
    """Epsilon at ``delta`` of the Poisson-subsampled Gaussian over ``rounds`` (dp-accounting):
    ``{"epsilon_rdp": ..., "epsilon_pld": ...}``, as ``asrpriv privacy-report`` prints."""
    from asrpriv.privacy import accounting

    return accounting.gaussian_epsilons(noise_multiplier, sample_rate, rounds, delta)

