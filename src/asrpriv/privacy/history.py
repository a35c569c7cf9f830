"""The privacy history: every DP release a file's contents depend on, and how they compose.

A file's contents (counts, factors, a model, a delta) are a function of public data and of the
outputs of the privacy mechanisms applied to private data on the way ("releases"). Its privacy
cost is therefore the joint cost of the *set* of releases in its history; everything else is
post-processing. The history only grows: steps combine the histories of their inputs and add
the release they make, never drop one.

**Release.** One application of a mechanism, with a random 128-bit id (``secrets.token_hex(16)``):

- ``mechanism="laplace"``, params ``epsilon``, ``sensitivity_l1``, ``grid`` (all finite, > 0):
  discrete Laplace noise of scale ``sensitivity_l1 / epsilon`` added to counts whose L1
  sensitivity under the adjacency ``unit`` is ``sensitivity_l1``. Pure ``epsilon``-DP. For
  dp-accounting: normalize to sensitivity 1, i.e. ``LaplaceDpEvent(1 / epsilon)`` (the discrete
  Laplace on the grid is at least as private as the continuous one at the same scale, both pure
  ``epsilon``-DP).
- ``mechanism="gaussian"``, params ``noise_multiplier`` (z > 0), ``sensitivity_l2`` (> 0; clip
  norm), ``sample_rate`` (q in (0, 1]), ``rounds`` (int >= 1): Gaussian noise of standard
  deviation ``z * sensitivity_l2`` on a sum of clipped contributions of Poisson-sampled units,
  repeated ``rounds`` times. For dp-accounting:
  ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), rounds)``
  (q = 1: ``GaussianDpEvent(z)`` unsampled).

``unit`` is the adjacency unit (add/remove one ``utterance`` or one ``client``). ``partition``
names the part of the private data the release saw: a comma-separated set of labels
(``"alice"``, ``"r0/alice,r0/bob"``), ``""`` for "not known to be confined to any part".
Labels are ``/``-paths: ``r0`` contains ``r0/alice``; two labels are disjoint only when neither
is a prefix path of the other.
``seeded`` marks noise from a seeded, repeatable generator: **not private** (the noise can be
recomputed by a seed search); such histories are for tests only.

**Composition** is a tree over the releases (each release appears exactly once):

- a leaf is a release;
- ``seq`` (sequential composition): the children may have seen the same units; costs add up;
- ``par`` (parallel composition): the children saw disjoint data; the cost is the worst child.

For pure DP (:meth:`History.epsilon_pure`): leaf = its ``epsilon``, ``seq`` = sum, ``par`` =
max. This bounds, for every unit, the sum of the epsilons of the releases that touched it. For
RDP/PLD accountants: ``seq`` = ``ComposedDpEvent`` of the children; ``par`` = compute each
child's (epsilon, delta) and take the worst (parallel composition holds for approximate DP and
per RDP order).

**What is proven and what is asserted.** :meth:`History.combine` with ``disjoint=True`` is
refused (ValueError) unless every release of every child carries a partition label, no release
id occurs in two children, and the children's atomic labels are pairwise disjoint. That the
labels name disjoint data is the user's assertion (made once, when counting: ``count-unigrams
--partition NAME``); the history checks that it is never contradicted.

**Reuse.** The same release (same id) reached through two inputs counts once: combining is
post-processing of the joint release. Sequential combination keeps the first occurrence and
prunes later ones (sound: ``par`` children stay disjoint, every release is still charged once).
Two different releases with the same id are malformed (ValueError).

Pure Python (no numpy/torch): light steps import it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Union

FORMAT = "asrpriv-history/1"
MECHANISMS = {
    "laplace": {"epsilon": float, "sensitivity_l1": float, "grid": float},
    "gaussian": {"noise_multiplier": float, "sensitivity_l2": float, "sample_rate": float,
                 "rounds": int},
}
UNITS = ("utterance", "client")
_ID = re.compile(r"[0-9a-f]{32}\Z")
_LABEL = re.compile(r"[A-Za-z0-9_.:/+-]{1,200}\Z")

#: a composition tree: a release index, or ("seq"|"par", children)
Tree = Union[int, tuple]


def check_partition(text: str) -> frozenset[str]:
    """The atomic labels of a partition string; ValueError if malformed ('' = no labels)."""
    if text == "":
        return frozenset()
    labels = text.split(",")
    for label in labels:
        if not _LABEL.match(label):
            raise ValueError(f"bad partition label {label!r} (letters, digits, _.:/+- only)")
        normalize_label(label)
    if len({normalize_label(label) for label in labels}) != len(labels):
        raise ValueError(f"partition {text!r} repeats a label")
    return frozenset(labels)


def normalize_label(label: str) -> str:
    """The form in which labels are compared: case-folded, ``.`` and empty path segments
    dropped (``Alice``, ``./alice`` and ``alice/`` name the same data as ``alice``).

    Raises:
        ValueError: a ``..`` segment (it would climb out of a label) or nothing left.
    """
    parts = [p for p in label.casefold().split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"bad partition label {label!r}: '..' is not allowed")
    if not parts:
        raise ValueError(f"bad partition label {label!r}: empty")
    return "/".join(parts)


def labels_overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> list[str]:
    """Labels of ``a`` that may share data with labels of ``b``: equal, or one a ``/``-path
    prefix of the other (``r0`` contains ``r0/alice``), compared in normalized form
    (:func:`normalize_label`: ``Alice`` = ``./alice``). Empty list = provably disjoint."""
    clash = []
    for x in a:
        nx = normalize_label(x)
        for y in b:
            ny = normalize_label(y)
            if nx == ny or nx.startswith(ny + "/") or ny.startswith(nx + "/"):
                clash.append(x)
    return sorted(set(clash))


def partition_string(labels: frozenset[str] | set[str]) -> str:
    return ",".join(sorted(labels))


def _no_duplicate_keys(pairs: list) -> dict:
    """JSON objects with a key twice are refused (json's default keeps the last one silently,
    so an edited ledger could hide a release's real parameters behind a second copy)."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate key(s) {sorted({k for k in keys if keys.count(k) > 1})} in the history JSON")
    return dict(pairs)


@dataclass(frozen=True)
class Release:
    release_id: str
    mechanism: str
    unit: str
    params: dict = field(hash=False)
    partition: str = ""
    seeded: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.release_id, str) or not _ID.match(self.release_id):
            raise ValueError(f"release_id must be 32 lowercase hex digits, got {self.release_id!r}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {self.mechanism!r} (known: {', '.join(MECHANISMS)})")
        if self.unit not in UNITS:
            raise ValueError(f"unknown adjacency unit {self.unit!r} (known: {', '.join(UNITS)})")
        if not isinstance(self.params, dict):
            raise ValueError("params must be a dict")
        spec = MECHANISMS[self.mechanism]
        if set(self.params) != set(spec):
            raise ValueError(f"{self.mechanism} params must be exactly {sorted(spec)}, "
                             f"got {sorted(self.params)}")
        for key, kind in spec.items():
            value = self.params[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{key} must be a number, got {value!r}")
            if kind is int and value != int(value):
                raise ValueError(f"{key} must be an integer, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{key} must be finite and > 0, got {value!r}")
        if self.mechanism == "gaussian" and self.params["sample_rate"] > 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {self.params['sample_rate']!r}")
        if not isinstance(self.partition, str):
            raise ValueError("partition must be a string")
        check_partition(self.partition)
        if not isinstance(self.seeded, bool):
            raise ValueError("seeded must be true or false")

    @property
    def labels(self) -> frozenset[str]:
        return check_partition(self.partition)

    def to_dict(self) -> dict:
        obj = {"id": self.release_id, "mechanism": self.mechanism, "unit": self.unit,
               "params": dict(self.params), "partition": self.partition}
        if self.seeded:  # written only when true, so unseeded files never mention seeds
            obj["seeded"] = True
        return obj

    @classmethod
    def from_dict(cls, obj: object) -> "Release":
        keys = {"id", "mechanism", "unit", "params", "partition"}
        if not isinstance(obj, dict) or not keys <= set(obj) <= keys | {"seeded"}:
            raise ValueError(f"a release must be an object with keys {sorted(keys)} (+ seeded)")
        if obj.get("seeded", True) is not True:
            raise ValueError("'seeded' is written only as true")
        return cls(obj["id"], obj["mechanism"], obj["unit"], dict(obj["params"])
                   if isinstance(obj["params"], dict) else obj["params"],
                   obj["partition"], "seeded" in obj)


def new_release_id() -> str:
    """A fresh release id from the OS's secure source (never from a seeded generator)."""
    import secrets

    return secrets.token_hex(16)


def _remap(tree: Tree, mapping: dict[int, int | None]) -> Tree | None:
    """Renumber leaves; leaves mapped to None are pruned, empty nodes vanish."""
    if isinstance(tree, int):
        return mapping[tree]
    kind, children = tree
    kept = [c for c in (_remap(child, mapping) for child in children) if c is not None]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return (kind, tuple(kept))


def _splice(tree: Tree | None) -> Tree | None:
    """Splice ``seq`` children of ``seq`` nodes into their parent (associativity)."""
    if tree is None or isinstance(tree, int):
        return tree
    kind, children = tree
    flat: list = []
    for child in (_splice(c) for c in children):
        if kind == "seq" and isinstance(child, tuple) and child[0] == "seq":
            flat.extend(child[1])
        else:
            flat.append(child)
    return (kind, tuple(flat))


def _leaves(tree: Tree) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    return [leaf for child in tree[1] for leaf in _leaves(child)]


@dataclass(frozen=True)
class History:
    """An immutable privacy history: ``releases`` plus their composition ``tree``.

    ``tree`` is None for the empty history, else an int (index into ``releases``) or a pair
    ``("seq"|"par", (child, ...))``. Use :meth:`add` and :meth:`combine`, not the constructor.
    """

    releases: tuple = ()
    tree: Tree | None = None

    def __post_init__(self) -> None:
        for release in self.releases:
            if not isinstance(release, Release):
                raise ValueError("releases must be Release objects")
        ids = [r.release_id for r in self.releases]
        if len(set(ids)) != len(ids):
            raise ValueError("a release id occurs twice in one history")
        if self.tree is None:
            if self.releases:
                raise ValueError("releases without a composition tree")
            return
        leaves = _leaves(self.tree)
        if sorted(leaves) != list(range(len(self.releases))):
            raise ValueError("the composition tree must name every release exactly once")
        self._check_par(self.tree)

    def _check_par(self, tree: Tree) -> frozenset[str]:
        """Check every par node's children have labelled, pairwise disjoint partitions."""
        if isinstance(tree, int):
            return self.releases[tree].labels
        kind, children = tree
        if kind not in ("seq", "par") or not isinstance(children, tuple) or len(children) < 2:
            raise ValueError("a composition node must be ('seq'|'par', two or more children)")
        sets = [self._check_par(child) for child in children]
        if kind == "par":
            for child in children:
                for leaf in _leaves(child):
                    if not self.releases[leaf].partition:
                        raise ValueError(
                            f"release {self.releases[leaf].release_id} has no partition label, "
                            "so it cannot be proven disjoint from the others")
            seen: set[str] = set()
            for labels in sets:
                clash = labels_overlap(labels, seen)
                if clash:
                    raise ValueError(f"partition label(s) {clash} overlap on two sides of a "
                                     "parallel composition: not disjoint")
                seen |= labels
        return frozenset().union(*sets)

    # ---------------------------------------------------------------- building
    @property
    def seeded(self) -> bool:
        """True if any release used seeded (not private) noise."""
        return any(r.seeded for r in self.releases)

    @property
    def labels(self) -> frozenset[str]:
        return frozenset().union(*(r.labels for r in self.releases)) if self.releases else frozenset()

    def __len__(self) -> int:
        return len(self.releases)

    def release_ids(self) -> set[str]:
        return {r.release_id for r in self.releases}

    def add(self, release: Release) -> "History":
        """This history, then ``release`` (sequential composition)."""
        return History.combine([self, History((release,), 0)], disjoint=False)

    def add_flat(self, release: Release) -> "History":
        """This history, then ``release``, keeping a chain of rounds one flat ``seq`` node.

        :meth:`add` nests ``seq`` inside ``seq`` once per call, and a history more than 64
        levels deep is refused when read back; sequential composition is associative, so
        splicing nested ``seq`` nodes into their parent changes nothing in the accounting.
        """
        combined = self.add(release)
        return History(combined.releases, _splice(combined.tree))

    @classmethod
    def combine(cls, histories: list["History"], disjoint: bool) -> "History":
        """The history of something computed from inputs with these histories.

        ``disjoint=False``: sequential composition; a release reached twice counts once.
        ``disjoint=True``: parallel composition; ValueError unless the inputs are provably
        disjoint (no shared release, every release labelled, labels disjoint across inputs).
        Empty histories (no release) are neutral.
        """
        histories = [h for h in histories if h.releases]
        by_id: dict[str, Release] = {}
        for h in histories:
            for r in h.releases:
                if r.release_id in by_id and by_id[r.release_id] != r:
                    raise ValueError(f"two different releases share the id {r.release_id}")
                by_id.setdefault(r.release_id, r)
        if disjoint:
            owner: dict[str, int] = {}
            for i, h in enumerate(histories):
                for r in h.releases:
                    if r.release_id in owner:
                        raise ValueError(f"release {r.release_id} occurs in two inputs: the same "
                                         "release cannot come from disjoint data")
                    owner[r.release_id] = i
        releases: list[Release] = []
        index: dict[str, int] = {}
        trees: list[Tree] = []
        for h in histories:
            mapping: dict[int, int | None] = {}
            for i, r in enumerate(h.releases):
                if r.release_id in index:
                    mapping[i] = None  # reuse of a release already charged: post-processing
                else:
                    index[r.release_id] = len(releases)
                    mapping[i] = len(releases)
                    releases.append(r)
            sub = _remap(h.tree, mapping)
            if sub is not None:
                trees.append(sub)
        if not trees:
            return cls()
        if len(trees) == 1:
            return cls(tuple(releases), trees[0])
        return cls(tuple(releases), ("par" if disjoint else "seq", tuple(trees)))

    # ------------------------------------------------------------- accounting
    def units(self) -> set[str]:
        return {r.unit for r in self.releases}

    def restricted(self, unit: str) -> "History":
        """The releases of one adjacency unit with their composition (the others pruned):
        what that unit's releases cost alone (privacy-report lists it per unit of a history
        that mixes units; it is not a guarantee for the file)."""
        mapping: dict[int, int | None] = {}
        kept: list[Release] = []
        for i, r in enumerate(self.releases):
            mapping[i] = len(kept) if r.unit == unit else None
            if r.unit == unit:
                kept.append(r)
        tree = None if self.tree is None else _remap(self.tree, mapping)
        return History(tuple(kept), tree) if kept else History()

    def epsilon_pure(self) -> float:
        """Total pure-DP epsilon (delta = 0) of a Laplace-only history: seq adds, par takes max.

        0.0 for the empty history. ValueError if a release is not Laplace (use an RDP/PLD
        accountant) or if releases differ in adjacency unit (their epsilons do not add up).
        """
        if self.tree is None:
            return 0.0
        if any(r.mechanism != "laplace" for r in self.releases):
            raise ValueError("the history has non-Laplace releases: pure-DP epsilon undefined")
        if len(self.units()) > 1:
            raise ValueError(f"the history mixes adjacency units {sorted(self.units())}")

        def cost(tree: Tree) -> float:
            if isinstance(tree, int):
                return float(self.releases[tree].params["epsilon"])
            values = [cost(child) for child in tree[1]]
            return math.fsum(values) if tree[0] == "seq" else max(values)

        return cost(self.tree)

    # ------------------------------------------------------------ serializing
    def to_json(self) -> str:
        """One line of ASCII JSON (no tab, no newline): safe in a ``#key=value`` metadata line."""

        def enc(tree: Tree):
            if isinstance(tree, int):
                return tree
            return {tree[0]: [enc(child) for child in tree[1]]}

        obj = {"format": FORMAT, "releases": [r.to_dict() for r in self.releases],
               "tree": None if self.tree is None else enc(self.tree)}
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False,
                          ensure_ascii=True)

    @classmethod
    def from_json(cls, text: str) -> "History":
        """Parse :meth:`to_json` output; ValueError on anything malformed."""

        def no_constant(name: str):
            raise ValueError(f"non-finite number {name} in history")

        try:
            obj = json.loads(text, parse_constant=no_constant, object_pairs_hook=_no_duplicate_keys)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"history is not valid JSON: {exc}") from None
        if not isinstance(obj, dict) or set(obj) != {"format", "releases", "tree"}:
            raise ValueError("history must be an object with keys format, releases, tree")
        if obj["format"] != FORMAT:
            raise ValueError(f"unknown history format {obj['format']!r} (expected {FORMAT})")
        if not isinstance(obj["releases"], list):
            raise ValueError("history releases must be a list")
        releases = tuple(Release.from_dict(r) for r in obj["releases"])

        def dec(node, depth: int = 0) -> Tree:
            if depth > 64:
                raise ValueError("history tree too deep")
            if isinstance(node, int) and not isinstance(node, bool):
                if not 0 <= node < len(releases):
                    raise ValueError(f"history tree names release {node}, which does not exist")
                return node
            if isinstance(node, dict) and len(node) == 1:
                (kind, children), = node.items()
                if kind in ("seq", "par") and isinstance(children, list):
                    return (kind, tuple(dec(c, depth + 1) for c in children))
            raise ValueError("history tree node must be an index or {'seq'|'par': [...]}")

        tree = None if obj["tree"] is None else dec(obj["tree"])
        return cls(releases, tree)

    def describe(self) -> str:  # noqa: D401
        """A short human summary: number of releases, and epsilon when pure DP."""
        if not self.releases:
            return "no DP release"
        try:
            eps = f"epsilon {self.epsilon_pure():.6g} (pure DP)"
        except ValueError:
            eps = "needs an RDP/PLD accountant"
        return f"{len(self.releases)} release(s), {eps}" + (", SEEDED (not private)" if self.seeded else "")
