"""Fast marginal adaptation (FMA) of a back-off ARPA model, exactly normalized (paper 003 §2.3).

Two variants, with B the background n-gram model, P_B(w) a background unigram marginal and
P_A(w) the (smoothed) adaptation unigram marginal:

- standard FMA (003 Eq. 1; Kneser, Peters & Klakow 1997)::

      P_A(w|h) = (1/Z(h)) (P_A(w)/P_B(w))^beta P_B(w|h)

- reversed FMA (003 Eq. 2)::

      P_A(w|h) = (1/Z(h)) (P_B(w|h)/P_B(w))^beta P_A(w)

**One recursion for both.** Write the unnormalized adapted score as
``Q(w|h) = r(w) P_B(w|h)^g`` with

- standard: ``r(w) = (P_A(w)/P_B(w))^beta``, ``g = 1``;
- reversed: ``r(w) = P_A(w) / P_B(w)^beta``, ``g = beta``,

and ``Z(h) = sum_w Q(w|h)`` over the whole vocabulary (``<s>`` excluded: it is never predicted,
``r(<s>) = 0``). In a back-off model, for w outside the explicit successors E(h) of h,
``P_B(w|h) = bow_B(h) P_B(w|h')`` (h' = h without its oldest word; ``bow_B(h) = 1`` when h is
not listed or has no weight, as ARPA reads it), hence

      Q(w|h) = bow_B(h)^g r(w) P_B(w|h')^g = bow_B(h)^g Q(w|h')        (w not in E(h))

and, summing over the vocabulary,

      Z(h) = sum_{w in E(h)} Q(w|h) + bow_B(h)^g (Z(h') - sum_{w in E(h)} Q(w|h')).

For the standard variant (g = 1) this is Kneser et al.'s
``Z(h) = sum_E a(w) P_B(w|h) + bow_B(h) (Z(h') - sum_E a(w) P_B(w|h'))``. For the reversed
variant the backed-off part is *not* ``bow_B(h)`` times the lower order's background mass: the
power ``P_B(w|h)^beta`` splits into ``bow_B(h)^beta P_B(w|h')^beta``, so the lower order's
*unnormalized adapted* mass Z(h') (the sum of ``r(w) P_B(w|h')^beta``) is what the recursion
carries. The recursion ends at the empty context, ``Z() = sum_w r(w) P_B(w|())^g`` with
P_B(w|()) the ARPA's unigram probabilities: so a background whose unigrams (or any context)
do not sum to 1 still gives a normalized adapted model. Each context costs O(|E(h)|).

**The adapted model in back-off form.** Listed n-grams get ``P_A(w|h) = Q(w|h)/Z(h)``; for the
others ``P_A(w|h) = bow_B(h)^g Q(w|h')/Z(h) = bow_A(h) P_A(w|h')`` with

      bow_A(h) = bow_B(h)^g Z(h') / Z(h),

so the adapted model has exactly the background's n-grams (closed under prefixes and
suffixes: a missing lower-order context or suffix of a listed n-gram is added, with the value
the back-off gives it, so that its back-off weight can be stored and kenlm finds every
n-gram). Probabilities in the output are log10 (ARPA); ``<s>`` gets -99 (probability 0).

**Marginals** (:func:`marginals`).

- P_B(w): the ARPA's unigram probabilities renormalized over the vocabulary without ``<s>``,
  or, with background counts (SRILM ``-base-marginals``), those counts with add-1/2 smoothing
  over that vocabulary (a word of the ARPA never seen in the background counts keeps a nonzero
  marginal).
- P_A(w) = (1 - lambda) c(w)/C + lambda P_B(w): the adaptation counts' relative frequency
  interpolated with the background marginal (``lambda`` = ``prior``, 0 < lambda <= 1). A word
  without adaptation mass gets ``lambda P_B(w)`` (never 0); an adaptation marginal equal to
  P_B leaves P_A = P_B; lambda = 1 switches adaptation off.
- Counts: words outside the ARPA vocabulary are dropped (counted and reported) unless
  ``oov_to_unk``, which adds their counts to ``<unk>`` (when the ARPA has it; kenlm scores
  OOV words as ``<unk>``). Dropping is the default because in rescoring ``<unk>`` stands for
  *every* out-of-vocabulary word of a hypothesis: on AMI, 2% OOV tokens in a decoder's 1-best
  lifted P(<unk>) from 1e-5 to 0.02 and the rescored WER rose by 3.6 points. Counts of ``<s>``
  are dropped; negative counts (unclamped DP noise, ``add-noise --no-clamp``) are clipped to 0
  *before* normalizing (post-processing of the release: no privacy cost).

All arrays are per order on numpy (:mod:`asrpriv.ngram.packed`): lookups are ``searchsorted``
on row codes, sums per context are ``bincount``; memory grows with the number of n-grams.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from asrpriv.errors import InputError
from asrpriv.ngram.mix import LOG10_ZERO, MixedArpa, MixedOrder
from asrpriv.ngram.packed import PackedArpa, lookup, row_codes, stable_argsort


@dataclass
class Marginals:
    """P_B(w) and P_A(w) over the ARPA's word ids (float64, 0 at ``<s>``), and what was dropped."""

    background: np.ndarray
    adaptation: np.ndarray
    dropped_words: int = 0
    dropped_mass: float = 0.0
    clipped: int = 0


def _count_vector(words: list[str], counts: dict[str, float],
                  oov_to_unk: bool = False) -> tuple[np.ndarray, int, float, int]:
    """Counts over word ids: OOV words dropped (or to ``<unk>``), ``<s>`` dropped, negatives -> 0.

    Returns ``(vector, dropped words, dropped mass, clipped negatives)``.
    """
    index = {w: i for i, w in enumerate(words)}
    unk = index.get("<unk>") if oov_to_unk else None
    vec = np.zeros(len(words), dtype=np.float64)
    dropped = clipped = 0
    dropped_mass = 0.0
    for word, value in counts.items():
        if value < 0:
            clipped += 1
            value = 0.0
        i = index.get(word, unk)
        if i is None or word == "<s>":
            if value > 0:
                dropped += 1
                dropped_mass += value
            continue
        vec[i] += value
    return vec, dropped, dropped_mass, clipped


def marginals(model: PackedArpa, adapt_counts: dict[str, float], prior: float,
              background_counts: dict[str, float] | None = None,
              adapt_path: str | None = None, oov_to_unk: bool = False) -> Marginals:
    """The background and smoothed adaptation marginals (see the module docstring).

    Raises:
        InputError: no adaptation mass on a word of the ARPA vocabulary (named ``adapt_path``).
        ValueError: ``prior`` outside (0, 1].
    """
    if not 0.0 < prior <= 1.0:
        raise ValueError(f"the marginal prior weight must be in (0, 1], got {prior}")
    words = model.words
    keep = np.ones(len(words), dtype=bool)
    if "<s>" in words:
        keep[words.index("<s>")] = False
    if background_counts is None:
        p_b = np.where(keep, np.power(10.0, model.orders[0].logp), 0.0)
    else:
        c_b = _count_vector(words, background_counts, oov_to_unk)[0]
        p_b = np.where(keep, c_b + 0.5, 0.0)
    p_b = p_b / p_b.sum()
    c_a, dropped, dropped_mass, clipped = _count_vector(words, adapt_counts, oov_to_unk)
    vocab = set(words) - {"<s>", "<unk>"}
    total = c_a.sum()
    if not total > 0 or not any(w in vocab and c > 0 for w, c in adapt_counts.items()):
        raise InputError(adapt_path, _first_row_line(adapt_path),
                         f"no word of the adaptation counts ({len(adapt_counts)} words) has a count "
                         "> 0 and is in the ARPA vocabulary (<s>, <unk> aside): wrong vocabulary?")
    p_a = (1.0 - prior) * c_a / total + prior * p_b
    return Marginals(p_b, p_a, dropped, dropped_mass, clipped)


def _first_row_line(path: str | None) -> int | None:
    """Line number of the first count row of a counts file (for error messages), if readable."""
    if not path or path == "-":
        return None
    from asrpriv.io.lines import iter_lines

    for lineno, line in iter_lines(path):
        if line.strip() and not line.startswith("#"):
            return lineno
    return None


def closed_rows(model: PackedArpa) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """The model's n-grams per order as rows of word ids, closed under prefixes and suffixes,
    sorted.

    Also, per order, the index into the model's own rows of each closed row when the closure
    added nothing to that order (the rows are the model's, permuted), else None.
    """
    v = len(model.words)
    rows: list[np.ndarray] = [np.arange(v, dtype=np.int64).reshape(-1, 1)]
    rows += [order.ids for order in model.orders[1:]]
    perms: list[np.ndarray | None] = [np.arange(v)] + [None] * (model.order - 1)
    for n in range(model.order, 1, -1):
        if n < model.order:  # rows[n-1] got the prefixes and suffixes of order n + 1
            rows[n - 1], perm = _sorted_unique(rows[n - 1], v)
            # B's rows come first in the concatenation, so equal rows resolve to B's index
            perms[n - 1] = None if len(rows[n - 1]) != len(model.orders[n - 1].ids) else perm
        elif model.orders[n - 1].sorted_index is not None:  # sorted by the reader (no duplicates)
            perms[n - 1] = model.orders[n - 1].sorted_index
            rows[n - 1] = rows[n - 1][perms[n - 1]]
        else:
            rows[n - 1], perms[n - 1] = _sorted_unique(rows[n - 1].astype(np.int64), v)
        if n > 2:
            rows[n - 2] = np.concatenate([rows[n - 2], rows[n - 1][:, :-1], rows[n - 1][:, 1:]])
    return rows, perms


def _sorted_unique(rows: np.ndarray, v: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` sorted without duplicates, and the index of each result row in ``rows``."""
    if len(rows) == 0:
        return rows, np.arange(0)
    codes = row_codes([rows], v)[0]
    if (codes[1:] > codes[:-1]).all():  # already sorted (and unique)
        return rows, np.arange(len(rows))
    srt, codes = stable_argsort(codes)
    first = np.concatenate([[True], codes[1:] != codes[:-1]])
    return rows[srt[first]], srt[first]


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's large arrays on ordinary pages within the block, then as before.

    numpy asks the kernel for transparent huge pages for every array of 4 MB or more
    (``madvise``; ``NUMPY_MADVISE_HUGEPAGE`` at import). Where the kernel then compacts memory
    on the fault (``defrag=madvise``, the usual default), the dozens of fresh 16 MB
    temporaries of :func:`adapt_arpa` on the 2M-bigram model cost 0.3 s of system time, ten
    times what their ordinary page faults cost. A no-op where numpy lacks the switch.
    """
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy < 2
        try:
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:
            _set_madvise_hugepage = None
    previous = _set_madvise_hugepage(False) if _set_madvise_hugepage else None
    try:
        yield
    finally:
        if _set_madvise_hugepage:
            _set_madvise_hugepage(previous)


def adapt_arpa(model: PackedArpa, marg: Marginals, beta: float, reversed_: bool = False) -> MixedArpa:
    """The FMA-adapted model (standard 003 Eq. 1, or reversed 003 Eq. 2), exactly normalized.

    Args:
        model: the background ARPA model (log10).
        marg: P_B(w) and P_A(w) from :func:`marginals`.
        beta: the exponent (>= 0).
        reversed_: the reversed variant.

    Returns:
        The adapted model (rows sorted, log10 probabilities and back-off weights).
    """
    v = len(model.words)
    bos = model.words.index("<s>") if "<s>" in model.words else None
    with np.errstate(divide="ignore", invalid="ignore"):  # <s>: log 0, set to -inf below
        log_pa, log_pb = np.log10(marg.adaptation), np.log10(marg.background)
        if reversed_:
            log_r, g = log_pa - beta * log_pb, beta
        else:
            log_r, g = beta * (log_pa - log_pb), 1.0
    if bos is not None:
        log_r[bos] = -np.inf
    rows, perms = closed_rows(model)

    # the background's probability and back-off weight of every closed row (listed or not)
    listed_logp, bows = [], []
    for n, r in enumerate(rows, 1):
        order = model.orders[n - 1]
        if perms[n - 1] is not None:  # the closure added nothing to this order: all listed
            listed_logp.append(order.logp[perms[n - 1]])
            bows.append(np.nan_to_num(order.bow[perms[n - 1]], nan=0.0))
            continue
        table, query = row_codes([order.ids, r], v)
        srt, table = stable_argsort(table)
        hit = lookup(table, query)
        hit = np.where(hit >= 0, srt[np.maximum(hit, 0)], -1)
        found = hit >= 0
        listed_logp.append(np.where(found, order.logp[np.maximum(hit, 0)], np.nan))
        bows.append(np.where(found, np.nan_to_num(order.bow[np.maximum(hit, 0)], nan=0.0), 0.0))

    def scaled(logp: np.ndarray) -> np.ndarray:  # x * 1.0 is x: no product for the standard FMA
        return logp if g == 1.0 else logp * g if g != 0 else np.zeros_like(logp)

    # order 1: the empty context
    log_pb_full = listed_logp[0]
    log_q = log_r + scaled(log_pb_full)
    z_prev = np.array([np.power(10.0, log_q).sum()])
    z_prev_of = np.zeros(v, dtype=np.int64)  # suffix of each unigram context: the empty context
    out = [MixedOrder(rows[0], log_q - np.log10(z_prev[0]), np.full(v, np.nan))]
    for n in range(2, model.order + 1):
        r, ctx = rows[n - 1], rows[n - 2]
        if n == 2:  # the contexts are the unigrams: row index = word id
            prefix, suffix = r[:, 0].astype(np.intp), r[:, 1].astype(np.intp)
            last = suffix
        else:
            pre_q, suf_q, ctx_c = row_codes([r[:, :-1], r[:, 1:], ctx], v)
            prefix, suffix = lookup(ctx_c, pre_q), lookup(ctx_c, suf_q)
            assert (prefix >= 0).all() and (suffix >= 0).all()
            last = r[:, -1]
        unlisted = np.isnan(listed_logp[n - 1])
        if unlisted.any():  # (else every row is listed: nothing backs off)
            backed = bows[n - 2][prefix] + log_pb_full[suffix]
            log_pb_n = np.where(unlisted, backed, listed_logp[n - 1])
        else:
            log_pb_n = listed_logp[n - 1]
        log_q_n = log_r[last] + scaled(log_pb_n)
        m = len(ctx)
        s1 = np.bincount(prefix, weights=np.power(10.0, log_q_n), minlength=m)
        s2 = np.bincount(prefix, weights=np.power(10.0, log_q[suffix]), minlength=m)
        z_suffix = z_prev[z_prev_of]
        rest = np.maximum(z_suffix - s2, 0.0)  # >= 0 up to rounding
        z = s1 + np.power(10.0, scaled(bows[n - 2])) * rest
        with np.errstate(divide="ignore"):
            log_z, log_z_suffix = np.log10(z), np.log10(z_suffix)
        out[n - 2].bow = scaled(bows[n - 2]) + log_z_suffix - log_z
        out.append(MixedOrder(r, log_q_n - log_z[prefix], np.full(len(r), np.nan)))
        if n < model.order:  # the suffix context of each order-n row, for the next order
            z_prev_of = suffix_of(r, ctx, v)
        z_prev, log_pb_full, log_q = z, log_pb_n, log_q_n
    for order in out:
        order.logp = np.where(np.isfinite(order.logp), order.logp, LOG10_ZERO)
    return MixedArpa(model.words, out)


def suffix_of(rows: np.ndarray, lower: np.ndarray, v: int) -> np.ndarray:
    """Index in ``lower`` (sorted rows of order n-1) of each row's suffix ``row[1:]``."""
    q, t = row_codes([rows[:, 1:], lower], v)
    idx = lookup(t, q)
    assert (idx >= 0).all()
    return idx


def write_arpa_lines(out, model: MixedArpa, precision: int | None = 7, chunk: int = 1 << 16) -> None:
    """Write ``model`` as ARPA text, the same text as :meth:`MixedArpa.write` (probability 0 and
    ``<s>`` as -99, ``precision`` digits after the point, or ``repr`` with None), to a text or
    binary stream (a UTF-8 text stream with a ``buffer`` gets the bytes directly).

    With 6 to 8 digits (the step's default is 7) the rows are built in numpy
    (:class:`_RowWriter`), byte-identical to Python's formatting. Otherwise (``repr``, other
    precisions, huge numbers, a word with a NUL) each chunk of rows is one ``%`` formatting of
    a repeated row template over a flat tuple (``"%.7f\t%s %s\n" * rows % values``), the
    floats formatted in C as ``format(x, ".7f")`` / ``repr`` do.
    """
    import io

    from asrpriv.ngram.arpa import write_header

    sink = _byte_sink(out)
    header = io.StringIO()
    write_header(header, model.counts())
    sink(header.getvalue().encode("utf-8"))
    words = model.words
    fast = precision is not None and 6 <= precision <= 8
    vocab = _WordChunks(words) if fast else None
    if vocab is not None and vocab.chunks is None:
        vocab = None
    num = "%r" if precision is None else f"%.{int(precision)}f"
    pool = None
    if vocab is not None and sum(model.counts()) > 2 * chunk:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(2, thread_name_prefix="asrpriv-arpa")
    try:
        for n, order in enumerate(model.orders, 1):
            sink(f"\\{n}-grams:\n".encode("utf-8"))
            logp = np.maximum(np.where(np.isfinite(order.logp), order.logp, LOG10_ZERO), LOG10_ZERO)
            has_bow = not np.isnan(order.bow).all()
            bow = np.maximum(np.nan_to_num(order.bow, nan=0.0), LOG10_ZERO) if has_bow else None
            rows = None if vocab is None else _RowWriter(vocab, precision)
            template = num + "\t" + " ".join(["%s"] * n) + ("\t" + num if has_bow else "") + "\n"
            fields = 1 + n + has_bow

            def text(start: int):
                stop = min(start + chunk, len(logp))
                ids = order.ids[start:stop]
                part_bow = None if bow is None else bow[start:stop]
                got = None if rows is None else rows.format(logp[start:stop], ids, part_bow)
                if got is None:
                    flat: list = [None] * (fields * (stop - start))
                    flat[0::fields] = logp[start:stop].tolist()
                    for j in range(n):
                        flat[1 + j::fields] = map(words.__getitem__, ids[:, j].tolist())
                    if has_bow:
                        flat[n + 1::fields] = part_bow.tolist()
                    got = (template * (stop - start) % tuple(flat)).encode("utf-8")
                return got

            for got in _in_order(pool, text, range(0, len(logp), chunk)):
                sink(got)
            sink(b"\n")
        sink(b"\\end\\\n")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _in_order(pool, fn, items, ahead: int = 6):
    """``fn(item)`` for each item, in order: by ``pool``'s threads, at most ``ahead`` at a
    time (numpy releases the GIL, so two threads format rows at once), or here without a pool."""
    if pool is None:
        yield from map(fn, items)
        return
    jobs = []
    for item in items:
        jobs.append(pool.submit(fn, item))
        if len(jobs) > ahead:
            yield jobs.pop(0).result()
    for job in jobs:
        yield job.result()


def _byte_sink(out):
    """A function writing bytes to ``out``: a binary stream, or a text stream (UTF-8 ones with a
    ``buffer`` get the bytes directly, after a flush; others the decoded text)."""
    import codecs
    import io

    if not isinstance(out, io.TextIOBase):
        return out.write
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is not None and encoding and codecs.lookup(encoding).name == "utf-8":
        out.flush()
        return buffer.write
    return lambda data: out.write(bytes(data).decode("utf-8"))


class _WordChunks:
    """The UTF-8 bytes of the words, 8 at a time: ``chunks[w, k]`` holds bytes ``[8k, 8k + 8)``
    of word w (zero-padded), ``size[w]`` its length; ``chunks`` is None if a word is empty."""

    def __init__(self, words: list[str]) -> None:
        self.chunks = None
        text = np.frombuffer("\n".join(words).encode("utf-8") + b"\n", dtype=np.uint8)
        end = np.flatnonzero(text == 10)
        if len(words) == 0 or len(end) != len(words):  # a word with a newline: the % path
            return
        self.size = np.diff(end, prepend=-1) - 1
        if self.size.min() == 0 or (text == 0).any():
            return
        k = -(-int(self.size.max()) // 8)
        padded = np.zeros((len(words), 8 * k + 1), dtype=np.uint8)  # + the newline
        row = np.repeat(np.arange(len(words)), self.size + 1)
        padded[row, np.arange(len(text)) - (end - self.size)[row]] = text
        padded[np.arange(len(words)), self.size] = 0  # the newlines
        self.chunks = np.ascontiguousarray(padded[:, :8 * k]).view("<u8")  # [V, k]


class _RowWriter:
    """The ARPA rows of one order as bytes, built in numpy, for 6 to 8 decimals.

    The rows' offsets in the output come from their lengths; each word is stored there 8 bytes
    at a time (unaligned uint64 stores), spilling up to 7 bytes past its end, so the words go
    first, left to right (a spill lands on what is written after: the next word, or the numbers
    and separators, and a row's last word on the next row's number, at least 8 bytes long with
    6 decimals or more); then the numbers and separators, exactly.

    Numbers: ``%.{p}f`` of x is the decimal of k = round(|x| 10^p) (the exact binary value,
    halves to even), with a minus sign when x is negative (``-0.0000000`` too). k is ``rint`` of
    the float product ``|x| 10^p`` unless that product lies within two ulps of a half, where it
    could round the other way: those few numbers are formatted by Python and k read back from
    the text (:func:`_fixed`). The p decimals are one SWAR store of 8 digits ending at the
    number's end (its leading digits land on the point and the integer part, written after),
    the integer part digit by digit.
    """

    def __init__(self, vocab: _WordChunks, precision: int) -> None:
        assert 6 <= precision <= 8
        self.vocab = vocab
        self.p = precision

    def format(self, logp: np.ndarray, ids: np.ndarray, bow: np.ndarray | None):
        """The rows as a uint8 array, or None for the ``%`` path (a number out of range)."""
        numbers = [_fixed(logp, self.p)]
        if bow is not None:
            numbers.append(_fixed(bow, self.p))
        if any(part is None for part in numbers):
            return None
        n = ids.shape[1]
        size = [self.vocab.size[ids[:, j]] for j in range(n)]
        width = [self._width(*part) for part in numbers]
        length = width[0] + sum(size) + n + 1  # number, tab, words and spaces, newline
        if bow is not None:
            length += 1 + width[1]
        end = np.cumsum(length)
        start = end - length
        out = np.empty(int(end[-1]) + 16, dtype=np.uint8)
        store = np.ndarray((len(out) - 7,), dtype="<u8", buffer=out, strides=(1,))
        at = start + width[0] + 1
        spaces = []
        for j in range(n):  # the words, left to right
            chunks = self.vocab.chunks
            w = ids[:, j]
            store[at] = chunks[w, 0]
            for k in range(1, chunks.shape[1]):
                more = np.flatnonzero(size[j] > 8 * k)
                if len(more) == 0:
                    break
                store[at[more] + 8 * k] = chunks[w[more], k]
            at = at + size[j]
            spaces.append(at)
            at = at + 1
        self._number(out, store, start, width[0], *numbers[0])
        out[start + width[0]] = 9  # tab
        for sep in spaces[:-1]:
            out[sep] = 32
        if bow is not None:
            out[spaces[-1]] = 9
            self._number(out, store, spaces[-1] + 1, width[1], *numbers[1])
        out[end - 1] = 10
        return out[:int(end[-1])]

    def _width(self, neg: np.ndarray, whole: np.ndarray, frac: np.ndarray) -> np.ndarray:
        """Characters of each number: sign, integer digits, point, decimals."""
        digits = np.ones(len(whole), dtype=np.int64)
        scale = 10
        top = int(whole.max(initial=0))
        while scale <= top:
            digits += whole >= scale
            scale *= 10
        return neg + digits + 1 + self.p

    def _number(self, out, store, start, width, neg, whole, frac) -> None:
        """Write numbers ``width`` characters long from ``start``."""
        end = start + width
        store[end - 8] = _ascii8(frac.astype(np.uint64))  # the decimals end the number
        out[end - self.p - 1] = 46  # the point
        units = end - self.p - 2
        out[units] = whole % 10 + 48
        scale, j = 10, 1
        top = int(whole.max(initial=0))
        while scale <= top:
            more = np.flatnonzero(whole >= scale)
            out[units[more] - j] = (whole[more] // scale) % 10 + 48
            scale, j = scale * 10, j + 1
        minus = np.flatnonzero(neg)
        out[start[minus]] = 45


def _fixed(x: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(negative, integer part, decimals)`` of ``"%.{p}f" % v`` for each v of ``x``, exactly
    (see :class:`_RowWriter`); None when a value is too large (or not finite) for that."""
    scale = 10.0 ** p
    a = np.abs(x)
    if not (a < 2.0 ** 52 / scale).all():
        return None
    y = a * scale
    k = np.rint(y)
    near = np.abs(y - np.floor(y) - 0.5) <= 2 * np.spacing(y)
    k = k.astype(np.int64)
    neg = np.signbit(x)
    for i in np.flatnonzero(near).tolist():
        text = "%.*f" % (p, x[i])
        k[i] = int(text.lstrip("-").replace(".", ""))
        neg[i] = text.startswith("-")
    whole = k // 10 ** p
    return neg, whole, k - whole * 10 ** p


def _ascii8(v: np.ndarray) -> np.ndarray:
    """The 8 decimal digits (zero-padded) of each ``v`` < 10^8 as ASCII bytes in a uint64, the
    first digit in the lowest byte (SWAR: halves, pairs, digits)."""
    u = np.uint64
    hi = v // u(10000)
    x = hi | ((v - hi * u(10000)) << u(32))  # two 4-digit lanes, the high half first
    q = ((x * u(5243)) >> u(19)) & u(0x0000007F0000007F)  # lane // 100
    x = q | ((x - q * u(100)) << u(16))  # four 2-digit lanes
    q = ((x * u(103)) >> u(10)) & u(0x000F000F000F000F)  # lane // 10
    x = q | ((x - q * u(10)) << u(8))  # eight digits
    return x + u(0x3030303030303030)
