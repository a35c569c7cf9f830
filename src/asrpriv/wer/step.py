"""The ``score-wer`` step's library entry: read REF/HYP (and the systems to compare), apply
sclite's subset rule for trn files, score, test, resample, write.

:func:`score_wer_files` is what ``asrpriv score-wer`` calls (one call, after option parsing)
and what :data:`asrpriv.api.STEP_ENTRIES` names. It holds every rule of the step: the
trn/subset policy (sclite leaves reference utterances without hypothesis out when both files
are trn), the non-word scan, the unit maps (speaker, client), the bootstrap at the sampled
unit, the per-unit table of WER changes with its sign test, Holm's adjustment over the
family of comparisons, and the refusals (exit 2 through :class:`AsrprivError` /
:class:`InputError`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

from asrpriv.errors import AsrprivError, InputError
from asrpriv.wer.report import WerReport
from asrpriv.wer.transcripts import CASE_FOLDINGS, Normalizer, Transcript

#: what ``--bootstrap-unit`` may resample
UNITS = ("utterance", "speaker", "client")


@dataclass
class ScoreWerSettings:
    """Everything ``score-wer`` takes; field names are the CLI options' (``--bootstrap-unit``:
    ``bootstrap_unit``). ``compare`` holds the systems B, C, ... tested against ``hyp``
    (MAPSSWE each); ``output`` None writes nothing (the report is returned)."""

    ref: str
    hyp: str
    compare: tuple[str, ...] = ()
    words: str | None = None
    input_format: str = "auto"
    id_field: str | None = None
    optional_deletable: bool = False
    subset: bool = False
    missing_as_deletions: bool = False
    ignore_id_case: bool = False
    encoding: str = "utf-8"
    bootstrap: int | None = None
    bootstrap_unit: str = "utterance"
    confidence_level: float = 0.95
    seed: int | None = None
    out_format: str = "text"
    lowercase: bool = True
    case_folding: str = "sclite"
    strip_punct: bool = False
    utt2spk: str | None = None
    utt2client: str | None = None
    details: str | None = None
    allow_extra: bool = False
    alpha: float = 0.05
    drop_tokens: str | None = None
    holm: bool = False
    output: str | None = "-"


def score_wer_files(s: ScoreWerSettings, warn: Callable[[str], None] | None = None) -> WerReport:
    """Run the step: score, test, resample; write the details and the report. Returns the report."""
    from asrpriv.io.output import open_output
    from asrpriv.wer.report import score, write_details, write_json, write_text

    if warn is None:
        from asrpriv.talk import warn
    compare = tuple(s.compare or ())
    from asrpriv.io.kaldi_tables import reads_stdin

    stdin_users = [p for p in (s.ref, s.hyp, *compare, s.utt2spk, s.utt2client) if reads_stdin(p)]
    if len(stdin_users) > 1:
        raise AsrprivError("only one input can be standard input ('-')")
    if s.bootstrap_unit not in UNITS:
        raise AsrprivError(f"bootstrap unit {s.bootstrap_unit!r}: expected one of {', '.join(UNITS)}")
    if s.case_folding not in CASE_FOLDINGS:
        raise AsrprivError(f"case folding {s.case_folding!r}: expected one of {', '.join(CASE_FOLDINGS)}")
    from asrpriv.wer.transcripts import check_encoding

    check_encoding(s.encoding)
    if s.subset and s.missing_as_deletions:
        raise AsrprivError("--subset and --missing-as-deletions contradict each other; give one")
    if s.holm and len(compare) < 1:
        raise AsrprivError("--holm adjusts the p-values of comparisons: give --compare")
    normalizer = Normalizer(lowercase=s.lowercase, strip_punct=s.strip_punct, case=s.case_folding)
    if s.drop_tokens is not None:
        from asrpriv.io.tokens import parse_drop

        normalizer = normalizer.with_drop(parse_drop(s.drop_tokens))
    ref, hyp, others, optional, utt2spk, timed = _read_inputs(s, compare, normalizer)
    _apply_subset(s, ref, hyp, others, timed, warn)
    if s.drop_tokens is None:
        _warn_non_words(hyp, normalizer, warn)
    utt2client = read_client_map(s.utt2client) if s.utt2client else None
    if s.bootstrap is not None and s.bootstrap_unit == "speaker" and utt2spk is None:
        raise AsrprivError("--bootstrap-unit speaker needs --utt2spk (or an stm reference)")
    if s.bootstrap is not None and s.bootstrap_unit == "client" and utt2client is None:
        raise AsrprivError("--bootstrap-unit client needs --utt2client (a map 'utt_id client', "
                           "or an N-best TSV with a 'client' column)")
    if utt2client is not None:
        lacking = [u for u in ref.words if u not in utt2client]
        if lacking:
            raise InputError(s.utt2client, None, f"no client for utterance {lacking[0]!r} "
                             f"({len(lacking)} such ids)")
    report = score(ref, hyp, normalizer, allow_extra=s.allow_extra, utt2spk=utt2spk,
                   utt2spk_path=s.utt2spk, paths=s.details is not None,
                   compare=others[0] if others else None, alpha=s.alpha, warn=warn,
                   optional=optional)
    comparisons = [report.compare] if others else []
    for other in others[1:]:
        more = score(ref, hyp, normalizer, allow_extra=s.allow_extra, compare=other, alpha=s.alpha,
                     warn=None, optional=optional)
        comparisons.append(more.compare)
    unit_name, unit_map = _table_unit(s.bootstrap_unit, utt2spk, utt2client)
    if others and unit_map is not None:
        per_utt_a = utterance_totals(ref, hyp, optional)
        for other, comp in zip(others, comparisons):
            comp["units"] = unit_changes(per_utt_a, utterance_totals(ref, other, optional),
                                         unit_map, unit_name)
    if s.bootstrap is not None:
        boot_map = {"utterance": None, "speaker": utt2spk, "client": utt2client}[s.bootstrap_unit]
        report.extra["bootstrap"] = _bootstrap(ref, hyp, others, optional, boot_map, s,
                                               comparisons)
    if s.holm:
        add_holm(comparisons)
    if len(comparisons) > 1:
        report.extra["comparisons"] = comparisons
    if s.details is not None:
        with open_output(s.details) as f:
            write_details(report, ref, hyp, f)
    if s.output is not None:
        with open_output(s.output) as f:
            (write_json if s.out_format == "json" else write_text)(report, f)
    return report


# ---------------------------------------------------------------------------- reading

def _read_inputs(s: ScoreWerSettings, compare: tuple[str, ...], normalizer: Normalizer):
    from asrpriv.io.kaldi import read_map
    from asrpriv.wer.transcripts import is_utf8, read_transcript

    if s.input_format == "auto" and _ext(s.ref) == ".ctm":
        raise AsrprivError(f"{s.ref}: a ctm reference is not supported (sclite aligns two ctm "
                           "files by time); give an stm or trn reference")
    timed = s.input_format == "stm" or (s.input_format == "auto" and _ext(s.ref) == ".stm")
    utt2spk = read_map(s.utt2spk, "speaker") if s.utt2spk else None
    try:
        if timed:
            from asrpriv.wer.sclite_time import read_ctm, read_stm

            for p in (s.hyp, *compare):
                if s.input_format == "auto" and _ext(p) != ".ctm":
                    raise AsrprivError(f"{p}: an stm reference needs ctm hypotheses (name them .ctm "
                                       "or give --input-format stm)")
            stm = read_stm(s.ref, normalizer, s.optional_deletable, s.encoding)
            ref = stm.transcript
            hyp = read_ctm(s.hyp, stm, normalizer, s.encoding)
            others = [read_ctm(p, stm, normalizer, s.encoding) for p in compare]
            optional = stm.optional or None
            if utt2spk is None:
                utt2spk = stm.speakers
            if s.subset:
                raise AsrprivError("--subset does not apply to ctm hypotheses (every stm segment is scored)")
        else:
            fmt = s.input_format
            opts = dict(fold_ids=s.ignore_id_case, encoding=s.encoding, words=s.words)
            ref = read_transcript(s.ref, fmt, normalizer, "text", s.id_field,
                                  optional_deletable=s.optional_deletable, **opts)
            if s.optional_deletable and ref.format != "trn":
                raise AsrprivError("--optional-deletable applies to stm and trn references")
            optional = ref.optional or None
            hyp = read_transcript(s.hyp, fmt, normalizer, "pred_text", s.id_field, **opts)
            others = [read_transcript(p, fmt, normalizer, "pred_text", s.id_field, **opts)
                      for p in compare]
            if s.optional_deletable:
                for h in (hyp, *others):
                    _no_parenthesized_words(h)
    except InputError as err:
        if "not valid UTF-8" in err.detail and is_utf8(s.encoding):
            raise InputError(err.path, err.line, err.detail + "; --encoding names another "
                             "encoding (e.g. gb2312, iso-8859-1)") from None
        raise
    if not ref.words:
        raise InputError(s.ref, None, "empty input: expected reference transcripts")
    return ref, hyp, others, optional, utt2spk, timed


def _apply_subset(s: ScoreWerSettings, ref: Transcript, hyp: Transcript, others: list[Transcript],
                  timed: bool, warn) -> None:
    """sclite's trn rule (score only HYP's utterances) and ``--subset``; changes ``ref.words``."""
    sclite_subset = (not s.subset and not s.missing_as_deletions and not timed
                     and ref.format == "trn" and hyp.format == "trn"
                     and all(o.format == "trn" for o in others))
    if (sclite_subset and any(u not in hyp.words for u in ref.words)
            and (s.allow_extra or all(u in ref.words for u in hyp.words))):
        if any(set(hyp.words) != set(o.words) for o in others):
            raise AsrprivError("trn: HYP and HYP2 hold different utterances; give --subset or "
                               "--missing-as-deletions to say how to score the others")
        kept = {u: w for u, w in ref.words.items() if u in hyp.words}
        if not kept:
            raise InputError(s.hyp, None, "no hypothesis id is in the reference")
        warn(f"trn: {len(ref.words) - len(kept)} reference utterance(s) without hypothesis left "
             "out of the score, as sclite does with trn files (--missing-as-deletions counts "
             "them as deletions)")
        ref.words = kept
    if s.subset:
        kept = {u: w for u, w in ref.words.items() if u in hyp.words}
        dropped = len(ref.words) - len(kept)
        if not kept:
            raise InputError(s.hyp, None, "--subset: no hypothesis id is in the reference")
        if dropped:
            warn(f"--subset: {dropped} reference utterance(s) without hypothesis left out of the score")
        ref.words = kept


def read_client_map(path: str) -> dict[str, str]:
    """``utt_id -> client`` from a two-column map, or from an N-best TSV's ``client`` column
    (a file whose first line is a tab-separated header naming ``utt_id`` and ``client``)."""
    from asrpriv.io import kaldi_tables, lhotse
    from asrpriv.io.kaldi import read_map
    from asrpriv.io.lines import iter_lines

    if path == "-" or lhotse.is_manifest(path) or kaldi_tables.is_specifier(path):
        # standard input can be read once: a map; manifests and Kaldi tables have their readers
        return read_map(path, "client")
    lines = iter_lines(path)
    first = next(lines, None)
    lines.close()
    header = first[1].split("\t") if first is not None else []
    if "utt_id" in header and "client" in header:
        from asrpriv.io.nbest import NbestReader

        table: dict[str, str] = {}
        for utt in NbestReader(path):
            if utt.client in (None, ""):
                raise InputError(path, utt.hyps[0].lineno, f"utterance {utt.utt_id!r} has no client")
            table[utt.utt_id] = utt.client
        return table
    if first is not None and "\t" in first[1] and "utt_id" in header:
        raise InputError(path, 1, "an N-best TSV without a 'client' column: give a map "
                         "'utt_id client' to --utt2client")
    return read_map(path, "client")


def _no_parenthesized_words(hyp: Transcript) -> None:
    """-D: sclite also reads '(word)' in a hypothesis as 'word'; refused, not reproduced."""
    for u, words in hyp.words.items():
        for w in words:
            if len(w) > 2 and w[0] == "(" and w[-1] == ")":
                raise InputError(hyp.path, hyp.lines.get(u), f"hypothesis word {w!r} in "
                                 "parentheses with -D: sclite's reading of it is not reproduced")


def _warn_non_words(hyp: Transcript, normalizer: Normalizer, warn) -> None:
    """Warn when HYP holds tokens of the default drop list, scored as words without --drop-tokens."""
    from asrpriv.io.tokens import DEFAULT_DROP

    known = normalizer.with_drop(DEFAULT_DROP).drop
    found: dict[str, int] = {}
    for words in hyp.words.values():
        for w in words:
            if w in known:
                found[w] = found.get(w, 0) + 1
    if found:
        top = ", ".join(f"{n} {w}" for w, n in sorted(found.items(), key=lambda x: -x[1])[:4])
        from asrpriv.errors import display_name

        warn(f"{display_name(hyp.path)}: {sum(found.values())} hypothesis tokens look like non-words ({top}) and "
             "are scored as words; give --drop-tokens default (or your own list) to drop them")


def _ext(path: str | None) -> str:
    if not path or path == "-":
        return ""
    name = path[:-3] if path.endswith(".gz") else path
    return os.path.splitext(name)[1].lower()


# ---------------------------------------------------------------------------- statistics

def utterance_totals(ref: Transcript, hyp: Transcript,
                     optional: dict[str, list[bool]] | None) -> dict[str, tuple[int, int]]:
    """``{utt: (errors, reference words)}`` of every reference utterance, as the totals count them."""
    from asrpriv.wer.report import network_counts, utterance_counts

    empty: list[str] = []
    opt = optional or {}
    if ref.networks or hyp.networks:
        out = {}
        for u in ref.words:
            n, s, d, i = network_counts(ref, u, hyp.words.get(u, empty), hyp.networks.get(u))
            out[u] = (s + d + i, n)
        return out
    return {u: (sum(utterance_counts(r, hyp.words.get(u, empty), opt.get(u))), len(r))
            for u, r in ref.words.items()}


def _table_unit(bootstrap_unit: str, utt2spk, utt2client) -> tuple[str, dict | None]:
    """The unit of the per-unit table: the bootstrap's when it is speaker or client, else
    client when a client map is given, else speaker when there is a speaker map."""
    if bootstrap_unit == "client" and utt2client is not None:
        return "client", utt2client
    if bootstrap_unit == "speaker" and utt2spk is not None:
        return "speaker", utt2spk
    if utt2client is not None:
        return "client", utt2client
    if utt2spk is not None:
        return "speaker", utt2spk
    return "utterance", None


def unit_changes(per_utt_a: dict[str, tuple[int, int]], per_utt_b: dict[str, tuple[int, int]],
                 utt2unit: dict[str, str], unit: str) -> dict:
    """Per-unit WER of A and B, how many units improve (A lower), worsen (A higher) or tie,
    and the exact two-sided sign test over the units that changed.

    A unit's WER is ``100 errors / reference words`` over its utterances (a unit without
    reference words compares its error counts). Sign test: under H0 a changed unit is as
    likely to improve as to worsen, so ``min(improve, worsen)`` is Binomial(n, 1/2) with
    n = improve + worsen; ``p = min(1, 2 P(X <= min))`` (ties left out, as Dixon & Mood 1946).
    """
    from asrpriv.wer.bootstrap import unit_totals

    names, errs_a, words = unit_totals(per_utt_a, utt2unit)
    _n, errs_b, _w = unit_totals(per_utt_b, utt2unit)
    rows = []
    better = worse = tie = 0
    for name, ea, eb, n in zip(names, errs_a, errs_b, words):
        wa = 100.0 * ea / n if n else None
        wb = 100.0 * eb / n if n else None
        if ea == eb:
            change = "tie"
            tie += 1
        elif ea < eb:
            change = "improve"
            better += 1
        else:
            change = "worsen"
            worse += 1
        rows.append({unit: name, "ref_words": n, "errors_a": ea, "errors_b": eb, "wer_a": wa,
                     "wer_b": wb, "change": change})
    return {"unit": unit, "units": len(names), "improve": better, "worsen": worse, "tie": tie,
            "sign_test_p": sign_test(better, worse), "rows": rows}


def sign_test(k_plus: int, k_minus: int) -> float:
    """Exact two-sided sign test: ``min(1, 2 sum_{k <= min} C(n, k) / 2^n)``, n = k_plus + k_minus
    (1.0 when n = 0)."""
    n = k_plus + k_minus
    if n == 0:
        return 1.0
    low = min(k_plus, k_minus)
    tail = sum(math.comb(n, k) for k in range(low + 1))
    return min(1.0, 2.0 * tail / 2.0 ** n)


def add_holm(comparisons: list[dict]) -> None:
    """Holm-adjusted p-values (:func:`asrpriv.stats.multiple.holm_adjust`) over the family of
    every test the report holds: each comparison's MAPSSWE ``p_value`` and, where there is a
    per-unit table, its ``sign_test_p``. Adds ``p_holm`` beside each, and ``significant_holm``
    (adjusted p < alpha) to the MAPSSWE entries."""
    from asrpriv.stats.multiple import holm_adjust

    slots: list[tuple[dict, str]] = []
    for comp in comparisons:
        slots.append((comp, "p_value"))
        if "units" in comp:
            slots.append((comp["units"], "sign_test_p"))
    adjusted = holm_adjust([d[k] for d, k in slots])
    for (d, k), p in zip(slots, adjusted):
        if k == "p_value":
            d["p_holm"] = p
            d["significant_holm"] = p < d["alpha"]
            d["holm_family"] = len(slots)
        else:
            d["sign_test_p_holm"] = p


def _bootstrap(ref, hyp, others, optional, utt2unit, s: ScoreWerSettings, comparisons) -> dict:
    """Bootstrap of WER(A) and of WER(A) - WER(B) for each B, all with the same resampled units
    (same seed: the same index draws, so every difference is paired)."""
    import secrets

    from asrpriv.wer.bootstrap import bootstrap, unit_totals

    seed = s.seed if s.seed is not None else secrets.randbits(63)
    _names, errs, words = unit_totals(utterance_totals(ref, hyp, optional), utt2unit)
    first = None
    for k, other in enumerate(others):
        _n, errs_b, _w = unit_totals(utterance_totals(ref, other, optional), utt2unit)
        result = bootstrap(errs, words, s.bootstrap, s.confidence_level, seed, errs_b,
                           s.bootstrap_unit).as_dict()
        if k:  # the first B's interval is the report's own (bootstrap diff, diff_low, diff_high)
            comparisons[k]["bootstrap_diff"] = {key: result[key]
                                                for key in ("diff", "diff_low", "diff_high")}
        if first is None:
            first = result
    if first is None:
        first = bootstrap(errs, words, s.bootstrap, s.confidence_level, seed, None,
                          s.bootstrap_unit).as_dict()
    return first
