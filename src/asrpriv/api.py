"""asrpriv's Python API: single steps for other toolchains, with typed results.

Three kinds of names, all importable from here (``from asrpriv import api``):

* **the step entries** (:data:`STEP_ENTRIES`, docs/API.md): one library function per step,
  typed settings in, a typed result out, every check inside -- the very function the CLI's
  command calls (``api.train_ngram(api.TrainSettings(...))``), so a result here equals the
  CLI's on the same input. They are imported on first use.
* **in-memory adapters** (:mod:`asrpriv.adapters`): Python values in, the entries underneath
  (``count_text``, ``add_laplace_noise``, ``score_hypotheses``, ``import_nbest``, ...).
* **WER** in jiwer's and sacrebleu's manners (``score_wer``; see docs/API.md).

Importing this module imports neither click nor torch nor numpy. Conventions (docs/FORMATS.md):
counts are pseudo-counts; factors and scores are natural logs; ARPA files hold log10 values;
``score_wer``'s WER is in percent. Errors are :class:`AsrprivError` (bad settings; the message
names the argument, e.g. ``max_l1``, through :func:`asrpriv.errors.arg`) or its subclass
:class:`InputError` (bad input, with file and line) -- never ``SystemExit``.

Example::

    from asrpriv import api
    result = api.score_wer({"u1": "a b c"}, {"u1": "a x c"})
    result.wer, result.substitutions      # (33.33..., 1)

    counts = api.count_text(["hello world", "hello"], max_l1=15)
    noisy = api.add_laplace_noise(counts, vocab=["hello", "world", "bye"], epsilon=1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from asrpriv.adapters import (DEFAULT_GRID, Counts, Hypothesis, NoiseResult, ScoredHypothesis,
                              Utterance, add_laplace_noise, aggregate_counts, count_nbest,
                              count_text, fma_adapt_arpa, fma_factors, import_nbest,
                              privacy_epsilon, read_counts, read_factors, read_nbest,
                              rescore_nbest, score_hypotheses, write_counts, write_factors)
from asrpriv.errors import AsrprivError, InputError

__all__ = [
    "AsrprivError", "InputError", "STEP_ENTRIES", "DEFAULT_GRID",
    "Counts", "NoiseResult", "Hypothesis", "Utterance", "ScoredHypothesis",
    "read_counts", "write_counts", "read_factors", "write_factors", "read_nbest",
    "count_text", "count_nbest", "aggregate_counts", "add_laplace_noise", "fma_factors",
    "fma_adapt_arpa", "rescore_nbest", "score_hypotheses", "import_nbest", "privacy_epsilon",
    "WerResult", "UtteranceAlignment", "score_wer",
]

#: step -> "module:function" of its library entry (docs/API.md: the same table). The CLI's
#: command turns argv into the entry's settings; the names below re-export the entries.
STEP_ENTRIES: dict[str, str] = {
    "count-unigrams": "asrpriv.unigram.driver:count_unigrams",
    # score-wer: its scoring entry (the command still holds the trn/subset policy and the
    # bootstrap; issue 38 moves them into one entry, asrpriv.wer.step)
    "score-wer": "asrpriv.wer.report:score",
    "aggregate": "asrpriv.federated.aggregate_step:aggregate",
    "add-noise": "asrpriv.federated.noise_step:add_noise",
    "fma-adapt": "asrpriv.ngram.fma_step:fma_adapt",
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
    "finetune-lm": "asrpriv.federated.finetune_step:finetune_lm",
    "import-nbest": "asrpriv.io.importers:run_import",
    "approx-ngram": "asrpriv.rescore.approx:approx_ngram",
    "select-nbest": "asrpriv.io.select:select_nbest",
    "select-text": "asrpriv.io.select:select_text",
    "pick-best": "asrpriv.io.select:pick_best",
    "audit-items": "asrpriv.audit.subsets:audit_items",
    "fmp-rounds": "asrpriv.federated.fmp:fmp_rounds",
    "privacy-report": "asrpriv.privacy.report:privacy_report",
    # the Flower steps' entries live in the optional package asrpriv_flower, which nothing in
    # asrpriv imports (not re-exported below: import them from there)
    "fl-fmp": "asrpriv_flower.fmp:simulate_fmp",
    "fl-simulate": "asrpriv_flower.simulate:simulate",
}

#: module -> the entries and settings types it gives, imported on first use (``api.train_ngram``)
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "asrpriv.unigram.driver": ("count_unigrams", "CountSettings", "CountResult"),
    "asrpriv.unigram.noise": ("add_noise_counts", "LaplaceSettings"),
    "asrpriv.unigram.aggregate": ("aggregate_files",),
    "asrpriv.unigram.fma": ("fma_factors_files",),
    "asrpriv.ngram.fma_file": ("adapt_arpa_file",),
    "asrpriv.ngram.fma_step": ("fma_adapt", "FmaAdaptSettings", "FmaAdaptResult"),
    "asrpriv.federated.aggregate_step": ("aggregate", "AggregateSettings", "AggregateResult"),
    "asrpriv.federated.noise_step": ("add_noise", "AddNoiseSettings", "AddNoiseResult"),
    "asrpriv.privacy.report": ("privacy_report", "PrivacyReportSettings", "PrivacyReport"),
    "asrpriv.rescore.pipeline": ("RescoreSettings",),
    "asrpriv.rescore.tune": ("tune_weights", "TuneSettings", "TuneOutcome"),
    "asrpriv.rescore.split": ("split_nbest", "SplitSettings", "SplitResult"),
    "asrpriv.federated.sampling": ("sample_clients", "SampleSettings", "SampleResult"),
    "asrpriv.ngram.trainer": ("train_ngram", "TrainSettings"),
    "asrpriv.sanitize.transform": ("sanitize", "SanitizeSettings"),
    "asrpriv.confidence.step": ("confidence", "ConfidenceSettings"),
    "asrpriv.mixture.steps": ("perplexity", "PerplexitySettings", "interpolate",
                              "InterpolateSettings"),
    "asrpriv.audit.run": ("cluster_weights", "AuditRequest"),
    "asrpriv.federated.finetune": ("run_finetune", "FinetuneRequest"),
    "asrpriv.federated.finetune_step": ("finetune_lm",),
    "asrpriv.io.importers": ("run_import", "ImportSettings", "ImportResult"),
    "asrpriv.rescore.approx": ("approx_ngram", "ApproxSettings"),
    "asrpriv.io.select": ("select_nbest", "SelectNbestSettings", "select_text",
                          "SelectTextSettings", "SelectResult", "pick_best", "PickSettings",
                          "PickResult"),
    "asrpriv.audit.subsets": ("audit_items", "AuditItemsSettings", "AuditItems"),
    "asrpriv.federated.fmp": ("fmp_rounds", "FmpRoundsSettings", "FmpSettings",
                              "FmpRoundsResult"),
}
_LAZY: dict[str, str] = {name: f"{module}:{name}" for module, names in _LAZY_MODULES.items()
                         for name in names}
_LAZY["add_noise_delta"] = "asrpriv.federated.local_noise:noise_delta_file"
__all__ += list(_LAZY)


def __getattr__(name: str):
    """The step entries, imported when first used (importing asrpriv.api loads neither click
    nor torch nor numpy)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'asrpriv.api' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name].split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# ---------------------------------------------------------------------------- WER
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
