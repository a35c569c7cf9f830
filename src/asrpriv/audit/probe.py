"""A cross-validated linear probe: the attribute-inference attack on shared artifacts.

Beyond paper 004's clustering: an L2-regularized logistic regression (scikit-learn, C = 1,
intercept) predicts a label (speaker, gender) from the items, with k-fold cross-validation. It
runs on the exact embedding of the centred Gram matrix, which for an L2-regularized linear model
with an intercept is the same as running on the original vectors (representer theorem). The
features are divided by one global scale (the items' root-mean-square norm), not standardized
per coordinate: per-coordinate scaling is not rotation invariant and would blow up the
embedding's near-zero directions into noise features.

**At the sampled unit** (issue 38). Items of one unit (the 4 subsets of a speaker) share a
signal, so they are not independent draws:

- *Folds*, with ``groups`` (e.g. the speaker of each item): every unit's items lie in one fold
  (scikit-learn's ``StratifiedGroupKFold``, shuffled with the seed, classes balanced over the
  folds as far as whole units allow), so a gender probe is never tested on a speaker it was
  trained on and cannot score by recognising the speaker. Without groups: stratified k-fold
  over the items.
- *Intervals*, with ``groups``: a cluster (unit-level) percentile bootstrap: each resample draws
  as many units as there are, with replacement, and takes all their items with their
  out-of-fold predictions; accuracy is the resample's share correct (a ratio of sums over the
  drawn units) and the AUC the ROC AUC of the drawn items, each drawn unit's items weighted by
  how often it was drawn (:func:`cluster_bootstrap`). Without groups: a Wilson 95% interval of
  the accuracy and an item-level bootstrap of the AUC.

Reported: accuracy and its 95% interval, the majority-class accuracy (chance), and the ROC AUC
(binary labels; macro one-vs-rest for more classes) with its 95% interval; ``interval`` says
which interval each is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: the default number of bootstrap resamples of the probe's intervals
BOOTSTRAP = 1000


@dataclass(frozen=True)
class ProbeResult:
    label: str
    accuracy: float
    accuracy_ci: tuple[float, float]
    chance: float
    auc: float | None
    auc_ci: tuple[float, float] | None
    folds: int
    items: int
    classes: int
    grouped_by: str | None
    groups: int | None = None
    interval: str = ""

    def as_dict(self) -> dict:
        return {"label": self.label, "accuracy": self.accuracy, "accuracy_ci": list(self.accuracy_ci),
                "chance": self.chance, "auc": self.auc,
                "auc_ci": list(self.auc_ci) if self.auc_ci else None, "folds": self.folds,
                "items": self.items, "classes": self.classes, "grouped_by": self.grouped_by,
                "groups": self.groups, "interval": self.interval}


def wilson_interval(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def probe_splits(y, groups, folds: int, seed: int | None, label_name: str = "",
                 grouped_by: str | None = None) -> list:
    """The cross-validation folds: (train, test) index arrays.

    With ``groups``: ``StratifiedGroupKFold`` (shuffled with ``seed``), min(folds, groups) folds,
    each group's items in one fold. Without: ``StratifiedKFold`` over the items (shuffled), at
    most as many folds as the smallest class has items.
    """
    import warnings

    import numpy as np
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    y = np.asarray(y)
    x = np.zeros((len(y), 1))
    if groups is not None:
        k = min(folds, len(set(groups)))
        if k < 2:
            raise ValueError(f"probe grouped by {grouped_by!r} needs at least 2 groups")
        splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
        with warnings.catch_warnings():
            # "the least populated class has only N members": whole groups are what is balanced
            warnings.simplefilter("ignore", UserWarning)
            return list(splitter.split(x, y, groups=np.asarray(groups)))
    _, counts = np.unique(y, return_counts=True)
    k = min(folds, int(counts.min()))
    if k < 2:
        raise ValueError(f"probe label {label_name!r}: every class needs at least 2 items "
                         "(cross-validation)")
    return list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, y))


def resample_weights(groups: int, count: int, rng):
    """``count`` cluster-bootstrap resamples of ``groups`` units: a (count, groups) array, how many
    times each unit is drawn (each row a multinomial draw of ``groups`` units, equal chances)."""
    import numpy as np

    return rng.multinomial(groups, np.full(groups, 1.0 / groups), size=count)


def cluster_bootstrap(correct, group_index, weights, auc_of=None) -> dict:
    """Accuracy (and AUC) of each cluster-bootstrap resample.

    Args:
        correct: per item, 1 if the out-of-fold prediction is right, else 0.
        group_index: per item, its unit's number 0..G-1.
        weights: (resamples, G) draw counts (:func:`resample_weights`).
        auc_of: optional callable(item_weights) -> AUC or None, the AUC of the items weighted by
            their unit's draw count.
    Returns ``{"accuracy": array, "auc": list}``: accuracy = sum_g w_g c_g / sum_g w_g n_g (c_g
    the unit's correct items, n_g its items); ``auc`` the resamples' AUCs where defined.
    """
    import numpy as np

    group_index = np.asarray(group_index, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    g = weights.shape[1]
    right = np.bincount(group_index, weights=np.asarray(correct, dtype=np.float64), minlength=g)
    sizes = np.bincount(group_index, minlength=g).astype(np.float64)
    accuracy = (weights @ right) / (weights @ sizes)
    aucs = []
    if auc_of is not None:
        for row in weights:
            value = auc_of(row[group_index])
            if value is not None:
                aucs.append(value)
    return {"accuracy": accuracy, "auc": aucs}


def percentile_interval(values, level: float = 0.95) -> tuple[float, float]:
    import numpy as np

    tail = 100.0 * (1.0 - level) / 2.0
    lo, hi = np.percentile(np.asarray(values, dtype=np.float64), [tail, 100.0 - tail])
    return float(lo), float(hi)


def linear_probe(embedding, labels: list[str], label_name: str, seed: int | None,
                 folds: int = 5, groups: list[str] | None = None, grouped_by: str | None = None,
                 bootstrap: int = BOOTSTRAP) -> ProbeResult:
    """The probe of ``labels`` from ``embedding`` (the module doc): folds grouped by ``groups``
    and intervals resampling them when given."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    embedding = np.asarray(embedding, dtype=np.float64)
    scale = float(np.sqrt(np.mean(np.sum(embedding ** 2, axis=1)))) or 1.0
    embedding = embedding / scale
    y = np.asarray(labels)
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"probe label {label_name!r} has a single class")
    splits = probe_splits(y, groups, folds, seed, label_name, grouped_by)
    proba = np.zeros((len(y), len(classes)))
    for train, test in splits:
        model = LogisticRegression(C=1.0, max_iter=5000)
        if len(np.unique(y[train])) < 2:
            raise ValueError(f"probe label {label_name!r}: a training fold has a single class "
                             "(too few groups of one class for the folds)")
        model.fit(embedding[train], y[train])
        fold_proba = model.predict_proba(embedding[test])
        # a grouped split can leave a class out of a training fold: map columns by class
        for col, cls in enumerate(model.classes_):
            proba[test, int(np.searchsorted(classes, cls))] = fold_proba[:, col]
    predicted = classes[np.argmax(proba, axis=1)]
    right = predicted == y
    correct = int(np.sum(right))
    accuracy = correct / len(y)
    rng = np.random.default_rng(seed)

    def auc_of(weight=None):
        keep = np.ones(len(y), dtype=bool) if weight is None else weight > 0
        yy, pp = y[keep], proba[keep]
        w = None if weight is None else weight[keep]
        if len(np.unique(yy)) < 2:
            return None
        if len(classes) == 2:
            return float(roc_auc_score(yy == classes[1], pp[:, 1], sample_weight=w))
        if len(np.unique(yy)) < len(classes):
            return None
        return float(roc_auc_score(yy, pp, multi_class="ovr", average="macro", labels=classes,
                                   sample_weight=w))

    auc = auc_of()
    auc_ci = None
    n_groups = None
    if groups is not None and bootstrap > 0:
        _, group_index = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
        n_groups = int(group_index.max()) + 1
        draws = cluster_bootstrap(right, group_index, resample_weights(n_groups, bootstrap, rng),
                                  auc_of if auc is not None else None)
        accuracy_ci = percentile_interval(draws["accuracy"])
        if draws["auc"]:
            auc_ci = percentile_interval(draws["auc"])
        interval = (f"cluster bootstrap over {grouped_by or 'groups'} ({n_groups} units, "
                    f"{bootstrap} resamples), percentile 95%")
    else:
        accuracy_ci = wilson_interval(correct, len(y))
        if auc is not None and bootstrap > 0:
            samples = []
            for _ in range(bootstrap):
                value = auc_of(np.bincount(rng.integers(0, len(y), len(y)), minlength=len(y)).astype(float))
                if value is not None:
                    samples.append(value)
            if samples:
                auc_ci = percentile_interval(samples)
        interval = f"accuracy: Wilson 95%; AUC: bootstrap over items ({bootstrap} resamples)"
    return ProbeResult(label=label_name, accuracy=accuracy, accuracy_ci=accuracy_ci,
                       chance=float(counts.max() / len(y)), auc=auc, auc_ci=auc_ci,
                       folds=len(splits), items=len(y), classes=len(classes),
                       grouped_by=grouped_by, groups=n_groups, interval=interval)
