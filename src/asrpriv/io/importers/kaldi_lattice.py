"""Kaldi lattices to N-best lists, without Kaldi: ``lattice-to-nbest`` + ``nbest-to-linear``.

PATH is a Kaldi lattice archive in text form (``lattice-copy ark:1.lats ark,t:-``; a file,
``-`` or an ``ark,t:`` / ``ark:COMMAND |`` specifier), holding lattices or compact lattices
in OpenFst's text format as Kaldi writes them (src/lat/kaldi-lattice.cc, kaldi-asr/kaldi at
f4007661): a key line, then one line per arc and per final state, then a blank line::

    utt1                       the key (any Kaldi key: one token)
    0 1 23 4.5,10.2,1_2_3      compact arc: src dst word graph_cost,acoustic_cost,tids
    0 2 0 0.5,1.0,             an epsilon arc (word 0)
    1 3 1044 23 1.2,3.4        lattice arc: src dst transition-id word graph,acoustic
    3 0.5,0,                   a final state with its weight (or just '3': weight 0,0)
    <blank line>

The start state is the source of the first arc line (OpenFst prints it first). An arc
without a weight has weight ``0,0``. Word ``0`` (or ``<eps>``) is epsilon. Words are integer
ids looked up in ``--words words.txt``, or words as they stand if the archive went through
``utils/int2sym.pl``.

What is computed (src/latbin/lattice-to-nbest.cc at f4007661): the lattice is scaled,
``ScaleLattice(LatticeScale(1, S))`` with ``S = --acoustic-scale`` (default 1, as Kaldi's),
so a path's combined cost is ``sum over its arcs and final weight of graph + S x acoustic``;
the N best paths are found by ``fst::ShortestPath`` and the scale is undone before writing,
so ``nbest-to-linear`` writes *unscaled* graph and acoustic costs. Here the N best *distinct
word sequences* are written, each with its best path, ranked by:

1. the combined cost (lower first), then
2. the graph cost (lower first): Kaldi's ``LatticeWeight`` order (``Compare`` in
   src/fstext/lattice-weight.h), then
3. the word sequence, compared word by word in code-point order (a shorter sequence that is
   a prefix of another first): this is our rule for exact ties, which Kaldi leaves to the
   order of OpenFst's heap.

A lattice from Kaldi's decoders is determinized (one path per word sequence), and there
this equals ``lattice-to-nbest --n=N --acoustic-scale=S`` + ``nbest-to-linear`` (ties aside,
and up to float32: Kaldi sums in float32, we in float64). On a lattice with several paths
per word sequence (``--determinize-lattice=false``) Kaldi repeats word sequences; we keep
the best path of each, as ``lattice-determinize`` before ``lattice-to-nbest`` would.

Columns as ``--from kaldi`` writes them: ``am_score = -acoustic_cost`` and ``lm_score =
-graph_cost`` (natural log; the acoustic score unscaled, as Kaldi writes it); rank k is
``lattice-to-nbest``'s key ``UTT-k``.

Algorithm: exact best completion costs ``h(s)`` by one backward pass in topological order
(a lattice with a cycle is refused; Kaldi's lattices are acyclic), then an A* search over
(state, word prefix) pairs in order of ``g + h`` (Mohri and Riley, "An efficient algorithm
for the n-best-strings problem", ICSLP 2002): a state is expanded for at most N distinct
word prefixes (a further prefix at a state cannot lead to one of the N best distinct
sequences: the N earlier prefixes, each followed by the state's best completion, are N
distinct sequences that are at least as good) and prefixes are shared in a trie. Memory is
O(N x (states + arcs)) and time O(N x arcs x log(N x arcs)): linear in the lattice size
times N up to the heap's logarithm (benchmarks/bench_lattice_nbest.py).

Binary lattices (Kaldi's default) are read through ``lattice-copy`` when a Kaldi build is on
PATH, else refused with the one-line command that converts them.
"""

from __future__ import annotations

import heapq
import math
import os
import shutil
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.importers.common import NbestTable, Row, check_id, parse_float

#: labels read as epsilon (no word)
EPSILON = frozenset({"0", "<eps>"})
#: the virtual state after every final state
_FINAL = -1


@dataclass
class Lattice:
    """One lattice: ``arcs[src] = [(dst, word or None, graph_cost, acoustic_cost)]``,
    ``finals[state] = (graph_cost, acoustic_cost)``, start state, key and line of its key."""

    key: str
    line: int
    start: int | None = None
    arcs: dict[int, list[tuple[int, str | None, float, float]]] = field(default_factory=dict)
    finals: dict[int, tuple[float, float]] = field(default_factory=dict)

    @property
    def num_arcs(self) -> int:
        return sum(len(a) for a in self.arcs.values())


@dataclass
class Hypothesis:
    """One of the N best: its words and the unscaled costs of its best path."""

    words: tuple[str, ...]
    graph_cost: float
    acoustic_cost: float


def _weight(text: str, path, lineno) -> tuple[float, float]:
    parts = text.split(",")
    if len(parts) < 2:
        raise InputError(path, lineno, f"weight {text!r} is not 'graph_cost,acoustic_cost[,tids]'")
    return (parse_float(parts[0], path, lineno, "graph cost"),
            parse_float(parts[1], path, lineno, "acoustic cost"))


def _state(text: str, path, lineno) -> int:
    if not text.isdigit():
        raise InputError(path, lineno, f"expected a state number, got {text!r}")
    return int(text)


def parse_lattices(lines: Iterable[tuple[int, str]], path,
                   symbols: dict[str, str] | None = None) -> Iterator[Lattice]:
    """Lattices of a text archive given as ``(line, text)`` pairs (module docstring)."""
    lat: Lattice | None = None
    for lineno, line in lines:
        fields = line.split()
        if not fields:
            if lat is not None:
                yield lat
                lat = None
            continue
        if lat is None:
            key = line.strip()
            if any(ch.isspace() for ch in key):
                raise InputError(path, lineno, f"lattice key {key!r} holds white space: a Kaldi key "
                                               "is one token (rename it, e.g. with '_' for ' ')")
            lat = Lattice(key, lineno)
            continue
        src = _state(fields[0], path, lineno)
        n = len(fields)
        if n <= 2:
            if src in lat.finals:
                raise InputError(path, lineno, f"state {src} is final twice in lattice {lat.key!r}")
            lat.finals[src] = _weight(fields[1], path, lineno) if n == 2 else (0.0, 0.0)
            if lat.start is None:
                lat.start = src
            continue
        if n == 3:  # compact arc without weight
            dst, label, weight = fields[1], fields[2], None
        elif n == 4 and "," in fields[3]:  # compact arc
            dst, label, weight = fields[1], fields[2], fields[3]
        elif n == 4:  # lattice arc without weight: src dst ilabel olabel
            dst, label, weight = fields[1], fields[3], None
        elif n == 5:  # lattice arc: src dst ilabel olabel weight
            dst, label, weight = fields[1], fields[3], fields[4]
        else:
            raise InputError(path, lineno, f"expected an arc 'src dst word weight' or 'src dst "
                                           f"ilabel olabel weight', got {n} fields")
        g, a = _weight(weight, path, lineno) if weight is not None else (0.0, 0.0)
        word = None
        if label not in EPSILON:
            if symbols is not None:
                if label not in symbols:
                    raise InputError(path, lineno, f"word id {label} is not in the symbol table")
                word = symbols[label]
                if word in EPSILON:
                    word = None
            elif label.isdigit():
                raise InputError(path, lineno, "integer word ids: give --words words.txt")
            else:
                word = label
        if lat.start is None:
            lat.start = src
        lat.arcs.setdefault(src, []).append((_state(dst, path, lineno), word, g, a))
    if lat is not None:
        yield lat


def _topological(lat: Lattice) -> list[int]:
    """States reachable from the start, in topological order; a cycle is an InputError."""
    order: list[int] = []
    mark: dict[int, int] = {}  # 1 = on the stack, 2 = done
    arcs = lat.arcs
    stack = [(lat.start, iter(arcs.get(lat.start, ())))]
    mark[lat.start] = 1
    while stack:
        state, it = stack[-1]
        for dst, _w, _g, _a in it:
            m = mark.get(dst)
            if m == 1:
                raise InputError(None, lat.line, f"lattice {lat.key!r} has a cycle (through state "
                                                 f"{dst}): Kaldi lattices are acyclic")
            if m is None:
                mark[dst] = 1
                stack.append((dst, iter(arcs.get(dst, ()))))
                break
        else:
            stack.pop()
            mark[state] = 2
            order.append(state)
    order.reverse()
    return order


class _Seq:
    """The word sequence of a search item, compared only on exact cost ties (rule 3).

    ``node``: the prefix in the trie; ``state``: where the best completion starts
    (:data:`_FINAL`: none)."""

    __slots__ = ("search", "node", "state", "_words")

    def __init__(self, search: "_Search", node: int, state: int) -> None:
        self.search, self.node, self.state, self._words = search, node, state, None

    def words(self) -> tuple[str, ...]:
        if self._words is None:
            self._words = self.search.prefix(self.node) + self.search.suffix(self.state)
        return self._words

    def __lt__(self, other: "_Seq") -> bool:
        return self.words() < other.words()

    def __eq__(self, other) -> bool:
        return self.words() == other.words()

    __hash__ = None  # type: ignore[assignment]


class _Search:
    def __init__(self, lat: Lattice, scale: float) -> None:
        self.lat = lat
        self.scale = scale
        self.parent = [-1]
        self.word: list[str | None] = [None]
        self.children: dict[tuple[int, str], int] = {}
        #: best completion of each state: (combined, graph, word or None, next state or _FINAL)
        self.best: dict[int, tuple[float, float, str | None, int]] = {}
        self._suffix: dict[int, tuple[str, ...]] = {_FINAL: ()}

    def child(self, node: int, word: str) -> int:
        key = (node, word)
        found = self.children.get(key)
        if found is None:
            found = len(self.parent)
            self.parent.append(node)
            self.word.append(word)
            self.children[key] = found
        return found

    def prefix(self, node: int) -> tuple[str, ...]:
        out = []
        while node > 0:
            out.append(self.word[node])
            node = self.parent[node]
        return tuple(reversed(out))

    def suffix(self, state: int) -> tuple[str, ...]:
        if state in self._suffix:
            return self._suffix[state]
        out = []
        s = state
        while s != _FINAL:
            _c, _g, word, s = self.best[s]
            if word is not None:
                out.append(word)
        self._suffix[state] = tuple(out)
        return self._suffix[state]

    def backward(self) -> None:
        """``best[s]``: the completion of ``s`` least in the order of the module docstring."""
        lat, scale, best = self.lat, self.scale, self.best
        for s in reversed(_topological(lat)):
            cand = None
            if s in lat.finals:
                g, a = lat.finals[s]
                cand = (g + scale * a, g, None, _FINAL)
            for dst, word, g, a in lat.arcs.get(s, ()):
                b = best.get(dst)
                if b is None:
                    continue
                c = (g + scale * a + b[0], g + b[1], word, dst)
                if cand is None or self._less(c, cand):
                    cand = c
            if cand is not None:
                best[s] = cand

    def _less(self, x, y) -> bool:
        if x[0] != y[0]:
            return x[0] < y[0]
        if x[1] != y[1]:
            return x[1] < y[1]
        wx = ((x[2],) if x[2] is not None else ()) + self.suffix(x[3])
        wy = ((y[2],) if y[2] is not None else ()) + self.suffix(y[3])
        return wx < wy

    def run(self, n: int) -> list[Hypothesis]:
        lat, scale = self.lat, self.scale
        if lat.start is None:
            return []
        self.backward()
        best = self.best
        if lat.start not in best:
            return []
        out: list[Hypothesis] = []
        done: set[int] = set()
        expanded: dict[int, set[int]] = {}
        counter = 0
        b = best[lat.start]
        # (f combined, f graph, sequence, counter, state, node, g combined, g graph, g acoustic)
        heap = [(b[0], b[1], _Seq(self, 0, lat.start), 0, lat.start, 0, 0.0, 0.0, 0.0)]
        finals, arcs = lat.finals, lat.arcs
        while heap and len(out) < n:
            _f, _fg, _seq, _k, state, node, gc, gg, ga = heapq.heappop(heap)
            if state == _FINAL:
                if node not in done:
                    done.add(node)
                    out.append(Hypothesis(self.prefix(node), gg, ga))
                continue
            seen = expanded.get(state)
            if seen is None:
                seen = expanded[state] = set()
            if node in seen or len(seen) >= n:
                continue
            seen.add(node)
            if state in finals:
                g, a = finals[state]
                c = gc + (g + scale * a)
                counter += 1
                heapq.heappush(heap, (c, gg + g, _Seq(self, node, _FINAL), counter, _FINAL, node,
                                      c, gg + g, ga + a))
            for dst, word, g, a in arcs.get(state, ()):
                bd = best.get(dst)
                if bd is None:
                    continue
                child = node if word is None else self.child(node, word)
                got = expanded.get(dst)
                if got is not None and (child in got or len(got) >= n):
                    continue
                c = gc + (g + scale * a)
                counter += 1
                heapq.heappush(heap, (c + bd[0], gg + g + bd[1], _Seq(self, child, dst), counter,
                                      dst, child, c, gg + g, ga + a))
        return out


def nbest(lat: Lattice, n: int, acoustic_scale: float = 1.0) -> list[Hypothesis]:
    """The ``n`` best distinct word sequences of ``lat`` (module docstring), best first."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if not (acoustic_scale > 0 and math.isfinite(acoustic_scale)):
        raise ValueError("acoustic_scale must be a positive number")
    return _Search(lat, acoustic_scale).run(n)


def _binary_head(path: str) -> bool:
    """True when a lattice file starts like a binary Kaldi archive (``key \\0B``)."""
    from asrpriv.io.lines import open_binary

    try:
        stream = open_binary(path)
        try:
            head = stream.read(4096)
        finally:
            stream.close()
    except OSError:
        return False
    first = head.split(b"\n", 1)[0]
    return b"\0B" in first or b"\0" in head


def convert_command(rspecifier: str) -> str:
    """The one-line command that writes a binary lattice archive in text form and imports it
    (for standard input, the part to put into the pipe)."""
    tail = "lattice-copy --write-compact=true {} ark,t:- | asrpriv import-nbest --from kaldi-lattice -"
    if rspecifier in ("ark:-", "-"):
        return "... | " + tail.format("ark:-")
    return tail.format(f"'{rspecifier}'")


def _lines(path: str):
    """``(display name, (line, text) pairs)`` of PATH: a file, ``-`` or a specifier."""
    from asrpriv.io import kaldi_tables
    from asrpriv.io.lines import iter_lines

    if kaldi_tables.is_specifier(path):
        spec = kaldi_tables.parse(path)
        if spec.kind != "ark":
            raise AsrprivError(f"{path}: lattices are read from an archive (ark,t:FILE, ark,t:-, "
                               "ark:COMMAND |)")
        if spec.rx.endswith("|"):
            if shutil.which("lattice-copy"):  # Kaldi reads text and binary alike
                return _via_kaldi(path, path)
        elif spec.rx != "-" and os.path.isfile(spec.rx) and _binary_head(spec.rx):
            return _binary(spec.rx, f"ark:{spec.rx}")
        return path, _guard(kaldi_tables.iter_lines(path), path, path)
    if path != "-" and os.path.isfile(path) and _binary_head(path):
        return _binary(path, f"ark:{path}")
    return path, _guard(iter_lines(path), path, "ark:-" if path == "-" else f"ark:{path}")


def _via_kaldi(name: str, rspecifier: str):
    from asrpriv.io import kaldi_tables

    spec = f"ark:lattice-copy --write-compact=true '{rspecifier}' ark,t:- |"
    return name, _guard(kaldi_tables.iter_lines(spec), name, rspecifier)


def _binary(file: str, rspecifier: str):
    if shutil.which("lattice-copy"):
        return _via_kaldi(file, rspecifier)
    raise InputError(file, 1, "a binary Kaldi lattice archive and no Kaldi build on PATH: "
                              "convert it with: " + convert_command(rspecifier))


def _guard(lines, name, rspecifier):
    """Text lines; a NUL byte (a binary entry in a stream) gets the conversion advice."""
    try:
        yield from lines
    except InputError as err:
        if "binary data" in err.detail:
            raise InputError(name, err.line, "a binary Kaldi lattice entry and no text form: "
                                             "convert it with: " + convert_command(rspecifier)) from None
        raise


def read(path: str, words: str | None = None, acoustic_scale: float = 1.0, n: int = 1,
         **_ignored) -> NbestTable:
    """The ``import-nbest --from kaldi-lattice`` importer (module docstring)."""
    from asrpriv.io.importers.kaldi import read_symbols

    if n < 1:
        raise AsrprivError("--n: expected a positive number of hypotheses")
    symbols = read_symbols(words) if words is not None else None
    name, lines = _lines(path)
    table = NbestTable(["am_score", "lm_score"], iter(()))
    table.rows = _rows(parse_lattices(lines, name, symbols), name, n, acoustic_scale, table)
    return table


def _rows(lattices: Iterator[Lattice], name, n: int, scale: float, table: NbestTable) -> Iterator[Row]:
    empty = []
    for lat in lattices:
        check_id(lat.key, name, lat.line)
        try:
            hyps = nbest(lat, n, scale)
        except InputError as err:
            raise InputError(name, lat.line, err.detail) from None
        if not hyps:
            empty.append(lat.key)
            table.note = (f"{len(empty)} lattice(s) without a path to a final state, skipped as "
                          f"lattice-to-nbest skips them (first: {empty[0]!r})")
            continue
        for k, h in enumerate(hyps, 1):
            yield Row(lat.key, k, " ".join(h.words),
                      {"am_score": -h.acoustic_cost, "lm_score": -h.graph_cost},
                      where=(name, lat.line))
