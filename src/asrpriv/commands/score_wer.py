"""``asrpriv score-wer``: WER, per-speaker tables and MAPSSWE significance, agreeing with sclite."""

from __future__ import annotations

import click

from asrpriv.io.tokens import HELP as TOKENS_HELP
from asrpriv.commands.options import (FiniteFloat, WholeNumber, check_output_path, common_options,
                                      output_option, seed_option)


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
@click.option("--compare", "compare_paths", multiple=True, metavar="HYP2",
              help="A second hypothesis (system B): add the MAPSSWE test of A against B, "
                   "as sc_stats -t mapsswe (segments bounded by 2 words correct in both). "
                   "Repeat it to test A against several systems (JSON: 'compare' is the first, "
                   "'comparisons' all of them); --holm adjusts their p-values.")
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
@click.option("--bootstrap", "bootstrap_n", type=WholeNumber(min=1), default=None, metavar="N",
              help="Add bootstrap percentile confidence intervals from N resamples: of the WER "
                   "and, with --compare, of WER(A) - WER(B) (paired resampling).")
@click.option("--bootstrap-unit", type=click.Choice(["utterance", "speaker", "client"]),
              default="utterance", show_default=True,
              help="What the bootstrap resamples: utterances, speakers (all their utterances "
                   "together; needs --utt2spk or an stm reference) or clients (needs "
                   "--utt2client). Resample the unit that was sampled: personalization acts per "
                   "client, so utterance-level intervals are too narrow for its claims.")
@click.option("--confidence-level", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Level of the bootstrap intervals.")
@seed_option("Seed of the bootstrap resampling (without it, a random seed, printed in the report).")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format: sclite-like text summary or JSON "
                                      "(keys in docs/CONTRACTS.md; rates in percent).")
@click.option("--lowercase/--no-lowercase", default=True, show_default=True,
              help="Fold case before comparing words (sclite is case-insensitive unless -s).")
@click.option("--case-folding", type=click.Choice(["sclite", "unicode"]), default="sclite",
              show_default=True,
              help="Which letters --lowercase folds: sclite = A-Z only, as sclite does in every "
                   "encoding (-e utf-8, gb, euc, 8-bit: \u00c9/\u00e9 or \u0414/\u0434 stay "
                   "different words); unicode = every letter with a lower case (str.lower).")
@click.option("--strip-punct/--no-strip-punct", default=False, show_default=True,
              help="Remove Unicode punctuation at both edges of every word (keeps i'm, "
                   "well-known); words made only of punctuation are dropped.")
@click.option("--utt2spk", "utt2spk_path", default=None, metavar="FILE",
              help="Kaldi utt2spk map: add a per-speaker table (every reference id needs one); "
                   "or a lhotse manifest (MANIFEST[#FIELD], the speaker by default).")
@click.option("--utt2client", "utt2client_path", default=None, metavar="FILE",
              help="Map 'utt_id client' (or an N-best TSV with a 'client' column): the unit of "
                   "--bootstrap-unit client and, with --compare, of the per-unit table of WER "
                   "changes (clients that improve, worsen, tie; sign test).")
@click.option("--details", "details_path", default=None, metavar="FILE", callback=check_output_path,
              help="Write per-utterance alignments (REF/HYP/Eval lines with S/D/I marks, like "
                   "sclite pralign) of HYP to FILE, atomically.")
@click.option("--allow-extra", is_flag=True,
              help="Ignore hypothesis ids that are not in the reference (with a warning) "
                   "instead of stopping with an error.")
@click.option("--alpha", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level of the two-sided MAPSSWE test (--compare).")
@click.option("--holm", is_flag=True,
              help="With --compare: add Holm-adjusted p-values over the family of tests the "
                   "report holds (every MAPSSWE test, and every per-unit sign test).")
@click.option("--drop-tokens", "drop_tokens", default=None, metavar="SPEC",
              help=TOKENS_HELP + " Dropped from REF and every HYP before alignment (after case "
                   "folding). Default: none, with a warning when HYP holds tokens of the "
                   "'default' list.")
@output_option
@common_options
def score_wer(ref_path: str, hyp_path: str, words_path: str | None, compare_paths: tuple[str, ...], input_format: str,
              id_field: str | None, optional_deletable: bool, subset: bool,
              missing_as_deletions: bool, ignore_id_case: bool, encoding: str,
              bootstrap_n: int | None,
              bootstrap_unit: str, confidence_level: float, seed: int | None,
              out_format: str, lowercase: bool, case_folding: str, strip_punct: bool,
              utt2spk_path: str | None, utt2client_path: str | None,
              details_path: str | None, allow_extra: bool, alpha: float, holm: bool,
              drop_tokens: str | None, output: str) -> None:
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
    from asrpriv.wer.step import ScoreWerSettings, score_wer_files

    score_wer_files(ScoreWerSettings(
        ref=ref_path, hyp=hyp_path, words=words_path, compare=tuple(compare_paths), input_format=input_format,
        id_field=id_field, optional_deletable=optional_deletable, subset=subset,
        missing_as_deletions=missing_as_deletions, ignore_id_case=ignore_id_case,
        encoding=encoding, bootstrap=bootstrap_n, bootstrap_unit=bootstrap_unit,
        confidence_level=confidence_level, seed=seed, out_format=out_format,
        lowercase=lowercase, case_folding=case_folding, strip_punct=strip_punct,
        utt2spk=utt2spk_path, utt2client=utt2client_path, details=details_path,
        allow_extra=allow_extra, alpha=alpha, drop_tokens=drop_tokens, holm=holm, output=output))
