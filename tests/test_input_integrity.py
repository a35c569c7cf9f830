"""Issue 14, items 6-8: each bad input the audit found is a clean exit 2 naming FILE[:LINE];
outputs never replace links or special files; lines and hypotheses have documented limits."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import pytest

import asrpriv
from conftest import AMI, run_cli, run_proc

#: the asrpriv under test, for child processes
SRC = os.path.dirname(os.path.dirname(asrpriv.__file__))

HEADER = "utt_id\trank\tam_score\ttext\n"


def one_error(result, *needles: str) -> str:
    """Exit 2, one stderr line, no traceback, no internal error, naming every needle."""
    stderr = result.stderr
    assert result.exit_code == 2, f"exit {result.exit_code}: {stderr!r}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# ---------------------------------------------------------------- item 6: options and input values

@pytest.mark.parametrize("args, needle", [
    (["--sigma", "nan"], "--sigma"),
    (["--sigma", "inf"], "--sigma"),
    (["--max-l1", "nan"], "--max-l1"),
    (["--max-l1", "inf"], "--max-l1"),
    (["--max-l1", "-1"], "--max-l1"),
    (["--max-l1", "1", "--grid", "nan"], "--grid"),
    (["--max-l1", "1", "--grid", "inf"], "--grid"),
    (["--max-l1", "1", "--grid", "5e-324"], "--grid"),
])
def test_non_finite_bounds_refused(tmp_path, args, needle):
    nbest = write(tmp_path, "n.tsv", HEADER + "u1\t1\t-1\thello world\n")
    one_error(run_cli(["count-unigrams", *args, str(nbest)]), needle)


def test_tiny_sigma_is_not_a_division_by_zero(tmp_path):
    nbest = write(tmp_path, "n.tsv", HEADER + "u1\t1\t-1\ta\nu1\t2\t-2\tb\n")
    result = run_cli(["count-unigrams", "--sigma", "1e-300", str(nbest)])
    assert result.exit_code == 0, result.stderr
    assert "a\t1\n" in result.stdout and "\nb\t" not in result.stdout


def test_huge_rank_refused_with_location(tmp_path):
    nbest = write(tmp_path, "n.tsv", HEADER + "u1\t1\t-1\ta\nu1\t" + "9" * 400 + "\t-2\tb\n")
    one_error(run_cli(["count-unigrams", str(nbest)]), f"{nbest}:3:", "rank")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_non_finite_scores_refused(tmp_path, value):
    nbest = write(tmp_path, "n.tsv", HEADER + f"u1\t1\t-1\ta\nu1\t2\t{value}\tb\n")
    one_error(run_cli(["count-unigrams", str(nbest)]), f"{nbest}:3:", "am_score")


def test_non_finite_reused_score_refused(tmp_path):
    nbest = write(tmp_path, "n.tsv", "utt_id\tam_score\tlm_score\tnnlm_score\ttext\n"
                                     "u1\t-1\t-2\tinf\ta\n")
    one_error(run_cli(["rescore-nbest", "--reuse-scores", str(nbest)]), f"{nbest}:2:", "nnlm_score")


def test_duplicate_kaldi_ids_refused(tmp_path):
    text = write(tmp_path, "text", "u1 a b\nu2 c\nu1 d\n")
    one_error(run_cli(["count-unigrams", "--text", "--ids", "--max-l1", "5", str(text)]),
              f"{text}:3:", "duplicate utterance id")
    one_error(run_cli(["count-unigrams", "--text", "--ids", str(text)]), f"{text}:3:", "duplicate")
    one_error(run_cli(["train-ngram", "--ids", str(text)]), f"{text}:3:", "duplicate")


def test_bom_is_stripped_once(tmp_path):
    text = write(tmp_path, "bom.txt", "\ufeffhello world\nhello\n".encode("utf-8"))
    result = run_cli(["count-unigrams", "--text", str(text)])
    assert result.exit_code == 0
    assert "hello\t2\n" in result.stdout and "\ufeff" not in result.stdout
    result = run_cli(["count-unigrams", "--text", "--max-l1", "10", str(text)])  # line reader
    assert "hello\t2\n" in result.stdout and "\ufeff" not in result.stdout
    result = run_cli(["count-unigrams", "--text"], input="\ufeffhello\n".encode("utf-8"))  # stdin
    assert "hello\t1\n" in result.stdout and "\ufeff" not in result.stdout
    nbest = write(tmp_path, "bom.tsv", ("\ufeff" + HEADER + "u1\t1\t-1\thello\n").encode("utf-8"))
    result = run_cli(["count-unigrams", str(nbest)])  # the header's first column is utt_id
    assert result.exit_code == 0, result.stderr
    # only the file's first BOM goes: one later in the text is a character like any other
    twice = write(tmp_path, "bom2.txt", "\ufeff\ufeffx\n".encode("utf-8"))
    assert "\ufeffx\t1" in run_cli(["count-unigrams", "--text", str(twice)]).stdout


def test_bom_in_large_file_parallel_path(tmp_path, monkeypatch):
    from asrpriv.unigram import fastcount

    monkeypatch.setattr(fastcount, "PARALLEL_MIN_BYTES", 10)
    text = write(tmp_path, "bom.txt", ("\ufeffhello world\n" + "hello\n" * 50).encode("utf-8"))
    counts, _ = fastcount.count_words(str(text), workers=2)
    assert counts["hello"] == 51 and "\ufeffhello" not in counts


@pytest.mark.parametrize("header", ["utt-id\ttext", "utt_id\ttxt", "uttid\trank\thyp",
                                    "id\tscore\ttranscript"])
def test_misspelt_tsv_header_refused(tmp_path, header):
    path = write(tmp_path, "n.tsv", header + "\nu1\t1\thello world\n")
    model = _tiny_model(tmp_path)
    one_error(run_cli(["perplexity", "--lm", str(model), str(path)]), f"{path}:1:", "N-best TSV header")
    one_error(run_cli(["finetune-lm", "--train", str(path), "-o", str(tmp_path / "m.pt")]),
              f"{path}:1:", "N-best TSV header")
    one_error(run_cli(["count-unigrams", "--text", str(path)]), f"{path}:1:")
    assert not (tmp_path / "m.pt").exists()


def test_kaldi_text_without_ids_warns(tmp_path):
    lines = [f"AMI_ES2011a_H00_{i:07d} hello there number {i % 3}" for i in range(20)]
    text = write(tmp_path, "text", "\n".join(lines) + "\n")
    model = _tiny_model(tmp_path)
    for args in (["count-unigrams", "--text", str(text)],
                 ["count-unigrams", "--text", "--max-l1", "9", str(text)],
                 ["perplexity", "--lm", str(model), str(text)]):
        result = run_cli(args)
        assert result.exit_code == 0, result.stderr
        assert "--ids" in result.stderr and "AMI_ES2011a_H00_0000000" in result.stderr, args
        assert "--ids" not in run_cli([*args[:1], "--ids", *args[1:]]).stderr
    # ordinary text, and numbered lines, do not warn
    plain = write(tmp_path, "plain", "".join(f"{i} the cat sat\n" for i in range(20)))
    assert "--ids" not in run_cli(["count-unigrams", "--text", str(plain)]).stderr
    real = run_cli(["count-unigrams", "--text", str(AMI / "dev" / "ref.txt")])
    assert "--ids" in real.stderr


# ------------------------------------------------------------------ item 6: model files

def _tiny_model(tmp_path, name: str = "tiny.pt", **config):
    import torch

    from asrpriv.nnlm.modelfile import save_model
    from asrpriv.nnlm.train import new_model
    from asrpriv.nnlm.vocab import Vocabulary

    path = tmp_path / name
    if not path.exists():
        vocab = Vocabulary(["<unk>", "<s>", "</s>", "hello", "world", "there"])
        torch.manual_seed(0)
        model, cfg = new_model("transformer", vocab, seed=0, emb_dim=8, ffn_dim=8, layers=1, heads=2)
        save_model(str(path), model, vocab, cfg)
    return path


def _payload_model(tmp_path, name, mutate):
    import torch

    payload = torch.load(_tiny_model(tmp_path), weights_only=True)
    mutate(payload)
    path = tmp_path / name
    torch.save(payload, path)
    return path


def test_nan_and_inf_weights_refused(tmp_path):
    text = write(tmp_path, "t.txt", "hello world\n")
    for value in (float("nan"), float("inf")):
        def poison(payload, value=value):
            payload["state_dict"]["output.bias"][0] = value
        bad = _payload_model(tmp_path, f"bad{value}.pt", poison)
        one_error(run_cli(["perplexity", "--lm", str(bad), str(text)]), str(bad), "NaN or infinite")
        one_error(run_cli(["finetune-lm", "--init", str(bad), "--train", str(text), "-o",
                           str(tmp_path / "o.pt")]), str(bad))


@pytest.mark.parametrize("change, needle", [
    ({"heads": 3}, "multiple of heads"),
    ({"heads": 0}, "heads"),
    ({"emb_dim": -8}, "emb_dim"),
    ({"ffn_dim": 0}, "ffn_dim"),
    ({"layers": -1}, "layers"),
    ({"emb_dim": 10 ** 9}, "config"),
    ({"emb_dim": 64, "heads": 2}, "does not match"),
    ({"dropout": float("nan")}, "dropout"),
])
def test_bad_model_config_is_an_input_error(tmp_path, change, needle):
    bad = _payload_model(tmp_path, "bad.pt", lambda p: p["config"].update(change))
    text = write(tmp_path, "t.txt", "hello world\n")
    one_error(run_cli(["perplexity", "--lm", str(bad), str(text)]), str(bad), needle)


def test_arpa_given_to_nnlm_is_called_an_arpa(tmp_path):
    nbest = write(tmp_path, "n.tsv", HEADER + "u1\t1\t-1\thello\n")
    arpa = AMI / "firstpass-en-us-2gram.arpa.gz"
    line = one_error(run_cli(["rescore-nbest", "--nnlm", str(arpa), str(nbest)]), str(arpa), "ARPA", "--ngram")
    assert "pickle" not in line
    plain = write(tmp_path, "lm.arpa", "\\data\\\nngram 1=1\n\n\\1-grams:\n-1\t<unk>\n\n\\end\\\n")
    one_error(run_cli(["rescore-nbest", "--nnlm", str(plain), str(nbest)]), str(plain), "ARPA")


# --------------------------------------------------------------- item 6: closed stdin / stdout

def test_closed_stdin_and_stdout_are_clean_errors():
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": SRC}
    for redirect in ("<&- >&-", "<&-", ">&- < /dev/null"):
        proc = subprocess.run(["bash", "-c", f'"{py}" -m asrpriv count-unigrams --text {redirect}'],
                              capture_output=True, env=env)
        assert proc.returncode == 2, (redirect, proc.stderr)
        assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr
        assert b"standard" in proc.stderr and b"closed" in proc.stderr


# ---------------------------------------------------------------------------- item 7: outputs

def _counts_ok(tmp_path):
    return write(tmp_path, "in.txt", "hello world\n")


def test_output_through_symlink_keeps_the_link(tmp_path):
    src = _counts_ok(tmp_path)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.counts"
    target.write_text("old\n")
    link = tmp_path / "link.counts"
    link.symlink_to(target)
    result = run_cli(["count-unigrams", "--text", str(src), "-o", str(link)])
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "hello\t1" in target.read_text()
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["out.counts"]  # no temp left
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "real" / "new.counts")
    assert run_cli(["count-unigrams", "--text", str(src), "-o", str(dangling)]).exit_code == 0
    assert dangling.is_symlink() and "hello" in (tmp_path / "real" / "new.counts").read_text()


def test_output_into_fifo_is_written_not_replaced(tmp_path):
    src = _counts_ok(tmp_path)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    proc = run_proc(["count-unigrams", "--text", str(src), "-o", str(fifo)], timeout=60)
    data = reader.communicate(timeout=60)[0]
    assert proc.returncode == 0, proc.stderr
    assert b"hello\t1" in data
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.fifo"]


def _null_device(tmp_path) -> str:
    """A /dev/null to write to that a regression cannot destroy for everyone.

    As root (who could replace the real /dev/null), a private twin made with mknod (same
    device 1,3); otherwise the real /dev/null, which a non-root process cannot replace.
    """
    if os.geteuid() != 0:
        return os.devnull
    twin = tmp_path / "null"
    real = os.stat(os.devnull)
    try:
        os.mknod(twin, 0o666 | stat.S_IFCHR, real.st_rdev)
    except OSError:
        pytest.skip("cannot make a private null device")
    return str(twin)


def test_output_to_dev_null_stays_a_device(tmp_path):
    src = _counts_ok(tmp_path)
    null = _null_device(tmp_path)
    assert run_cli(["count-unigrams", "--text", str(src), "-o", null]).exit_code == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)
    from asrpriv.io.output import atomic_path

    with atomic_path(null) as tmp:  # torch.save / savefig writers
        with open(tmp, "w") as f:
            f.write("x")
    assert not os.path.exists(tmp)
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.parametrize("where", ["missing/out", "ro/out", "isdir"])
def test_unwritable_output_fails_before_work(tmp_path, where):
    (tmp_path / "ro").mkdir()
    (tmp_path / "isdir").mkdir()
    os.chmod(tmp_path / "ro", 0o555)
    if where == "ro/out" and os.access(tmp_path / "ro", os.W_OK):
        pytest.skip("running as root: permissions are not enforced")
    text = write(tmp_path, "t.txt", "hello world\n" * 3)
    target = str(tmp_path / where)
    start = time.perf_counter()
    # finetune-lm would train first; the check must come before (no model is ever built)
    one_error(run_cli(["finetune-lm", "--train", str(text), "-o", target, "--epochs", "50"]), target)
    one_error(run_cli(["finetune-lm", "--train", str(text), "-o", str(tmp_path / "ok.pt"),
                       "--init", "x.pt", "--delta-out", target]), target)
    one_error(run_cli(["rescore-nbest", "--nnlm", "missing.pt", "-o", target]), target)
    assert time.perf_counter() - start < 30
    assert not (tmp_path / "ok.pt").exists()


def test_error_names_the_user_path_not_the_temp_file(tmp_path):
    from asrpriv.io.output import atomic_path

    (tmp_path / "gone").mkdir()
    target = tmp_path / "gone" / "out.pt"
    with pytest.raises(OSError) as caught:
        with atomic_path(str(target)) as tmp:  # the directory vanishes while the step runs
            os.unlink(tmp)
            os.rmdir(tmp_path / "gone")
    assert caught.value.filename == str(target)
    assert ".tmp" not in str(caught.value)


def test_sigterm_removes_the_temp_file(tmp_path):
    nbest = write(tmp_path, "n.tsv", "utt_id\tam_score\tlm_score\ttext\nu1\t-1\t-2\ta\n")
    out = tmp_path / "out.tsv"
    for sig in (signal.SIGTERM, signal.SIGHUP):
        # reading stdin that stays open: the step sits inside `with open_output(-o)`
        proc = subprocess.Popen([sys.executable, "-m", "asrpriv", "rescore-nbest", "--reuse-scores",
                                 str(nbest), "-", "-o", str(out)],
                                stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": SRC})
        deadline = time.time() + 60
        while time.time() < deadline and not any(p.name.startswith(".out.tsv") for p in tmp_path.iterdir()):
            time.sleep(0.05)
        assert any(p.name.startswith(".out.tsv") for p in tmp_path.iterdir()), "no temp file appeared"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -sig, (proc.returncode, err)
        assert b"Traceback" not in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["n.tsv"]


def test_by_client_leaves_nothing_on_error(tmp_path):
    nbest = write(tmp_path, "n.tsv", "utt_id\tclient\ttext\nu1\tc1\ta\nu2\tc2\tb\nu3\t.bad\tc\n")
    outdir = tmp_path / "clients"
    one_error(run_cli(["count-unigrams", "--by-client", str(outdir), str(nbest)]), ".bad")
    assert not outdir.exists()
    outdir.mkdir()
    one_error(run_cli(["count-unigrams", "--by-client", str(outdir), str(nbest)]), ".bad")
    assert list(outdir.iterdir()) == []
    good = write(tmp_path, "g.tsv", "utt_id\tclient\ttext\nu1\tc1\ta\nu2\tc2\tb\n")
    assert run_cli(["count-unigrams", "--by-client", str(outdir), str(good)]).exit_code == 0
    assert sorted(p.name for p in outdir.iterdir()) == ["c1.counts", "c2.counts"]


# ---------------------------------------------------------------------------- item 8: limits

def test_newline_free_input_is_refused_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("ASRPRIV_MAX_LINE_BYTES", "1000")
    big = write(tmp_path, "big.txt", "ok line\n" + "w " * 5000)
    for args in (["count-unigrams", "--text", str(big)],
                 ["count-unigrams", "--text", "--max-l1", "3", str(big)],
                 ["train-ngram", str(big)],
                 ["score-wer", "--ref", str(big), "--hyp", str(big)]):
        one_error(run_cli(args), f"{big}:2:", "ASRPRIV_MAX_LINE_BYTES")
    one_error(run_cli(["count-unigrams", "--text"], input=b"w " * 5000), "<stdin>:1:", "longer than 1000")
    exact = write(tmp_path, "exact.txt", "x" * 1000 + "\n" + "y" * 1000)
    assert run_cli(["count-unigrams", "--text", "--max-l1", "3", str(exact)]).exit_code == 0
    monkeypatch.setenv("ASRPRIV_MAX_LINE_BYTES", "zero")
    one_error(run_cli(["count-unigrams", "--text", str(exact)]), "ASRPRIV_MAX_LINE_BYTES")


def test_line_limit_default_is_one_mebibyte(monkeypatch):
    from asrpriv.io.lines import max_line_bytes

    monkeypatch.delenv("ASRPRIV_MAX_LINE_BYTES", raising=False)
    assert max_line_bytes() == 1 << 20


def test_long_hypothesis_refused_by_nnlm_rescoring(tmp_path):
    model = _tiny_model(tmp_path)
    nbest = write(tmp_path, "n.tsv", HEADER + "u1\t1\t-1\thello\nu2\t1\t-1\t" + "hello " * 30000 + "\n")
    one_error(run_cli(["rescore-nbest", "--nnlm", str(model), str(nbest)]), f"{nbest}:3:", "--max-words 1000")
    ok = run_cli(["rescore-nbest", "--nnlm", str(model), "--max-words", "40000", "--batch-tokens", "64",
                  str(write(tmp_path, "s.tsv", HEADER + "u1\t1\t-1\t" + "hello " * 1500 + "\n"))])
    assert ok.exit_code == 0, ok.stderr


def test_long_sentence_refused_by_finetune_and_perplexity(tmp_path):
    model = _tiny_model(tmp_path)
    text = write(tmp_path, "t.txt", "hello world\n" + "hello " * 1001 + "\n")
    one_error(run_cli(["finetune-lm", "--train", str(text), "-o", str(tmp_path / "m.pt")]),
              f"{text}:2:", "--max-words 1000")
    one_error(run_cli(["perplexity", "--lm", str(model), str(text)]), f"{text}:2:", "--max-words")
    assert run_cli(["perplexity", "--lm", str(model), "--max-words", "2000", str(text)]).exit_code == 0
