"""import-nbest --from kaldi-lattice: the N best distinct word sequences of Kaldi text lattices,
checked against brute-force enumeration of every path (random and hand-made lattices with
epsilons, ties and several final states) and through the CLI."""

from __future__ import annotations

import random

import pytest
from conftest import assert_one_line_error, run_cli, run_proc

from asrpriv.io.importers.kaldi_lattice import Lattice, nbest, parse_lattices


def brute_force(lat: Lattice, n: int, scale: float):
    """Every path from the start by depth-first enumeration; per word sequence its best path
    under (combined, graph); sorted by (combined, graph, words); the first n."""
    best: dict[tuple, tuple] = {}

    def walk(state, words, comb, graph, ac, depth):
        assert depth < 200
        if state in lat.finals:
            g, a = lat.finals[state]
            key = (comb + (g + scale * a), graph + g)
            w = tuple(words)
            if w not in best or key < best[w][:2]:
                best[w] = (*key, ac + a)
        for dst, word, g, a in lat.arcs.get(state, ()):
            walk(dst, words + ([word] if word is not None else []), comb + (g + scale * a),
                 graph + g, ac + a, depth + 1)

    walk(lat.start, [], 0.0, 0.0, 0.0, 0)
    ranked = sorted(best.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0]))
    return [(w, v[1], v[2]) for w, v in ranked[:n]]


def as_triples(hyps):
    return [(h.words, h.graph_cost, h.acoustic_cost) for h in hyps]


def lattice_text(key, arcs, finals, compact=True):
    """Kaldi's text form: key line, arcs (start state's first), finals, blank line."""
    lines = [f"{key} "]
    for src, dst, word, g, a in arcs:
        if compact:
            lines.append(f"{src}\t{dst}\t{word}\t{g},{a},1_2")
        else:
            lines.append(f"{src}\t{dst}\t7\t{word}\t{g},{a}")
    for s, (g, a) in finals.items():
        lines.append(f"{s}\t{g},{a}," if compact else f"{s}\t{g},{a}")
    return "\n".join(lines) + "\n\n"


def parse_one(text, symbols=None):
    lines = list(enumerate(text.split("\n"), 1))
    (lat,) = list(parse_lattices(lines, "x", symbols))
    return lat


def random_dag(rng: random.Random, states: int, words: list[str], eps_share: float,
               grid: float = 0.25):
    """Arcs only from lower to higher states (acyclic); costs on a grid of `grid` so that
    sums are exact and ties happen; some states final."""
    arcs = []
    for s in range(states - 1):
        for _ in range(rng.randint(1, 3)):
            d = rng.randint(s + 1, min(states - 1, s + 3))
            w = "0" if rng.random() < eps_share else rng.choice(words)
            arcs.append((s, d, w, grid * rng.randint(-4, 12), grid * rng.randint(-8, 16)))
    finals = {states - 1: (0.0, 0.0)}
    for s in range(1, states - 1):
        if rng.random() < 0.25:
            finals[s] = (grid * rng.randint(0, 4), grid * rng.randint(-2, 4))
    return arcs, finals


@pytest.mark.parametrize("seed", range(60))
def test_random_lattices_equal_brute_force(seed):
    rng = random.Random(seed)
    words = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    arcs, finals = random_dag(rng, rng.randint(2, 9), words, eps_share=rng.choice([0, 0.3, 0.6]))
    compact = seed % 2 == 0
    lat = parse_one(lattice_text("utt", arcs, finals, compact))
    for scale in (1.0, 0.5, 0.0625):
        for n in (1, 2, 3, 7, 50):
            expected = brute_force(lat, n, scale)
            got = as_triples(nbest(lat, n, scale))
            assert got == expected, (seed, scale, n)


def test_hand_made_epsilons_ties_and_finals():
    # two paths spell "a b" (via an epsilon arc or not), the cheaper must be kept once;
    # "a" ends at a final state with a final weight; "a c" and "b" tie exactly on the
    # combined cost and the graph cost decides; "c" and "d" tie on both: code-point order.
    arcs = [
        (0, 1, "a", 1.0, 1.0),
        (0, 2, "0", 0.5, 0.5),
        (2, 1, "a", 0.25, 1.0),   # a again, via epsilon: cost 2.25 to state 1 (worse than 2)
        (1, 3, "b", 0.0, 1.0),    # "a b" = 3
        (1, 4, "c", 1.0, 0.0),    # "a c" = 3 + final 0 -> 3, graph 2
        (0, 5, "b", 0.5, 2.5),    # "b" = 3, graph 0.5: before "a c" (graph 2)
        (0, 6, "d", 2.0, 2.0),    # "d" = 4
        (0, 7, "c", 3.0, 1.0),    # "c" = 4, same graph 3? no: graph 3 vs d's 2
        (0, 8, "e", 2.0, 2.0),    # "e" = 4, graph 2: ties "d" on both -> "d" first
    ]
    finals = {1: (1.5, 0.0), 3: (0.0, 0.0), 4: (0.0, 0.0), 5: (0.0, 0.0), 6: (0.0, 0.0),
              7: (0.0, 0.0), 8: (0.0, 0.0)}
    lat = parse_one(lattice_text("utt", arcs, finals))
    got = as_triples(nbest(lat, 10, 1.0))
    assert got == brute_force(lat, 10, 1.0)
    assert [w for w, _g, _a in got] == [("b",), ("a", "b"), ("a", "c"), ("a",), ("d",), ("e",), ("c",)]
    assert got[1] == (("a", "b"), 1.0, 2.0)   # the non-epsilon path of "a b"


def test_acoustic_scale_changes_order_but_not_written_costs():
    arcs = [(0, 1, "x", 10.0, 0.0), (0, 1, "y", 0.0, 20.0)]
    lat = parse_one(lattice_text("u", arcs, {1: (0.0, 0.0)}))
    assert [h.words for h in nbest(lat, 2, 1.0)] == [("x",), ("y",)]
    scaled = nbest(lat, 2, 0.1)  # y: 0 + 0.1 * 20 = 2 < x: 10
    assert [h.words for h in scaled] == [("y",), ("x",)]
    assert (scaled[0].graph_cost, scaled[0].acoustic_cost) == (0.0, 20.0)  # unscaled, as Kaldi


def test_cycle_is_refused():
    arcs = [(0, 1, "a", 1.0, 1.0), (1, 0, "b", 1.0, 1.0)]
    lat = parse_one(lattice_text("u", arcs, {1: (0.0, 0.0)}))
    from asrpriv.errors import InputError

    with pytest.raises(InputError, match="cycle"):
        nbest(lat, 2)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_cli_words_stdin_and_specifier(tmp_path):
    words = _write(tmp_path, "words.txt", "<eps> 0\nhello 1\nworld 2\nword 3\n")
    text = (lattice_text("utt1", [(0, 1, 1, 1.0, 2.0), (1, 2, 2, 0.5, 1.0), (1, 2, 3, 1.0, 1.0)],
                         {2: (0.0, 0.0)}, compact=False)
            + lattice_text("utt2", [(0, 1, 3, 0.0, 1.0)], {1: (0.25, 0.0)}))
    lat = _write(tmp_path, "lat.txt", text)
    expected = ("utt_id\trank\tam_score\tlm_score\ttext\n"
                "utt1\t1\t-3.0\t-1.5\thello world\n"
                "utt1\t2\t-3.0\t-2.0\thello word\n"
                "utt2\t1\t-1.0\t-0.25\tword\n")
    for path, stdin in ((lat, None), ("-", text), ("ark,t:-", text), (f"ark,t:{lat}", None),
                        (f"ark:cat {lat} |", None)):
        r = run_cli(["import-nbest", "--from", "kaldi-lattice", "--n", "5",
                     "--words", words, path], input=stdin)
        assert r.exit_code == 0, (path, r.output)
        assert r.stdout == expected, path
    r = run_cli(["import-nbest", "--from", "kaldi-lattice", "--n", "1",
                 "--words", words, "--acoustic-scale", "0.1", lat])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1:] == ["utt1\t1\t-3.0\t-1.5\thello world",
                                        "utt2\t1\t-1.0\t-0.25\tword"]


def test_cli_equals_from_kaldi_on_the_nbest_archive(tmp_path):
    """The rows equal what --from kaldi reads from the N-best archive lattice-to-nbest would
    write for the same lattice (one linear lattice per UTT-k key)."""
    arcs = [(0, 1, "a", 1.0, 2.0), (0, 1, "b", 2.0, 0.5), (1, 2, "c", 0.5, 0.5), (1, 2, "0", 0.0, 3.0)]
    lat = parse_one(lattice_text("u1", arcs, {2: (0.0, 0.0)}))
    hyps = nbest(lat, 4, 1.0)
    archive = ""
    for k, h in enumerate(hyps, 1):
        body = [f"u1-{k} "]
        for i, w in enumerate(h.words):
            g, a = (h.graph_cost, h.acoustic_cost) if i == 0 else (0.0, 0.0)
            body.append(f"{i} {i + 1} {w} {g},{a},")
        body.append(f"{len(h.words)}")
        archive += "\n".join(body) + "\n\n"
    nb = _write(tmp_path, "nbest.txt", archive)
    latf = _write(tmp_path, "lat.txt", lattice_text("u1", arcs, {2: (0.0, 0.0)}))
    a = run_cli(["import-nbest", "--from", "kaldi", nb])
    b = run_cli(["import-nbest", "--from", "kaldi-lattice", "--n", "4", latf])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    assert a.stdout == b.stdout
    assert len(a.stdout.splitlines()) == 5


def test_binary_lattice_refused_with_command(tmp_path):
    import os
    import shutil

    p = tmp_path / "1.lats"
    p.write_bytes(b"utt1 \0BFST\x00\x00\x00")
    assert shutil.which("lattice-copy", path=os.environ.get("PATH")) is None  # no Kaldi build here
    r = run_proc(["import-nbest", "--from", "kaldi-lattice", str(p)])
    line = assert_one_line_error(r, "1.lats:1: a binary Kaldi lattice archive")
    assert f"convert it with: lattice-copy --write-compact=true 'ark:{p}' ark,t:- | asrpriv import-nbest --from kaldi-lattice -" in line


def test_key_with_space_gets_its_own_message(tmp_path):
    p = _write(tmp_path, "lat.txt", "utterance 123\n0 1 a 1,1,\n1\n\n")
    r = run_proc(["import-nbest", "--from", "kaldi-lattice", p])
    assert_one_line_error(r, "lat.txt:1: lattice key 'utterance 123' holds white space")


def test_lattice_given_to_from_kaldi_points_to_kaldi_lattice(tmp_path):
    p = _write(tmp_path, "lat.txt", "utt1\n0 1 a 1,1,\n0 1 b 1,1,\n1\n\n")
    r = run_proc(["import-nbest", "--from", "kaldi", p])
    assert_one_line_error(r, "--from kaldi-lattice")


def test_binary_lattice_on_stdin_and_pipe_refused_with_command(tmp_path):
    p = tmp_path / "1.lats"
    p.write_bytes(b"utt1 \0BFST\x00\x00\x00")
    r = run_proc(["import-nbest", "--from", "kaldi-lattice", "-"], input=p.read_bytes())
    assert_one_line_error(r, "lattice-copy --write-compact=true ark:- ark,t:- | asrpriv import-nbest")
    r = run_proc(["import-nbest", "--from", "kaldi-lattice", f"ark:cat {p} |"])
    assert_one_line_error(r, f"lattice-copy --write-compact=true 'ark:cat {p} |' ark,t:-")


def test_ami_nbest_as_lattices_round_trip(tmp_path):
    """Our AMI N-best (first 40 utterances), each utterance's hypotheses merged into one
    deterministic word lattice (a trie: shared prefixes share arcs and states, an epsilon arc
    to each hypothesis' own final state, its costs split between that arc and the final
    weight), read back with --from kaldi-lattice: the distinct hypotheses with their scores,
    ranked by am + lm (acoustic scale 1), then lm, then words."""
    from conftest import AMI

    rows = []
    with open(AMI / "dev" / "nbest.tsv", encoding="utf-8") as f:
        cols = f.readline().rstrip("\n").split("\t")
        for line in f:
            rows.append(dict(zip(cols, line.rstrip("\n").split("\t"))))
    utts = list(dict.fromkeys(r["utt_id"] for r in rows))[:40]
    text, expected = [], []
    for u in utts:
        hyps = [r for r in rows if r["utt_id"] == u]
        best: dict[tuple, tuple] = {}
        for r in hyps:
            g, a = -float(r["lm_score"]), -float(r["am_score"])
            w = tuple(r["text"].split())
            if w not in best or (g + a, g) < best[w][:2]:
                best[w] = (g + a, g, a)
        ranked = sorted(best.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0]))
        expected += [(u, k, -v[2], -v[1], " ".join(w)) for k, (w, v) in enumerate(ranked, 1)]
        arcs, finals, trie = [], [], {(): 0}
        for w, (_c, g, a) in best.items():
            for i in range(len(w)):
                if w[: i + 1] not in trie:
                    trie[w[: i + 1]] = len(trie)
                    arcs.append(f"{trie[w[:i]]}\t{trie[w[:i + 1]]}\t{w[i]}\t0,0,")
        for w, (_c, g, a) in best.items():
            end = len(trie) + len(finals)
            arcs.append(f"{trie[w]}\t{end}\t0\t{g / 2!r},{a / 2!r},")
            finals.append(f"{end}\t{g - g / 2!r},{a - a / 2!r},")
        text.append("\n".join([u, *arcs, *finals]) + "\n")
    lat = tmp_path / "lat.txt"
    lat.write_text("\n".join(text) + "\n", encoding="utf-8")
    r = run_cli(["import-nbest", "-q", "--from", "kaldi-lattice", "--n", "1000", str(lat)])
    assert r.exit_code == 0, r.stderr
    got = [line.split("\t") for line in r.stdout.splitlines()[1:]]
    assert len(got) == len(expected) > 200
    for g, e in zip(got, expected):
        assert (g[0], int(g[1]), g[4]) == (e[0], e[1], e[4])
        assert float(g[2]) == pytest.approx(e[2], abs=1e-6)
        assert float(g[3]) == pytest.approx(e[3], abs=1e-6)
