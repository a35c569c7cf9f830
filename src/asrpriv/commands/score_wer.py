"""``asrpriv score-wer``: WER, per-speaker tables and MAPSSWE significance, agreeing with sclite."""

from __future__ import annotations

import click

from asrpriv.errors import AsrprivError
from asrpriv.options import FiniteFloat, check_output_path, common_options, output_option, warn


@click.command("score-wer")
@click.option("--ref", "ref_path", required=True, metavar="REF",
              help="Reference transcript, Kaldi text or sclite trn ('-' = stdin).")
@click.option("--hyp", "hyp_path", required=True, metavar="HYP",
              help="Hypothesis transcript (system A), Kaldi text or sclite trn ('-' = stdin).")
@click.option("--compare", "compare_path", default=None, metavar="HYP2",
              help="A second hypothesis (system B): add the MAPSSWE test of A against B, "
                   "as sc_stats -t mapsswe (segments bounded by 2 words correct in both).")
@click.option("--input-format", type=click.Choice(["auto", "kaldi", "trn"]), default="auto",
              show_default=True,
              help="Format of REF/HYP/HYP2: Kaldi 'utt_id w1 w2 ...' or trn 'w1 w2 ... (utt_id)'; "
                   "auto = trn when every line ends with '(id)', per file.")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format: sclite-like text summary or JSON "
                                      "(keys in docs/CONTRACTS.md; rates in percent).")
@click.option("--lowercase/--no-lowercase", default=True, show_default=True,
              help="Fold case before comparing words (sclite is case-insensitive unless -s).")
@click.option("--strip-punct/--no-strip-punct", default=False, show_default=True,
              help="Remove Unicode punctuation at both edges of every word (keeps i'm, "
                   "well-known); words made only of punctuation are dropped.")
@click.option("--utt2spk", "utt2spk_path", default=None, metavar="FILE",
              help="Kaldi utt2spk map: add a per-speaker table (every reference id needs one).")
@click.option("--details", "details_path", default=None, metavar="FILE", callback=check_output_path,
              help="Write per-utterance alignments (REF/HYP/Eval lines with S/D/I marks, like "
                   "sclite pralign) of HYP to FILE, atomically.")
@click.option("--allow-extra", is_flag=True,
              help="Ignore hypothesis ids that are not in the reference (with a warning) "
                   "instead of stopping with an error.")
@click.option("--alpha", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level of the two-sided MAPSSWE test (--compare).")
@output_option
@common_options
def score_wer(ref_path: str, hyp_path: str, compare_path: str | None, input_format: str,
              out_format: str, lowercase: bool, strip_punct: bool, utt2spk_path: str | None,
              details_path: str | None, allow_extra: bool, alpha: float, output: str) -> None:
    """Score HYP against REF by utterance id: WER = 100 (S+D+I)/N percent.

    Alignments are sclite's (insertion/deletion cost 3, substitution 4), so counts equal
    sclite's; plain scoring uses RapidFuzz and re-aligns only where sclite's weights change
    the result. A reference id without hypothesis counts as all deletions and is reported;
    a hypothesis id without reference is an error unless --allow-extra. Empty hypotheses
    are valid. The report carries a signature of the normalization and the version.
    """
    from asrpriv.io.kaldi import read_map
    from asrpriv.io.output import open_output
    from asrpriv.wer.report import score, write_details, write_json, write_text
    from asrpriv.wer.transcripts import Normalizer, read_transcript

    stdin_users = [p for p in (ref_path, hyp_path, compare_path, utt2spk_path) if p == "-"]
    if len(stdin_users) > 1:
        raise AsrprivError("only one input can be standard input ('-')")
    normalizer = Normalizer(lowercase=lowercase, strip_punct=strip_punct)
    ref = read_transcript(ref_path, input_format, normalizer)
    if not ref.words:
        from asrpriv.errors import InputError

        raise InputError(ref_path, None, "empty input: expected reference transcripts")
    hyp = read_transcript(hyp_path, input_format, normalizer)
    other = read_transcript(compare_path, input_format, normalizer) if compare_path else None
    utt2spk = read_map(utt2spk_path, "speaker") if utt2spk_path else None
    report = score(ref, hyp, normalizer, allow_extra=allow_extra, utt2spk=utt2spk,
                   utt2spk_path=utt2spk_path, paths=details_path is not None, compare=other,
                   alpha=alpha, warn=warn)
    if details_path is not None:
        with open_output(details_path) as f:
            write_details(report, ref, hyp, f)
    with open_output(output) as f:
        (write_json if out_format == "json" else write_text)(report, f)
