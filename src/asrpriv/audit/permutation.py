"""Permutation tests and bootstrap intervals for the audit's statistics (issues 29 and 38).

Is a clustering's purity, or the rank test's mean rank, more than chance would give? A
permutation test draws its null from relabellings that leave the joint distribution of
(vectors, labels) unchanged when the null hypothesis holds. Each test keeps what was computed
from the vectors fixed (the cluster assignment; the distance matrix) and recomputes the statistic
under ``N`` random relabellings. The p-value is the add-one estimate

    p = (1 + #{null statistic at least as extreme as the observed one}) / (N + 1),

which is a valid p-value for any N (never 0; the smallest possible is 1 / (N + 1)).

**Which relabellings: the unit that was sampled** (issue 38). Items that share a unit (the 4
subsets of one speaker) share a signal whatever the label says, so they are not exchangeable
with items of other units; permuting a label that is constant within a unit over the items
would break up that unit and count the unit's own cohesion as evidence about the label
(anti-conservative: a speaker's items cluster together, and they share their gender). With a
unit column (``unit``: e.g. speaker) each label column is relabelled by one of three schemes
(:func:`scheme_of`):

- ``items``: the column *is* the unit (it names every unit by a value of its own: the speaker
  column itself). Its null is that the unit does not leak at all, so the items are
  exchangeable: permuted over the items. Also every column when there is no unit column.
- ``units``: the column is constant within every unit and shared by several units (gender, any
  label of the speaker). Its null is that the label does not leak although the unit may: the
  units are exchangeable, so the units' values are permuted over the units (each unit keeps its
  items together and receives another unit's value).
- ``blocks``: the column varies within some unit (the main meeting of each of a speaker's
  subsets). Its null is that the label does not leak beyond what the unit does: each unit's
  sequence of values (its items in input order) moves whole to another unit with as many items,
  so the pattern of shared values inside a unit (two subsets of one meeting) is kept and only the
  assignment of patterns to units is random. Valid under exchangeable units alone (nothing is
  assumed about the items inside a unit); units of a size no other unit has keep their values.

- Cluster tests (:func:`cluster_tests`): purity and the number of pure clusters (larger = more
  structure: a null value counts when it is >= the observed one) and the total entropy (smaller =
  more structure: counts when <=), per label column, the assignment held fixed. All relabellings
  are scored at once from a (permutations x clusters x classes) contingency tensor, built with one
  ``bincount`` per chunk of permutations.
- Rank test (:func:`rank_tests`): the mean rank of 004 §4.5 (smaller = more leakage) with the
  rank-test labels relabelled (``items`` for the speaker column, else ``blocks``), the same
  distances. Each permutation reruns the whole test, its random pairs and distractors included: a
  class's pair is a random ordered pair of its (permuted) items; the number of distractors nearer
  to x_i than x_j (and of ties) among ``take`` distractors drawn without replacement from the
  ``m`` other-class items is hypergeometric, so ``repeats`` draws per class are sampled directly
  instead of drawing the distractors themselves. The null statistic so has exactly the
  distribution of :func:`asrpriv.audit.rank_test.rank_test`'s under permuted labels.
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

CLUSTER_TEST = ("permutation test: the clusters held fixed, the label column permuted (over the "
                "items, or over the units: see each column's 'permuted'); p = (1 + #{null >= "
                "observed}) / (N + 1) for purity and pure clusters, #{null <= observed} for entropy")
RANK_TEST = ("permutation test: the rank-test labels permuted (see 'permuted'), the test rerun "
             "(random pairs and distractors) on the same distances; "
             "p = (1 + #{null mean rank <= observed}) / (N + 1)")
#: what each relabelling scheme assumes (the exchangeable unit), as the reports say it
SCHEMES = {
    "items": "over the items (the items exchangeable: the null is that this column does not leak)",
    "units": "over the {unit} units (one value per {unit}, the {unit}s exchangeable; a {unit}'s "
             "items keep one value)",
    "blocks": "by whole {unit}s (each {unit}'s values, its items in order, moved to another {unit} "
              "with as many items; the {unit}s exchangeable, nothing assumed inside one)",
}
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


def scheme_of(labels, units) -> str:
    """How a label column is relabelled under its null (the module doc): ``items``, ``units`` or
    ``blocks``. ``units`` is the unit of each item (e.g. the speaker column) or None (items)."""
    if units is None:
        return "items"
    value_of: dict = {}
    varies = False
    for unit, value in zip(units, labels):
        if value_of.setdefault(unit, value) != value:
            varies = True
            break
    if varies:
        return "blocks"
    if len(set(value_of.values())) == len(value_of):
        return "items"          # a distinct value per unit: the column names the unit
    return "units"


def unit_blocks(units) -> list:
    """The units' items, as (units x size) index arrays, one per size: each unit's items in input
    order, the units in order of first appearance."""
    import numpy as np

    members: dict = {}
    for index, unit in enumerate(units):
        members.setdefault(unit, []).append(index)
    by_size: dict[int, list] = {}
    for items in members.values():
        by_size.setdefault(len(items), []).append(items)
    return [np.asarray(rows, dtype=np.int64) for _, rows in sorted(by_size.items())]


def block_permutations(units, count: int, rng, chunk: int):
    """``count`` random permutations of the items that move each unit's items, in order, onto the
    items of a unit of the same size (``blocks``): (rows, n) arrays, ``perm[k]`` the item whose
    label position k takes."""
    import numpy as np

    n = len(units)
    strata = unit_blocks(units)
    done = 0
    while done < count:
        rows = min(chunk, count - done)
        out = np.empty((rows, n), dtype=np.int64)
        for members in strata:
            size = members.shape[0]
            order = rng.permuted(np.tile(np.arange(size), (rows, 1)), axis=1)   # (rows, units)
            out[:, members] = members[order]                      # (rows, units, size)
        yield out
        done += rows


def relabellings(labels, units, count: int, rng, chunk: int, scheme: str | None = None):
    """``count`` relabellings of ``labels`` under its scheme (:func:`scheme_of`): (rows, n) arrays
    of class codes (codes as :func:`_codes` numbers them)."""
    import numpy as np

    _, codes = _codes(labels)
    n = len(codes)
    scheme = scheme or scheme_of(labels, units)
    if scheme == "items":
        for block in random_permutations(n, count, rng, chunk):
            yield codes[block]
    elif scheme == "blocks":
        for block in block_permutations(list(units), count, rng, chunk):
            yield codes[block]
    elif scheme == "units":
        _, unit_index = np.unique(np.asarray(units, dtype=str), return_inverse=True)
        unit_codes = np.zeros(int(unit_index.max()) + 1, dtype=np.int64)
        unit_codes[unit_index] = codes
        for block in random_permutations(len(unit_codes), count, rng, chunk):
            yield unit_codes[block][:, unit_index]
    else:  # pragma: no cover - internal
        raise ValueError(scheme)


def cluster_statistics(assignment, labels, perms) -> dict:
    """Purity, pure clusters and entropy (bits) of ``assignment`` against ``labels[perm]`` for each
    row ``perm`` of ``perms`` (an iterable of (rows, n) index arrays): arrays, one value per row.

    ``correct`` is purity's numerator (sum over clusters of the largest class count), an integer.
    """
    import numpy as np

    _, codes = _codes(labels)
    return coded_statistics(assignment, (codes[np.asarray(block, dtype=np.int64)] for block in perms),
                            int(codes.max()) + 1)


def coded_statistics(assignment, rows_of_codes, classes: int) -> dict:
    """:func:`cluster_statistics` of relabellings given as (rows, n) arrays of class codes."""
    import numpy as np

    assignment = np.asarray(assignment, dtype=np.int64)
    n = len(assignment)
    _, assignment = np.unique(assignment, return_inverse=True)
    k = int(assignment.max()) + 1
    c = classes
    sizes = np.bincount(assignment, minlength=k)
    correct, pure, entropy = [], [], []
    for coded in rows_of_codes:
        coded = np.asarray(coded, dtype=np.int64)
        if coded.shape[1] != n:
            raise ValueError("assignment and labels differ in length")
        rows = coded.shape[0]
        flat = (np.arange(rows)[:, None] * k + assignment[None, :]) * c + coded
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


def cluster_null(assignment, labels, count: int, rng, units=None, scheme: str | None = None) -> dict:
    """:func:`cluster_statistics` under ``count`` random relabellings of ``labels`` (permutations
    over the items, or over ``units`` by the column's scheme: :func:`scheme_of`)."""
    if len(assignment) != len(labels) or (units is not None and len(units) != len(labels)):
        raise ValueError("assignment and labels differ in length")
    n = len(labels)
    k = len(set(assignment))
    c = len(set(labels))
    chunk = max(1, CHUNK_ELEMENTS // max(1, k * c, n))
    return coded_statistics(assignment, relabellings(labels, units, count, rng, chunk, scheme), c)


def cluster_test(assignment, labels, count: int, rng, units=None) -> dict:
    """Purity, pure clusters and entropy of one label column against their permutation nulls
    (relabelled over the items, or over ``units``: :func:`scheme_of`)."""
    import numpy as np

    n = len(labels)
    observed = cluster_statistics(assignment, labels, [np.arange(n)[None, :]])
    null = cluster_null(assignment, labels, count, rng, units)
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
                  seed: int | None, unit: str | None = None) -> dict:
    """The ``permutation`` block of a report: every label column's cluster tests.

    ``unit``: the label column whose values are the sampled units (e.g. ``speaker``); each
    column is then relabelled by its scheme (:func:`scheme_of`), which its entry names under
    ``permuted``. None: every column permuted over the items.
    """
    rng = rng_for(seed, _STREAM_CLUSTER)
    units = labels[unit] if unit is not None else None
    result = {}
    for col in columns:
        tests = cluster_test(assignment, labels[col], count, rng, units)
        result[col] = {name: summary.as_dict() for name, summary in tests.items()}
        result[col]["permuted"] = scheme_of(labels[col], units)
    return {"test": CLUSTER_TEST, "permutations": count, "seed": seed, "unit": unit,
            "labels": result}


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
               seed: int | None, distractors: int = 49, repeats: int = 50, units=None) -> dict:
    """Keys added to a report's ``rank`` block: the permutation test of the mean rank and the
    bootstrap interval over classes.

    ``units`` (the unit of each item, or None): a rank label that names the units (the speaker
    itself) is permuted over the items; any other is permuted by whole units (``blocks``; for a
    label constant within units this is the ``units`` scheme restricted to units of one size).
    """
    rng = rng_for(seed, _STREAM_RANK)
    scheme = "items" if scheme_of(labels, units) == "items" else "blocks"
    perms = None
    if scheme == "blocks":
        chunk = max(1, CHUNK_ELEMENTS // (len(set(labels)) * len(labels)))
        perms = block_permutations(list(units), count, rng, chunk)
    null = rank_null(distances, labels, count, rng, distractors, repeats, perms=perms)
    # mean ranks are means of half-integers: compare with a tolerance for float rounding
    summary = summarize(mean_rank, null, "less", tol=1e-9)
    lo, hi = bootstrap_interval(list(per_class.values()), count, rng_for(seed, _STREAM_BOOTSTRAP))
    return {"permutation": {"test": RANK_TEST, "seed": seed, "permuted": scheme, **summary.as_dict()},
            "bootstrap_ci95": [lo, hi], "bootstrap_resamples": count,
            "bootstrap_test": RANK_BOOTSTRAP}


# -- tests of an audit made without them -----------------------------------------------------------

def add_saved_tests(report: dict, assignments_path: str, labels_path: str, count: int = 999,
                    unit: str | None = None) -> dict:
    """The tests of an audit made without ``--permutations`` (or with its labels permuted at
    another unit than ``unit``), from what it saved.

    The cluster tests need only the assignment (``assignments.tsv``) and the labels: they are
    the same tests as :func:`cluster_tests` (same seed streams, the same ``unit``), computed
    afterwards; an audit whose tests permuted at another unit (an audit older than issue 38
    permuted every column over the items) gets them again, with its own number of permutations.
    The rank test's permutation null needs the distances, which an audit does not keep: only
    the bootstrap interval over the per-class mean ranks is added. Keys added to REPORT
    (returned): ``permutation`` (with ``"post_hoc": True``) and, under ``rank``,
    ``bootstrap_ci95``.
    """
    from asrpriv.audit.labels import read_labels
    from asrpriv.io.lines import iter_lines

    seed = (report.get("settings") or {}).get("seed")
    made = report.get("permutation")
    if made is None or made.get("unit") != unit:
        count = int(made["permutations"]) if made else count
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
        wanted = names + ([unit] if unit is not None and unit not in names else [])
        labels = {c: [rows[item][columns.index(c)] for item in items] for c in wanted}
        report["permutation"] = {**cluster_tests(assignment, labels, names, count, seed, unit),
                                 "post_hoc": True}
    rank = report.get("rank")
    if rank and "bootstrap_ci95" not in rank and rank.get("per_class"):
        lo, hi = bootstrap_interval(list(rank["per_class"].values()), count, rng_for(seed, _STREAM_BOOTSTRAP))
        rank.update({"bootstrap_ci95": [lo, hi], "bootstrap_resamples": count,
                     "bootstrap_test": RANK_BOOTSTRAP, "post_hoc": True})
    return report
