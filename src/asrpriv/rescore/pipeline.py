"""The streaming rescorer behind ``asrpriv rescore-nbest``.

Utterances are read in chunks (``chunk_utts`` at a time); all hypotheses of a chunk are scored
together (the NNLM in length-sorted batches, see :mod:`asrpriv.rescore.nnlm`), combined with
:class:`asrpriv.rescore.combine.Weights`, re-ranked within their utterance (best total first;
ties keep the first-pass order) and written in input order. Memory is bounded by the chunk,
not by the input.

Output columns: every input column, in place and unchanged, except ``score`` and ``rank``
(replaced by the new total and rank) and ``nnlm_score``/``ngram_score`` when recomputed; then,
if absent, ``first_pass_rank`` (the input rank, or file order), ``first_pass_score`` (the input
``score`` column, when there was one and the input is not already a rescored output, which
has ``first_pass_rank``), ``nnlm_score``, ``ngram_score`` (natural-log sentence
log-probs including ``</s>``), ``score`` and ``rank``. So an output can be rescored or re-ranked
again (``reuse_scores``) with the first-pass information intact.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import IO, Iterable, Sequence

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.nbest import NbestReader, Utterance, format_score
from asrpriv.rescore.combine import Weights


@dataclass
class Stats:
    """What a run did, for the stderr summary."""

    utterances: int = 0
    hypotheses: int = 0
    words: int = 0
    nnlm_oov: int = 0


class Layout:
    """Where each score comes from and goes to, for one input header.

    Args:
        columns: the input header.
        nnlm: an NNLM score is computed.
        ngram: an n-gram score is computed.
        reuse_scores: take ``nnlm_score``/``ngram_score`` from the input when not computed.
    """

    def __init__(self, columns: Sequence[str], nnlm: bool, ngram: bool, reuse_scores: bool) -> None:
        self.columns = list(columns)
        index = {c: i for i, c in enumerate(columns)}
        self.index = index
        out = list(columns)
        added: list[str] = []
        for name in ("first_pass_rank",):
            if name not in index:
                added.append(name)
        # an input with first_pass_rank is an earlier output: its score is a second-pass total
        rescored = "first_pass_rank" in index
        if "score" in index and "first_pass_score" not in index and not rescored:
            added.append("first_pass_score")
        if nnlm and "nnlm_score" not in index:
            added.append("nnlm_score")
        if ngram and "ngram_score" not in index:
            added.append("ngram_score")
        for name in ("score", "rank"):
            if name not in index:
                added.append(name)
        out += added
        self.out_columns = out
        self.out_index = {c: i for i, c in enumerate(out)}
        # the acoustic part of the total (combine.py)
        for name in ("am_score", "first_pass_score") + (() if rescored else ("score",)):
            if name in index:
                self.acoustic = name
                break
        else:
            self.acoustic = None  # rank prior
        self.compute_nnlm = nnlm
        self.compute_ngram = ngram
        self.nnlm_from = "nnlm_score" if (not nnlm and reuse_scores and "nnlm_score" in index) else None
        if ngram:
            self.lm_from = None
        elif reuse_scores and "ngram_score" in index:
            self.lm_from = "ngram_score"
        elif "lm_score" in index:
            self.lm_from = "lm_score"
        else:
            self.lm_from = None
        self.has_nnlm = nnlm or self.nnlm_from is not None
        self.has_lm = ngram or self.lm_from is not None

    def describe(self) -> str:
        acoustic = self.acoustic or "rank prior -(first_pass_rank-1)"
        lm = arg("ngram") if self.compute_ngram else (self.lm_from or "none")
        nn = arg("nnlm") if self.compute_nnlm else (self.nnlm_from or "none")
        return f"acoustic: {acoustic}; lm (1-w): {lm}; nnlm (w): {nn}"


def _float(path, lineno: int, name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, lineno, f"{name}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise InputError(path, lineno, f"{name}: expected a finite score, got {text!r}")
    return value


def _first_pass_rank(reader: NbestReader, layout: Layout, hyp) -> int:
    i = layout.index.get("first_pass_rank")
    if i is None:
        return hyp.rank
    try:
        value = int(hyp.values[i])
    except ValueError:
        raise InputError(reader.path, hyp.lineno,
                         f"first_pass_rank: expected an integer, got {hyp.values[i]!r}") from None
    return value


#: why a rank-only list is refused without explicit or tuned weights
RANK_ONLY_MESSAGE = (
    "a rank-only N-best list (no am_score or score column): the acoustic part would be the "
    "rank prior -(rank-1), and the default --lm-weight 6.5, tuned for AMI acoustic scores, "
    "swamps it (LibriSpeech HyPoradise 5-best: WER 1.79% -> 5.75%); tune weights on held-out "
    "data (asrpriv tune-weights, then --weights FILE) or give --lm-weight explicitly")


class Rescorer:
    """Rescore N-best TSVs with the given scorers and weights.

    Args:
        weights: the combination weights.
        nnlm: an :class:`asrpriv.rescore.nnlm.NnlmScorer`, or None.
        ngram: an :class:`asrpriv.rescore.ngram.NgramScorer`, or None.
        factors: an :class:`asrpriv.rescore.factors.FactorTable` (needs ``nnlm``), or None.
        reuse_scores: use ``nnlm_score``/``ngram_score`` columns already in the input.
        max_words: with an NNLM, a longer hypothesis is an InputError (FILE:LINE).
        best: write Kaldi text of each utterance's best hypothesis instead of the TSV.
        chunk_utts: utterances scored together.
        unk_penalty: nats subtracted from the NNLM score per word outside its vocabulary.
    """

    def __init__(self, weights: Weights, nnlm=None, ngram=None, factors=None,
                 reuse_scores: bool = False, best: bool = False, chunk_utts: int = 256,
                 max_words: int | None = None, rank_only_ok: bool = True,
                 unk_penalty: float = 0.0) -> None:
        if factors is not None and nnlm is None:
            raise AsrprivError(f"{arg('factors')}/{arg('factors_dir')} need {arg('nnlm')} (FMP factors rescale the neural LM; "
                               "for an n-gram, write an adapted ARPA with fma-adapt)")
        self.weights = weights
        self.nnlm = nnlm
        self.ngram = ngram
        self.factors = factors
        self.reuse_scores = reuse_scores
        self.best = best
        self.chunk_utts = max(1, int(chunk_utts))
        self.max_words = max_words
        self.stats = Stats()
        self.layout: Layout | None = None
        self.rank_only_ok = rank_only_ok
        self.unk_penalty = float(unk_penalty)
        #: tokens dropped from every hypothesis on reading (asrpriv.io.tokens), and their count
        self.drop: frozenset[str] = frozenset()
        self.dropped = 0
        if self.unk_penalty and nnlm is None:
            raise AsrprivError(f"{arg('unk_penalty')} needs {arg('nnlm')} (it corrects the neural LM's <unk> score)")

    def run(self, inputs: Sequence[str], out: IO[str], progress=None) -> Stats:
        """Rescore every input (same header required) into ``out``."""
        header_written = False
        first_columns = None
        for path in inputs:
            reader = NbestReader(path, drop=self.drop)
            if first_columns is None:
                first_columns = reader.columns
                self.layout = Layout(reader.columns, self.nnlm is not None, self.ngram is not None,
                                     self.reuse_scores)
                if not (self.layout.has_nnlm or self.layout.has_lm):
                    raise AsrprivError(f"nothing to score with: give {arg('nnlm')} and/or {arg('ngram')} "
                                       f"(or {arg('reuse_scores')} with nnlm_score/ngram_score/lm_score columns)")
                if self.layout.acoustic is None and not self.rank_only_ok:
                    raise InputError(path, 1, RANK_ONLY_MESSAGE)
            elif reader.columns != first_columns:
                raise InputError(path, 1, "header differs from the first input's header")
            if not self.best and not header_written:
                out.write("\t".join(self.layout.out_columns) + "\n")
                header_written = True
            chunk: list[Utterance] = []
            for utt in reader:
                chunk.append(utt)
                if len(chunk) >= self.chunk_utts:
                    self._process(reader, chunk, out, progress)
                    chunk = []
            if chunk:
                self._process(reader, chunk, out, progress)
            self.dropped += reader.dropped
        return self.stats

    def _process(self, reader: NbestReader, chunk: list[Utterance], out: IO[str], progress) -> None:
        layout = self.layout
        hyps = [h for utt in chunk for h in utt.hyps]
        n = len(hyps)
        nn_scores: list[float | None] = [None] * n
        lm_scores: list[float | None] = [None] * n
        if self.nnlm is not None:
            if self.max_words is not None:
                for h in hyps:
                    if len(h.words) > self.max_words:
                        raise InputError(reader.path, h.lineno,
                                         f"a hypothesis of {len(h.words)} words is longer than "
                                         f"{arg('max_words')} {self.max_words} (the NNLM's cost grows "
                                         "with its square)")
            vocab = self.nnlm.vocab
            seqs = [self.nnlm.encode(h.words) for h in hyps]
            oovs = [sum(1 for w in h.words if vocab.is_oov(w)) for h in hyps]
            self.stats.nnlm_oov += sum(oovs)
            groups = None
            vectors: list = []
            if self.factors is not None:
                slot: dict[str, int] = {}
                groups = []
                for utt in chunk:
                    path = self.factors.path_for(utt.client, f"utterance {utt.utt_id}: ")
                    if path is None:
                        g = -1
                    else:
                        g = slot.get(path)
                        if g is None:
                            g = slot[path] = len(vectors)
                            vectors.append(self.factors.vector(path))
                    groups.extend([g] * len(utt.hyps))
            units = [u for u, utt in enumerate(chunk) for _ in utt.hyps]
            nn_scores = self.nnlm.score(seqs, groups, vectors, units)
            if self.unk_penalty:
                nn_scores = [score - self.unk_penalty * n for score, n in zip(nn_scores, oovs)]
        elif layout.nnlm_from:
            i = layout.index[layout.nnlm_from]
            nn_scores = [_float(reader.path, h.lineno, layout.nnlm_from, h.values[i]) for h in hyps]
        if self.ngram is not None:
            lm_scores = self.ngram.score_many([h.words for h in hyps])
        elif layout.lm_from:
            i = layout.index[layout.lm_from]
            lm_scores = [_float(reader.path, h.lineno, layout.lm_from, h.values[i]) for h in hyps]
        if layout.acoustic:
            i = layout.index[layout.acoustic]
            acoustic = [_float(reader.path, h.lineno, layout.acoustic, h.values[i]) for h in hyps]
        else:
            acoustic = None
        ranks = [_first_pass_rank(reader, layout, h) for h in hyps]
        if acoustic is None:
            acoustic = [-(r - 1.0) for r in ranks]
        total = self.weights.total
        scores = [total(acoustic[k], lm_scores[k], nn_scores[k], len(hyps[k].words)) for k in range(n)]
        for k, score in enumerate(scores):
            if not math.isfinite(score):  # finite parts, but weights so large that the sum overflows
                raise InputError(reader.path, hyps[k].lineno,
                                 f"the combined score is not finite ({score}): are {arg('lm_weight')} or "
                                 f"{arg('word_penalty')}, or the scores, too large?")

        out_index = layout.out_index
        width = len(layout.out_columns)
        in_width = len(layout.columns)
        i_score, i_rank = out_index["score"], out_index["rank"]
        i_fpr = out_index["first_pass_rank"]
        i_fps = out_index.get("first_pass_score") if "first_pass_score" not in layout.index else None
        i_in_score = layout.index.get("score")
        i_nn = out_index.get("nnlm_score") if self.nnlm is not None else None
        i_ng = out_index.get("ngram_score") if self.ngram is not None else None
        lines = []
        k0 = 0
        for utt in chunk:
            m = len(utt.hyps)
            order = sorted(range(k0, k0 + m), key=lambda k: (-scores[k], ranks[k]))
            if self.best:
                best = hyps[order[0]]
                lines.append(" ".join([utt.utt_id, *best.words]) + "\n")
            else:
                for new_rank, k in enumerate(order, 1):
                    h = hyps[k]
                    row = h.values + [""] * (width - in_width)
                    if i_fps is not None:
                        row[i_fps] = h.values[i_in_score]
                    if "first_pass_rank" not in layout.index:
                        row[i_fpr] = str(ranks[k])
                    if i_nn is not None:
                        row[i_nn] = format_score(nn_scores[k])
                    if i_ng is not None:
                        row[i_ng] = format_score(lm_scores[k])
                    row[i_score] = format_score(scores[k])
                    row[i_rank] = str(new_rank)
                    lines.append("\t".join(row) + "\n")
            k0 += m
        out.writelines(lines)
        self.stats.utterances += len(chunk)
        self.stats.hypotheses += n
        self.stats.words += sum(len(h.words) for h in hyps)
        if progress is not None:
            progress.update(n, postfix=f"{self.stats.utterances} utt")


def iter_inputs(inputs: Iterable[str]) -> list[str]:
    """Input names, ``-`` (stdin) when none."""
    names = list(inputs)
    return names or ["-"]


@dataclass
class RescoreSettings:
    """The settings of ``rescore-nbest`` (its options by their Python names).

    ``lm_weight``, ``nnlm_weight``, ``word_penalty``: None = not given (the ``weights`` file's
    value, else the default: 6.5, 0.5, -0.431 nats per word); a value given wins over the
    file. ``ngram``: ARPA/kenlm paths (several: interpolated with ``ngram_weights``, text
    ``W1,W2,...``). ``output``: N-best TSV (or Kaldi 1-best text with ``best``), ``-`` = stdout.
    """

    inputs: Sequence[str] = ()
    nnlm: str | None = None
    ngram: Sequence[str] = ()
    class_files: Sequence[str] = ()
    ngram_weights: str | None = None
    #: weights of a linear mixture of the n-grams and the NNLM (last): the n-grams' renormalized
    #: weights and the NNLM share w (paper 003 Eq. 3, log-linear approximation); '@REPORT.json'
    mixture_weights: str | None = None
    factors: str | None = None
    factors_dir: str | None = None
    missing_factors: str = "error"
    unnormalized: bool = False
    lm_weight: float | None = None
    nnlm_weight: float | None = None
    word_penalty: float | None = None
    weights: str | None = None
    reuse_scores: bool = False
    best: bool = False
    device: str = "cpu"
    threads: int | None = None
    batch_tokens: int = 4096
    max_words: int = 1000
    unk_penalty: float = 0.0
    chunk_utts: int = 256
    output: str = "-"
    allow_seeded: bool = False
    drop_tokens: str | None = None  # tokens that are not words (asrpriv.io.tokens SPEC)
    precision: str = "fp32"  # NNLM arithmetic: fp32, or bf16 (opt-in; nnlm.runtime.bf16_supported)


@dataclass
class RescoreResult:
    """What ``rescore-nbest`` did: counts (:class:`Stats`), the weights used, the score
    layout it read, and the factor table's summary (None without factors)."""

    stats: Stats
    weights: Weights
    layout: Layout | None
    factors_summary: str | None
    untuned: bool = False  # the default weights were used (no --weights, no weight given)
    dropped: int = 0  # non-word tokens dropped (drop_tokens)
    drop: frozenset = frozenset()

    @property
    def uses_nnlm(self) -> bool:
        """Whether an NNLM score takes part (computed, or reused from the input)."""
        return self.layout is not None and self.layout.has_nnlm

    def _weights_text(self) -> str:
        w = self.weights
        share = f" nnlm_weight={w.nnlm_weight:g}" if self.uses_nnlm else ""
        return f"lm_weight={w.lm_weight:g}{share} word_penalty={w.word_penalty:g}"

    def notes(self, verbose: bool = False) -> list[str]:
        """What ``rescore-nbest`` says on stderr, one line each: the counts and the weights
        used (the NNLM's share only when an NNLM score takes part: no talk about components
        not in use), untuned weights, the factors, a missing acoustic column."""
        s = self.stats
        lines = []
        if self.layout is not None and verbose:
            lines.append(f"rescore-nbest: {self.layout.describe()}")
        note = (f"rescore-nbest: {s.utterances} utterances, {s.hypotheses} hypotheses; "
                f"{self._weights_text()}")
        if self.layout is not None and self.layout.compute_nnlm:
            note += f"; NNLM OOV words (scored as <unk>): {s.nnlm_oov}"
        if self.drop:
            note += f"; non-word tokens dropped: {self.dropped}"
        lines.append(note)
        if self.untuned:
            lines.append(f"rescore-nbest: score and rank use untuned default weights "
                         f"({self._weights_text()}, the AMI first pass's): tune them for your "
                         "LMs on held-out data with tune-weights (it reads this output) and pass "
                         "--weights FILE (README, Quick start)")
        if self.factors_summary is not None:
            lines.append(f"rescore-nbest: {self.factors_summary}")
        if self.layout is not None and self.layout.acoustic is None:
            lines.append("rescore-nbest: no am_score or score column: the acoustic part is the "
                         "rank prior -(rank-1); tune --lm-weight for such lists (tune-weights)")
        return lines


def resolve_weights(s: RescoreSettings):
    """The weights ``rescore-nbest`` scores with: each weight given in ``s``, else the weights
    file's (``s.weights``), else the default (the AMI first pass's, tuned for nothing of
    yours). The API's ``score_hypotheses`` uses the same rule."""
    from asrpriv.rescore.combine import (DEFAULT_LM_WEIGHT, DEFAULT_NNLM_WEIGHT,
                                         DEFAULT_WORD_PENALTY, read_weights)

    given = {"lm_weight": s.lm_weight, "nnlm_weight": s.nnlm_weight, "word_penalty": s.word_penalty}
    weights = Weights(DEFAULT_LM_WEIGHT if s.lm_weight is None else s.lm_weight,
                      DEFAULT_NNLM_WEIGHT if s.nnlm_weight is None else s.nnlm_weight,
                      DEFAULT_WORD_PENALTY if s.word_penalty is None else s.word_penalty)
    if s.weights:
        loaded = read_weights(s.weights).weights
        for name, value in given.items():
            if value is None:
                setattr(weights, name, getattr(loaded, name))
        if not 0.0 <= weights.nnlm_weight <= 1.0:
            raise AsrprivError(f"{s.weights}: nnlm_weight must lie in [0, 1]")
    return weights


def expected_rows(inputs: Sequence[str]) -> int | None:
    """The hypotheses the inputs hold, for a progress meter's total and ETA: data lines (not
    the header or ``#`` lines) of plain regular files, counted in bytes; None when an input is
    stdin, a pipe or compressed (unknown without reading it)."""
    import stat

    total = 0
    for path in inputs:
        if path == "-" or str(path).endswith(".gz"):
            return None
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return None
            with open(path, "rb") as stream:
                lines = comments = 0
                tail = b"\n"
                for block in iter(lambda: stream.read(1 << 20), b""):
                    lines += block.count(b"\n")
                    comments += block.count(b"\n#")
                    tail = block[-1:]
        except OSError:
            return None
        lines += tail != b"\n"  # a last line without its newline
        total += max(lines - 1 - comments, 0)  # the header
    return total


def check_rescore_settings(s: RescoreSettings) -> None:
    """The checks of rescore-nbest's settings that need no file."""
    for name in ("lm_weight", "word_penalty", "unk_penalty"):
        value = getattr(s, name)
        if value is not None and not math.isfinite(value):
            raise AsrprivError(f"{arg(name)}: expected a finite number, got {value!r}")
    if s.nnlm_weight is not None and not (math.isfinite(s.nnlm_weight) and 0.0 <= s.nnlm_weight <= 1.0):
        raise AsrprivError(f"{arg('nnlm_weight')} must lie in [0, 1], got {s.nnlm_weight}")
    if s.unk_penalty < 0:
        raise AsrprivError(f"{arg('unk_penalty')} must be >= 0, got {s.unk_penalty}")
    for name in ("batch_tokens", "max_words", "chunk_utts", "threads"):
        value = getattr(s, name)
        if value is not None and value < 1:
            raise AsrprivError(f"{arg(name)} must be >= 1, got {value}")
    if s.device not in ("cpu", "cuda"):
        raise AsrprivError(f"{arg('device')} must be 'cpu' or 'cuda', got {s.device!r}")
    if s.missing_factors not in ("error", "ignore"):
        raise AsrprivError(f"{arg('missing_factors')} must be 'error' or 'ignore', got {s.missing_factors!r}")
    if s.factors and s.factors_dir:
        raise AsrprivError(f"give {arg('factors')} or {arg('factors_dir')}, not both")
    if (s.factors or s.factors_dir) and not s.nnlm:
        raise AsrprivError(f"{arg('factors')}/{arg('factors_dir')} need {arg('nnlm')} (FMP factors rescale the neural LM; "
                           "for an n-gram LM, write an adapted ARPA with fma-adapt)")
    if not (s.nnlm or s.ngram or s.reuse_scores):
        raise AsrprivError(f"nothing to score with: give {arg('nnlm')} and/or {arg('ngram')} "
                           f"(or {arg('reuse_scores')} to re-rank with the input's score columns)")
    if s.class_files and not s.ngram:
        raise AsrprivError(f"{arg('classes')} needs {arg('ngram')} (the class ARPA)")


def rescore_nbest(s: RescoreSettings, verbose: bool = False, progress=None) -> RescoreResult:
    """The step ``rescore-nbest`` (:func:`_rescore_nbest`); an LM (``ngram``, ``nnlm``) given
    as ``-`` is read from standard input (copied once: LM files are read twice)."""
    import dataclasses

    from asrpriv.io.lines import stdin_spooled

    with stdin_spooled(s.nnlm, *s.ngram, streamed=iter_inputs(s.inputs)) as (nnlm, *ngram):
        return _rescore_nbest(dataclasses.replace(s, nnlm=nnlm, ngram=tuple(ngram)), verbose,
                              progress)


def _rescore_nbest(s: RescoreSettings, verbose: bool = False, progress=None) -> RescoreResult:
    """The step ``rescore-nbest``: score each hypothesis with the LMs (natural log), combine
    ``acoustic + lm_weight ((1 - w) lm + w nnlm) + word_penalty n_words``, re-rank, write
    ``output``. torch is imported only with ``nnlm`` or ``threads``; kenlm with ``ngram``."""
    from asrpriv.io.output import open_output
    from asrpriv.mixture.streams import pair_classes

    from asrpriv.provenance import check_read_files

    check_rescore_settings(s)
    ngram = tuple(s.ngram)
    check_read_files([s.nnlm, *ngram], s.allow_seeded)  # factors: as FactorTable reads them
    ngram_classes = pair_classes(ngram, tuple(s.class_files))
    if s.ngram_weights is not None and not ngram:
        raise AsrprivError(f"{arg('ngram_weights')} needs {arg('ngram')} LMs")
    ngram_weights, share = s.ngram_weights, None
    if s.mixture_weights is not None:
        from asrpriv.mixture.weights import parse_weights, split_mixture

        if not (ngram and s.nnlm) or s.ngram_weights is not None:
            raise AsrprivError(f"{arg('mixture_weights')} needs {arg('ngram')} LMs and {arg('nnlm')}, and replaces "
                               f"{arg('ngram_weights')}")
        split, share = split_mixture(parse_weights(s.mixture_weights, len(ngram) + 1,
                                                   arg("mixture_weights")))
        if len(ngram) > 1:
            ngram_weights = ",".join(map(repr, split))
    if ngram:
        from asrpriv.mixture.weights import parse_weights

        mix_weights = parse_weights(ngram_weights, len(ngram), arg("ngram_weights"))
    inputs = iter_inputs(s.inputs)
    if sum(1 for p in inputs if p == "-") > 1:
        raise AsrprivError("standard input ('-') can be read only once")

    weights = resolve_weights(s)
    if share is not None:
        weights.nnlm_weight = share

    if s.threads:
        from asrpriv.nnlm.runtime import use_threads

        use_threads(s.threads)
    nnlm_scorer = ngram_scorer = factors = None
    if s.nnlm:
        from asrpriv.rescore.nnlm import NnlmScorer

        nnlm_scorer = NnlmScorer(s.nnlm, device=s.device, batch_tokens=s.batch_tokens,
                                 precision=s.precision,
                                 normalized=not s.unnormalized)
    if len(ngram) == 1 and ngram_weights is None:
        from asrpriv.rescore.ngram import NgramScorer

        ngram_scorer = NgramScorer(ngram[0], verbose=verbose, classes=ngram_classes[0])
    elif ngram:
        from asrpriv.rescore.ngram import MixedNgramScorer

        ngram_scorer = MixedNgramScorer(ngram, mix_weights, verbose=verbose,
                                        classes=ngram_classes)
    if s.factors or s.factors_dir:
        from asrpriv.rescore.factors import FactorTable

        factors = FactorTable(nnlm_scorer.vocab, s.factors, s.factors_dir, s.missing_factors,
                              s.device, s.allow_seeded)
        if s.factors:
            factors.vector(s.factors)  # a bad factors file fails before any output

    explicit = s.weights is not None or s.lm_weight is not None
    rescorer = Rescorer(weights, nnlm_scorer, ngram_scorer, factors, reuse_scores=s.reuse_scores,
                        best=s.best, chunk_utts=s.chunk_utts, max_words=s.max_words,
                        rank_only_ok=explicit, unk_penalty=s.unk_penalty)
    from asrpriv.io.nbest import abort_marker
    from asrpriv.io.tokens import parse_drop

    rescorer.drop = parse_drop(s.drop_tokens)
    untuned = s.weights is None and s.lm_weight is None and s.nnlm_weight is None \
        and s.word_penalty is None
    with open_output(s.output) as out, abort_marker(out, s.output in (None, "-")) as marked:
        if progress is not None and getattr(progress, "enabled", False) \
                and getattr(progress, "total", 0) is None:
            progress.total = expected_rows(inputs)  # a shown meter's done/total and ETA
        stats = rescorer.run(inputs, marked, progress)
    return RescoreResult(stats, weights, rescorer.layout,
                         factors.summary() if factors is not None else None, untuned,
                         rescorer.dropped, rescorer.drop)
