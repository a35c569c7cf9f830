"""``asrpriv import-nbest``: another recognizer's N-best lists to our N-best TSV."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options, output_option
from asrpriv.io.tokens import HELP as TOKENS_HELP

HELP = """Convert N-best lists from Kaldi, ESPnet, NeMo, SRILM, icefall or any TSV/CSV
to our N-best TSV (utt_id, rank, am_score/lm_score or score, text; docs/FORMATS.md),
with natural-log scores (higher is better) and 1-based ranks. PATH is what the tool
leaves:

\b
  kaldi    directory with text (or words.int + --words), ac_cost, lm_cost keyed UTT-N
           (lattice-to-nbest | nbest-to-linear): am = -S*ac_cost, lm = -lm_cost
           (a graph cost); costs are written unscaled, S = --acoustic-scale
           (no lm_cost: am_score only); or lmrescore_nbest.sh's archives.J/ (words_text,
           acwt, lmwt.withlm): one of them, or the decode dir holding them (merged);
           or a lattice-to-nbest archive in text form (a file, '-' or ark,t: specifier;
           --words for integer ids); the tables may be binary archives;
           a lattice is refused (use --from kaldi-lattice)
  kaldi-lattice  Kaldi lattices in text form (lattice-copy ... ark,t:-; a file, '-' or
           an ark,t: specifier): the --n best distinct word sequences under
           graph + S*acoustic (S = --acoustic-scale), as lattice-to-nbest +
           nbest-to-linear; am = -acoustic cost, lm = -graph cost (unscaled)
  espnet   decoding directory with 1best_recog/, 2best_recog/, ... (text, score), or
           asr.sh's decode dir / logdir with output.J/ job folders, merged
  nemo     beams file (text<TAB>score, beam-size lines per entry) + --manifest,
           or a transcribe_speech.py manifest with pred_text (1-best)
  srilm    one N-best file, a directory of per-utterance N-best files, or a list
           file of them ('-': that list on stdin) (ac lm nwords words in log10;
           NBestList1.0/2.0 in bytelog);
           SRILM's non-events <s> </s> -pau- are dropped (--drop-tokens srilm)
  icefall  recogs-*.txt (CUT:<TAB>hyp=[...]): the 1-best, no scores
  tsv      any delimited table with a header; --map SOURCE=OURS,...

The mapping of each format is in docs/FORMATS.md ("Importing N-best lists").

Nothing is written until the whole input has been read and checked (a first pass over
PATH; '-' as PATH, --manifest or --words is standard input, copied once to a temporary
file first).
If writing fails part-way all the same, a file given with -o is not created, and on
standard output the stream ends with a '#asrpriv-aborted: ...' line that every N-best
reader refuses, so 'import-nbest ... | rescore-nbest' fails too (scripts: set -o pipefail).
"""



@click.command("import-nbest", help=HELP)
@click.option("--from", "source", required=True,
              type=click.Choice(["kaldi", "kaldi-lattice", "espnet", "nemo", "srilm", "icefall", "tsv"]),
              help="Format of PATH.")
@click.argument("path", metavar="PATH")
@click.option("--manifest", default=None, metavar="FILE",
              help="nemo: the input manifest (JSON lines) naming the utterances of the beams file.")
@click.option("--id-field", default=None, metavar="NAME",
              help="nemo: manifest field holding the utterance id (default: the audio file name "
                   "without extension).")
@click.option("--beam-size", type=WholeNumber(min=1), default=None,
              help="nemo: candidates per utterance in the beams file (default: lines / entries).")
@click.option("--words", "words", default=None, metavar="words.txt",
              help="kaldi: symbol table; read words.int instead of text. kaldi-lattice: the "
                   "symbol table of the lattices' word ids.")
@click.option("--n", "n_best", type=WholeNumber(min=1), default=None, metavar="N",
              help="kaldi-lattice: distinct word sequences per lattice (default 1, as "
                   "lattice-to-nbest --n).")
@click.option("--acoustic-scale", type=FiniteFloat(min=0.0, min_open=True), default=1.0,
              show_default=True,
              help="kaldi: am_score = -SCALE * ac_cost (1 keeps Kaldi's unscaled acoustic "
                   "log-likelihood). kaldi-lattice: the acoustic scale that ranks the paths "
                   "(lattice-to-nbest --acoustic-scale); the costs are written unscaled.")
@click.option("--map", "mapping", default=None, metavar="SRC=OURS,...",
              help="tsv: rename source columns to ours (utt_id, text, rank, am_score, lm_score, "
                   "score, confidence, client), e.g. hyp=text,key=utt_id.")
@click.option("--delimiter", default=None, metavar="CHAR",
              help="tsv: field delimiter (default: sniffed from the header; 'tab' for a tab).")
@click.option("--log-base", type=click.Choice(["e", "10"]), default="e", show_default=True,
              help="tsv: log base of the score columns (10 = multiply by ln 10).")
@click.option("--ref-out", default=None, metavar="FILE",
              help="icefall: also write the ref= transcripts as Kaldi text to FILE.")
@click.option("--drop-tokens", "drop_tokens", default=None, metavar="SPEC",
              help=TOKENS_HELP + " Default: 'srilm' for --from srilm, else none.")
@output_option
@common_options
def import_nbest(source, path, manifest, id_field, beam_size, words, n_best, acoustic_scale, mapping,
                 delimiter, log_base, ref_out, drop_tokens, output) -> None:
    from asrpriv.commands.options import info
    from asrpriv.io.importers import ImportSettings, run_import

    result = run_import(ImportSettings(
        source=source, path=path, output=output, drop_tokens=drop_tokens, words=words,
        acoustic_scale=acoustic_scale, manifest=manifest, id_field=id_field, beam_size=beam_size,
        ref_out=ref_out, mapping=mapping, delimiter=delimiter, log_base=log_base, n=n_best))
    if result.note:
        info(f"import-nbest: {result.note}")
    info(result.summary())
