"""The privacy state of a file: what its contents reveal, derived once for every step.

A file that a step writes (counts, factors, a model, a delta, a server state, an ARPA, a
report) is a function of its inputs. Its **privacy state** says what kind of guarantee it
carries:

- ``public``: made from public data only (inputs declared public: ``--public``, a plain word
  list, an ARPA or model without an asrpriv privacy record, see below). No guarantee is needed.
- ``private``: it depends on **un-noised private data** (``raw`` parts) and on no DP release:
  NO guarantee. An empty history means "no noise was released", never "epsilon 0".
- ``dp``: every private input reached it through a DP release (``history``): the guarantee
  the history's composition gives (epsilon per unit).
- ``mixed``: it depends on DP releases *and* on un-noised private data: DP for the units
  whose data went only through the releases, NO guarantee for the owners of the raw parts.
- ``seeded``: a DP release used seeded (repeatable) noise: NOT private, tests only.
- ``mixed-units``: every private input went through DP releases, but the releases bound
  different adjacency units (utterance and client): their epsilons do not add up to one
  guarantee, so the file is NOT called differentially private (each unit's releases are
  listed, and can be accounted, separately).

**Raw parts.** :class:`RawPart` names un-noised private data the contents depend on: what it
is (``counts``, ``text``, ``client update``, ``unrecorded``), the adjacency unit of its bound
(``utterance``/``client``; ``none`` when no contribution bound was enforced) and whose data it
is (partition labels, ``""`` = not known to be confined to anyone).

**Composition** (:func:`combine`): the raw parts of all inputs (a set) and the histories
combined (:meth:`History.combine`, sequential unless proven disjoint).

**Mechanisms** (:func:`after_release`): a noise release covers the raw parts whose
contribution its sensitivity bounds -- the Laplace mechanism on counts covers every raw part
of the counts (one unit, one bound, checked by the counts metadata); the Gaussian mechanism
on client updates covers the ``client update`` parts (each client's clipped update) and NOT
the raw parts that the starting model brought in (the server adds the noisy update to it).

Where it lives in files (written by :func:`to_meta` / :func:`to_payload`; read by
:func:`from_counts_meta`, :func:`from_meta`, :func:`from_payload`):

- ``#privacy_history`` (the ledger, :mod:`asrpriv.privacy.history`), ``#epsilon`` (its pure-DP
  total), ``#seeded=1``, and ``#private_raw`` (JSON list of raw parts, written when not empty).
  Counts files need no ``private_raw``: their state follows from ``#public``/``#noise``/``#unit``.
- Model/delta/server-state payloads: ``privacy_history``, ``seeded``, ``private_raw`` (a JSON
  string, always written, ``"[]"`` for none). A payload without ``private_raw`` was made
  before privacy states were recorded: its contents are treated as un-noised ("unrecorded").
- ARPA files: the same ``#key=value`` lines before ``\\data\\`` (kenlm and SRILM skip them).
  An ARPA with no asrpriv header was made by another tool: whoever gives it asserts it is
  public (as for a plain word list), exactly as a background LM is used in every recipe.

Pure Python (no numpy/torch): light steps import it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction

from asrpriv.privacy.history import History, check_partition

RAW_WHAT = ("counts", "text", "client update", "model", "unrecorded")
RAW_UNITS = ("utterance", "client", "none")
SEEDED_FLAG = "--allow-seeded-test-noise"
#: the keys of file headers this module owns
HEADER_KEYS = ("privacy_history", "epsilon", "seeded", "private_raw", "noise_scales")


class StateError(ValueError):
    """A privacy record that is malformed or contradicts itself (callers add file and line)."""


@dataclass(frozen=True, order=True)
class RawPart:
    """Un-noised private data that a file's contents depend on."""

    what: str
    unit: str = "none"
    partition: str = ""

    def __post_init__(self) -> None:
        if self.what not in RAW_WHAT:
            raise StateError(f"unknown raw part {self.what!r} (known: {', '.join(RAW_WHAT)})")
        if self.unit not in RAW_UNITS:
            raise StateError(f"unknown unit {self.unit!r} of a raw part (known: {', '.join(RAW_UNITS)})")
        try:
            check_partition(self.partition)
        except ValueError as err:
            raise StateError(str(err)) from None

    def to_dict(self) -> dict:
        return {"what": self.what, "unit": self.unit, "partition": self.partition}

    def words(self) -> str:
        unit = "no contribution bound" if self.unit == "none" else f"unit {self.unit}"
        whose = f" of {self.partition}" if self.partition else ""
        what = {"counts": "un-noised counts", "text": "un-noised private text",
                "client update": "un-noised client updates", "model": "an un-noised private model",
                "unrecorded": "data with no privacy record"}[self.what]
        return f"{what}{whose} ({unit})"


@dataclass(frozen=True)
class PrivacyState:
    """The privacy state of one file (see the module docstring)."""

    history: History = field(default_factory=History)
    raw: frozenset = frozenset()

    @property
    def seeded(self) -> bool:
        return self.history.seeded

    @property
    def kind(self) -> str:
        """``public``, ``private``, ``dp``, ``mixed``, ``mixed-units`` or ``seeded``."""
        if self.history.seeded:
            return "seeded"
        if self.raw and self.history.releases:
            return "mixed"
        if self.raw:
            return "private"
        if self.history.releases:
            return "mixed-units" if len(self.history.units()) > 1 else "dp"
        return "public"

    @property
    def is_dp(self) -> bool:
        """True only when every private input went through a (secure) DP release."""
        return self.kind == "dp"

    def words(self) -> str:
        """The state in words, first: what a reader must know before any epsilon."""
        raw = "; ".join(p.words() for p in sorted(self.raw))
        kind = self.kind
        if kind == "public":
            return "public: made from inputs declared public only (no private data, no DP release)"
        if kind == "private":
            return (f"NOT private: contains {raw}; no noise was released, so there is no DP "
                    "guarantee (keep it where that data may be: e.g. on its owner's device)")
        if kind == "mixed":
            return (f"NOT private (mixed): DP releases cover part of the data, but it contains "
                    f"{raw}: no guarantee for the owners of that data (keep it where that data "
                    "may be, e.g. personal factors on the client's device; do not publish)")
        if kind == "seeded":
            return ("NOT private: made with seeded (repeatable) test noise"
                    + (f"; also contains {raw}" if raw else ""))
        if kind == "mixed-units":
            return ("NOT differentially private as one guarantee: the releases below bound "
                    f"different adjacency units ({', '.join(sorted(self.history.units()))}), whose "
                    "epsilons do not compose into one; each unit's releases are a separate "
                    "guarantee for that unit only")
        return "differentially private: every private input went through the DP releases below"


PUBLIC = PrivacyState()


def raw_state(what: str, unit: str = "none", partition: str = "") -> PrivacyState:
    """The state of un-noised private data (e.g. text not declared public)."""
    return PrivacyState(History(), frozenset({RawPart(what, unit, partition)}))


def combine(states: list[PrivacyState], disjoint: bool = False) -> PrivacyState:
    """The state of something computed from inputs in these states.

    Raises:
        StateError: ``disjoint`` but the histories are not provably disjoint.
    """
    try:
        history = History.combine([s.history for s in states], disjoint)
    except ValueError as err:
        raise StateError(str(err)) from None
    return PrivacyState(history, frozenset().union(*(s.raw for s in states)) if states else frozenset())


def after_release(state: PrivacyState, release, covers: tuple[str, ...] | None = None,
                  keep: frozenset = frozenset(), flat: bool = False) -> PrivacyState:
    """``state`` after a noise release that bounds and noises its raw parts.

    Args:
        release: the :class:`asrpriv.privacy.history.Release` just made.
        covers: the ``what`` of the raw parts the mechanism's sensitivity bounds (None: all).
        keep: raw parts NOT covered whatever their kind (brought in by a starting model).
        flat: append to a flat ``seq`` chain (rounds of a server).
    """
    if flat:
        history = state.history.add_flat(release)
    else:
        history = state.history.add(release)
    raw = frozenset(p for p in state.raw
                    if p in keep or (covers is not None and p.what not in covers))
    return PrivacyState(history, raw)


# ------------------------------------------------------------------ reading records
def raw_from_json(text: str) -> frozenset:
    """Parse a ``private_raw`` value; StateError on anything malformed."""
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except (json.JSONDecodeError, RecursionError) as err:
        raise StateError(f"private_raw is not valid JSON: {err}") from None
    if not isinstance(obj, list):
        raise StateError("private_raw must be a JSON list")
    parts = []
    for item in obj:
        if not isinstance(item, dict) or set(item) != {"what", "unit", "partition"} or \
                not all(isinstance(v, str) for v in item.values()):
            raise StateError("a private_raw entry must be an object with string keys what, unit, partition")
        parts.append(RawPart(item["what"], item["unit"], item["partition"]))
    if len(set(parts)) != len(parts):
        raise StateError("private_raw lists a part twice")
    return frozenset(parts)


def raw_to_json(raw: frozenset) -> str:
    return json.dumps([p.to_dict() for p in sorted(raw)], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise StateError(f"duplicate key(s) {dup} in a JSON object")
    return dict(pairs)


def history_from_meta(meta: dict[str, str]) -> History:
    text = meta.get("privacy_history")
    return History.from_json(text) if text else History()


def from_counts_meta(meta: dict[str, str]) -> PrivacyState:
    """The state of a counts file from its (validated) metadata.

    ``#public=1``: public. ``#noise=laplace``: the releases of its history (the noise covered
    every unit's bounded counts). Otherwise: un-noised counts of ``#unit`` (``none`` when no
    bound was enforced) and ``#partition``.
    """
    history = history_from_meta(meta)
    if "private_raw" in meta:
        return PrivacyState(history, raw_from_json(meta["private_raw"]))
    if meta.get("public") == "1" or meta.get("noise", "none") != "none":
        return PrivacyState(history, frozenset())
    unit = meta.get("unit", "none") if meta.get("max_l1") else "none"
    return PrivacyState(history, frozenset({RawPart("counts", unit, meta.get("partition", ""))}))


def from_meta(meta: dict[str, str], legacy_raw: frozenset = frozenset()) -> PrivacyState:
    """The state recorded in ``#key=value`` headers of factors or ARPA files.

    ``legacy_raw``: the raw parts assumed when the header has no ``private_raw`` (files
    made before privacy states were recorded; this version writes the key whenever it has
    something to say).
    """
    history = history_from_meta(meta)
    raw = raw_from_json(meta["private_raw"]) if "private_raw" in meta else legacy_raw
    return PrivacyState(history, raw)


def from_payload(payload: dict) -> PrivacyState:
    """The state of a model, delta or server-state payload (already loaded, weights only).

    Raises:
        StateError: a malformed record.
    """
    text = payload.get("privacy_history")
    if text is None:
        history = History()
    elif not isinstance(text, str):
        raise StateError("privacy_history must be a JSON string")
    else:
        try:
            history = History.from_json(text)
        except ValueError as err:
            raise StateError(f"bad privacy_history: {err}") from None
    seeded = payload.get("seeded", False)
    if seeded not in (True, False) or bool(seeded) != history.seeded:
        raise StateError("the 'seeded' mark disagrees with the privacy_history")
    problem = check_round_record(payload.get("federated_round"), history)
    if problem:
        raise StateError(f"the privacy record contradicts itself: {problem} (edited?)")
    raw_text = payload.get("private_raw")
    if raw_text is None:  # made before privacy states were recorded
        return PrivacyState(history, frozenset({RawPart("unrecorded")}))
    if not isinstance(raw_text, str):
        raise StateError("private_raw must be a JSON string")
    return PrivacyState(history, raw_from_json(raw_text))


# ------------------------------------------------------------------ writing records
def to_meta(meta: dict[str, str], state: PrivacyState, always_raw: bool = False) -> dict[str, str]:
    """``meta`` with the state's header keys set (history, epsilon, seeded, private_raw).

    ``private_raw`` is written when the state has raw parts, or always (``[]``) with
    ``always_raw`` (factors: so that its absence marks a file made by an older version).
    """
    meta = {k: v for k, v in meta.items() if k not in HEADER_KEYS}
    if state.history.releases:
        scales = noise_scales(state.history)
        if scales:  # every Laplace release's scale, restated (checked on read)
            meta["noise_scales"] = ",".join(f"{x:.10g}" for x in scales)
        meta["privacy_history"] = state.history.to_json()
        if not state.raw:  # a file with un-noised private data claims no epsilon (seeded
            # files keep the ledger's total beside their #seeded=1 mark)
            try:
                meta["epsilon"] = f"{float(Fraction(state.history.epsilon_pure())):.10g}"
            except ValueError:
                pass
        if state.history.seeded:
            meta["seeded"] = "1"
    if state.raw or always_raw:
        meta["private_raw"] = raw_to_json(state.raw)
    return meta


def to_payload(state: PrivacyState) -> dict:
    """The payload keys recording ``state`` in a model, delta or server-state file."""
    extra: dict = {"private_raw": raw_to_json(state.raw)}
    if state.history.releases:
        extra["privacy_history"] = state.history.to_json()
    if state.history.seeded:
        extra["seeded"] = True
    return extra


def refuse_seeded(named_states: list[tuple[str, PrivacyState]], allowed: bool) -> None:
    """Refuse inputs made with seeded (repeatable, NOT private) noise unless ``allowed``.

    Raises:
        StateError: naming the first seeded input.
    """
    if allowed:
        return
    for name, state in named_states:
        if state.seeded:
            raise StateError(f"{name} contains seeded test noise (seeded=1), which is NOT private "
                             f"(the noise can be recomputed); pass {SEEDED_FLAG} if this is a test")


# ------------------------------------------------------------------ ledger checks
def check_round_record(round_meta, history: History) -> str | None:
    """A DP server round's ``federated_round`` against the model's history. None = agree.

    The record restates the last Gaussian release (noise multiplier, clip, sample rate) and,
    since this version, how many Gaussian releases the history holds (``dp_rounds``): an
    edit of one without the other is refused. Without ``dp_rounds`` (older files) the round
    counter bounds them from below: ``round`` DP rounds made at least ``round`` releases
    (fail closed: a history that lost releases is never read as cheaper than it was).
    """
    if not isinstance(round_meta, dict):
        return None
    z = round_meta.get("noise_multiplier")
    if isinstance(z, bool) or not isinstance(z, (int, float)) or not z:
        return None
    gaussian = [r for r in history.releases if r.mechanism == "gaussian"]
    if not gaussian:
        return f"federated_round says noise multiplier {z:g} but the history records no Gaussian release"
    last = gaussian[-1].params
    clip = round_meta.get("clip_l2")
    if not math.isclose(float(last["noise_multiplier"]), float(z), rel_tol=1e-9) or (
            isinstance(clip, (int, float)) and not isinstance(clip, bool)
            and not math.isclose(float(last["sensitivity_l2"]), float(clip), rel_tol=1e-9)):
        return (f"federated_round (z {z:g}, clip {clip}) disagrees with the history's last "
                f"Gaussian release (z {last['noise_multiplier']:g}, clip {last['sensitivity_l2']:g})")
    rate = round_meta.get("sample_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                             or not math.isclose(float(last["sample_rate"]), float(rate),
                                                 rel_tol=1e-9)):
        return (f"federated_round (sample rate {rate}) disagrees with the history's last "
                f"Gaussian release (sample rate {last['sample_rate']:g})")
    releases = sum(int(r.params["rounds"]) for r in gaussian)
    count = round_meta.get("dp_rounds")
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or count != releases:
            return (f"federated_round records {count!r} Gaussian round(s) but the history holds "
                    f"{releases}")
    else:
        t = round_meta.get("round")
        if isinstance(t, int) and not isinstance(t, bool) and t > releases:
            return (f"federated_round is round {t} of DP rounds but the history holds only "
                    f"{releases} Gaussian release(s)")
    return None


def noise_scales(history: History) -> list[float]:
    """The scale (sensitivity / epsilon) of every Laplace release, in the history's order."""
    return [float(r.params["sensitivity_l1"]) / float(r.params["epsilon"])
            for r in history.releases if r.mechanism == "laplace"]


def check_noise_scales(meta: dict[str, str], history: History) -> str | None:
    """``#noise_scales`` (counts, factors, ARPA headers) against every Laplace release of the
    history: an epsilon edited in the ledger (and in ``#epsilon``) but not here is caught,
    for every release, not only the last. Missing while the history holds Laplace releases:
    refused (fail closed), except for counts with one release (``#noise_scale`` restates it,
    as files made before this key did)."""
    expected = noise_scales(history)
    if "noise_scales" not in meta:
        if not expected or (meta.get("format", "").startswith("asrpriv-counts")
                            and len(expected) == 1):
            return None
        return (f"the privacy_history holds {len(expected)} Laplace release(s) but no "
                "#noise_scales restates their scales")
    scales = meta["noise_scales"].split(",")
    if len(scales) != len(expected) or not all(
            math.isclose(float(a), b, rel_tol=1e-6) for a, b in zip(scales, expected)):
        return (f"#noise_scales={meta['noise_scales']} disagrees with the privacy_history's "
                f"Laplace releases ({','.join(f'{x:.10g}' for x in expected)})")
    return None


def check_laplace_record(meta: dict[str, str], history: History) -> str | None:
    """Cross-check a noisy counts file's summary keys against its last Laplace release.

    The ledger is a record, not a signature: this catches an edit that changes some keys
    and not the others (epsilon lowered in the history but not ``#noise_scale``), not a
    consistent forgery. Returns a problem, or None.
    """
    if meta.get("noise", "none") == "none":
        if history.releases:
            return "#noise=none but the privacy_history records noise releases"
        return None
    laplace = [r for r in history.releases if r.mechanism == "laplace"]
    if not laplace:
        return "noisy counts whose history has no Laplace release"
    last = laplace[-1]
    eps = float(last.params["epsilon"])
    sens = float(last.params["sensitivity_l1"])
    grid = float(last.params["grid"])
    checks = (("noise_scale", sens / eps), ("sensitivity", sens), ("grid", grid))
    for key, expected in checks:
        if key in meta and not math.isclose(float(meta[key]), expected, rel_tol=1e-6):
            return (f"#{key}={meta[key]} disagrees with the last release of the privacy_history "
                    f"({expected:.10g}: epsilon {eps:g}, sensitivity {sens:g})")
    if meta.get("unit") and last.unit != meta["unit"]:
        return f"#unit={meta['unit']} disagrees with the release's unit {last.unit}"
    return None
