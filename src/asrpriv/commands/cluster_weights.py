"""``asrpriv cluster-weights``: the leakage audit of shared model updates (paper 004)."""

from __future__ import annotations

import click

from asrpriv.commands.options import FiniteFloat, WholeNumber, common_options, seed_option

METHODS = ("ward", "divisive", "constrained", "random", "kmeans")


@click.command("cluster-weights")
@click.argument("inputs", nargs=-1, required=True, metavar="FILE...")
@click.option("--labels", "labels_path", required=True, metavar="LABELS.tsv",
              help="Header 'item<TAB>label...', one row per item (e.g. subset, speaker, gender).")
@click.option("--method", type=click.Choice(METHODS), default="ward", show_default=True,
              help="ward: Ward linkage cut into --clusters; divisive / constrained: 004's Methods "
                   "1 and 2 with clusters of --size; random: the random baseline of --size; "
                   "kmeans: k-means with --clusters (default 2).")
@click.option("--layer", default=None, metavar="PATTERN",
              help="Model/delta files: parameters whose names match this glob (e.g. "
                   "'blocks.0.*', 'output.weight'), flattened and concatenated. Default: all.")
@click.option("--clusters", type=WholeNumber(min=1), default=None,
              help="Number of clusters (ward, kmeans). Ward default: items / --size, else the "
                   "number of classes of the first label column.")
@click.option("--size", type=WholeNumber(min=1), default=None,
              help="Cluster size for divisive, constrained and random [4, as in 004].")
@click.option("--epsilon", type=FiniteFloat(min=1.0), default=1.5, show_default=True,
              help="divisive: split until every cluster has < size x epsilon items (004 §4.4.2).")
@click.option("--rank-label", default=None, metavar="COL",
              help="Run the speaker-identification rank test (004 §4.5) with this label column.")
@click.option("--rank-distractors", type=WholeNumber(min=1), default=49, show_default=True)
@click.option("--rank-repeats", type=WholeNumber(min=1), default=50, show_default=True)
@click.option("--probe-label", "probe_labels", multiple=True, metavar="COL",
              help="Cross-validated logistic-regression probe predicting this label (repeatable).")
@click.option("--probe-groups", default=None, metavar="COL",
              help="Keep items with the same value of COL in the same fold (stratified group "
                   "k-fold) and resample COL's values for the probe's intervals [--unit].")
@click.option("--probe-folds", type=WholeNumber(min=2), default=5, show_default=True)
@click.option("--permutations", type=WholeNumber(min=0), default=999, show_default=True,
              metavar="N",
              help="Permutation tests: purity, pure clusters and entropy of every label column "
                   "against N relabellings (the clusters fixed), and the rank test's mean rank "
                   "against N relabellings of --rank-label (the test rerun on the same "
                   "distances), add-one p-values; plus a bootstrap 95% interval of the mean rank "
                   "over classes (N resamples). Which relabellings: see --unit. Seeded by --seed. "
                   "0 = off.")
@click.option("--unit", default=None, metavar="COL",
              help="The label column whose values are the sampled units (e.g. speaker: a "
                   "speaker's items share a signal, so only speakers are exchangeable). The "
                   "tests then assume: COL itself (and any column naming every unit by its own "
                   "value) permuted over the items (null: the unit does not leak, items "
                   "exchangeable); a column constant within each unit and shared by several "
                   "(gender) permuted over the units (null: it does not leak though the unit "
                   "may; units exchangeable); a column that varies inside a unit (an item's "
                   "meeting) permuted by whole units, each unit's values in item order moved to "
                   "a unit of as many items (units exchangeable, nothing assumed inside one). "
                   "The probe's folds and intervals group by COL too. Without --unit every test "
                   "permutes over the items (items assumed exchangeable) and the probe's "
                   "intervals are over items.")
@click.option("--color-label", default=None, metavar="COL",
              help="Label column that colours the dendrogram's leaves [the first].")
@click.option("--memory", "memory_mb", type=WholeNumber(min=16), default=1024, show_default=True,
              help="MB of item vectors to hold in memory; beyond it model files are spilled to a "
                   "temporary file and read back by dimension blocks.")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="Writes DIR/assignments.tsv, report.json, report.md, sizes.png and, for ward, "
                   "dendrogram.png.")
@seed_option("Seed for the random baseline, k-means, the rank test and the probe's folds.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept items made with seeded (not private) noise.")
@common_options
def cluster_weights(inputs, labels_path, method, layer, clusters, size, epsilon, rank_label,
                    rank_distractors, rank_repeats, probe_labels, probe_groups, probe_folds,
                    permutations, unit, color_label, memory_mb, out_dir, seed, allow_seeded=False):
    """Audit what shared artifacts reveal about who made them (paper 004 §4.3-4.6).

    FILE... are model or delta files (one vector per file: the --layer parameters), counts
    files (vectors over the union of their words), or .npy vectors; '@LIST' reads
    'item<TAB>path' lines. The item name is the file name without its extension.

    Pairwise Euclidean distances come from a centred Gram matrix accumulated block by block
    (memory ~ items^2, not items x dimensions). Reports purity and entropy (bits) per label
    column, the number of pure clusters and the size histogram, each with a permutation
    p-value (--permutations); optionally the rank test (with a permutation p-value and a
    bootstrap interval) and a linear probe (accuracy and AUC with 95% intervals).

    What each test assumes: a permutation p-value is valid when its relabellings are
    exchangeable under the null. With --unit (e.g. speaker) the labels are permuted at the
    unit that was sampled, as --unit says; report.json names each column's scheme under
    permutation.labels.COL.permuted (items, units or blocks). The rank test's bootstrap
    resamples classes; the probe's folds keep a unit's items together and its intervals are a
    bootstrap over units (without groups: Wilson over items, AUC bootstrap over items).
    """
    from asrpriv.audit.run import AuditRequest, cluster_weights as run
    from asrpriv.commands.options import info
    from asrpriv.progress import Progress

    request = AuditRequest(inputs=list(inputs), labels_path=labels_path, method=method,
                           layer=layer, clusters=clusters, size=size, epsilon=epsilon, seed=seed,
                           rank_label=rank_label, rank_distractors=rank_distractors,
                           rank_repeats=rank_repeats, probe_labels=list(probe_labels),
                           probe_groups=probe_groups, probe_folds=probe_folds,
                           color_label=color_label, memory_budget=memory_mb << 20,
                           allow_seeded=allow_seeded, permutations=permutations, unit=unit)
    with Progress("dims") as bar:
        result = run(request, out_dir, progress=bar.update)
    report = result["report"]
    info(f"cluster-weights: {report['items']} items, {report['clusters']} clusters; " +
         "; ".join(f"{col}: purity {s['purity']:.3f}, entropy {s['entropy']:.3f}"
                   for col, s in report["labels"].items()))
