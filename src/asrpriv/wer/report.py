"""Word error rate by utterance id, per speaker, with sclite-like and JSON reports.

WER = 100 (S + D + I) / N percent, N the number of reference words; SER = 100 x (utterances
with at least one error) / (utterances), percent. Counts come from sclite-optimal alignments
(:mod:`asrpriv.wer.alignment`), so they equal ``sclite``'s.

Matching is by utterance id, never by position: a reference id without hypothesis counts as
all deletions and is listed (``missing_hyp``); a hypothesis id without reference is an error,
or with ``allow_extra`` a listed warning (``extra_hyp``).
"""

from __future__ import annotations

import json
from itertools import repeat
from dataclasses import dataclass, field
from typing import IO, Callable

from asrpriv import __version__
from asrpriv.errors import InputError
from asrpriv.wer.alignment import Step, count_errors, count_totals, counts_of, sclite_align
from asrpriv.wer.mapsswe import MIN_GOOD, MapssweResult, mapsswe
from asrpriv.wer.transcripts import Normalizer, Transcript


@dataclass
class Counts:
    """Error counts of a set of utterances."""

    sentences: int = 0
    sentence_errors: int = 0
    ref_words: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def correct(self) -> int:
        return self.ref_words - self.substitutions - self.deletions

    @property
    def wer(self) -> float | None:
        """Percent; None when there are no reference words but there are errors."""
        if self.ref_words:
            return 100.0 * self.errors / self.ref_words
        return 0.0 if self.errors == 0 else None

    @property
    def ser(self) -> float:
        return 100.0 * self.sentence_errors / self.sentences if self.sentences else 0.0

    def add(self, n_ref: int, subs: int, dels: int, ins: int) -> None:
        self.sentences += 1
        self.ref_words += n_ref
        self.substitutions += subs
        self.deletions += dels
        self.insertions += ins
        if subs or dels or ins:
            self.sentence_errors += 1

    def as_dict(self) -> dict:
        return {"wer": self.wer, "ref_words": self.ref_words, "errors": self.errors,
                "correct": self.correct, "substitutions": self.substitutions,
                "deletions": self.deletions, "insertions": self.insertions,
                "sentences": self.sentences, "sentence_errors": self.sentence_errors,
                "ser": self.ser}


@dataclass
class WerReport:
    """Everything ``score-wer`` reports."""

    totals: Counts
    signature: str
    missing_hyp: list[str]
    extra_hyp: list[str]
    speakers: dict[str, Counts] | None = None
    paths: dict[str, list[Step]] | None = None
    compare: dict | None = None
    ref_name: str = "REF"
    hyp_name: str = "HYP"
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = self.totals.as_dict()
        out["missing_hyp"] = list(self.missing_hyp)
        out["extra_hyp"] = list(self.extra_hyp)
        out["signature"] = self.signature
        if self.speakers is not None:
            out["speakers"] = {spk: c.as_dict() for spk, c in self.speakers.items()}
        if self.compare is not None:
            out["compare"] = self.compare
        out.update(self.extra)
        return out


def signature(normalizer: Normalizer) -> str:
    """``case:..|strip:..|align:sclite|version:..`` (sacrebleu-style)."""
    return f"{normalizer.signature()}|align:sclite|version:{__version__}"


def check_ids(ref: Transcript, hyp: Transcript, allow_extra: bool,
              warn: Callable[[str], None] | None = None,
              same_order: bool | None = None) -> tuple[list[str], list[str]]:
    """Return ``(missing, extra)`` ids; an extra id is an :class:`InputError` unless allowed.
    ``same_order``: :func:`same_ids_in_order` if the caller knows it already."""
    if same_ids_in_order(ref, hyp) if same_order is None else same_order:
        return [], []
    extra_set = hyp.words.keys() - ref.words.keys()
    extra = [u for u in hyp.words if u in extra_set] if extra_set else []
    if extra and not allow_extra:
        first = extra[0]
        folded = {u.lower() for u in ref.lines}
        hint = ("; ids differ from the reference only in case: --ignore-id-case matches them"
                if first.lower() in folded else "")
        raise InputError(hyp.path, hyp.lines[first],
                         f"utterance id {first!r} is not in the reference "
                         f"({len(extra)} such ids; --allow-extra ignores them{hint})")
    missing_set = ref.words.keys() - hyp.words.keys()
    missing = [u for u in ref.words if u in missing_set] if missing_set else []
    if warn:
        if missing:
            warn(f"{_name(hyp.path)}: {len(missing)} reference utterance(s) without hypothesis, "
                 f"counted as all deletions: {_ids(missing)}")
        if extra:
            warn(f"{_name(hyp.path)}: {len(extra)} hypothesis id(s) not in the reference, "
                 f"ignored: {_ids(extra)}")
    return missing, extra


def same_ids_in_order(ref: Transcript, hyp: Transcript) -> bool:
    """True when both files hold the same utterance ids in the same order (the usual case: one
    recognizer's output beside its reference), so their word lists pair up without lookups."""
    return len(ref.words) == len(hyp.words) and list(ref.words) == list(hyp.words)


def _name(path: str | None) -> str:
    from asrpriv.errors import display_name

    return display_name(path)


def _ids(ids: list[str], limit: int = 5) -> str:
    shown = " ".join(ids[:limit])
    return shown + (f" ... (+{len(ids) - limit})" if len(ids) > limit else "")


def align_all(ref: Transcript, hyp: Transcript) -> dict[str, list[Step]]:
    """sclite paths of every reference utterance (a missing hypothesis is empty)."""
    empty: list[str] = []
    return {u: sclite_align(r, hyp.words.get(u, empty)) for u, r in ref.words.items()}


def score(ref: Transcript, hyp: Transcript, normalizer: Normalizer, *,
          allow_extra: bool = False, utt2spk: dict[str, str] | None = None,
          utt2spk_path: str | None = None,
          paths: bool = False, compare: Transcript | None = None, alpha: float = 0.05,
          warn: Callable[[str], None] | None = None,
          optional: dict[str, list[bool]] | None = None) -> WerReport:
    """Score ``hyp`` against ``ref``; optionally per speaker, with paths, and MAPSSWE.

    ``paths=True`` (or ``compare``) aligns every utterance word by word with sclite's
    dynamic programme; otherwise the RapidFuzz fast path counts errors. ``optional``
    (utterance -> flags of optionally deletable reference words, sclite ``-D``) counts those
    utterances with :func:`asrpriv.wer.sclite_time.count_optional`; no paths then.
    """
    same_order = same_ids_in_order(ref, hyp)
    missing, extra = check_ids(ref, hyp, allow_extra, warn, same_order)
    if utt2spk is not None:
        lacking = [u for u in ref.words if u not in utt2spk]
        if lacking:
            raise InputError(utt2spk_path, None, f"no speaker for utterance {lacking[0]!r} "
                             f"({len(lacking)} such ids)")
    totals = Counts()
    speakers: dict[str, Counts] | None = {} if utt2spk is not None else None
    all_paths: dict[str, list[Step]] | None = None
    hwords = hyp.words
    empty: list[str] = []
    if optional and (paths or compare is not None):
        from asrpriv.errors import AsrprivError

        raise AsrprivError("optionally deletable words (-D) are not supported with --details or --compare")
    networks = ref.networks or hyp.networks
    for t in (ref, hyp, compare):
        if t is not None and t.networks and (paths or compare is not None):
            first = next(iter(t.networks))
            raise InputError(t.path, t.lines.get(first),
                             "alternations { a / b } are not supported with --details or "
                             "--compare (per-word paths through alternatives are not sclite's)")
    if networks:
        hnets = hyp.networks
        per_utt = ((u, *network_counts(ref, u, hwords.get(u, empty), hnets.get(u)))
                   for u in ref.words)
        per_utt = ((u, n, (s, d, i)) for u, n, s, d, i in per_utt)
    elif optional:
        per_utt = ((u, len(r), utterance_counts(r, hwords.get(u, empty), optional.get(u)))
                   for u, r in ref.words.items())
    elif paths or compare is not None:
        all_paths = align_all(ref, hyp)
        per_utt = ((u, len(r), counts_of(all_paths[u])) for u, r in ref.words.items())
    else:
        per_utt = ((u, len(r), count_errors(r, hwords.get(u, empty)))
                   for u, r in ref.words.items())
    if speakers is None and all_paths is None and not optional and not networks:
        hyp_words = (hwords.values() if same_order
                     else map(hwords.get, ref.words, repeat(empty)))
        (totals.sentences, totals.sentence_errors, totals.ref_words, totals.substitutions,
         totals.deletions, totals.insertions) = count_totals(zip(ref.words.values(), hyp_words))
    elif speakers is None:
        for _u, n, (s, d, i) in per_utt:
            totals.add(n, s, d, i)
    else:
        for u, n, (s, d, i) in per_utt:
            totals.add(n, s, d, i)
            spk = utt2spk[u]
            if spk not in speakers:
                speakers[spk] = Counts()
            speakers[spk].add(n, s, d, i)
    report = WerReport(totals=totals, signature=signature(normalizer), missing_hyp=missing,
                       extra_hyp=extra, speakers=speakers, paths=all_paths,
                       ref_name=_name(ref.path), hyp_name=_name(hyp.path))
    if compare is not None:
        missing_b, extra_b = check_ids(ref, compare, allow_extra, warn)
        paths_b = align_all(ref, compare)
        totals_b = Counts()
        for u, r in ref.words.items():
            totals_b.add(len(r), *counts_of(paths_b[u]))
        result = mapsswe(((all_paths[u], paths_b[u]) for u in ref.words), alpha=alpha)
        report.compare = compare_dict(result, totals, totals_b, _name(compare.path),
                                      missing_b, extra_b)
    return report


def network_counts(ref: Transcript, utt: str, hyp: list[str],
                   hyp_network: tuple | None = None) -> tuple[int, int, int, int]:
    """``(ref_words, S, D, I)`` of utterance ``utt``, through alternations where there are any
    (the reference's, and ``hyp_network``, a hypothesis' own).

    An utterance whose alternatives tie with different counts is an :class:`InputError`
    naming the reference line (see :mod:`asrpriv.wer.network`).
    """
    network = ref.networks.get(utt)
    words = ref.words[utt]
    if network is None and hyp_network is None:
        return (len(words), *count_errors(words, hyp))
    from asrpriv.wer.network import AmbiguousNetwork, count_network

    try:
        return count_network(network, hyp, hyp_network, words)
    except (AmbiguousNetwork, ValueError) as err:
        raise InputError(ref.path, ref.lines.get(utt),
                         f"utterance {utt!r}: {err}; refused rather than scored differently "
                         "from sclite") from None


def utterance_counts(ref: list[str], hyp: list[str], optional: list[bool] | None = None):
    """``(S, D, I)`` of one utterance, with optionally deletable words when flagged."""
    if optional is not None and any(optional):
        from asrpriv.wer.sclite_time import count_optional

        return count_optional(ref, optional, hyp)
    return count_errors(ref, hyp)


def compare_dict(result: MapssweResult, a: Counts, b: Counts, name_b: str,
                 missing_b: list[str], extra_b: list[str]) -> dict:
    better = None
    if result.significant:
        better = "a" if result.mean < 0 else "b"
    return {"test": "mapsswe", "min_good": MIN_GOOD, "system_b": name_b,
            "wer_a": a.wer, "wer_b": b.wer, "errors_a": a.errors, "errors_b": b.errors,
            "segments": result.segments, "mean": result.mean, "sd": result.sd, "z": result.z,
            "p_value": result.p_value, "significant": result.significant,
            "alpha": result.alpha, "better": better,
            "seg_ref_words": result.seg_ref_words, "seg_errors_a": result.seg_errors_a,
            "seg_errors_b": result.seg_errors_b, "seg_pct_a": result.seg_pct_a,
            "seg_pct_b": result.seg_pct_b, "missing_hyp_b": missing_b, "extra_hyp_b": extra_b}


# ---------------------------------------------------------------------------- writing

def write_json(report: WerReport, out: IO[str]) -> None:
    json.dump(report.as_dict(), out, indent=2, ensure_ascii=False)
    out.write("\n")


def _pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:6.1f}"


def _row(label: str, c: Counts, width: int) -> str:
    n = c.ref_words or 0

    def p(k: int) -> str:
        return _pct(100.0 * k / n if n else None)

    return (f"| {label:<{width}} | {c.sentences:6d} {c.ref_words:7d} | {p(c.correct)} {p(c.substitutions)}"
            f" {p(c.deletions)} {p(c.insertions)} {_pct(c.wer)} {c.ser:6.1f} |")


def write_text(report: WerReport, out: IO[str]) -> None:
    """A sclite-like summary table (percent of reference words), then Kaldi-style lines."""
    t = report.totals
    names = list(report.speakers or {})
    width = max([7] + [len(s) for s in names])
    header = (f"| {'SPKR':<{width}} | {'# Snt':>6} {'# Wrd':>7} |   Corr    Sub    Del    Ins"
              "    Err  S.Err |")
    rule = "|" + "-" * (len(header) - 2) + "|"
    out.write(f"score-wer: {report.hyp_name} against {report.ref_name}\n")
    out.write(f"signature: {report.signature}\n\n")
    out.write(rule + "\n" + header + "\n" + rule + "\n")
    for spk in names:
        out.write(_row(spk, report.speakers[spk], width) + "\n")
    if names:
        out.write(rule + "\n")
    out.write(_row("Sum", t, width) + "\n" + rule + "\n\n")
    wer = "n/a" if t.wer is None else f"{t.wer:.2f}"
    out.write(f"%WER {wer} [ {t.errors} / {t.ref_words}, {t.insertions} ins, {t.deletions} del,"
              f" {t.substitutions} sub ]\n")
    out.write(f"%SER {t.ser:.2f} [ {t.sentence_errors} / {t.sentences} ]\n")
    out.write(f"Correct {t.correct}  Substitutions {t.substitutions}  Deletions {t.deletions}"
              f"  Insertions {t.insertions}  Reference words {t.ref_words}\n")
    out.write(f"Missing hypotheses: {len(report.missing_hyp)}"
              + (f" ({_ids(report.missing_hyp)})" if report.missing_hyp else "") + "\n")
    if report.extra_hyp:
        out.write(f"Extra hypotheses ignored: {len(report.extra_hyp)} ({_ids(report.extra_hyp)})\n")
    comparisons = report.extra.get("comparisons") or ([report.compare] if report.compare else [])
    for k, c in enumerate(comparisons):
        _write_comparison(report, c, k, out)
    b = report.extra.get("bootstrap")
    if b is not None:
        out.write(f"\nBootstrap {100 * b['level']:g}% percentile intervals ({b['resamples']} resamples of "
                  f"{b['units']} {b['unit']}s, seed {b['seed']})\n")
        out.write(f"  WER {b['wer']:.2f}%  [{b['wer_low']:.2f}, {b['wer_high']:.2f}]\n")
        if b.get("diff") is not None:
            out.write(f"  WER(A) - WER(B) {b['diff']:+.2f}  [{b['diff_low']:+.2f}, {b['diff_high']:+.2f}]"
                      " (paired)\n")


def _write_comparison(report: WerReport, c: dict, k: int, out: IO[str]) -> None:
    """The MAPSSWE block of one system B (and its per-unit table and Holm's p, when present)."""
    wa = "n/a" if c["wer_a"] is None else f"{c['wer_a']:.2f}"
    wb = "n/a" if c["wer_b"] is None else f"{c['wer_b']:.2f}"
    verdict = "no"
    if c["significant"]:
        verdict = f"yes, {'A' if c['better'] == 'a' else 'B'} has fewer errors"
    label = "B" if k == 0 else f"B{k + 1}"
    out.write("\nMatched-pair sentence-segment word error test (MAPSSWE, as sc_stats)\n")
    out.write(f"  A: {report.hyp_name}  WER {wa}%  ({c['errors_a']} errors)\n")
    out.write(f"  {label}: {c['system_b']}  WER {wb}%  ({c['errors_b']} errors)\n")
    out.write(f"  segments {c['segments']} (min {c['min_good']} correct boundary words),"
              f" % error in segments {c['seg_pct_a']:.2f} {c['seg_pct_b']:.2f}\n")
    out.write(f"  mean(A-B) {c['mean']:.3f}  sd {c['sd']:.3f}  Z {c['z']:.3f}"
              f"  p {c['p_value']:.4g}\n")
    out.write(f"  significant at alpha={c['alpha']:g}: {verdict}\n")
    if "p_holm" in c:
        holm = "yes" if c["significant_holm"] else "no"
        out.write(f"  Holm-adjusted p {c['p_holm']:.4g} (family of {c['holm_family']} tests):"
                  f" significant {holm}\n")
    units = c.get("units")
    if units is not None:
        out.write(f"  per {units['unit']}: {units['improve']} improve (A fewer errors), "
                  f"{units['worsen']} worsen, {units['tie']} tie of {units['units']}; "
                  f"sign test p {units['sign_test_p']:.4g}"
                  + (f" (Holm {units['sign_test_p_holm']:.4g})" if "sign_test_p_holm" in units else "")
                  + "\n")
        width = max([len(units["unit"])] + [len(str(r[units["unit"]])) for r in units["rows"]])
        out.write(f"    {units['unit']:<{width}}  {'# Wrd':>7}  {'WER A':>6}  {'WER B':>6}  change\n")
        for r in units["rows"]:
            out.write(f"    {r[units['unit']]:<{width}}  {r['ref_words']:7d}  {_pct(r['wer_a'])}"
                      f"  {_pct(r['wer_b'])}  {r['change']}\n")
    b = c.get("bootstrap_diff")
    if b is not None:
        out.write(f"  WER(A) - WER({label}) {b['diff']:+.2f}  [{b['diff_low']:+.2f}, "
                  f"{b['diff_high']:+.2f}] (paired bootstrap)\n")


def write_details(report: WerReport, ref: Transcript, hyp: Transcript, out: IO[str]) -> None:
    """Per-utterance alignments like sclite's ``pralign``: REF/HYP/Eval lines, S/D/I marks.

    Words are printed as compared (after normalization); ``*`` fills the missing side of a
    deletion or insertion.
    """
    assert report.paths is not None
    empty: list[str] = []
    missing = set(report.missing_hyp)
    for u, path in report.paths.items():
        r, h = ref.words[u], hyp.words.get(u, empty)
        s, d, i = counts_of(path)
        c = len(r) - s - d
        rl, hl, el = ["REF: "], ["HYP: "], ["Eval:"]
        for ev, ri, hi in path:
            rw = r[ri] if ri >= 0 else ""
            hw = h[hi] if hi >= 0 else ""
            w = max(len(rw), len(hw), 1)
            rl.append((rw or "*" * w).ljust(w))
            hl.append((hw or "*" * w).ljust(w))
            el.append(("" if ev == "C" else ev).ljust(w))
        out.write(f"id: ({u})\n")
        if u in missing:
            out.write("Note: no hypothesis for this utterance\n")
        out.write(f"Scores: (#C #S #D #I) {c} {s} {d} {i}\n")
        for line in (rl, hl, el):
            out.write(" ".join(line).rstrip() + "\n")
        out.write("\n")
