"""lhotse manifests (supervisions, cuts) as references, maps and select-text input: manifests
written by lhotse itself score equal to the same data as Kaldi text."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import assert_one_line_error, run_cli, run_proc

from asrpriv.io import lhotse as lhotse_io

TEXT = {"rec1-0001": "hello there", "rec1-0002": "general kenobi", "rec2-0001": "you are a bold one"}
SPK = {"rec1-0001": "obiwan", "rec1-0002": "grievous", "rec2-0001": "grievous"}
HYP = "rec1-0001 hello there\nrec1-0002 general canopy\nrec2-0001 you are bold one\n"


def _lhotse_manifests(tmp_path):
    """Supervision and cut manifests written by lhotse (its own to_file, gzip JSON lines)."""
    lhotse = pytest.importorskip("lhotse", reason="lhotse (asrpriv[lhotse]) is not installed")
    from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet
    from lhotse.audio import AudioSource

    recs = RecordingSet.from_recordings([
        Recording(id=r, sources=[AudioSource(type="file", channels=[0], source=f"/data/{r}.wav")],
                  sampling_rate=16000, num_samples=16000 * 20, duration=20.0)
        for r in ("rec1", "rec2")])
    sups = SupervisionSet.from_segments([
        SupervisionSegment(id=u, recording_id=u.split("-")[0], start=float(i), duration=1.5,
                           channel=0, text=TEXT[u], speaker=SPK[u], language="English",
                           custom={"client": f"c{i % 2}"})
        for i, u in enumerate(TEXT)])
    sp = tmp_path / "supervisions.jsonl.gz"
    sups.to_file(str(sp))
    cuts = CutSet.from_manifests(recordings=recs, supervisions=sups).trim_to_supervisions(
        keep_overlapping=False).modify_ids(lambda cid: f"cut_{cid}")
    cp = tmp_path / "cuts.jsonl.gz"
    cuts.to_file(str(cp))
    cut_ids = {c.supervisions[0].id: c.id for c in cuts}
    assert all(k != v for k, v in cut_ids.items())  # so that keying by cut id is tested
    assert lhotse.__version__
    return sp, cp, cut_ids


def _json(r):
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    return {k: data[k] for k in ("wer", "substitutions", "deletions", "insertions", "ref_words")}


def test_round_trip_supervisions_and_cuts(tmp_path):
    sp, cp, cut_ids = _lhotse_manifests(tmp_path)
    assert lhotse_io.is_manifest(str(sp)) and lhotse_io.is_manifest(str(cp))
    ref = tmp_path / "text"
    ref.write_text("".join(f"{u} {t}\n" for u, t in TEXT.items()))
    utt2spk = tmp_path / "utt2spk"
    utt2spk.write_text("".join(f"{u} {s}\n" for u, s in SPK.items()))
    hyp = tmp_path / "hyp"
    hyp.write_text(HYP)
    kaldi = _json(run_cli(["score-wer", "--format", "json", "--ref", str(ref), "--hyp", str(hyp),
                           "--utt2spk", str(utt2spk)]))
    assert kaldi["substitutions"] == 1 and kaldi["deletions"] == 1
    manifest = _json(run_cli(["score-wer", "--format", "json", "--ref", str(sp), "--hyp", str(hyp),
                              "--utt2spk", str(sp)]))
    assert manifest == kaldi
    # per-speaker tables equal too
    a = run_cli(["score-wer", "--ref", str(ref), "--hyp", str(hyp), "--utt2spk", str(utt2spk)])
    b = run_cli(["score-wer", "--ref", str(sp), "--hyp", str(hyp), "--utt2spk", str(sp)])
    strip = lambda out: [line for line in out.splitlines() if "against" not in line and "utt2spk" not in line]  # noqa: E731
    assert strip(a.stdout) == strip(b.stdout)
    # cuts: keyed by cut id (as icefall's recogs), one supervision each
    hyp_cuts = tmp_path / "hyp_cuts"
    hyp_cuts.write_text("".join(f"{cut_ids[line.split()[0]]} {line.split(None, 1)[1]}\n"
                                for line in HYP.splitlines()))
    assert _json(run_cli(["score-wer", "--format", "json", "--ref", str(cp),
                          "--hyp", str(hyp_cuts)])) == kaldi


def test_maps_and_select_text(tmp_path):
    sp, _cp, _ids = _lhotse_manifests(tmp_path)
    from asrpriv.io.kaldi import read_map

    assert read_map(str(sp), "speaker") == SPK
    assert read_map(str(sp), "client") == {u: u.split("-")[0] for u in TEXT}  # the recording
    assert read_map(f"{sp}#custom.client", "client") == {u: f"c{i % 2}" for i, u in enumerate(TEXT)}
    assert read_map(f"{sp}#language", "client") == {u: "English" for u in TEXT}
    r = run_cli(["select-text", "--id-regex", "^rec1", str(sp)])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "rec1-0001 hello there\nrec1-0002 general kenobi\n"


def test_manifest_errors_are_located(tmp_path):
    p = tmp_path / "sups.jsonl.gz"
    entries = [{"id": "a", "recording_id": "r", "start": 0, "duration": 1, "text": "x", "speaker": "s"},
               {"id": "b", "recording_id": "r", "start": 1, "duration": 1, "text": "y"}]
    with gzip.open(p, "wt") as f:
        f.write("".join(json.dumps(e) + "\n" for e in entries))
    hyp = tmp_path / "hyp"
    hyp.write_text("a x\nb y\n")
    proc = run_proc(["score-wer", "--ref", str(p), "--hyp", str(hyp), "--utt2spk", str(p)])
    assert_one_line_error(proc, "sups.jsonl.gz:2: supervision 'b' has no speaker")
    cuts = tmp_path / "cuts.jsonl"
    cuts.write_text(json.dumps({"id": "c1", "type": "MonoCut", "start": 0, "duration": 2,
                                "channel": 0, "supervisions": entries}) + "\n")
    proc = run_proc(["score-wer", "--ref", str(cuts), "--hyp", str(hyp)])
    assert_one_line_error(proc, "cuts.jsonl:1: cut 'c1' has 2 supervisions")


def test_manifest_as_utt2client_of_split_nbest(tmp_path):
    """A step taking --utt2client (split-nbest) reads the manifest's recording (default) or a
    custom field as each utterance's client, as it reads the same map as a Kaldi file."""
    sp, _cp, _ids = _lhotse_manifests(tmp_path)
    tsv = tmp_path / "n.tsv"
    tsv.write_text("utt_id\trank\tscore\ttext\n" + "".join(
        f"{u}\t1\t-1.0\t{t}\n" for u, t in TEXT.items()))
    kaldi_map = tmp_path / "utt2client"
    kaldi_map.write_text("".join(f"{u} c{i % 2}\n" for i, u in enumerate(TEXT)))
    outs = {}
    for name, m in (("kaldi", str(kaldi_map)), ("custom", f"{sp}#custom.client"), ("rec", str(sp))):
        r = run_cli(["split-nbest", "-q", "--clients", "c0" if name != "rec" else "rec1",
                     "--utt2client", m, "-o", str(tmp_path / name), str(tsv)])
        assert r.exit_code == 0, r.stderr
        outs[name] = (tmp_path / name / "part-0.tsv").read_text()
    assert outs["custom"] == outs["kaldi"]
    assert "rec1-0001" in outs["custom"] and "rec1-0002" not in outs["custom"]  # c0: items 0, 2
    assert "rec1-0001" in outs["rec"] and "rec1-0002" in outs["rec"] and "rec2-0001" not in outs["rec"]
