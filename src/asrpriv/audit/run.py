"""One audit run: items -> geometry -> clusters -> scores, rank test, probes -> report files."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.audit.labels import read_labels


@dataclass
class AuditRequest:
    inputs: list[str]
    labels_path: str
    method: str = "ward"
    layer: str | None = None
    clusters: int | None = None
    size: int | None = None
    epsilon: float = 1.5
    seed: int | None = None
    rank_label: str | None = None
    rank_distractors: int = 49
    rank_repeats: int = 50
    probe_labels: list[str] = field(default_factory=list)
    probe_groups: str | None = None
    probe_folds: int = 5
    color_label: str | None = None
    memory_budget: int = 1 << 30
    allow_seeded: bool = False
    #: permutation tests of purity / pure clusters / entropy and of the mean rank, and bootstrap
    #: resamples of the mean rank's interval (asrpriv.audit.permutation); 0 = off
    permutations: int = 999
    #: the label column whose values are the sampled units (e.g. speaker): the tests relabel at
    #: that unit (asrpriv.audit.permutation.scheme_of), the probe's folds keep a unit's items
    #: together and its intervals resample units (unless probe_groups names another column)
    unit: str | None = None


def run_audit(request: AuditRequest, progress=None) -> dict:
    """Run the audit; returns everything the report needs (assignment, scores, linkage...).

    The items and their labels (:func:`_items_and_labels`), their geometry (a centred Gram
    matrix streamed in blocks), the clusters (:func:`_cluster`), the cluster scores and their
    permutation tests, then the attacks on the same distances (:func:`_attacks`: the speaker
    rank test and the linear probe)."""
    from asrpriv.audit import metrics
    from asrpriv.audit.gram import block_dims_for, centred_gram
    from asrpriv.audit.items import VectorSource
    from asrpriv.provenance import state_to_json

    items, privacy, columns, labels = _items_and_labels(request)
    n = len(items)
    source = VectorSource(items, request.layer)
    geometry = centred_gram(source.iter_blocks(block_dims_for(n), request.memory_budget), n,
                            progress=progress)
    assignment, linkage = _cluster(request, geometry, labels[columns[0]], n)
    scores = {col: metrics.score_clusters(assignment, labels[col]).as_dict() for col in columns}
    report: dict = {
        "method": request.method, "items": n, "dim": geometry.dim, "kind": source.kind,
        "layer": request.layer, "clusters": len(set(assignment)),
        "sizes": {str(k): v for k, v in metrics.size_histogram(assignment).items()},
        "labels": scores,
        "purity": {col: scores[col]["purity"] for col in columns},
        "entropy": {col: scores[col]["entropy"] for col in columns},
        "settings": {"seed": request.seed, "size": request.size, "epsilon": request.epsilon,
                     "clusters_requested": request.clusters, "log_base": 2,
                     "unit": request.unit},
        # what the report reveals is what its items reveal (privacy-report reads this)
        "privacy_state": state_to_json(privacy),
    }
    if request.permutations:
        from asrpriv.audit.permutation import cluster_tests

        report["permutation"] = cluster_tests(assignment, labels, columns, request.permutations,
                                              request.seed, request.unit)
    small = [col for col in columns if len(set(labels[col])) <= 5]
    if small:
        report["confusion"] = {col: {str(c): row for c, row in
                                     metrics.confusion(assignment, labels[col]).items()}
                               for col in small}
    _attacks(request, report, geometry, labels)
    return {"items": items, "assignment": assignment, "labels": labels, "columns": columns,
            "report": report, "linkage": linkage}


def _items_and_labels(request: AuditRequest):
    """``(items, privacy state, label columns, column -> one label per item)``; every item
    must have labels and every label column named in the request must exist."""
    from asrpriv.audit.items import expand_items
    from asrpriv.provenance import check_read_files

    columns, label_rows = read_labels(request.labels_path)
    items = expand_items(request.inputs)
    privacy = check_read_files([item.path for item in items], request.allow_seeded)
    missing = [item.name for item in items if item.name not in label_rows]
    if missing:
        raise InputError(request.labels_path, None,
                         f"no labels for {len(missing)} item(s), e.g. {missing[0]!r} ({_path_of(items, missing[0])})")
    for name in [request.rank_label, request.color_label, request.probe_groups, request.unit,
                 *request.probe_labels]:
        if name is not None and name not in columns:
            raise AsrprivError(f"no label column {name!r} in {request.labels_path} "
                               f"(columns: {', '.join(columns)})")
    labels = {col: [label_rows[item.name][i] for item in items] for i, col in enumerate(columns)}
    return items, privacy, columns, labels


def _cluster(request: AuditRequest, geometry, first_labels: list[str], n: int):
    """``(assignment, linkage)`` by the request's method: Ward (k from ``clusters``, ``size``
    or the first label column's classes; its linkage kept for the dendrogram), k-means, or
    fixed-size clusters (divisive, constrained, random)."""
    from asrpriv.audit import clustering

    method = request.method
    condensed = geometry.condensed_distances()
    if method == "ward":
        k = request.clusters or (round(n / request.size) if request.size
                                 else len(set(first_labels)))
        k = max(1, min(k, n))
        return clustering.ward_clusters(condensed, k), clustering.ward_linkage(condensed)
    if method == "kmeans":
        k = request.clusters or 2
        if not 1 <= k <= n:
            raise AsrprivError(f"{arg('clusters')} must be between 1 and the number of items ({n})")
        return clustering.kmeans_clusters(geometry.embedding(), k, request.seed), None
    size = request.size or 4
    if request.clusters:
        raise AsrprivError(f"{arg('method')} {method} makes clusters of a fixed {arg('size')}, not {arg('clusters')}")
    if method == "divisive":
        return clustering.divisive_clusters(geometry.distances(), size, request.epsilon), None
    if method == "constrained":
        return clustering.constrained_clusters(geometry.squared_distances(), size), None
    if method == "random":
        return clustering.random_clusters(n, size, random.Random(request.seed)), None
    raise AsrprivError(f"unknown method {method!r}")  # pragma: no cover - click validates


def _attacks(request: AuditRequest, report: dict, geometry, labels: dict) -> None:
    """The speaker rank test (``rank_label``, with its permutation test) and the linear
    probe (``probe_labels``), added to ``report``."""
    if request.rank_label:
        from asrpriv.audit.rank_test import rank_test

        distances = geometry.distances()
        try:
            result = rank_test(distances, labels[request.rank_label], random.Random(request.seed),
                               request.rank_distractors, request.rank_repeats)
        except ValueError as err:
            raise AsrprivError(f"{arg('rank_label')} {request.rank_label}: {err}") from None
        report["rank"] = {"label": request.rank_label, **result.as_dict()}
        if request.permutations:
            from asrpriv.audit.permutation import rank_tests

            report["rank"].update(rank_tests(distances, labels[request.rank_label], result.mean_rank,
                                             result.per_class, request.permutations, request.seed,
                                             request.rank_distractors, request.rank_repeats,
                                             labels[request.unit] if request.unit else None))
    if request.probe_labels:
        from asrpriv.audit.probe import linear_probe

        embedding = geometry.embedding()
        grouped_by = request.probe_groups or request.unit
        groups = labels[grouped_by] if grouped_by else None
        report["probe"] = {}
        for col in request.probe_labels:
            try:
                result = linear_probe(embedding, labels[col], col, request.seed,
                                      request.probe_folds, groups, grouped_by)
            except ValueError as err:
                raise AsrprivError(f"{arg('probe_label')} {col}: {err}") from None
            report["probe"][col] = result.as_dict()


def _path_of(items, name):
    return next(item.path for item in items if item.name == name)


def write_outputs(result: dict, out_dir: str, color_label: str | None, version: str) -> None:
    """assignments.tsv, report.json, report.md and the plots, each written atomically."""
    import os

    from asrpriv.io.output import atomic_path, open_output

    os.makedirs(out_dir, exist_ok=True)
    report = dict(result["report"])
    report["version"] = version
    with open_output(os.path.join(out_dir, "assignments.tsv")) as f:
        f.write("item\tcluster\n")
        for item, cluster in zip(result["items"], result["assignment"]):
            f.write(f"{item.name}\t{cluster}\n")
    with open_output(os.path.join(out_dir, "report.json")) as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")
    with open_output(os.path.join(out_dir, "report.md")) as f:
        f.write(markdown_report(report))
    color = color_label or result["columns"][0]
    import matplotlib

    matplotlib.use("Agg")
    if result["linkage"] is not None:
        path = os.path.join(out_dir, "dendrogram.png")
        with atomic_path(path) as tmp:
            _dendrogram(result, color, tmp)
    path = os.path.join(out_dir, "sizes.png")
    with atomic_path(path) as tmp:
        _sizes_plot(report, tmp)


def markdown_report(report: dict) -> str:
    lines = [f"# cluster-weights: {report['method']}", "",
             f"{report['items']} items of dimension {report['dim']} ({report['kind']}"
             + (f", layer `{report['layer']}`" if report.get("layer") else "") + f"); "
             f"{report['clusters']} clusters. Entropy in bits (log base 2), 004 Eq. 4.3-4.5.", "",
             "| label | clusters | pure clusters | purity | entropy |", "|---|---|---|---|---|"]
    perm = report.get("permutation")
    for col, s in report["labels"].items():
        t = (perm or {}).get("labels", {}).get(col)
        pure, purity, entropy = str(s["pure_clusters"]), f"{s['purity']:.3f}", f"{s['entropy']:.3f}"
        if t:
            u = t["purity"]
            pure += f" (p {fmt_p(t['pure_clusters']['p'])})"
            purity += (f" (p {fmt_p(u['p'])}; null {u['null_mean']:.3f} "
                       f"[{u['null_95'][0]:.3f}, {u['null_95'][1]:.3f}])")
            entropy += f" (p {fmt_p(t['entropy']['p'])})"
        lines.append(f"| {col} | {s['clusters']} | {pure} | {purity} | {entropy} |")
    if perm:
        lines += ["", f"p: one-sided {perm['test']}; N = {perm['permutations']} permutations "
                      f"(seed {perm['seed']}); null: the permutations' mean purity and central 95% range."]
        lines += ["", "Each column's relabelling (what its test assumes exchangeable): "
                  + "; ".join(f"`{col}` {scheme_text(t.get('permuted', 'items'), perm.get('unit'))}"
                              for col, t in perm.get("labels", {}).items()) + "."]
    lines += ["", "Cluster sizes: " + ", ".join(f"{k}: {v}" for k, v in report["sizes"].items()), ""]
    if "rank" in report:
        r = report["rank"]
        extra = ""
        if "permutation" in r:
            q = r["permutation"]
            lo, hi = r["bootstrap_ci95"]
            extra = (f" Bootstrap 95% interval [{lo:.2f}, {hi:.2f}] ({r['bootstrap_resamples']} resamples of "
                     f"the classes); permutation p {fmt_p(q['p'])} (null mean {q['null_mean']:.2f} "
                     f"[{q['null_95'][0]:.2f}, {q['null_95'][1]:.2f}], {q['permutations']} permutations of "
                     f"the labels, the test rerun on the same distances).")
        lines += [f"Speaker-identification rank test (004 §4.5) on `{r['label']}`: mean rank "
                  f"**{r['mean_rank']:.2f}** over {r['classes']} classes ({r['distractors']} "
                  f"distractors, {r['repeats']} repeats; chance {r['chance_rank']:.1f}, perfect 1.0)."
                  + extra, ""]
    for col, p in report.get("probe", {}).items():
        auc = (f", AUC {p['auc']:.3f} [{p['auc_ci'][0]:.3f}, {p['auc_ci'][1]:.3f}]"
               if p.get("auc") is not None and p.get("auc_ci") else "")
        grouped = f", folds grouped by `{p['grouped_by']}`" if p.get("grouped_by") else ""
        interval = f" Intervals: {p['interval']}." if p.get("interval") else ""
        lines += [f"Linear probe for `{col}`: accuracy {p['accuracy']:.3f} "
                  f"[{p['accuracy_ci'][0]:.3f}, {p['accuracy_ci'][1]:.3f}] (chance "
                  f"{p['chance']:.3f}){auc}; {p['folds']}-fold cross-validation{grouped}.{interval}", ""]
    for col, table in report.get("confusion", {}).items():
        classes = sorted(next(iter(table.values())))
        lines += [f"Confusion table for `{col}`:", "",
                  "| cluster | " + " | ".join(classes) + " |",
                  "|---|" + "---|" * len(classes)]
        for cluster, row in table.items():
            lines.append(f"| {cluster} | " + " | ".join(str(row[c]) for c in classes) + " |")
        lines.append("")
    return "\n".join(lines)


def scheme_text(scheme: str, unit: str | None) -> str:
    """What a relabelling scheme assumes, in words (asrpriv.audit.permutation.SCHEMES)."""
    from asrpriv.audit.permutation import SCHEMES

    return SCHEMES[scheme].format(unit=unit or "unit")


def fmt_p(p: float) -> str:
    """A p-value in 3 significant digits (the add-one estimate is never 0)."""
    return f"{p:.3g}"


def _dendrogram(result: dict, color_label: str, path: str) -> None:
    import matplotlib.pyplot as plt
    from scipy.cluster.hierarchy import dendrogram

    names = [item.name for item in result["items"]]
    classes = result["labels"][color_label]
    order = sorted(set(classes))
    palette = plt.get_cmap("tab10" if len(order) <= 10 else "tab20")
    colour = {c: palette(i % palette.N) for i, c in enumerate(order)}
    n = len(names)
    fig, ax = plt.subplots(figsize=(max(8, min(40, n * 0.15)), 6))
    show_labels = n <= 200
    tree = dendrogram(result["linkage"], ax=ax, labels=names if show_labels else None,
                      no_labels=not show_labels, color_threshold=0, above_threshold_color="0.4",
                      leaf_font_size=8 if n <= 60 else 6)
    if show_labels:
        for tick in ax.get_xticklabels():
            tick.set_color(colour[classes[names.index(tick.get_text())]])
    else:
        leaves = tree["leaves"]
        for x, leaf in enumerate(leaves):
            ax.add_patch(plt.Rectangle((5 + 10 * x - 5, -0.02 * ax.get_ylim()[1]), 10,
                                       0.02 * ax.get_ylim()[1], color=colour[classes[leaf]],
                                       clip_on=False))
    ax.set_title(f"Ward linkage on Euclidean distances ({n} items; leaves coloured by {color_label})")
    ax.set_ylabel("merge height (Ward, Euclidean)")
    if len(order) <= 12:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=colour[c], label=c) for c in order], fontsize=7,
                  loc="upper right")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


def _sizes_plot(report: dict, path: str) -> None:
    import matplotlib.pyplot as plt

    sizes = {int(k): v for k, v in report["sizes"].items()}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(list(sizes), list(sizes.values()), color="0.4")
    ax.set_xlabel("items per cluster")
    ax.set_ylabel("clusters")
    ax.set_xticks(list(sizes))
    ax.set_title(f"Cluster sizes ({report['method']})")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


def cluster_weights(request: AuditRequest, out_dir: str, progress=None) -> dict:
    """The step ``cluster-weights`` (paper 004 §4.3-4.6): :func:`run_audit` on ``request``,
    then its files (assignments, report, plots) written into ``out_dir``; returns the result
    (its ``report``: purity and entropy in bits per label column, clusters, tests)."""
    from asrpriv import __version__

    result = run_audit(request, progress=progress)
    write_outputs(result, out_dir, request.color_label, __version__)
    return result
