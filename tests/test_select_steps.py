"""The steps that do what the recipes did with awk: select-nbest, select-text, pick-best,
audit-items, sample-clients --expected, @REPORT weights (expected values written by hand)."""

from __future__ import annotations

import json

from conftest import run_cli

NBEST = ("utt_id\tclient\trank\tscore\ttext\n"
         "b_1\tB\t2\t-2\tb one x\n" "b_1\tB\t1\t-1\tb one\n"
         "a_1\tA\t1\t-1\ta one\n" "a_1\tA\t2\t-3\ta won\n"
         "a_2\tA\t1\t-1\ta two\n"
         "c_1\tC\t1\t-1\tc one\n"
         "a_3\tA\t1\t-1\ta three\n")
REF = "x_9 nothing\na_3 a three\nb_1 b one\na_1  a   one\n"


def _ok(result):
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _files(tmp_path):
    (tmp_path / "n.tsv").write_text(NBEST)
    (tmp_path / "ref.txt").write_text(REF)
    return str(tmp_path / "n.tsv"), str(tmp_path / "ref.txt")


def test_select_nbest_clients_best_and_references(tmp_path):
    nbest, ref = _files(tmp_path)
    assert _ok(run_cli(["select-nbest", "--list-clients", nbest])) == "A\nB\nC\n"
    assert _ok(run_cli(["select-nbest", "--list-clients", "--every", "2", nbest])) == "A\nC\n"
    assert _ok(run_cli(["select-nbest", "--list-clients", "--every", "2", "--others", nbest])) == "B\n"
    # rank 1 by the rank column, not by position in the file
    assert _ok(run_cli(["select-nbest", "--best", nbest])).splitlines() == [
        "b_1 b one", "a_1 a one", "a_2 a two", "c_1 c one", "a_3 a three"]
    rows = _ok(run_cli(["select-nbest", "--clients", "A,C", "--max-per-client", "2", nbest])).splitlines()
    assert rows[0] == NBEST.splitlines()[0]
    assert [r.split("\t")[0] for r in rows[1:]] == ["a_1", "a_1", "a_2", "c_1"]
    top = _ok(run_cli(["select-nbest", "--top", "1", "--exclude-clients", "C", nbest])).splitlines()
    assert [r.split("\t")[4] for r in top[1:]] == ["b one", "a one", "a two", "a three"]
    # references in the reference's order, lines as they are
    assert _ok(run_cli(["select-nbest", "--clients", "A B", "--references", ref, nbest])) == \
        "a_3 a three\nb_1 b one\na_1  a   one\n"
    oracle = _ok(run_cli(["select-nbest", "--clients", "A", "--reference-rows", ref, nbest]))
    assert oracle == "utt_id\tclient\trank\ttext\na_3\tA\t1\ta three\na_1\tA\t1\ta one\n"


def test_select_nbest_client_parts_and_first(tmp_path):
    """--part I --parts K and --first N of the listed clients, against the shell's head/tail
    halves (n // 2 first, the rest) and list slices (what the recipes did with head/tail)."""
    for n in (1, 2, 5, 6):
        names = [f"M{i:02d}" for i in range(n)]
        path = tmp_path / f"n{n}.tsv"
        path.write_text("utt_id\tclient\trank\ttext\n" +
                        "".join(f"{c}_1\t{c}\t1\tw\n" for c in reversed(names)))
        half = n // 2
        first_half = "".join(f"{c}\n" for c in names[:half])
        rest = "".join(f"{c}\n" for c in names[half:])
        assert _ok(run_cli(["select-nbest", "--list-clients", "--part", "1", "--parts", "2",
                            str(path)])) == first_half
        assert _ok(run_cli(["select-nbest", "--list-clients", "--part", "2", "--parts", "2",
                            str(path)])) == rest
        thirds = [_ok(run_cli(["select-nbest", "--list-clients", "--part", str(i), "--parts", "3",
                               str(path)])) for i in (1, 2, 3)]
        assert "".join(thirds) == "".join(f"{c}\n" for c in names)
        assert _ok(run_cli(["select-nbest", "--list-clients", "--first", "3", str(path)])) == \
            "".join(f"{c}\n" for c in names[:3])
    # --every first, then --first: the 1st and 3rd of M00..M05's every 2nd
    assert _ok(run_cli(["select-nbest", "--list-clients", "--every", "2", "--first", "2",
                        str(tmp_path / "n6.tsv")])) == "M00\nM02\n"
    res = run_cli(["select-nbest", "--list-clients", "--part", "3", "--parts", "2", str(path)])
    assert res.exit_code == 2 and "--part" in res.stderr
    res = run_cli(["select-nbest", "--list-clients", "--part", "1", str(path)])
    assert res.exit_code == 2 and "--parts" in res.stderr
    res = run_cli(["select-nbest", "--first", "1", str(path)])
    assert res.exit_code == 2 and "--list-clients" in res.stderr


def test_select_nbest_refuses_what_it_cannot_do(tmp_path):
    nbest, ref = _files(tmp_path)
    res = run_cli(["select-nbest", "--best", "--references", ref, nbest])
    assert res.exit_code == 2 and "give one of" in res.stderr
    (tmp_path / "noclient.tsv").write_text("utt_id\ttext\nu\tw\n")
    res = run_cli(["select-nbest", "--clients", "A", str(tmp_path / "noclient.tsv")])
    assert res.exit_code == 2 and "noclient.tsv:1:" in res.stderr and "client" in res.stderr


def test_select_text(tmp_path):
    lines = [f"{'EN' if i % 3 == 0 else 'ES'}{i:03d}_1 " + " ".join(["w"] * (i % 4 + 1)) for i in range(1, 41)]
    text = tmp_path / "t.txt"
    text.write_text("\n".join(lines) + "\n")
    en = [l for l in lines if l.startswith("EN")]
    assert _ok(run_cli(["select-text", "--id-regex", "^EN", str(text)])).splitlines() == en
    assert _ok(run_cli(["select-text", "--exclude-id-regex", "^EN", str(text)])).splitlines() == \
        [l for l in lines if not l.startswith("EN")]
    # every 5th line of the lines the id filter kept, and the rest
    assert _ok(run_cli(["select-text", "--id-regex", "^EN", "--every", "5", str(text)])).splitlines() == \
        [en[4], en[9]]
    assert len(_ok(run_cli(["select-text", "--drop-every", "5", str(text)])).splitlines()) == 32
    words = sum(i % 4 + 1 for i in range(1, 41))   # 100
    assert _ok(run_cli(["select-text", "--count-words", str(text)])) == f"{words}\n"
    # about 30 words: every ceil(100 / 30) = 4th line
    assert _ok(run_cli(["select-text", "--max-words", "30", str(text)])).splitlines() == lines[3::4]
    # --spread: line i kept when floor(i r) > floor((i-1) r), r = 0.25: lines 4, 8, ...
    assert _ok(run_cli(["select-text", "--max-words", "25", "--spread", str(text)])).splitlines() == lines[3::4]
    assert _ok(run_cli(["select-text", "--vocab", str(text)])) == "w\n"
    (tmp_path / "m.classes").write_text("<PER> 0.5 ann\n<PER> 0.5 bob\n")   # train-ngram --classes
    (tmp_path / "k.txt").write_text("u1 hi bob and ann\nu2  nobody\n")
    assert _ok(run_cli(["select-text", "--classes", str(tmp_path / "m.classes"), str(tmp_path / "k.txt")])) == \
        "u1 hi <PER> and <PER>\nu2 nobody\n"


def test_select_text_max_words_per_line(tmp_path):
    """The short utterances of a reference (fl-finetune-experiment's SHORT_WORDS table)."""
    text = tmp_path / "ref.txt"
    text.write_text("u1 a b c d\nu2 a b c d e\nu3 yes\nu4\nu5  a  b   c\nEN1 a b\n")
    assert _ok(run_cli(["select-text", "--max-words-per-line", "4", str(text)])).splitlines() == \
        ["u1 a b c d", "u3 yes", "u4", "u5  a  b   c", "EN1 a b"]
    assert _ok(run_cli(["select-text", "--max-words-per-line", "0", str(text)])) == "u4\n"
    # without ids every field is a word; with the id filters, before --every's numbering
    assert _ok(run_cli(["select-text", "--no-ids", "--max-words-per-line", "2", str(text)])).splitlines() == \
        ["u3 yes", "u4"]
    assert _ok(run_cli(["select-text", "--exclude-id-regex", "^EN", "--max-words-per-line", "4", "--every", "2",
                        str(text)])).splitlines() == ["u3 yes", "u5  a  b   c"]
    assert _ok(run_cli(["select-text", "--max-words-per-line", "3", "--count-words", str(text)])) == "6\n"
    assert run_cli(["select-text", "--max-words-per-line", "-1", str(text)]).exit_code == 2


def test_pick_best_and_its_edge_warning(tmp_path):
    reports = []
    for label, wer in (("0.25", 21.0), ("0.5", 20.0), ("1", 20.0)):
        (tmp_path / f"{label}.json").write_text(json.dumps({"wer": wer, "sentences": 3}))
        reports.append(f"{label}={tmp_path / f'{label}.json'}")
    res = run_cli(["pick-best", "--name", "lambda", *reports])
    assert res.stdout == "0.5\n" and "warning" not in res.stderr     # ties: the first
    res = run_cli(["pick-best", "--name", "lambda", *reports[:2]])
    assert res.stdout == "0.5\n" and "best lambda 0.5 on the edge of the grid (0.25 0.5)" in res.stderr
    res = run_cli(["pick-best", "--key", "ppl", *reports])
    assert res.exit_code == 2 and "no finite number under 'ppl'" in res.stderr


def test_audit_items(tmp_path):
    """Two speakers of 8 one-word utterances (F1 in ES1, M1 mostly in IS1); a third too short."""
    text, spk = [], []
    for i in range(8):
        text.append(f"ES1_{i} w{i}")
        spk.append(f"ES1_{i} F1")
        meeting = "IS1" if i != 7 else "TS1"
        text.append(f"{meeting}_{i} v{i}")
        spk.append(f"{meeting}_{i} M1")
    text += ["ES2_0 x", "EN1_0 y"]
    spk += ["ES2_0 F2", "EN1_0 F3"]
    (tmp_path / "text").write_text("\n".join(text) + "\n")
    (tmp_path / "utt2spk").write_text("\n".join(spk) + "\n")
    out = tmp_path / "items"
    _ok(run_cli(["audit-items", "--text", str(tmp_path / "text"), "--utt2spk", str(tmp_path / "utt2spk"),
                 "--min-words", "2", "--max-words", "1", "-o", str(out)]))
    assert (out / "speakers").read_text() == "F1\nM1\n"
    # quarters of 8 words: 2 utterances each; at most 1 word per item: the first of each
    assert (out / "utt2item").read_text().split("\n")[:4] == ["ES1_0 F1_1", "IS1_0 M1_1", "ES1_2 F1_2", "IS1_2 M1_2"]
    labels = (out / "labels.tsv").read_text().splitlines()
    assert labels[0] == "item\tspeaker\tgender\tmeeting" and len(labels) == 9
    assert "M1_4\tM1\tM\tIS1" in labels          # IS1_6 is its one utterance
    tsv = (out / "items.tsv").read_text().splitlines()
    assert tsv[0] == "utt_id\tclient\trank\ttext" and tsv[1] == "ES1_0\tF1_1\t1\tw0"


def test_sample_clients_expected_and_weights_report(tmp_path):
    (tmp_path / "clients").write_text("a\nb\nc\n")
    assert _ok(run_cli(["sample-clients", "--rate", "0.1", "--expected", str(tmp_path / "clients")])) == "0.3\n"
    from asrpriv.mixture.weights import parse_weights, split_mixture

    (tmp_path / "mix.json").write_text(json.dumps({"weights": [0.2, 0.3, 0.5], "ppl": 9}))
    weights = parse_weights(f"@{tmp_path / 'mix.json'}", 3)
    assert weights == [0.2, 0.3, 0.5]
    ngram, share = split_mixture(weights)
    assert share == 0.5 and abs(ngram[0] - 0.4) < 1e-12 and abs(ngram[1] - 0.6) < 1e-12
