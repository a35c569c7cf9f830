"""asrpriv's Python API: single steps for other toolchains, with typed results.

Three kinds of names, all importable from here (``from asrpriv import api``):

* **the step entries** (:data:`STEP_ENTRIES`, docs/API.md): one library function per step,
  typed settings in, a typed result out, every check inside -- the very function the CLI's
  command calls (``api.train_ngram(api.TrainSettings(...))``), so a result here equals the
  CLI's on the same input. They are imported on first use.
* **in-memory adapters** (:mod:`asrpriv.adapters`): Python values in, the entries underneath
  (``count_text``, ``add_laplace_noise``, ``score_hypotheses``, ``import_nbest``, ...).
* **WER** in jiwer's and sacrebleu's manners (:mod:`asrpriv.wer.functions`: ``wer`` returns a
  fraction as ``jiwer.wer``; ``score_wer`` a typed result in percent; see docs/API.md).

Importing this module imports neither click nor torch nor numpy. Conventions (docs/FORMATS.md):
counts are pseudo-counts; factors and scores are natural logs; ARPA files hold log10 values;
``score_wer``'s WER is in percent (``wer`` alone returns a fraction, as ``jiwer.wer``). Errors are :class:`AsrprivError` (bad settings; the message
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

from asrpriv.adapters import (DEFAULT_GRID, Counts, Hypothesis, NoiseResult, ScoredHypothesis,
                              Utterance, add_laplace_noise, aggregate_counts, count_nbest,
                              count_text, fma_adapt_arpa, fma_factors, import_nbest,
                              privacy_epsilon, read_counts, read_factors, read_nbest,
                              rescore_nbest, score_hypotheses, write_counts, write_factors)
from asrpriv.errors import AsrprivError, InputError
from asrpriv.wer.functions import UtteranceAlignment, WerResult, score_wer, wer

__all__ = [
    "AsrprivError", "InputError", "STEP_ENTRIES", "DEFAULT_GRID",
    "Counts", "NoiseResult", "Hypothesis", "Utterance", "ScoredHypothesis",
    "read_counts", "write_counts", "read_factors", "write_factors", "read_nbest",
    "count_text", "count_nbest", "aggregate_counts", "add_laplace_noise", "fma_factors",
    "fma_adapt_arpa", "rescore_nbest", "score_hypotheses", "import_nbest", "privacy_epsilon",
    "WerResult", "UtteranceAlignment", "score_wer", "wer",
]

#: step -> "module:function" of its library entry (docs/API.md: the same table). The CLI's
#: command turns argv into the entry's settings; the names below re-export the entries.
STEP_ENTRIES: dict[str, str] = {
    "count-unigrams": "asrpriv.unigram.driver:count_unigrams",
    "score-wer": "asrpriv.wer.step:score_wer_files",
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
    "fl-rounds": "asrpriv.federated.rounds:run_rounds",
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
    "asrpriv.wer.step": ("score_wer_files", "ScoreWerSettings"),
    "asrpriv.stats.multiple": ("holm_adjust",),
    "asrpriv.federated.rounds": ("run_rounds", "RoundSettings", "RoundsResult"),
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
