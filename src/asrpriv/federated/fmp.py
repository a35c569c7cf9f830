"""Federated marginal personalization (paper 000, Algorithm 1): one FMP round, in the library.

Every face runs FMP through these functions: ``asrpriv fmp-rounds`` (which
``bin/fmp-experiment`` calls: all clients in one process), the Flower app ``asrpriv fl-fmp``
(:mod:`asrpriv_flower.fmp`: clients and server exchange messages) and the tests. Each client
cuts its utterances into T+1 time-ordered groups (``split-nbest --parts T+1``); in round
t = 0..T:

1. a client rescores its group t with the factors of round t-1 (none in round 0)
   (:meth:`FmpRescorer.rescore`, ``rescore-nbest --nnlm --weights --factors``);
2. t < T: it counts the kernel-weighted unigrams of its rescored N-best (:func:`count_round`,
   ``count-unigrams --sigma S --by-client``; with DP ``--unit utterance --max-l1 B --partition
   round<t>``) and adds them to its running cache q_i^t (:func:`update_cache`, ``aggregate``);
3. the server forms qbar^t (:func:`global_counts`): the sum of the caches (000 Eq. 6); with
   DP, the sum of this round's new counts released with discrete Laplace noise over the public
   background vocabulary (``aggregate | add-noise --epsilon E --vocab U``) and added to
   qbar^{t-1} (``aggregate --disjoint``: every utterance is in exactly one release, so epsilon
   is per utterance, not T x epsilon);
4. each client makes its factors for round t+1 (:func:`client_factors`, ``fma-adapt
   --background U --global qbar^t [--personal q_i^t] --alpha --beta --lambda``; 000 Eq. 1-2).
   DP rows use beta = 0: an exact personal cache would make later releases depend on earlier
   rounds' utterances.

:func:`fmp_rounds` (the step's entry, settings :class:`FmpRoundsSettings`) runs all of it for every client in one process and writes, in RUN:
``groups/part-t.tsv``, ``rescored-t.tsv``, ``new-t/C.counts``, ``cache-t/C.counts``,
``qbar-t.counts`` (with DP also ``noisy-new-t.counts``), ``factors-t/C.tsv`` and ``hyp.txt``
(every utterance's best hypothesis, round by round: Kaldi text). The files are those the
separate CLI steps write, byte for byte. Counts are pseudo-counts; factors natural logs.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field
from typing import Callable, Iterable

from asrpriv.errors import AsrprivError, arg

#: the grid of the counts' per-utterance bound (count-unigrams --grid's default)
COUNT_GRID = 2.0 ** -10


@dataclass
class FmpSettings:
    """The settings of FMP's rounds (paper 000 Sec. 3.3 defaults).

    Attributes:
        sigma: rank kernel width of the counts (000 Eq. 3).
        alpha, beta: weights of qbar and of the personal cache in g (000 Eq. 2).
        lam: exponent lambda of the factor (g/u)^lambda (000 Eq. 1).
        epsilon: None = no DP; else each round's new counts are released with this epsilon.
        max_l1: with DP, the per-utterance L1 bound of the counts (pseudo-counts).
        noise_seed: None = noise from the OS's secure source; an int makes it repeatable and
            NOT private (round t of draw d uses noise_seed * 100000 + d * 1000 + t:
            asrpriv.federated.seeds).
        allow_seeded: accept counts with seeded noise (tests only).
        noise_draw: with noise_seed, the draw d (0: a run without repeated draws).
    """

    sigma: float = 5.0
    alpha: float = 0.5
    beta: float = 0.25
    lam: float = 1.0
    epsilon: float | None = None
    max_l1: float = 15.0
    noise_seed: int | None = None
    allow_seeded: bool = False
    noise_draw: int = 0

    def __post_init__(self) -> None:  # numbers as floats: the files record them (#sigma=5.0)
        for name in ("sigma", "alpha", "beta", "lam", "max_l1"):
            setattr(self, name, float(getattr(self, name)))
        if self.epsilon is not None:
            self.epsilon = float(self.epsilon)

    def validate(self) -> None:
        from asrpriv.unigram.fma import FmaSettings

        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise AsrprivError(f"sigma must be a finite number > 0, got {self.sigma}")
        if self.epsilon is not None and not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise AsrprivError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not (math.isfinite(self.max_l1) and self.max_l1 > 0):
            raise AsrprivError(f"max_l1 must be a finite number > 0, got {self.max_l1}")
        if self.noise_seed is not None and self.epsilon and not self.allow_seeded:
            raise AsrprivError(f"{arg('noise_seed')} makes the noise NOT private: add "
                               f"{arg('allow_seeded_test_noise')} (tests only)")
        if self.noise_draw and self.noise_seed is None:
            raise AsrprivError(f"{arg('noise_draw')} applies to {arg('noise_seed')}")
        FmaSettings(self.alpha, self.beta, self.lam).validate(True, True)

    @property
    def dp(self) -> bool:
        return bool(self.epsilon)

    def round_seed(self, t: int) -> int | None:
        """The noise seed of round ``t`` (None: the OS's secure source)."""
        from asrpriv.federated.seeds import derive_seed

        return derive_seed(self.noise_seed, t, self.noise_draw)


# ---------------------------------------------------------------------------- client side

def count_round(rescored: str, out_dir: str, t: int, settings: FmpSettings) -> dict[str, str]:
    """The clients' kernel-weighted counts of round ``t``: ``out_dir/<client>.counts``.

    = ``count-unigrams --sigma S --by-client OUT_DIR RESCORED`` (with DP ``--unit utterance
    --max-l1 B --partition round<t>``: each round's utterances are a labelled, disjoint part).
    Returns client -> counts file.
    """
    from asrpriv.unigram.counting import CountAccumulator
    from asrpriv.unigram.driver import count_nbest, write_outputs

    bound = settings.max_l1 if settings.dp else None
    result = count_nbest(rescored, settings.sigma, None, None, "utterance", True,
                         lambda: CountAccumulator(bound, COUNT_GRID))
    meta: dict = {"source": "nbest", "sigma": settings.sigma, "top": None}
    if settings.dp:
        meta.update(unit="utterance", max_l1=settings.max_l1, grid=COUNT_GRID,
                    partition=f"round{t}")
    write_outputs(result, "-", out_dir, meta)
    return {client: os.path.join(out_dir, f"{client}.counts") for client in result}


def update_cache(new: str | None, previous: str | None, out: str) -> None:
    """A client's running cache q_i^t = its new counts + its cache of the round before
    (``aggregate NEW [PREVIOUS] -o OUT``); with no new counts the cache carries over."""
    from asrpriv.unigram.aggregate import aggregate_to_file

    if new is None:
        if previous is not None:
            shutil.copyfile(previous, out)
        return
    aggregate_to_file([new, *([previous] if previous else [])], out, refuse_copies=False)


def client_factors(background: str, qbar: str, cache: str | None, out: str,
                   settings: FmpSettings) -> None:
    """A client's factors for the next round (000 Eq. 1-2; ``fma-adapt``); beta = 0 needs no
    personal cache."""
    from asrpriv.unigram.fma import FmaSettings, write_factors_file

    personal = cache if settings.beta != 0 else None
    write_factors_file(background, qbar, personal,
                       FmaSettings(settings.alpha, settings.beta, settings.lam), out,
                       settings.allow_seeded)


class FmpRescorer:
    """The NNLM rescoring of FMP's rounds (``rescore-nbest --nnlm --weights [--factors]``),
    the model loaded once for every round and client.

    Args:
        nnlm: the neural LM file; weights: a weights file (tune-weights).
        threads: torch CPU threads (None: torch's choice).
        allow_seeded: accept a model or factors made with seeded (not private) noise (tests).
    """

    def __init__(self, nnlm: str, weights: str, threads: int | None = None,
                 allow_seeded: bool = False) -> None:
        from asrpriv.provenance import check_read_files
        from asrpriv.rescore.combine import read_weights
        from asrpriv.rescore.nnlm import NnlmScorer

        self.allow_seeded = allow_seeded
        check_read_files([nnlm], allow_seeded)

        self.weights = read_weights(weights).weights
        if not 0.0 <= self.weights.nnlm_weight <= 1.0:
            raise AsrprivError(f"{weights}: nnlm_weight must lie in [0, 1]")
        if threads:
            import torch

            torch.set_num_threads(threads)
        self.scorer = NnlmScorer(nnlm)

    def rescore(self, nbest: str, out: str, factors_file: str | None = None,
                factors_dir: str | None = None) -> None:
        """Rescore ``nbest`` into ``out``; clients without a file in ``factors_dir`` are
        scored without factors (``--missing-factors ignore``)."""
        from asrpriv.io.output import open_output
        from asrpriv.rescore.pipeline import Rescorer

        factors = None
        if factors_file or factors_dir:
            from asrpriv.rescore.factors import FactorTable

            factors = FactorTable(self.scorer.vocab, factors_file, factors_dir, "ignore", "cpu",
                                  self.allow_seeded)
        rescorer = Rescorer(self.weights, self.scorer, None, factors)
        with open_output(out) as stream:
            rescorer.run([nbest], stream)


def best_lines(rescored: str) -> list[str]:
    """Kaldi text lines (``utt_id text``) of each utterance's best hypothesis."""
    from asrpriv.io.nbest import NbestReader
    from asrpriv.io.select import best_lines as best

    reader = NbestReader(rescored)
    return list(best(reader, reader))


# ---------------------------------------------------------------------------- server side

def global_counts(client_counts: Iterable[str], t: int, out: str, settings: FmpSettings,
                  background: str, previous: str | None = None,
                  noisy_out: str | None = None) -> None:
    """qbar^t, written to ``out``.

    Without DP ``client_counts`` are the clients' caches and qbar^t is their sum (000 Eq. 6).
    With DP they are this round's new counts: their sum is released with discrete Laplace
    noise (epsilon, the recorded per-utterance bound, over the words of the public
    ``background``), written to ``noisy_out`` (if given), and added to ``previous`` = qbar^{t-1}
    by parallel composition (the rounds' partitions are disjoint).
    """
    from asrpriv.io.counts import write_counts
    from asrpriv.io.output import open_output
    from asrpriv.unigram.noise import exact_fraction
    from asrpriv.unigram.aggregate import aggregate_files, aggregate_to_file
    from asrpriv.unigram.noise import release_counts

    files = sorted(client_counts)
    if not files:
        raise AsrprivError(f"round {t}: no client's counts: nothing to aggregate")
    if not settings.dp:
        aggregate_to_file(files, out, refuse_copies=False)  # one file per client, written here
        return
    # each client's new counts are its own partition (round<t>/<client>): disjoint, so the
    # sum keeps the per-utterance bound that the noise is calibrated to
    meta, counts = aggregate_files(files, disjoint=True, refuse_copies=False)
    noisy_meta, noisy, _report = release_counts(
        meta, counts, "<sum>", background, exact_fraction(str(settings.epsilon), "epsilon"),
        settings.round_seed(t))
    target = noisy_out or out
    with open_output(target) as stream:
        write_counts(stream, noisy_meta, noisy)
    if previous is None:
        if target != out:
            shutil.copyfile(target, out)
    else:
        aggregate_to_file([previous, target], out, disjoint=True,
                          allow_seeded=settings.allow_seeded)


# ---------------------------------------------------------------------------- all clients

def check_run(settings: FmpSettings, rounds: int, inputs: Iterable[str], run_dir: str) -> None:
    """What every FMP run checks first: the settings, T >= 1, the input files, a new or
    empty run directory. Seeded noise is said on stderr (even with -q) before anything."""
    if settings.noise_seed is not None and settings.epsilon:
        from asrpriv.talk import seeded_warning

        seeded_warning(f"--noise-seed {settings.noise_seed}")
    settings.validate()
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise AsrprivError(f"{arg('rounds')} must be >= 1")
    if settings.epsilon:
        from asrpriv.federated.seeds import check_rounds

        check_rounds(settings.noise_seed, rounds, settings.noise_draw)
    for path in inputs:
        if not os.path.isfile(path):
            raise AsrprivError(f"{path}: no such file")
    if os.path.isdir(run_dir) and os.listdir(run_dir):
        raise AsrprivError(f"{arg('run_dir')} {run_dir}: not empty (give a new directory)")


@dataclass
class FmpRoundsSettings:
    """The settings of an FMP run (``fmp-rounds``; ``fl-fmp`` holds them too).

    Attributes:
        nbest: the clients' N-best lists (a ``client`` column), in time order per client.
        nnlm, weights: the neural LM and the score weights of the rescoring.
        background: public background unigram counts u (fma-adapt --background).
        run_dir: new or empty; the files of the module doc are written there.
        rounds: T (the lists are cut into T+1 parts).
        round: the round's own settings (:class:`FmpSettings`).
    """

    nbest: str
    nnlm: str
    weights: str
    background: str
    run_dir: str
    rounds: int
    round: FmpSettings = field(default_factory=FmpSettings)

    def check(self) -> None:
        """:func:`check_run` of these settings."""
        check_run(self.round, self.rounds, (self.nbest, self.nnlm, self.weights, self.background),
                  self.run_dir)


@dataclass
class FmpRoundsResult:
    """What :func:`fmp_rounds` did: ``hyp`` (RUN/hyp.txt) and the clients counted per round."""

    hyp: str
    counted: list[int] = field(default_factory=list)


def run_rounds(nbest: str, nnlm: str, weights: str, background: str, run_dir: str,
               rounds: int, settings: FmpSettings, drop: Iterable[tuple[str, int]] = (),
               talk: Callable[[str], None] = lambda s: None) -> str:
    """:func:`fmp_rounds` with the run's settings as arguments; returns ``run_dir/hyp.txt``."""
    return fmp_rounds(FmpRoundsSettings(nbest, nnlm, weights, background, run_dir, rounds,
                                        settings), drop, talk).hyp


def fmp_rounds(run: FmpRoundsSettings, drop: Iterable[tuple[str, int]] = (),
               talk: Callable[[str], None] = lambda s: None) -> FmpRoundsResult:
    """``fmp-rounds``: FMP's T = ``run.rounds`` rounds for every client of ``run.nbest`` (a
    ``client`` column) in one process; writes the files listed in the module doc into
    ``run.run_dir`` (new or empty); every check first (:meth:`FmpRoundsSettings.check`).

    ``drop``: (client, t) pairs whose round-t counts never reach the server (a client that
    fails after rescoring): its cache carries over, and qbar^t lacks its counts.
    """
    from asrpriv.rescore.split import split_by_client

    run.check()
    nbest, nnlm, weights, background = run.nbest, run.nnlm, run.weights, run.background
    run_dir, rounds, settings = run.run_dir, run.rounds, run.round
    result = FmpRoundsResult(os.path.join(run_dir, "hyp.txt"))
    dropped = set(drop)
    join = lambda *parts: os.path.join(run_dir, *parts)  # noqa: E731
    split_by_client(nbest, rounds + 1, join("groups"), None, set(), None, None)
    rescorer = FmpRescorer(nnlm, weights, allow_seeded=settings.allow_seeded)
    factors_dir = None
    for t in range(rounds + 1):
        rescored = join(f"rescored-{t}.tsv")
        rescorer.rescore(join("groups", f"part-{t}.tsv"), rescored, factors_dir=factors_dir)
        if t == rounds:
            break
        new = count_round(rescored, join(f"new-{t}"), t, settings)
        for client, _round in dropped:
            if _round == t and client in new:
                os.unlink(new.pop(client))
        os.makedirs(join(f"cache-{t}"), exist_ok=True)
        os.makedirs(join(f"factors-{t}"), exist_ok=True)
        previous = {}
        if t > 0:
            previous = {f[:-7]: join(f"cache-{t - 1}", f) for f in os.listdir(join(f"cache-{t - 1}"))
                        if f.endswith(".counts")}
        caches = {}
        for client in sorted(set(new) | set(previous)):
            caches[client] = join(f"cache-{t}", f"{client}.counts")
            update_cache(new.get(client), previous.get(client), caches[client])
        qbar = join(f"qbar-{t}.counts")
        if settings.dp:
            global_counts(new.values(), t, qbar, settings, background,
                          join(f"qbar-{t - 1}.counts") if t > 0 else None,
                          join(f"noisy-new-{t}.counts"))
        else:
            global_counts(caches.values(), t, qbar, settings, background)
        for client, cache in sorted(caches.items()):
            client_factors(background, qbar, cache, join(f"factors-{t}", f"{client}.tsv"), settings)
        factors_dir = join(f"factors-{t}")
        result.counted.append(len(new))
        talk(f"fmp-rounds: round {t}: {len(new)} client(s) counted")
    from asrpriv.io.output import open_output

    with open_output(result.hyp) as stream:
        for t in range(rounds + 1):
            stream.writelines(best_lines(join(f"rescored-{t}.tsv")))
    return result
