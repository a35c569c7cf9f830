"""``asrpriv score-wer``: WER, per-speaker tables and MAPSSWE significance, agreeing with sclite."""

from __future__ import annotations

import click

from asrpriv.errors import AsrprivError
from asrpriv.io.tokens import HELP as TOKENS_HELP
from asrpriv.commands.options import (FiniteFloat, check_output_path, common_options, output_option,
                             seed_option, warn)


@click.command("score-wer")
@click.option("--ref", "ref_path", required=True, metavar="REF",
              help="Reference transcript, Kaldi text or sclite trn ('-' = stdin), a Kaldi table "
                   "(ark,t:FILE, ark,t:-, 'ark:gunzip -c text.gz |', scp:FILE) or a lhotse "
                   "supervision/cut manifest (.jsonl.gz).")
@click.option("--hyp", "hyp_path", required=True, metavar="HYP",
              help="Hypothesis transcript (system A), Kaldi text or sclite trn ('-' = stdin), or "
                   "a Kaldi table (ark,t:-, ark:words.ark with --words, scp:FILE).")
@click.option("--words", "words_path", default=None, metavar="words.txt",
              help="Kaldi symbol table: REF/HYP/HYP2 given as Kaldi tables hold word ids "
                   "(text or binary, e.g. nbest-to-linear's or lattice-best-path's words archive).")
@click.option("--compare", "compare_path", default=None, metavar="HYP2",
              help="A second hypothesis (system B): add the MAPSSWE test of A against B, "
                   "as sc_stats -t mapsswe (segments bounded by 2 words correct in both).")
@click.option("--input-format", type=click.Choice(["auto", "kaldi", "trn", "nemo", "stm"]),
              default="auto", show_default=True,
              help="Format of REF/HYP/HYP2: Kaldi 'utt_id w1 w2 ...', trn 'w1 w2 ... (utt_id)', "
                   "NeMo manifests (JSON lines; REF from 'text', HYP from 'pred_text'), or stm = "
                   "sclite stm REF with ctm HYPs (words chopped into segments by time, as sclite). "
                   "auto, per file: .stm/.ctm by extension, nemo when the file starts with '{', "
                   "trn when every line ends with '(id)', else kaldi.")
@click.option("--id-field", default=None, metavar="NAME",
              help="NeMo manifests: field holding the utterance id (default: the audio file "
                   "name without extension).")
@click.option("-D", "--optional-deletable", is_flag=True,
              help="stm and trn: reference words in parentheses, (uh), are optionally "
                   "deletable: deleting them counts as correct (sclite -D).")
@click.option("--subset", is_flag=True,
              help="Score only the reference utterances present in HYP (as sclite does with trn "
                   "and tune-weights with its N-best list); the others are reported, not counted. "
                   "The default when REF and HYP are both trn (sclite's rule).")
@click.option("--missing-as-deletions", is_flag=True,
              help="trn REF and HYP: count reference utterances without hypothesis as all "
                   "deletions (the default for the other formats) instead of leaving them out "
                   "as sclite does.")
@click.option("--ignore-id-case", is_flag=True,
              help="Match utterance ids regardless of case (as sclite does); ids are reported "
                   "in lower case.")
@click.option("--encoding", default="utf-8", show_default=True, metavar="NAME",
              help="Character encoding of REF/HYP/HYP2 (sclite -e), e.g. gb2312, iso-8859-1; "
                   "a byte that is not valid in it is an error naming FILE:LINE.")
@click.option("--bootstrap", "bootstrap_n", type=click.IntRange(min=1), default=None, metavar="N",
              help="Add bootstrap percentile confidence intervals from N resamples: of the WER "
                   "and, with --compare, of WER(A) - WER(B) (paired resampling).")
@click.option("--bootstrap-unit", type=click.Choice(["utterance", "speaker"]), default="utterance",
              show_default=True,
              help="What the bootstrap resamples: utterances, or speakers (all their utterances "
                   "together; needs --utt2spk or an stm reference).")
@click.option("--confidence-level", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Level of the bootstrap intervals.")
@seed_option("Seed of the bootstrap resampling (without it, a random seed, printed in the report).")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format: sclite-like text summary or JSON "
                                      "(keys in docs/CONTRACTS.md; rates in percent).")
@click.option("--lowercase/--no-lowercase", default=True, show_default=True,
              help="Fold case before comparing words (sclite is case-insensitive unless -s).")
@click.option("--strip-punct/--no-strip-punct", default=False, show_default=True,
              help="Remove Unicode punctuation at both edges of every word (keeps i'm, "
                   "well-known); words made only of punctuation are dropped.")
@click.option("--utt2spk", "utt2spk_path", default=None, metavar="FILE",
              help="Kaldi utt2spk map: add a per-speaker table (every reference id needs one); "
                   "or a lhotse manifest (MANIFEST[#FIELD], the speaker by default).")
@click.option("--details", "details_path", default=None, metavar="FILE", callback=check_output_path,
              help="Write per-utterance alignments (REF/HYP/Eval lines with S/D/I marks, like "
                   "sclite pralign) of HYP to FILE, atomically.")
@click.option("--allow-extra", is_flag=True,
              help="Ignore hypothesis ids that are not in the reference (with a warning) "
                   "instead of stopping with an error.")
@click.option("--alpha", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level of the two-sided MAPSSWE test (--compare).")
@click.option("--drop-tokens", "drop_tokens", default=None, metavar="SPEC",
              help=TOKENS_HELP + " Dropped from REF and every HYP before alignment (after case "
                   "folding). Default: none, with a warning when HYP holds tokens of the "
                   "'default' list.")
@output_option
@common_options
def score_wer(ref_path: str, hyp_path: str, words_path: str | None, compare_path: str | None, input_format: str,
              id_field: str | None, optional_deletable: bool, subset: bool,
              missing_as_deletions: bool, ignore_id_case: bool, encoding: str,
              bootstrap_n: int | None,
              bootstrap_unit: str, confidence_level: float, seed: int | None,
              out_format: str, lowercase: bool, strip_punct: bool, utt2spk_path: str | None,
              details_path: str | None, allow_extra: bool, alpha: float, drop_tokens: str | None,
              output: str) -> None:
    """Score HYP against REF by utterance id: WER = 100 (S+D+I)/N percent.

    Alignments are sclite's (insertion/deletion cost 3, substitution 4), so counts equal
    sclite's; plain scoring uses RapidFuzz and re-aligns only where sclite's weights change
    the result. A reference id without hypothesis counts as all deletions and is reported
    (trn REF and HYP: left out and reported, as sclite does); a hypothesis id without
    reference is an error unless --allow-extra. Empty hypotheses are valid. trn as sclite
    reads it: ';;' comment lines, '@' null words, alternations '{ a / b / @ }' (an
    utterance whose equally cheap alternatives give different counts is refused, exit 2).
    The report carries a signature of the normalization and the version.
    """
    from asrpriv.io.kaldi import read_map
    from asrpriv.io.output import open_output
    from asrpriv.wer.report import score, write_details, write_json, write_text
    from asrpriv.wer.transcripts import Normalizer, read_transcript

    from asrpriv.io.kaldi_tables import reads_stdin

    stdin_users = [p for p in (ref_path, hyp_path, compare_path, utt2spk_path) if reads_stdin(p)]
    if len(stdin_users) > 1:
        raise AsrprivError("only one input can be standard input ('-')")
    from asrpriv.errors import InputError

    from asrpriv.wer.transcripts import check_encoding, is_utf8

    check_encoding(encoding)
    if subset and missing_as_deletions:
        raise AsrprivError("--subset and --missing-as-deletions contradict each other; give one")
    normalizer = Normalizer(lowercase=lowercase, strip_punct=strip_punct)
    if drop_tokens is not None:
        from asrpriv.io.tokens import parse_drop

        normalizer = normalizer.with_drop(parse_drop(drop_tokens))
    if input_format == "auto" and _ext(ref_path) == ".ctm":
        raise AsrprivError(f"{ref_path}: a ctm reference is not supported (sclite aligns two ctm "
                           "files by time); give an stm or trn reference")
    timed = input_format == "stm" or (input_format == "auto" and _ext(ref_path) == ".stm")
    optional = None
    utt2spk = read_map(utt2spk_path, "speaker") if utt2spk_path else None
    try:
        if timed:
            from asrpriv.wer.sclite_time import read_ctm, read_stm

            for p in (hyp_path, compare_path):
                if p is not None and input_format == "auto" and _ext(p) != ".ctm":
                    raise AsrprivError(f"{p}: an stm reference needs ctm hypotheses (name them .ctm "
                                       "or give --input-format stm)")
            stm = read_stm(ref_path, normalizer, optional_deletable, encoding)
            ref = stm.transcript
            hyp = read_ctm(hyp_path, stm, normalizer, encoding)
            other = read_ctm(compare_path, stm, normalizer, encoding) if compare_path else None
            optional = stm.optional or None
            if utt2spk is None:
                utt2spk = stm.speakers
            if subset:
                raise AsrprivError("--subset does not apply to ctm hypotheses (every stm segment is scored)")
        else:
            fmt = input_format
            opts = dict(fold_ids=ignore_id_case, encoding=encoding, words=words_path)
            ref = read_transcript(ref_path, fmt, normalizer, "text", id_field,
                                  optional_deletable=optional_deletable, **opts)
            if optional_deletable and ref.format != "trn":
                raise AsrprivError("--optional-deletable applies to stm and trn references")
            optional = ref.optional or None
            hyp = read_transcript(hyp_path, fmt, normalizer, "pred_text", id_field, **opts)
            other = (read_transcript(compare_path, fmt, normalizer, "pred_text", id_field, **opts)
                     if compare_path else None)
            if optional_deletable:
                _no_parenthesized_words(hyp)
    except InputError as err:
        if "not valid UTF-8" in err.detail and is_utf8(encoding):
            raise InputError(err.path, err.line, err.detail + "; --encoding names another "
                             "encoding (e.g. gb2312, iso-8859-1)") from None
        raise
    if not ref.words:
        raise InputError(ref_path, None, "empty input: expected reference transcripts")
    sclite_subset = (not subset and not missing_as_deletions and not timed
                     and ref.format == "trn" and hyp.format == "trn"
                     and (other is None or other.format == "trn"))
    if (sclite_subset and any(u not in hyp.words for u in ref.words)
            and (allow_extra or all(u in ref.words for u in hyp.words))):
        if other is not None and set(hyp.words) != set(other.words):
            raise AsrprivError("trn: HYP and HYP2 hold different utterances; give --subset or "
                               "--missing-as-deletions to say how to score the others")
        kept = {u: w for u, w in ref.words.items() if u in hyp.words}
        if not kept:
            raise InputError(hyp_path, None, "no hypothesis id is in the reference")
        warn(f"trn: {len(ref.words) - len(kept)} reference utterance(s) without hypothesis left "
             "out of the score, as sclite does with trn files (--missing-as-deletions counts "
             "them as deletions)")
        ref.words = kept
    if drop_tokens is None:
        _warn_non_words(hyp, normalizer)
    if subset:
        kept = {u: w for u, w in ref.words.items() if u in hyp.words}
        dropped = len(ref.words) - len(kept)
        if not kept:
            raise InputError(hyp_path, None, "--subset: no hypothesis id is in the reference")
        if dropped:
            warn(f"--subset: {dropped} reference utterance(s) without hypothesis left out of the score")
        ref.words = kept
    if bootstrap_n is not None and bootstrap_unit == "speaker" and utt2spk is None:
        raise AsrprivError("--bootstrap-unit speaker needs --utt2spk (or an stm reference)")
    report = score(ref, hyp, normalizer, allow_extra=allow_extra, utt2spk=utt2spk,
                   utt2spk_path=utt2spk_path, paths=details_path is not None, compare=other,
                   alpha=alpha, warn=warn, optional=optional)
    if bootstrap_n is not None:
        report.extra["bootstrap"] = _bootstrap(ref, hyp, other, optional, utt2spk, bootstrap_n,
                                               bootstrap_unit, confidence_level, seed)
    if details_path is not None:
        with open_output(details_path) as f:
            write_details(report, ref, hyp, f)
    with open_output(output) as f:
        (write_json if out_format == "json" else write_text)(report, f)


def _no_parenthesized_words(hyp) -> None:
    """-D: sclite also reads '(word)' in a hypothesis as 'word'; refused, not reproduced."""
    from asrpriv.errors import InputError

    for u, words in hyp.words.items():
        for w in words:
            if len(w) > 2 and w[0] == "(" and w[-1] == ")":
                raise InputError(hyp.path, hyp.lines.get(u), f"hypothesis word {w!r} in "
                                 "parentheses with -D: sclite's reading of it is not reproduced")


def _warn_non_words(hyp, normalizer) -> None:
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
    import os

    if not path or path == "-":
        return ""
    name = path[:-3] if path.endswith(".gz") else path
    return os.path.splitext(name)[1].lower()


def _bootstrap(ref, hyp, other, optional, utt2spk, n, unit, level, seed) -> dict:
    from asrpriv.wer.bootstrap import bootstrap, unit_totals
    from asrpriv.wer.report import utterance_counts

    from asrpriv.wer.report import network_counts

    empty: list[str] = []
    opt = optional or {}

    def counts(h):
        if ref.networks or h.networks:
            out = {}
            for u in ref.words:
                n, s, d, i = network_counts(ref, u, h.words.get(u, empty), h.networks.get(u))
                out[u] = (s + d + i, n)
            return out
        return {u: (sum(utterance_counts(r, h.words.get(u, empty), opt.get(u))), len(r))
                for u, r in ref.words.items()}

    names, errs, words = unit_totals(counts(hyp), utt2spk if unit == "speaker" else None)
    errs_b = None
    if other is not None:
        _n, errs_b, _w = unit_totals(counts(other), utt2spk if unit == "speaker" else None)
    return bootstrap(errs, words, n, level, seed, errs_b, unit).as_dict()
