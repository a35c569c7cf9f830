"""Permutation tests and bootstrap intervals for the audit's statistics (issue 29).

Is a clustering's purity, or the rank test's mean rank, more than chance would give? Under the
null hypothesis the labels tell nothing about the items' vectors, so the labels are exchangeable
over the items: permuting a label column over the items leaves the joint distribution of
(vectors, labels) unchanged. Each test keeps what was computed from the vectors fixed (the
cluster assignment; the distance matrix) and recomputes the statistic under ``N`` random
permutations of the labels. The p-value is the add-one estimate

    p = (1 + #{null statistic at least as extreme as the observed one}) / (N + 1),

which is a valid p-value for any N (never 0; the smallest possible is 1 / (N + 1)).

- Cluster tests (:func:`cluster_tests`): purity and the number of pure clusters (larger = more
  structure: a null value counts when it is >= the observed one) and the total entropy (smaller =
  more structure: counts when <=), per label column, the assignment held fixed. All permutations
  are scored at once from a (permutations x clusters x classes) contingency tensor, built with one
  ``bincount`` per chunk of permutations.
- Rank test (:func:`rank_tests`): the mean rank of 004 §4.5 (smaller = more leakage) with the
  rank-test labels permuted over the items, the same distances. Each permutation reruns the
  whole test, its random pairs and distractors included: a class's pair is a random ordered pair
  of its (permuted) items; the number of distractors nearer to x_i than x_j (and of ties) among
  ``take`` distractors drawn without replacement from the ``m`` other-class items is
  hypergeometric, so ``repeats`` draws per class are sampled directly instead of drawing the
  distractors themselves. The null statistic so has exactly the distribution of
  :func:`asrpriv.audit.rank_test.rank_test`'s under permuted labels.
  Also a percentile bootstrap 95% interval of the mean rank, resampling the classes (each class
  gives one per-class mean rank, the units the mean is over).

Everything is seeded from the audit's ``--seed`` through separate streams (``[seed, k]``), so the
tests do not disturb the random draws of the clustering, the rank test or the probe.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the default number of permutations (and of bootstrap resamples): p-values down to 0.001
DEFAULT_PERMUTATIONS = 999
#: elements of the largest intermediate array per chunk of permutations
CHUNK_ELEMENTS = 1 << 22

_STREAM_CLUSTER, _STREAM_RANK, _STREAM_BOOTSTRAP = 1, 2, 3

CLUSTER_TEST = ("permutation test: the clusters held fixed, the label column permuted over the "
                "items; p = (1 + #{null >= observed}) / (N + 1) for purity and pure clusters, "
                "#{null <= observed} for entropy")
RANK_TEST = ("permutation test: the rank-test labels permuted over the items, the test rerun "
             "(random pairs and distractors) on the same distances; "
             "p = (1 + #{null mean rank <= observed}) / (N + 1)")
RANK_BOOTSTRAP = "percentile bootstrap over classes (each class's mean rank one unit), 95%"


@dataclass(frozen=True)
class NullSummary:
    """An observed statistic against its permutation null distribution."""

    observed: float
    p: float
    extreme: int            # null statistics at least as extreme as the observed one
    permutations: int
    null_mean: float
    null_95: tuple[float, float]
    alternative: str        # "greater" (large = structure) or "less"

    def as_dict(self) -> dict:
        return {"observed": self.observed, "p": self.p, "extreme": self.extreme,
                "permutations": self.permutations, "null_mean": self.null_mean,
                "null_95": list(self.null_95), "alternative": self.alternative}


def rng_for(seed: int | None, stream: int):
    """An independent numpy generator for one test: seeded from ``[seed, stream]``."""
    import numpy as np

    return np.random.default_rng(None if seed is None else [abs(int(seed)), int(seed < 0), stream])


def summarize(observed: float, null, alternative: str, tol: float = 0.0) -> NullSummary:
    """The add-one p-value and the null's mean and central 95% range."""
    import numpy as np

    null = np.asarray(null, dtype=np.float64)
    if alternative == "greater":
        extreme = int(np.sum(null >= observed - tol))
    elif alternative == "less":
        extreme = int(np.sum(null <= observed + tol))
    else:  # pragma: no cover - internal
        raise ValueError(alternative)
    count = len(null)
    lo, hi = (np.percentile(null, [2.5, 97.5]) if count else (float("nan"), float("nan")))
    return NullSummary(observed=float(observed), p=(1 + extreme) / (count + 1), extreme=extreme,
                       permutations=count, null_mean=float(null.mean()) if count else float("nan"),
                       null_95=(float(lo), float(hi)), alternative=alternative)


def random_permutations(n: int, count: int, rng, chunk: int):
    """``count`` uniform permutations of range(n), as (rows, n) arrays of at most ``chunk`` rows."""
    import numpy as np

    base = np.arange(n)
    done = 0
    while done < count:
        rows = min(chunk, count - done)
        yield rng.permuted(np.tile(base, (rows, 1)), axis=1)
        done += rows


def _codes(labels) -> tuple:
    import numpy as np

    classes, codes = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    return classes, codes.astype(np.int64)


def cluster_statistics(assignment, labels, perms) -> dict:
    """Purity, pure clusters and entropy (bits) of ``assignment`` against ``labels[perm]`` for each
    row ``perm`` of ``perms`` (an iterable of (rows, n) index arrays): arrays, one value per row.

    ``correct`` is purity's numerator (sum over clusters of the largest class count), an integer.
    """
    import numpy as np

    assignment = np.asarray(assignment, dtype=np.int64)
    _, codes = _codes(labels)
    n = len(codes)
    if len(assignment) != n:
        raise ValueError("assignment and labels differ in length")
    _, assignment = np.unique(assignment, return_inverse=True)
    k = int(assignment.max()) + 1
    c = int(codes.max()) + 1
    sizes = np.bincount(assignment, minlength=k)
    correct, pure, entropy = [], [], []
    for block in perms:
        block = np.asarray(block, dtype=np.int64)
        rows = block.shape[0]
        flat = (np.arange(rows)[:, None] * k + assignment[None, :]) * c + codes[block]
        counts = np.bincount(flat.ravel(), minlength=rows * k * c).reshape(rows, k, c)
        top = counts.max(axis=2)
        correct.append(top.sum(axis=1))
        pure.append((top == sizes[None, :]).sum(axis=1))
        share = counts / sizes[None, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(counts > 0, counts * np.log2(np.where(counts > 0, share, 1.0)), 0.0)
        entropy.append(-terms.sum(axis=(1, 2)) / n)
    join = lambda parts, dtype: (np.concatenate(parts) if parts else np.zeros(0, dtype))  # noqa: E731
    return {"correct": join(correct, np.int64), "purity": join(correct, np.int64) / n,
            "pure_clusters": join(pure, np.int64), "entropy": join(entropy, np.float64)}


def cluster_null(assignment, labels, count: int, rng) -> dict:
    """:func:`cluster_statistics` under ``count`` random permutations of ``labels``."""
    n = len(labels)
    k = len(set(assignment))
    c = len(set(labels))
    chunk = max(1, CHUNK_ELEMENTS // max(1, k * c, n))
    return cluster_statistics(assignment, labels, random_permutations(n, count, rng, chunk))


def cluster_test(assignment, labels, count: int, rng) -> dict:
    """Purity, pure clusters and entropy of one label column against their permutation nulls."""
    import numpy as np

    n = len(labels)
    observed = cluster_statistics(assignment, labels, [np.arange(n)[None, :]])
    null = cluster_null(assignment, labels, count, rng)
    return {
        # integers compared exactly (purity = correct / n)
        "purity": _rescale(summarize(int(observed["correct"][0]), null["correct"], "greater"), n),
        "pure_clusters": summarize(int(observed["pure_clusters"][0]), null["pure_clusters"], "greater"),
        "entropy": summarize(float(observed["entropy"][0]), null["entropy"], "less", tol=1e-9),
    }


def _rescale(summary: NullSummary, n: int) -> NullSummary:
    """A summary of purity's integer numerator -> the same of purity (divided by n)."""
    return NullSummary(observed=summary.observed / n, p=summary.p, extreme=summary.extreme,
                       permutations=summary.permutations, null_mean=summary.null_mean / n,
                       null_95=(summary.null_95[0] / n, summary.null_95[1] / n),
                       alternative=summary.alternative)


def cluster_tests(assignment, labels: dict, columns: list[str], count: int,
                  seed: int | None) -> dict:
    """The ``permutation`` block of a report: every label column's cluster tests."""
    rng = rng_for(seed, _STREAM_CLUSTER)
    result = {}
    for col in columns:
        tests = cluster_test(assignment, labels[col], count, rng)
        result[col] = {name: summary.as_dict() for name, summary in tests.items()}
    return {"test": CLUSTER_TEST, "permutations": count, "seed": seed, "labels": result}


# -- the rank test ------------------------------------------------------------------------------

def rank_null(distances, labels, count: int, rng, distractors: int = 49, repeats: int = 50,
              perms=None):
    """Mean ranks of the rank test (004 §4.5) under ``count`` random permutations of ``labels``
    (or under the given ``perms``, an iterable of (rows, n) index arrays): one value per
    permutation."""
    import numpy as np

    d = np.asarray(distances, dtype=np.float64)
    classes, codes = _codes(labels)
    n = len(codes)
    members = [np.flatnonzero(codes == c) for c in range(len(classes))]
    eligible = [c for c in range(len(classes)) if len(members[c]) >= 2]
    if not eligible:
        raise ValueError("the rank test needs a class with at least two items")
    ecodes = np.asarray(eligible)
    first = np.asarray([members[c][0] for c in eligible])
    second = np.asarray([members[c][1] for c in eligible])
    others = np.asarray([n - len(members[c]) for c in eligible])       # m of each class
    take = np.minimum(distractors, others)
    e = len(eligible)
    if perms is None:
        chunk = max(1, CHUNK_ELEMENTS // (e * n))
        perms = random_permutations(n, count, rng, chunk)
    out = []
    for block in perms:
        block = np.asarray(block, dtype=np.int64)
        rows = block.shape[0]
        inverse = np.argsort(block, axis=1)       # inverse[r, o]: where original item o went
        permuted = codes[block]                   # permuted[r, k]: the label of position k
        i = inverse[:, first]                     # (rows, e): the query item x_i of each class
        j = inverse[:, second]                    # its partner x_j
        target = d[i, j]
        row = d[i]                                # (rows, e, n)
        other = permuted[:, None, :] != ecodes[None, :, None]
        closer = np.sum((row < target[..., None]) & other, axis=2)
        ties = np.sum((row == target[..., None]) & other, axis=2)
        shape = (repeats, rows, e)
        near = rng.hypergeometric(closer, others - closer, take, size=shape)
        ranks = 1.0 + near
        if ties.any():
            tied = rng.hypergeometric(ties, others - closer - ties, take - near, size=shape)
            ranks = ranks + 0.5 * tied
        out.append(ranks.mean(axis=0).mean(axis=1))
    return np.concatenate(out) if out else np.zeros(0)


def bootstrap_interval(values, count: int, rng, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (``count`` resamples)."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    means = np.empty(count)
    chunk = max(1, CHUNK_ELEMENTS // max(1, len(values)))
    for start in range(0, count, chunk):
        rows = min(chunk, count - start)
        means[start:start + rows] = values[rng.integers(0, len(values), (rows, len(values)))].mean(axis=1)
    tail = 100.0 * (1.0 - level) / 2.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(lo), float(hi)


def rank_tests(distances, labels, mean_rank: float, per_class: dict, count: int,
               seed: int | None, distractors: int = 49, repeats: int = 50) -> dict:
    """Keys added to a report's ``rank`` block: the permutation test of the mean rank and the
    bootstrap interval over classes."""
    null = rank_null(distances, labels, count, rng_for(seed, _STREAM_RANK), distractors, repeats)
    # mean ranks are means of half-integers: compare with a tolerance for float rounding
    summary = summarize(mean_rank, null, "less", tol=1e-9)
    lo, hi = bootstrap_interval(list(per_class.values()), count, rng_for(seed, _STREAM_BOOTSTRAP))
    return {"permutation": {"test": RANK_TEST, "seed": seed, **summary.as_dict()},
            "bootstrap_ci95": [lo, hi], "bootstrap_resamples": count,
            "bootstrap_test": RANK_BOOTSTRAP}


# -- tests of an audit made without them -----------------------------------------------------------

def add_saved_tests(report: dict, assignments_path: str, labels_path: str, count: int = 999) -> dict:
    """The tests of an audit made without ``--permutations``, from what it saved.

    The cluster tests need only the assignment (``assignments.tsv``) and the labels: they are
    the same tests as :func:`cluster_tests` (same seed streams), computed afterwards. The rank
    test's permutation null needs the distances, which an audit does not keep: only the
    bootstrap interval over the per-class mean ranks is added. Keys added to REPORT (returned):
    ``permutation`` (with ``"post_hoc": True``) and, under ``rank``, ``bootstrap_ci95``.
    """
    from asrpriv.audit.labels import read_labels
    from asrpriv.io.lines import iter_lines

    seed = (report.get("settings") or {}).get("seed")
    if "permutation" not in report:
        items, assignment = [], []
        for lineno, line in iter_lines(assignments_path):
            parts = line.split("\t")
            if lineno == 1 and parts[0] == "item":
                continue
            if len(parts) >= 2:
                items.append(parts[0])
                assignment.append(int(parts[1]))
        columns, rows = read_labels(labels_path)
        names = [c for c in columns if c in (report.get("labels") or {})]
        labels = {c: [rows[item][columns.index(c)] for item in items] for c in names}
        report["permutation"] = {**cluster_tests(assignment, labels, names, count, seed), "post_hoc": True}
    rank = report.get("rank")
    if rank and "bootstrap_ci95" not in rank and rank.get("per_class"):
        lo, hi = bootstrap_interval(list(rank["per_class"].values()), count, rng_for(seed, _STREAM_BOOTSTRAP))
        rank.update({"bootstrap_ci95": [lo, hi], "bootstrap_resamples": count,
                     "bootstrap_test": RANK_BOOTSTRAP, "post_hoc": True})
    return report
