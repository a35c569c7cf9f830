"""A cross-validated linear probe: the attribute-inference attack on shared artifacts.

Beyond paper 004's clustering: an L2-regularized logistic regression (scikit-learn, C = 1,
intercept) predicts a label (speaker, gender) from the items, with k-fold cross-validation
(stratified; grouped with ``groups`` so that, e.g., no speaker's items are in both the training
and the test folds of a gender probe). It runs on the exact embedding of the centred Gram matrix,
which for an L2-regularized linear model with an intercept is the same as running on the
original vectors (representer theorem). The features are divided by one global scale (the items'
root-mean-square norm), not standardized per coordinate: per-coordinate scaling is not rotation
invariant and would blow up the embedding's near-zero directions into noise features.

Reported: accuracy with a Wilson 95% interval, the majority-class accuracy (chance), and the
ROC AUC (binary labels; macro one-vs-rest for more classes) with a percentile bootstrap 95%
interval over items (``bootstrap`` resamples, seeded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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

    def as_dict(self) -> dict:
        return {"label": self.label, "accuracy": self.accuracy, "accuracy_ci": list(self.accuracy_ci),
                "chance": self.chance, "auc": self.auc,
                "auc_ci": list(self.auc_ci) if self.auc_ci else None, "folds": self.folds,
                "items": self.items, "classes": self.classes, "grouped_by": self.grouped_by}


def wilson_interval(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def linear_probe(embedding, labels: list[str], label_name: str, seed: int | None,
                 folds: int = 5, groups: list[str] | None = None, grouped_by: str | None = None,
                 bootstrap: int = 1000) -> ProbeResult:
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    embedding = np.asarray(embedding, dtype=np.float64)
    scale = float(np.sqrt(np.mean(np.sum(embedding ** 2, axis=1)))) or 1.0
    embedding = embedding / scale
    y = np.asarray(labels)
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"probe label {label_name!r} has a single class")
    if groups is not None:
        n_groups = len(set(groups))
        k = min(folds, n_groups)
        if k < 2:
            raise ValueError(f"probe grouped by {grouped_by!r} needs at least 2 groups")
        splitter = GroupKFold(n_splits=k)
        splits = list(splitter.split(embedding, y, groups=np.asarray(groups)))
    else:
        k = min(folds, int(counts.min()))
        if k < 2:
            raise ValueError(f"probe label {label_name!r}: every class needs at least 2 items "
                             "(cross-validation)")
        splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        splits = list(splitter.split(embedding, y))
    proba = np.zeros((len(y), len(classes)))
    for train, test in splits:
        model = LogisticRegression(C=1.0, max_iter=5000)
        model.fit(embedding[train], y[train])
        fold_proba = model.predict_proba(embedding[test])
        # a grouped split can leave a class out of a training fold: map columns by class
        for col, cls in enumerate(model.classes_):
            proba[test, int(np.searchsorted(classes, cls))] = fold_proba[:, col]
    predicted = classes[np.argmax(proba, axis=1)]
    correct = int(np.sum(predicted == y))
    accuracy = correct / len(y)
    auc = auc_ci = None
    rng = np.random.default_rng(seed)

    def auc_of(index):
        yy, pp = y[index], proba[index]
        if len(np.unique(yy)) < 2:
            return None
        if len(classes) == 2:
            return float(roc_auc_score(yy == classes[1], pp[:, 1]))
        present = np.unique(yy)
        if len(present) < len(classes):
            return None
        return float(roc_auc_score(yy, pp, multi_class="ovr", average="macro", labels=classes))

    auc = auc_of(np.arange(len(y)))
    if auc is not None and bootstrap > 0:
        samples = []
        for _ in range(bootstrap):
            value = auc_of(rng.integers(0, len(y), len(y)))
            if value is not None:
                samples.append(value)
        if samples:
            auc_ci = (float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5)))
    return ProbeResult(label=label_name, accuracy=accuracy,
                       accuracy_ci=wilson_interval(correct, len(y)),
                       chance=float(counts.max() / len(y)), auc=auc, auc_ci=auc_ci,
                       folds=len(splits), items=len(y), classes=len(classes),
                       grouped_by=grouped_by)
