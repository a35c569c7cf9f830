"""Clustering methods of paper 004 §4.3-4.6, on a distance matrix or an exact embedding.

- ``ward``: agglomerative clustering with Ward's linkage on Euclidean distances (Eq. 4.1-4.2,
  scipy's ``linkage(method="ward")``), cut into k clusters.
- ``divisive`` (§4.4.2, Method 1): start from one cluster; split the largest cluster in two
  (Ward on its own items, cut at 2) until every cluster has fewer than ``size * epsilon`` items
  (epsilon 1.5 as in 004).
- ``constrained`` (§4.4.3, Method 2): Ward merges (Lance-Williams update of squared distances,
  which is Eq. 4.2 squared); a cluster is closed as soon as it has ``size`` items or more and takes
  no further part; when one open cluster is left it is closed as it is.
- ``random`` (§4.4.1): random clusters of ``size`` items (the last one may be smaller).
- ``kmeans`` (§4.6): k-means (scikit-learn, k-means++ with 10 restarts) on the exact embedding.

Assignments are lists of cluster numbers 0..k-1 in item order, numbered by first appearance.
"""

from __future__ import annotations

METHODS = ("ward", "divisive", "constrained", "random", "kmeans")


def renumber(assignment) -> list[int]:
    """Cluster ids numbered 0, 1, ... in order of first appearance."""
    mapping: dict = {}
    return [mapping.setdefault(c, len(mapping)) for c in assignment]


def ward_linkage(condensed):
    from scipy.cluster.hierarchy import linkage

    return linkage(condensed, method="ward")


def ward_clusters(condensed, k: int) -> list[int]:
    """Ward's linkage cut into (at most) k clusters."""
    from scipy.cluster.hierarchy import fcluster

    n = _n_from_condensed(condensed)
    if k >= n:
        return list(range(n))
    return renumber(fcluster(ward_linkage(condensed), t=k, criterion="maxclust"))


def divisive_clusters(distances, size: int, epsilon: float = 1.5) -> list[int]:
    """Method 1 of 004 §4.4.2: split the largest cluster until all have < size * epsilon items."""
    import numpy as np
    from scipy.spatial.distance import squareform

    n = distances.shape[0]
    clusters: list[list[int]] = [list(range(n))]
    limit = size * epsilon
    while True:
        largest = max(range(len(clusters)), key=lambda i: (len(clusters[i]), -min(clusters[i])))
        members = clusters[largest]
        if len(members) < limit or len(members) < 2:
            break
        sub = distances[np.ix_(members, members)]
        halves = ward_clusters(squareform((sub + sub.T) / 2.0, checks=False), 2)
        first = [m for m, h in zip(members, halves) if h == 0]
        second = [m for m, h in zip(members, halves) if h == 1]
        clusters[largest: largest + 1] = [first, second]
    assignment = [0] * n
    for cid, members in enumerate(sorted(clusters, key=min)):
        for m in members:
            assignment[m] = cid
    return renumber(assignment)


def constrained_clusters(squared_distances, size: int) -> list[int]:
    """Method 2 of 004 §4.4.3: Ward merges, a cluster closes when it reaches ``size`` items.

    Works on squared Euclidean distances with the Lance-Williams form of Ward's criterion:
    d2(s+t, v) = ((|v|+|s|) d2(v,s) + (|v|+|t|) d2(v,t) - |v| d2(s,t)) / (|v|+|s|+|t|),
    the square of Eq. 4.2 (scipy's Ward merge heights are sqrt(2 x this) on the first merges'
    scale; the merge order is the same).
    """
    import numpy as np

    n = squared_distances.shape[0]
    d2 = np.array(squared_distances, dtype=np.float64, copy=True)
    np.fill_diagonal(d2, np.inf)
    sizes = np.ones(n, dtype=np.int64)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    open_ = np.ones(n, dtype=bool)
    closed: list[list[int]] = []
    while open_.sum() > 1:
        masked = np.where(open_[:, None] & open_[None, :], d2, np.inf)
        flat = int(np.argmin(masked))
        s, t = divmod(flat, n)
        if s > t:
            s, t = t, s
        ns, nt = sizes[s], sizes[t]
        nv = sizes
        total = nv + ns + nt
        new = ((nv + ns) * d2[s] + (nv + nt) * d2[t] - nv * d2[s, t]) / total
        d2[s, :] = new
        d2[:, s] = new
        d2[s, s] = np.inf
        d2[t, :] = np.inf
        d2[:, t] = np.inf
        sizes[s] = ns + nt
        members[s] = members[s] + members.pop(t)
        open_[t] = False
        if sizes[s] >= size:
            open_[s] = False
            closed.append(members.pop(s))
    for i in np.nonzero(open_)[0]:
        closed.append(members.pop(int(i)))
    assignment = [0] * n
    for cid, group in enumerate(sorted(closed, key=min)):
        for m in group:
            assignment[m] = cid
    return renumber(assignment)


def random_clusters(n: int, size: int, rng) -> list[int]:
    """004 §4.4.1: shuffle, then consecutive groups of ``size``."""
    order = list(range(n))
    rng.shuffle(order)
    assignment = [0] * n
    for position, item in enumerate(order):
        assignment[item] = position // size
    return renumber(assignment)


def kmeans_clusters(embedding, k: int, seed: int | None) -> list[int]:
    """k-means on the exact embedding (the same objective as on the original vectors)."""
    from sklearn.cluster import KMeans

    model = KMeans(n_clusters=k, n_init=10, random_state=seed)
    return renumber(model.fit_predict(embedding))


def _n_from_condensed(condensed) -> int:
    import math

    m = len(condensed)
    return int(round((1 + math.sqrt(1 + 8 * m)) / 2))
