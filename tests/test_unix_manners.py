"""Unix manners at the edges (issue 39), each through a real process and a real shell:

* ``-o /dev/stdout``, ``-o /dev/fd/N`` and ``-o >(cmd)`` (a process substitution) write the
  stream, for every step whose ``-o`` is a file;
* ``-`` is standard input where a file is read (import-nbest: the N-best input, ``--manifest``
  and ``--words``);
* SIGINT (Ctrl-C) on a running step exits 130, leaves ``-o FILE`` as it was and no temporary
  file behind;
* the progress line says done/total and an ETA where the total is known;
* no talk about components not in use (rescore-nbest and tune-weights without an NNLM).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import AMI, ROOT, run_cli

IMPORTERS = ROOT / "examples" / "importers"


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONHASHSEED="0")


def _asrpriv() -> str:
    return f"{shlex.quote(sys.executable)} -m asrpriv"


def _bash(script: str, cwd, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=_env(),
                          capture_output=True, timeout=600)
    if check:
        assert proc.returncode == 0, (script, proc.stderr.decode(errors="replace")[-3000:])
    return proc


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Small inputs for every step with a file ``-o``, written once."""
    d = tmp_path_factory.mktemp("unix")
    rows = (AMI / "dev" / "nbest.tsv").read_text(encoding="utf-8").splitlines()[:60]
    (d / "nbest.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    utts = list(dict.fromkeys(r.split("\t")[0] for r in rows[1:]))
    refs = {line.split(" ", 1)[0]: line for line in
            (AMI / "dev" / "ref.txt").read_text(encoding="utf-8").splitlines()}
    (d / "ref.txt").write_text("".join(refs[u] + "\n" for u in utts), encoding="utf-8")
    text = (AMI / "train_text").read_text(encoding="utf-8").splitlines()[:200]
    (d / "ktext").write_text("\n".join(text) + "\n", encoding="utf-8")
    (d / "lex").write_text("PER\tandy\nPER\tabigail\n", encoding="utf-8")
    (d / "clients").write_text("".join(f"c{i}\n" for i in range(20)), encoding="utf-8")
    (d / "w.json").write_text('{"wer": 3.5}', encoding="utf-8")
    a = _asrpriv()
    _bash(f"{a} train-ngram -q --ids --order 2 ktext -o lm.arpa\n"
          f"{a} count-unigrams -q --text --ids --public ktext -o bg.counts\n"
          f"{a} count-unigrams -q --max-l1 15 nbest.tsv -o nb.counts\n"
          f"{a} count-unigrams -q --max-l1 15 --sigma 1 nbest.tsv -o nb1.counts\n"
          f"cut -f1 bg.counts | grep -v '^#' > vocab\n"
          f"{a} finetune-lm -q --public --ids --arch lstm --emb-dim 8 --hidden-dim 8 --layers 1 "
          f"--epochs 1 --min-count 1 --seed 1 --threads 1 --train ktext -o tiny.pt", d)
    return d


#: step -> its arguments (before ``-o``) on the small inputs; every step whose -o is a FILE
O_STEPS = {
    "count-unigrams": "--max-l1 15 nbest.tsv",
    "aggregate": "nb.counts nb1.counts",  # two different files: the same one twice is refused
    "add-noise": "--epsilon 1 --vocab vocab --seed 1 --allow-seeded-test-noise nb.counts",
    "fma-adapt": "--background bg.counts --global nb.counts --alpha 0.5 --beta 0",
    "score-wer": "--ref ref.txt --hyp ref.txt",
    "finetune-lm": "--public --ids --init tiny.pt --train ktext --recipe client-001 --seed 1 "
                   "--threads 1",
    "perplexity": "--ids --lm lm.arpa ktext",
    "rescore-nbest": "--ngram lm.arpa --lm-weight 8 nbest.tsv",
    "tune-weights": "--ref ref.txt --lm-weights 0,5 --nnlm-weights 0 --word-penalties 0 nbest.tsv",
    "select-nbest": "--top 2 nbest.tsv",
    "select-text": "--every 2 ktext",
    "pick-best": "a=w.json",
    "privacy-report-like": None,  # (privacy-report has no -o: it writes stdout)
    "sample-clients": "--rate 0.5 --round 1 --seed 3 clients",
    "train-ngram": "--ids --order 2 ktext",
    "confidence": "--scale 0.5 nbest.tsv",
    "interpolate": "--lm lm.arpa --lm lm.arpa --weights 0.5,0.5",
    "import-nbest": f"--from srilm {IMPORTERS / 'srilm' / 'nbest2'}",
    "sanitize": "--lexicon lex --classes PER --seed 3 ktext",
    "approx-ngram": "--public --nnlm tiny.pt --order 2 --threads 1 ktext",
}
O_STEPS = {k: v for k, v in O_STEPS.items() if v is not None}


def test_every_step_with_a_file_output_is_listed():
    """The list above is every step whose ``-o`` is a FILE (not a directory)."""
    import click

    from asrpriv.cli import COMMANDS, cli

    with_file_o = set()
    for name in COMMANDS:
        if name.startswith("fl-"):
            continue  # the Flower steps have no -o (a run directory)
        command = cli.get_command(click.Context(cli), name)
        if any("-o" in p.opts and p.metavar == "FILE" for p in command.params):
            with_file_o.add(name)
    assert with_file_o == set(O_STEPS)


@pytest.mark.parametrize("step", sorted(O_STEPS))
def test_o_dev_stdout_into_a_pipe(step, small):
    """``asrpriv STEP ... -o /dev/stdout | cat`` writes what ``-o FILE`` writes."""
    a = _asrpriv()
    args = O_STEPS[step]
    piped = _bash(f"{a} {step} -q {args} -o /dev/stdout | cat", small).stdout
    cwd = os.getcwd()
    try:  # the reference in-process (faster than a second process)
        os.chdir(small)
        result = run_cli([step, "-q", *shlex.split(args), "-o", f"{step}.ref"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.stderr
    expected = (small / f"{step}.ref").read_bytes()
    if step == "add-noise":  # every release has its own random id: the counts are the same
        assert _data_lines(piped) == _data_lines(expected) and _data_lines(piped)
    else:
        assert piped == expected


def test_split_nbest_one_part_to_a_stream(small):
    """split-nbest's -o names a directory of parts; with --parts 1, /dev/stdout (or '-')
    receives the one part as a TSV stream, equal to DIR/part-0.tsv; more parts to a stream
    exit 2 with one line."""
    a = _asrpriv()
    piped = _bash(f"{a} split-nbest -q nbest.tsv -o /dev/stdout | cat", small).stdout
    _bash(f"{a} split-nbest -q nbest.tsv -o split1", small)
    assert piped == (small / "split1" / "part-0.tsv").read_bytes() and piped
    dash = _bash(f"{a} split-nbest -q nbest.tsv -o - | cat", small).stdout
    assert dash == piped
    refused = _bash(f"{a} split-nbest -q --parts 2 nbest.tsv -o /dev/stdout | cat", small,
                    check=False)
    assert refused.returncode == 2
    assert b"a stream holds one part" in refused.stderr and refused.stderr.count(b"\n") == 1


def _data_lines(raw: bytes) -> list[bytes]:
    return [line for line in raw.splitlines() if not line.startswith(b"#")]


def test_dev_fd_and_process_substitution(small):
    """``-o /dev/fd/1`` into a pipe, ``-o /dev/fd/3`` on a redirected descriptor, and
    ``-o >(cmd)``: the bytes arrive, no temporary file is made beside /dev."""
    a = _asrpriv()
    _bash(f"{a} train-ngram -q --ids --order 2 ktext -o ref.arpa", small)
    expected = (small / "ref.arpa").read_bytes()
    assert _bash(f"{a} train-ngram -q --ids --order 2 ktext -o /dev/fd/1 | cat", small).stdout == expected
    _bash(f"{a} train-ngram -q --ids --order 2 ktext -o /dev/fd/3 3> fd3.arpa", small)
    assert (small / "fd3.arpa").read_bytes() == expected
    _bash(f"{a} train-ngram -q --ids --order 2 ktext -o >(cat > ps.arpa); wait $!", small)
    for _ in range(50):  # the substituted process may still be writing
        if (small / "ps.arpa").exists() and (small / "ps.arpa").read_bytes() == expected:
            break
        time.sleep(0.1)
    assert (small / "ps.arpa").read_bytes() == expected
    # appending through /dev/stdout keeps what the file held (a duplicate, not a reopen)
    (small / "app.arpa").write_bytes(b"kept\n")
    _bash(f"{a} train-ngram -q --ids --order 2 ktext -o /dev/stdout >> app.arpa", small)
    assert (small / "app.arpa").read_bytes() == b"kept\n" + expected
    bad = _bash(f"{a} train-ngram -q --ids --order 2 ktext -o /dev/fd/9", small, check=False)
    assert bad.returncode == 2 and b"/dev/fd/9: descriptor 9 is not open" in bad.stderr


def test_import_nbest_reads_stdin_for_each_of_its_inputs(small):
    """``import-nbest -`` (and ``--manifest -``, ``--words -``) reads a pipe and writes what
    the file gives; errors name ``<stdin>``, not the temporary copy."""
    a = _asrpriv()
    nemo, kaldi = IMPORTERS / "nemo", IMPORTERS / "kaldi"
    beams = nemo / "preds_out_width20_alpha1.0_beta0.0.tsv"
    from_files = _bash(f"{a} import-nbest -q --from nemo --manifest {nemo / 'manifest.json'} "
                       f"{beams}", small).stdout
    assert from_files.count(b"\n") > 50
    assert _bash(f"cat {beams} | {a} import-nbest -q --from nemo --manifest "
                 f"{nemo / 'manifest.json'} -", small).stdout == from_files
    assert _bash(f"cat {nemo / 'manifest.json'} | {a} import-nbest -q --from nemo --manifest - "
                 f"{beams}", small).stdout == from_files
    words = _bash(f"{a} import-nbest -q --from kaldi --words {kaldi / 'words.txt'} {kaldi}",
                  small).stdout
    assert _bash(f"cat {kaldi / 'words.txt'} | {a} import-nbest -q --from kaldi --words - {kaldi}",
                 small).stdout == words
    one = IMPORTERS / "srilm" / "nbest1" / "ES2011a_0001.nbest"
    assert b"here we go welcome" in _bash(f"cat {one} | {a} import-nbest -q --from srilm -",
                                          small).stdout
    bad = _bash(f"echo x | {a} import-nbest --from srilm -", small, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith(b"asrpriv import-nbest: <stdin>:1: ")
    assert b"asrpriv-stdin" not in bad.stderr
    both = _bash(f"{a} import-nbest --from nemo --manifest - - < {beams}", small, check=False)
    assert both.returncode == 2 and b"only one input can come from standard input" in both.stderr


def test_sigint_exits_130_and_leaves_the_target_as_it_was(tmp_path):
    """Ctrl-C on a step that is running (reading a pipe that stays open): exit 130, no
    "Aborted!", the old ``-o`` file untouched, no temporary file left."""
    (tmp_path / "out.counts").write_text("old\n")
    proc = subprocess.Popen([sys.executable, "-m", "asrpriv", "count-unigrams", "--text", "--ids",
                             "-o", "out.counts", "-"], cwd=tmp_path, env=_env(),
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    data = b"".join(b"u%d a b c\n" % i for i in range(60000))  # > a pipe's buffer

    def feed():
        try:
            proc.stdin.write(data)  # returns once the step has read all but a pipe's buffer
            proc.stdin.flush()
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed)
    writer.start()
    writer.join(timeout=120)
    assert not writer.is_alive(), "the step did not read its input"
    assert proc.poll() is None  # still running: stdin is open
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=60)
    err = proc.stderr.read()
    proc.stdin.close()
    assert rc == 130, (rc, err)
    assert b"Aborted" not in err and b"Traceback" not in err
    assert (tmp_path / "out.counts").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.counts"]


def test_progress_line_has_total_and_eta():
    from asrpriv.progress import Progress, format_seconds

    p = Progress("deltas", total=100, enabled=False)
    p._start -= 10.0   # ten seconds ago
    p.update(25)
    line = p.line()
    # 25 done in 10 s: 2.5/s, 75 left -> 30 s
    assert line.startswith("25/100 deltas (25%) 2.5/s 10s ETA 30s"), line
    unknown = Progress("utt", enabled=False)
    unknown.update(7)
    assert "ETA" not in unknown.line() and unknown.line().startswith("7 utt ")
    assert [format_seconds(s) for s in (4.4, 187, 7500)] == ["4s", "3m07s", "2h05m"]


def test_no_talk_about_an_nnlm_that_is_not_in_use(small):
    a = _asrpriv()
    res = _bash(f"{a} rescore-nbest --ngram lm.arpa nbest.tsv -o /dev/null", small)
    assert b"lm_weight=" in res.stderr and b"nnlm_weight" not in res.stderr
    res = _bash(f"{a} tune-weights --ref ref.txt --lm-weights 0,5 --word-penalties 0 nbest.tsv "
                f"-o /dev/null", small)
    assert b"at lm_weight=" in res.stderr and b"nnlm_weight" not in res.stderr
    res = _bash(f"{a} rescore-nbest --nnlm tiny.pt --ngram lm.arpa --threads 1 nbest.tsv "
                f"-o /dev/null", small)
    assert b"nnlm_weight=" in res.stderr  # in use: said


def test_rescore_nbest_knows_its_total(tmp_path):
    """rescore-nbest's meter counts hypotheses against the rows of its (plain) inputs: the
    total that makes the ETA; unknown (None) for stdin and compressed input."""
    from asrpriv.rescore.pipeline import expected_rows

    rows = (AMI / "dev" / "nbest.tsv").read_text(encoding="utf-8").splitlines()
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("\n".join(rows[:31]) + "\n", encoding="utf-8")
    b.write_text("\n".join([rows[0], "#note=1", *rows[31:41]]), encoding="utf-8")  # no final \n
    assert expected_rows([str(a)]) == 30 and expected_rows([str(a), str(b)]) == 40
    assert expected_rows(["-"]) is None and expected_rows([str(a), "x.tsv.gz"]) is None
    assert expected_rows([str(tmp_path)]) is None


def test_a_shown_rescore_meter_gets_the_total(tmp_path):
    from asrpriv.progress import Progress
    from asrpriv.rescore.pipeline import RescoreSettings, rescore_nbest

    rows = (AMI / "dev" / "nbest.tsv").read_text(encoding="utf-8").splitlines()[:41]
    (tmp_path / "n.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    shown, hidden = Progress("hyps", enabled=True), Progress("hyps", enabled=False)
    for meter in (shown, hidden):
        rescore_nbest(RescoreSettings(inputs=[str(tmp_path / "n.tsv")], reuse_scores=True,
                                      lm_weight=1.0, output=str(tmp_path / "o.tsv")),
                      progress=meter)
    assert shown.total == 40 and shown.done == 40 and "ETA" in shown.line()
    assert hidden.total is None and hidden.done == 40  # nothing counted for a hidden meter


def test_finetune_meter_total_is_the_tokens_of_an_epoch(tmp_path):
    """Each epoch's meter ends at its total: every word and every </s> predicted once."""
    from asrpriv.federated.finetune import FinetuneRequest, run_finetune
    from asrpriv.progress import Progress

    text = (AMI / "train_text").read_text(encoding="utf-8").splitlines()[:40]
    (tmp_path / "t.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
    meters = []

    def meter():
        meters.append(Progress("tokens", enabled=False))
        return meters[-1]

    run_finetune(FinetuneRequest(train_path=str(tmp_path / "t.txt"), ids=True, public=True,
                                 output=str(tmp_path / "m.pt"), arch="lstm",
                                 model_options={"emb_dim": 8, "hidden_dim": 8, "layers": 1},
                                 overrides={"epochs": 2}, min_count=1, seed=1, threads=1),
                 progress=meter)
    words = sum(len(line.split()) - 1 for line in text)
    assert len(meters) == 2
    assert all(m.total == words + len(text) == m.done for m in meters)


def test_lm_files_from_stdin(small):
    """An LM read twice (sniffed, then loaded) may still come from a pipe: '-' is copied once
    into a temporary file; the result equals the file's; two '-' are refused."""
    a = _asrpriv()
    for step, args in (("perplexity", "--ids --lm {lm} ktext"),
                       ("rescore-nbest", "--ngram {lm} --lm-weight 8 nbest.tsv"),
                       ("fma-adapt", "--arpa {lm} --adapt nb.counts --beta 0.5")):
        from_file = _bash(f"{a} {step} -q {args.format(lm='lm.arpa')}", small).stdout
        piped = _bash(f"cat lm.arpa | {a} {step} -q {args.format(lm='-')}", small).stdout
        assert piped == from_file and piped, step
    both = _bash(f"{a} perplexity -q --lm - - < lm.arpa", small, check=False)
    assert both.returncode == 2 and b"only one input can come from standard input" in both.stderr
    bad = _bash(f"echo nonsense | {a} rescore-nbest -q --ngram - nbest.tsv", small, check=False)
    assert bad.returncode == 2 and b"<stdin>" in bad.stderr and b"asrpriv-stdin" not in bad.stderr


@pytest.mark.parametrize("signame, expected", [("SIGHUP", -1), ("SIGINT", 130)])
def test_signal_wrapped_by_a_library_is_not_an_internal_error(signame, expected):
    """A signal that arrives while a library holds the stack (torch.save wraps what its write
    callback raises in RuntimeError: SIGHUP during finetune-lm's save) ends the step as the
    signal says (killed by SIGHUP; 130 for Ctrl-C), never exit 1 'internal error' (issue 37)."""
    import signal
    import sys

    code = f"""
import signal, click
from asrpriv import cli

@click.command("boom")
def boom():
    try:
        cli._raise_terminated(signal.{signame}, None)
    except BaseException as err:
        raise RuntimeError("a C extension wrapped it") from err

cli.COMMANDS["boom"] = ("__main__:boom", "test only")
cli.main(["boom"])
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    want = -getattr(signal, signame) if expected == -1 else expected
    assert proc.returncode == want, proc.stderr
    assert "internal error" not in proc.stderr
