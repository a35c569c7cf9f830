"""The vectorized ARPA paths against their references, on random files and models.

- reader: :func:`asrpriv.ngram.arpa_bulk.read_bulk` (the byte parser; blocks, numpy tokens,
  SWAR numbers, hashed word ids) must give the line reader's arrays bit for bit, whatever the spelling of the
  numbers, the white space, the blocks a file is cut into, or gzip; and decline (None) every
  file the line reader rejects, so that the error comes from the line reader with its line;
- writer: :func:`asrpriv.ngram.arpa_writer.write_arpa_lines` (numpy rows) must write the bytes of the
  ``%``-template path, near-halves, negative zeros and huge numbers included.
"""

from __future__ import annotations

import gzip
import io
import random

import numpy as np
import pytest

from asrpriv.errors import InputError
from asrpriv.ngram import arpa_bulk, arpa_writer, fma, packed
from asrpriv.ngram.mix import MixedArpa, MixedOrder

WORDS = ["<s>", "</s>", "<unk>", "a", "bb", "ccc", "abcdefgh", "abcdefghi", "abcdefghijklmnop",
         "abcdefghijklmnopq", "x" * 40, "y" * 70, "café", "日本語", "naïve-ünïcode-wörds", "0", "1.5",
         "-3", "e", "a.b.c", "\\x", "'s", "n't"]


def _number(rng: random.Random, value: float) -> str:
    """One spelling of a number, as ARPA files in the wild have them."""
    style = rng.randrange(12)
    if style == 0:
        return repr(value)
    if style == 1:
        return f"{value:.4f}"
    if style == 2:
        return f"{value:.7f}"
    if style == 3:
        return f"{value:g}"
    if style == 4:
        return f"{value:e}"
    if style == 5:
        return f"{value:+.3f}"
    if style == 6:
        text = f"{value:.3f}"
        return text.replace("0.", ".", 1) if "0." in text else text
    if style == 7:
        return f"{round(value)}" if rng.random() < 0.5 else f"{round(value)}."
    if style == 8:
        return f"{value:.17f}"
    if style == 9:
        # (no -inf, no positive log-prob: refused since issue 37)
        return rng.choice(["-99", "-0", "0", "-0.0", "0.0000", "-99.0000", "-1e-05", "-1E2"])
    if style == 10:
        return f"{value:.12f}"
    return f"{value:.5f}"


def _random_arpa(seed: int) -> tuple[str, bool]:
    """A random well-formed ARPA text (odd spellings and white space), and whether it has
    separators other than single tabs/spaces (the bulk path's general tokenizer)."""
    rng = random.Random(seed)
    vocab = rng.sample(WORDS, rng.randint(4, len(WORDS)))
    order = rng.randint(1, 3)
    grams = {1: [(w,) for w in vocab]}
    for n in range(2, order + 1):
        grams[n] = sorted({tuple(rng.choice(vocab) for _ in range(n)) for _ in range(rng.randint(0, 40))})
    rng.shuffle(grams[1])
    odd = rng.random() < 0.5

    def sep() -> str:
        if not odd:
            return rng.choice(["\t", " "])
        return rng.choice(["\t", " ", "  ", " \t", "\t\t", "\x0b", "\x0c"])

    lines = ["# a comment", ""] if rng.random() < 0.3 else []
    lines += ["\\data\\"] + [f"ngram {n}={len(grams[n])}" for n in range(1, order + 1)] + [""]
    for n in range(1, order + 1):
        lines.append(f"\\{n}-grams:")
        every = rng.random()  # share of entries with a back-off weight
        for gram in grams[n]:
            fields = [_number(rng, rng.uniform(-8, 0))] + list(gram)  # log-probs > 0 are refused
            if n < order and rng.random() < every:
                fields.append(_number(rng, rng.uniform(-3, 1)))
            line = fields[0]
            for field in fields[1:]:
                line += sep() + field
            if odd and rng.random() < 0.1:
                line = rng.choice([" ", "\t"]) + line + rng.choice([" ", "\t", ""])
            lines.append(line)
            if odd and rng.random() < 0.05:
                lines.append(rng.choice(["", "  "]))
        lines.append("")
    lines.append("\\end\\")
    text = "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
    return text, odd


def _assert_same(fast: packed.PackedArpa, slow: packed.PackedArpa) -> None:
    assert fast.words == slow.words
    assert len(fast.orders) == len(slow.orders)
    for a, b in zip(fast.orders, slow.orders):
        assert np.array_equal(a.ids, b.ids)
        assert a.logp.tobytes() == b.logp.tobytes()  # bit for bit (-0.0 too)
        assert np.array_equal(np.isnan(a.bow), np.isnan(b.bow))
        assert a.bow[~np.isnan(a.bow)].tobytes() == b.bow[~np.isnan(b.bow)].tobytes()
        if a.sorted_index is not None and b.sorted_index is not None:
            assert np.array_equal(a.sorted_index, b.sorted_index)


@pytest.mark.parametrize("block", [16, 100, 1 << 20])
def test_bulk_reader_equals_line_reader_on_random_files(tmp_path, monkeypatch, block):
    monkeypatch.setattr(arpa_bulk, "_BLOCK", block)
    monkeypatch.setattr(arpa_bulk, "_GZ_READ", max(block // 3, 1))
    for seed in range(60):
        text, _ = _random_arpa(seed)
        plain = tmp_path / f"r{seed}.arpa"
        plain.write_bytes(text.encode("utf-8"))
        slow = packed._read_lines(str(plain))
        for path in (plain, tmp_path / f"r{seed}.arpa.gz"):
            if path.suffix == ".gz":
                data = text.encode("utf-8")
                cut = len(data) // 2  # two gzip members, as concatenated files have
                path.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
            fast = packed._read_bulk(str(path))
            assert fast is not None, (seed, path)
            _assert_same(fast, slow)


def test_bulk_numbers_every_layout(tmp_path):
    """Numbers of every layout and length, read exactly as float() reads them."""
    rng = random.Random(3)
    spellings = set()
    for _ in range(3000):
        v = rng.choice([rng.uniform(-99, 99), rng.uniform(-1, 1), -rng.expovariate(1.0), 0.0])
        spellings.add(_number(rng, v))
    for digits in range(1, 9):
        for point in range(0, digits + 1):
            body = "".join(rng.choice("0123456789") for _ in range(digits))
            for sign in ("", "-", "+"):
                spellings.add(sign + body[:point] + "." + body[point:])
                spellings.add(sign + body)
    spellings -= {"-.", "+.", ".", "+", "-", ""}
    spellings = sorted(spellings)
    text = ["\\data\\", f"ngram 1={len(spellings)}", "", "\\1-grams:"]
    text += [f"{s}\tw{i}\t{s}" for i, s in enumerate(spellings)]
    text += ["", "\\end\\", ""]
    path = tmp_path / "numbers.arpa"
    path.write_text("\n".join(text))
    fast = packed._read_bulk(str(path))
    assert fast is not None
    want = np.array([float(s) for s in spellings])
    assert fast.orders[0].logp.tobytes() == want.tobytes()
    assert fast.orders[0].bow.tobytes() == want.tobytes()


BAD = {
    "unknown word": ("-0.5\ta b\n", "-0.5\ta zz\n"),
    "nan": ("-0.5\ta b\n", "nan\ta b\n"),
    "two points": ("-0.5\ta b\n", "-0.5.1\ta b\n"),
    "letters": ("-0.5\ta b\n", "-0.5x\ta b\n"),
    "duplicate bigram": ("-0.25\t<s> a\n", "-0.25\ta b\n"),
    "duplicate unigram": ("-1.0\tb\t-0.2\n", "-1.0\ta\t-0.2\n"),
    "fields": ("-0.5\ta b\n", "-0.5\ta b c d\n"),
    "control byte": ("-0.5\ta b\n", "-0.5\ta\x1cb\n"),
    "count": ("ngram 2=2", "ngram 2=3"),
    "indented section": ("\\2-grams:", "  \\2-grams:"),
    "text after end": ("\\end\\\n", "\\end\\\nmore\n"),
}
GOOD = "\\data\\\nngram 1=3\nngram 2=2\n\n\\1-grams:\n-1.0\ta\t-0.3\n-1.0\tb\t-0.2\n-99\t<s>\n\n" \
       "\\2-grams:\n-0.5\ta b\n-0.25\t<s> a\n\n\\end\\\n"


@pytest.mark.parametrize("case", sorted(BAD))
def test_bulk_reader_declines_what_the_line_reader_rejects(tmp_path, case):
    old, new = BAD[case]
    assert old in GOOD
    path = tmp_path / "bad.arpa"
    path.write_text(GOOD.replace(old, new, 1))
    assert packed._read_bulk(str(path)) is None
    if case in ("control byte", "indented section"):  # odd but valid: the line reader reads it
        _assert_same(packed.read_packed(str(path)), packed._read_lines(str(path)))
    else:
        with pytest.raises(InputError):
            packed.read_packed(str(path))


@pytest.mark.parametrize("inflate", ["isal", "zlib"])
def test_bulk_reader_declines_damaged_gzip(tmp_path, monkeypatch, inflate):
    import sys

    if inflate == "zlib":
        monkeypatch.setitem(sys.modules, "isal", None)  # the fallback where isal is not installed
    good = gzip.compress(GOOD.encode())
    for name, data in {"truncated": good[:-9], "trailing": good + b"junk", "not gzip": GOOD.encode()}.items():
        path = tmp_path / f"{name.replace(' ', '_')}.arpa.gz"
        path.write_bytes(data)
        assert packed._read_bulk(str(path)) is None, name
        with pytest.raises(InputError):
            packed.read_packed(str(path))
    ok = tmp_path / "ok.arpa.gz"
    ok.write_bytes(good)
    _assert_same(packed._read_bulk(str(ok)), packed._read_lines(str(ok)))


def _random_model(seed: int) -> MixedArpa:
    rng = np.random.default_rng(seed)
    words = WORDS[:]
    orders = []
    for n in (1, 2, 3):
        m = 5000 if n > 1 else len(words)
        ids = np.arange(m).reshape(-1, 1) if n == 1 else rng.integers(0, len(words), (m, n))
        p = int(rng.integers(6, 9))
        halves = (rng.integers(-10 ** (p + 2), 10 ** (p + 2), m) + 0.5) / 10 ** p  # near-halves
        logp = np.where(rng.random(m) < 0.3, halves, rng.uniform(-12, 0, m))
        logp[:8] = [-0.0, 0.0, -1e-12, 1e-12, -99.0, -np.inf, np.nan, -5e-8]
        bow = rng.uniform(-3, 3, m) if n < 3 else np.full(m, np.nan)
        if n < 3:
            bow[rng.random(m) < 0.3] = np.nan
            bow[:3] = [1e300, -0.0, 2.5e-7]
        orders.append(MixedOrder(ids, logp, bow))
    return MixedArpa(words, orders)


@pytest.mark.parametrize("precision", [6, 7, 8])
def test_row_writer_writes_the_percent_path_bytes(monkeypatch, precision):
    for seed in range(4):
        model = _random_model(seed)
        fast = io.BytesIO()
        arpa_writer.write_arpa_lines(fast, model, precision, chunk=1000)
        with monkeypatch.context() as patch:
            patch.setattr(arpa_writer._RowWriter, "format", lambda self, *args: None)
            slow = io.BytesIO()
            arpa_writer.write_arpa_lines(slow, model, precision, chunk=1000)
        assert fast.getvalue() == slow.getvalue()
    text = io.StringIO()  # a text stream without a buffer gets the same text
    arpa_writer.write_arpa_lines(text, model, precision, chunk=1000)
    assert text.getvalue().encode("utf-8") == fast.getvalue()
