"""``asrpriv sanitize``: replace named entities by random entities of their class (paper 003 §2.1)."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, common_options, info, output_option, seed_option


def _classes(_ctx, _param, value: str) -> tuple[str, ...]:
    classes = tuple(c.strip() for c in value.split(",") if c.strip())
    if not classes:
        raise click.BadParameter("expected class names, e.g. PER,LOC")
    return classes


@click.command("sanitize")
@click.argument("text", default="-", metavar="[TEXT]")
@click.option("--spans", "spans_path", metavar="FILE", default=None,
              help="Entity spans of TEXT (TSV utt_id start end class type text; 0-based word "
                   "positions, end exclusive), e.g. examples/data/ami/ne/train_ne.tsv.")
@click.option("--lexicon", "lexicon_path", metavar="FILE", default=None,
              help="Without --spans: entity strings per class (CLASS<TAB>words per line), "
                   "found in TEXT by longest match.")
@click.option("--keep", type=FiniteFloat(0.0, 1.0), default=0.0, show_default=True,
              help="Probability of keeping each selected entity unchanged.")
@click.option("--classes", default="PER,LOC,ORG,TIME,NUM", show_default=True, callback=_classes,
              metavar="C1,C2,...", help="Entity classes to transform; spans of other classes "
                                         "pass through unchanged.")
@click.option("--pool", "pool_path", metavar="FILE", default=None,
              help="Replacement strings per class (CLASS<TAB>words). Default: the distinct "
                   "strings of the spans (or of the lexicon) of each class.")
@click.option("--spans-out", "spans_out", metavar="FILE", default=None,
              help="Write the spans of the OUTPUT text (positions shift when a replacement's "
                   "length differs; replaced spans get type SANITIZED).")
@click.option("--tag", is_flag=True,
              help="Write class-tagged text instead: each selected entity becomes one token "
                   "<CLASS> (e.g. <PER>), for class LMs.")
@seed_option("Seed of the replacement draws (repeatable, NOT private: whoever knows the seed "
             "knows which entities were kept). Default: the OS's secure source.")
@output_option
@common_options
def sanitize(text, spans_path, lexicon_path, keep, classes, pool_path, spans_out, tag, seed, output):
    """Privacy-transform Kaldi TEXT: named entities replaced by random entities of their class.

    The word-by-word, same-class strategy of Adelani et al. (2020) used by paper 003 §2.1:
    each entity occurrence of a selected class is kept with probability --keep, else the
    whole span is replaced by a string of the same class drawn uniformly from the pool.
    Entities come from --spans (checked against TEXT) or from --lexicon (longest match).
    stderr reports how many entities of each class were replaced.

    \b
    What this gives: for one detected entity whose true string is in its class's pool of m
    strings, the output string is a generalized randomized response: P(same) = keep +
    (1-keep)/m, P(each other) = (1-keep)/m, so the string is eps-locally-DP with
    eps = ln(1 + keep*m/(1-keep)) (keep 0: eps 0; keep 1: no protection). This is our own
    derivation; paper 003 cites Adelani et al. 2020 for a DP guarantee, whose text is not in
    our library, so check its exact conditions before relying on them.

    \b
    What it does NOT give: an entity the spans or lexicon miss stays in clear; the class,
    position and length of each entity, and all other words, are released as they are; k
    occurrences of one entity cost k*eps (they are drawn independently); the default pool
    is made from the private spans themselves, so every entity string of the input can appear
    somewhere in the output (use a public --pool for the bound above to mean anything); a
    --seed makes the draws recomputable. The transformation is NOT differential privacy of
    the text as a whole.
    """
    from asrpriv.sanitize.transform import SanitizeSettings, sanitize as run

    report = run(SanitizeSettings(text=text, spans=spans_path, lexicon=lexicon_path, keep=keep,
                                  classes=classes, pool=pool_path, spans_out=spans_out, tag=tag,
                                  seed=seed, output=output))
    info(f"sanitize: {report.summary(tag)}" + (f"; keep={keep}" if not tag else "")
         + (f"; seed={seed} (not private)" if seed is not None and not tag else ""))
