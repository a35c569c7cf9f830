"""Paper 001's federated rounds, one library loop for every face.

:func:`run_rounds` is ``asrpriv fl-rounds``: T rounds in one process, each round exactly the
three steps of the shell recipe, without their three process starts, torch imports and model
loads:

1. **sample** (:func:`sample_cohort`): Poisson sampling of the population with rate q, round
   index t -- the same cohort as ``asrpriv sample-clients --rate q --round t [--seed S]``;
   without ``sample_seed`` from the OS's secure source (``os.urandom``), as the accountant's
   amplification by sampling assumes (a seed is for tests: under DP it needs
   ``allow_seeded``, and the round's release is then marked seeded, i.e. no epsilon holds);
2. **client updates** (:func:`client_payloads`): every sampled client fine-tunes the global
   model ``RUN/model-(t-1).pt`` (``finetune-lm --by-client``'s
   :func:`asrpriv.federated.client.client_update`, training seed ``seed * 100000 + t``,
   ``--clip C``), one client at a time, or ``batch_clients`` at a time where the model allows
   (:mod:`asrpriv.federated.batched`; the same deltas within its stated tolerance), or in
   ``workers`` forked processes (:mod:`asrpriv.federated.client_pool`; the same bits). The
   round's model is read from its file into the same module and tensors each round
   (:func:`asrpriv.federated.client.reload_init`);
3. **server round** (:func:`server_round`): :func:`asrpriv.federated.aggregate.run_round`, the
   function ``aggregate --server`` runs (FedAvg / FedAdam, clipping, the Gaussian mechanism
   with the fixed denominator, noise seed ``noise_seed * 100000 + noise_draw * 1000 + t``
   when given: :mod:`asrpriv.federated.seeds`, the privacy history), writing
   ``RUN/model-t.pt`` and ``RUN/state.pt``.

Under DP every round is one release: a round whose cohort is empty (or whose clients all had
no training words) releases the noise alone (S = 0), so that ``privacy-report`` of
``RUN/model-T.pt`` gives the epsilon of (z, q, T) whatever the cohorts were, and an observer
cannot tell an empty round by an unchanged model. Without DP an empty round carries the model
over (``model-t.pt`` = ``model-(t-1).pt``, state untouched), as the shell recipe did.

The Flower app (``fl-simulate``, :mod:`asrpriv_flower.strategy`) runs steps 1 and 3 through
the same functions (:func:`sample_cohort`, :func:`server_round`) with the clients on Ray.

Run directory (the Flower app's layout, Flower's and Ray's folders aside)::

    RUN/run.json               the settings (seeds included)
    RUN/model-0.pt             a copy of --init; RUN/model-t.pt after round t (atomic)
    RUN/state.pt               the server state (aggregate --state), after each model
    RUN/round-t/clients.txt    the cohort (sample-clients' output for round t)
    RUN/round-t/report.json    sampled / contributed / skipped / noise std / seconds
    RUN/round-t/deltas/        with save_deltas: <client>.delta.pt as finetune-lm writes

``clients.txt`` and ``report.json`` say who was sampled: the server's private record
(amplification by sampling assumes the cohort stays secret); the model file carries only the
public ``federated_round`` keys. Resuming: a run directory whose last round T wrote
``model-T.pt`` and the matching ``state.pt`` goes on with round T+1 (same settings; every
round's seeds derive from its index t, the FedAdam moments and step count come from
``state.pt``, the privacy history from ``model-T.pt``, so a seeded run resumed gives the
uninterrupted run's files); a run stopped between round T's model and its state runs round T
again (:func:`resume_point`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError, InputError, arg


@dataclass
class RoundSettings:
    """Everything a run of federated rounds needs (the options of ``fl-rounds`` and
    ``fl-simulate``; the Flower-only ones are ignored by :func:`run_rounds`)."""

    init: str
    train: str
    run_dir: str
    rounds: int
    sample_rate: float
    ids: bool = False
    utt2client: str | None = None
    clients: str | None = None
    max_words: int = 1000
    sample_seed: int | None = None
    seed: int | None = None
    server: str = "fedadam"
    hparams: dict = field(default_factory=dict)
    clip: float | None = None
    noise_multiplier: float | None = None
    expected_clients: float | None = None
    expected_weight: float | None = None
    weight_cap: float | None = None
    noise_seed: int | None = None
    allow_seeded: bool = False
    training: dict = field(default_factory=dict)
    confidence: str = "none"
    train_only: str = "all"
    threads: int = 1
    device: str = "cpu"
    round_timeout: float | None = None
    save_deltas: bool = False
    #: clients trained together by :mod:`asrpriv.federated.batched` (1: one at a time, the
    #: shell recipe's bits; fl-rounds only)
    batch_clients: int = 1
    #: processes that train a round's clients at once (:mod:`asrpriv.federated.client_pool`;
    #: 1: in this process). A speed knob: the same files bit for bit, so not in run.json
    workers: int = 1
    #: tests only: "client" or "client@round" -> "raise" or "sleep:SECONDS" (Flower only)
    test_faults: dict = field(default_factory=dict)
    #: with noise_seed: the noise draw d of round t's seed (asrpriv.federated.seeds: 0 = a run
    #: without repeated draws; a recipe's k-th draw of one setting is draw k)
    noise_draw: int = 0

    def dp(self):
        """The server's :class:`asrpriv.federated.aggregate.DpSettings` (inactive without DP)."""
        from asrpriv.federated.aggregate import DpSettings

        if all(x is None for x in (self.noise_multiplier, self.expected_clients,
                                   self.expected_weight, self.weight_cap)):
            return DpSettings()
        return DpSettings(self.noise_multiplier, self.clip, self.expected_clients,
                          self.expected_weight, self.weight_cap, self.sample_rate)

    def round_seed(self, base: int | None, t: int, draw: int = 0) -> int | None:
        from asrpriv.federated.seeds import derive_seed  # the one rule

        return derive_seed(base, t, draw)

    def noised(self) -> bool:
        """Whether each round releases Gaussian noise (DP with z > 0)."""
        return bool(self.dp().active and self.noise_multiplier)


def settings_json(settings: RoundSettings) -> dict:
    """The run's settings as written to RUN/run.json (test faults left out)."""
    from dataclasses import asdict

    value = asdict(settings)
    value.pop("test_faults", None)
    value.pop("workers", None)  # the same files whatever the workers: a resume may change it
    if not value.get("noise_draw"):  # draw 0 (the default) is left out: run.json as before
        value.pop("noise_draw", None)
    return value


@dataclass
class RoundsResult:
    """What :func:`run_rounds` did: one summary per round (report.json), the final model."""

    rounds: list = field(default_factory=list)
    final_model: str = ""
    seconds: float = 0.0
    client_updates: int = 0
    client_seconds: float = 0.0

    def summary(self) -> str:
        """The line ``fl-rounds`` says on stderr: rounds, seconds, client updates per second."""
        rate = self.client_updates / self.client_seconds if self.client_seconds else 0.0
        return (f"fl-rounds: {len(self.rounds)} round(s) in {self.seconds:.1f} s, "
                f"{self.client_updates} client update(s) ({rate:.2f}/s); final model "
                f"{self.final_model}")


def model_path(run_dir: str, t: int) -> str:
    return os.path.join(run_dir, f"model-{t}.pt")


def round_dir(run_dir: str, t: int) -> str:
    return os.path.join(run_dir, f"round-{t}")


def write_json(path: str, value) -> None:
    from asrpriv.io.output import atomic_path

    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1, sort_keys=False)
            f.write("\n")


def client_data(settings: RoundSettings) -> dict:
    """The clients' training data (:func:`asrpriv.federated.by_client.group_by_client` of
    ``--train``, as ``finetune-lm --by-client`` groups it)."""
    from asrpriv.federated.by_client import group_by_client
    from asrpriv.nnlm.data import read_corpus

    corpus = read_corpus(settings.train, ids=settings.ids, max_words=settings.max_words)
    client_of = None
    if settings.utt2client:
        from asrpriv.io.kaldi import read_map

        client_of = read_map(settings.utt2client, "client")
    return group_by_client(corpus, settings.train, client_of)


def population_of(settings: RoundSettings, groups: dict | None = None) -> list[str]:
    """The sampling population: the clients of --train (sorted), or of --clients LIST."""
    from asrpriv.federated.by_client import check_client_name, read_client_list

    groups = client_data(settings) if groups is None else groups
    clients = read_client_list(settings.clients, groups) if settings.clients else sorted(groups)
    if not clients:
        raise AsrprivError("no client to simulate")
    for name in clients:
        check_client_name(name)
    return sorted(clients)


def check_settings(settings: RoundSettings) -> None:
    """Refuse bad settings before anything starts (AsrprivError); seeded noise or seeded
    sampling under DP is said on stderr (even with -q) first."""
    from asrpriv.federated.server import check_hparams
    from asrpriv.nnlm import losses
    from asrpriv.privacy.accounting import check_sample_rate
    from asrpriv.talk import seeded_warning

    if settings.noise_seed is not None and settings.noise_multiplier:
        seeded_warning(f"--noise-seed {settings.noise_seed}")
    if settings.sample_seed is not None and settings.noise_multiplier:
        seeded_warning(f"--sample-seed {settings.sample_seed}: the cohorts are public, the "
                       "epsilon (amplification by secret sampling) does not hold")
    from asrpriv.federated.clip import check_clip

    if settings.rounds < 1:
        raise AsrprivError(f"{arg('rounds')} must be >= 1")
    check_sample_rate(settings.sample_rate)
    if settings.clip is not None:
        check_clip(settings.clip)
    if settings.batch_clients < 1:
        raise AsrprivError(f"{arg('batch_clients')} must be >= 1")
    if settings.workers < 1:
        raise AsrprivError(f"{arg('workers')} must be >= 1")
    if settings.workers > 1 and settings.batch_clients > 1:
        raise AsrprivError(f"{arg('workers')} and {arg('batch_clients')} do not combine: "
                           "choose one")
    if settings.workers > 1 and settings.device != "cpu":
        raise AsrprivError(f"{arg('workers')} > 1 runs on the CPU only (CUDA does not survive "
                           f"the workers' fork): use {arg('batch_clients')} on a GPU")
    try:
        check_hparams(settings.server, settings.hparams)
        losses.parse_confidence(settings.confidence)
    except ValueError as err:
        raise AsrprivError(str(err)) from None
    settings.dp().check()
    if settings.noise_seed is not None and settings.noise_multiplier and not settings.allow_seeded:
        raise AsrprivError("--noise-seed makes the noise NOT private: add "
                           "--allow-seeded-test-noise (tests only)")
    from asrpriv.federated.seeds import check_rounds

    if settings.noise_draw and settings.noise_seed is None:
        raise AsrprivError(f"{arg('noise_draw')} applies to {arg('noise_seed')}")
    check_rounds(settings.seed, settings.rounds)
    check_rounds(settings.noise_seed, settings.rounds, settings.noise_draw)
    if settings.sample_seed is not None and settings.noise_multiplier and not settings.allow_seeded:
        raise AsrprivError("--sample-seed makes every round's cohort public, and the epsilon "
                           "assumes secret sampling: leave it out under DP (the OS's secure "
                           "source draws), or add --allow-seeded-test-noise (tests only)")


def last_round(run_dir: str) -> int:
    """The highest t with RUN/model-t.pt (0 for a fresh run directory)."""
    done = [int(n[6:-3]) for n in os.listdir(run_dir)
            if n.startswith("model-") and n.endswith(".pt") and n[6:-3].isdigit()]
    return max(done, default=0)


def resume_point(run: str, done: int, server: str) -> int:
    """The last complete round of RUN, whose highest model is ``model-done.pt``: ``done``
    when ``state.pt`` belongs to that model, ``done - 1`` when the run was stopped after
    ``model-done.pt`` was written but before ``state.pt`` (the model is written first, so
    the state is still that of ``model-(done-1).pt``): that model and ``round-done/`` are then
    removed, and the round runs again from the same model and state (its seeds are those of
    round ``done``; with secure sampling and noise it draws again, and the first draw, which
    no one was given, is deleted). Anything else is refused.

    No ``state.pt`` is the state of ``model-0.pt``: no round has updated the model yet (every
    round so far carried it over, or round 1 was stopped before its state was written).
    """
    from asrpriv.federated.client import load_init
    from asrpriv.federated.server import read_state

    if not done:
        return 0
    state = os.path.join(run, "state.pt")

    def fingerprint(t: int) -> str | None:
        path = model_path(run, t)
        return load_init(path).fingerprint if os.path.exists(path) else None

    fp = fingerprint(done)
    have = (read_state(state, server).model_fingerprint if os.path.exists(state)
            else fingerprint(0))
    if have == fp:
        return done
    # a carried-over round (no DP, nobody sampled) leaves the state of the model before,
    # which has the same weights
    before = fingerprint(done - 1)
    if before == fp:
        return done
    if before is not None and have == before:
        os.unlink(model_path(run, done))
        shutil.rmtree(round_dir(run, done), ignore_errors=True)
        return done - 1
    if not os.path.exists(state):
        raise AsrprivError(f"--resume: {run} has no state.pt for model-{done}.pt")
    raise AsrprivError(f"--resume: {state} does not belong to model-{done}.pt")


def prepare_run_dir(settings: RoundSettings, resume: bool, ignore: tuple = (),
                    loaded: list | None = None) -> int:
    """Create RUN (or check it for ``resume``); return the first round to run.

    ``ignore``: files a fresh RUN may already hold (none for fl-rounds). ``loaded``: a list
    that gets the :func:`asrpriv.federated.client.load_init` of ``--init`` made to check it
    (a fresh run: ``model-0.pt`` is its copy, so the caller need not load it again).
    """
    from asrpriv.federated.client import load_init
    from asrpriv.io.output import atomic_path

    run = settings.run_dir
    mine = settings_json(settings)
    if os.path.isdir(run) and [n for n in os.listdir(run) if n not in ignore]:
        if not resume:
            raise AsrprivError(f"--run-dir {run}: not empty (give a new directory, or --resume)")
        try:
            with open(os.path.join(run, "run.json"), encoding="utf-8") as f:
                before = json.load(f)
        except (OSError, ValueError) as err:
            raise AsrprivError(f"--resume: {run}/run.json: {err}") from None
        differ = sorted(k for k in mine if k not in ("rounds", "run_dir") and before.get(k) != mine[k])
        if differ:
            raise AsrprivError(f"--resume: settings differ from {run}/run.json in "
                               f"{', '.join(differ)}")
        done = last_round(run)
        if done >= settings.rounds:
            raise AsrprivError(f"--resume: {run} already holds round {done} (--rounds {settings.rounds})")
        done = resume_point(run, done, settings.server)
        write_json(os.path.join(run, "run.json"), mine)
        return done + 1
    os.makedirs(run, exist_ok=True)
    init = load_init(settings.init, settings.device)  # a model file, or a one-line error
    if loaded is not None:
        loaded.append(init)
    with atomic_path(model_path(run, 0)) as tmp:
        shutil.copyfile(settings.init, tmp)
    write_json(os.path.join(run, "run.json"), mine)
    return 1


def sample_cohort(settings: RoundSettings, population: list[str], t: int) -> list[str]:
    """Round t's cohort (``sample-clients --rate q --round t [--seed S]``), written to
    ``RUN/round-t/clients.txt``."""
    from asrpriv.federated.sampling import poisson_sample
    from asrpriv.io.output import atomic_path

    cohort = poisson_sample(population, settings.sample_rate, t, settings.sample_seed)
    os.makedirs(round_dir(settings.run_dir, t), exist_ok=True)
    with atomic_path(os.path.join(round_dir(settings.run_dir, t), "clients.txt")) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(c + "\n" for c in cohort)
    return cohort


def delta_payload(init, update, name: str, seed: int | None, confidence: str,
                  train_only: str) -> dict:
    """The delta file's dict (:func:`asrpriv.nnlm.modelfile.read_model_file` of what
    ``finetune-lm --by-client`` writes for this client), built in memory."""
    from asrpriv.federated import client
    from asrpriv.nnlm.modelfile import FORMAT, FORMAT_VERSION

    result = update.train
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": "delta",
               "config": dict(init.config), "vocab": list(init.vocab.words),
               "state_dict": update.delta, "weight": int(update.weight)}
    meta = client.delta_metadata(init, update, name, train_words=result.words,
                                 train_sentences=result.sentences, confidence=confidence,
                                 train_only=train_only, seed=seed, epochs_run=len(result.history))
    for key, value in meta.items():
        if key in payload:
            raise ValueError(f"delta metadata may not set {key!r}")
        payload[key] = value
    return payload


def train_client(init, name: str, data, settings: RoundSettings, seed: int | None,
                 delta_out: dict | None = None):
    """Client ``name``'s update from ``init`` with the run's training settings
    (:func:`asrpriv.federated.client.client_update`), or None when it has no training words
    (e.g. all dropped by ``hard:C``: skipped, as ``finetune-lm --by-client`` skips it); any
    other refusal is an AsrprivError naming the client. ``delta_out``: see client_update."""
    from asrpriv.federated import client

    try:
        return client.client_update(init, data.sentences, data.confidences,
                                    settings=settings.training, seed=seed, clip=settings.clip,
                                    confidence=settings.confidence,
                                    train_only=settings.train_only, delta_out=delta_out)
    except ValueError as err:
        if "no training sentences" not in str(err):
            raise AsrprivError(f"client {name}: {err}") from None
        return None


def client_payloads(init, groups: dict, cohort: list[str], settings: RoundSettings, t: int,
                    batched=None, pool=None) -> tuple[dict, list[str]]:
    """Every sampled client's update of round t: ``({client: delta payload}, skipped)``.

    A client without training words (e.g. all dropped by ``hard:C``) is skipped, as
    ``finetune-lm --by-client`` skips it. ``batched``: a
    :class:`asrpriv.federated.batched.BatchedClients`; ``pool``: a
    :class:`asrpriv.federated.client_pool.ClientPool` (neither: one client at a time here,
    :func:`train_client`).
    """
    seed = settings.round_seed(settings.seed, t)
    payloads: dict = {}
    skipped: list[str] = []
    if batched is not None:
        updates = batched.updates(init, [(name, groups[name]) for name in cohort], seed=seed)
    elif pool is not None:
        updates = pool.updates(init, cohort, seed)
    else:
        updates = {name: train_client(init, name, groups[name], settings, seed) for name in cohort}
    for name in cohort:
        update = updates[name]
        if update is None or update.weight == 0:
            skipped.append(name)
            continue
        payloads[name] = delta_payload(init, update, name, seed, settings.confidence,
                                       settings.train_only)
    return payloads, skipped


def server_round(settings: RoundSettings, t: int, cohort: list[str], payloads: dict,
                 dropped: list | None = None, skipped: list | None = None,
                 started: float | None = None, talk=lambda s: None,
                 prog: str = "fl-rounds", made_here: bool = False) -> dict:
    """The server's side of round t, shared by fl-rounds and the Flower app: aggregate the
    contributed deltas (``payloads``, client -> delta payload) exactly as ``aggregate
    --server`` does, write ``RUN/model-t.pt``, ``RUN/state.pt``, ``RUN/round-t/report.json``
    (and the deltas with ``save_deltas``); returns the report.

    A delta that fails aggregate's checks drops its client (listed in ``dropped``, with the
    reason); nobody left: under DP the noise alone is released, without DP the model is
    carried over. ``made_here``: every payload was computed in this process from one sampled
    client (fl-rounds; not the Flower app's received updates), so the copy check's hashing is
    skipped (:func:`asrpriv.federated.delta_sum.weighted_sum`).
    """
    from asrpriv.federated.aggregate import run_round
    from asrpriv.federated.by_client import SUFFIX
    from asrpriv.nnlm.modelfile import write_payload

    s = settings
    started = time.monotonic() if started is None else started
    dropped = list(dropped or [])
    skipped = list(skipped or [])
    payloads = dict(payloads)
    out = model_path(s.run_dir, t)
    state = os.path.join(s.run_dir, "state.pt")
    dp = s.dp()
    noise_seed = s.round_seed(s.noise_seed, t, s.noise_draw)
    seeded_sampling = s.sample_seed is not None
    report = None
    while True:  # a delta that fails aggregate's checks drops its client; nothing is written
        labels = {f"client {name}": name for name in sorted(payloads)}
        deltas = [(label, payloads[name]) for label, name in labels.items()]
        if not deltas and not (dp.active and dp.noise_multiplier):
            break
        try:
            report = run_round(model_path(s.run_dir, t - 1), [], out, s.server, s.hparams,
                               state, dp, noise_seed, s.allow_seeded, deltas=deltas,
                               seeded_sampling=seeded_sampling, made_here=made_here)
            break
        except InputError as err:
            if err.path not in labels:
                raise
            name = labels[err.path]
            dropped.append({"client": name, "reason": f"bad delta: {err.detail}"})
            del payloads[name]
    if report is None:  # nobody contributed, no noise: the model is carried over
        from asrpriv.io.output import atomic_path

        with atomic_path(out) as tmp:
            shutil.copyfile(model_path(s.run_dir, t - 1), tmp)
    if s.save_deltas and payloads:
        directory = os.path.join(round_dir(s.run_dir, t), "deltas")
        os.makedirs(directory, exist_ok=True)
        for name, payload in payloads.items():
            write_payload(os.path.join(directory, name + SUFFIX), payload)
    summary = {
        "round": t, "sampled": list(cohort), "contributed": sorted(payloads),
        "dropped": sorted(dropped, key=lambda d: d["client"]), "skipped": sorted(skipped),
        "updated": report is not None,
        # the clients' word total is an un-noised statistic: not written for a DP round
        "words": (None if report.release else report.total_weight) if report else 0.0,
        "denominator": report.denominator if report else None,
        "noise_std": report.noise_std if report else 0.0,
        "release": report.release.release_id if report and report.release else None,
        "fingerprint": report.fingerprint if report else None,
        "seconds": round(time.monotonic() - started, 3),
    }
    os.makedirs(round_dir(s.run_dir, t), exist_ok=True)
    write_json(os.path.join(round_dir(s.run_dir, t), "report.json"), summary)
    talk(f"{prog}: round {t}: {len(payloads)} of {len(cohort)} sampled clients contributed"
         + (f", {len(dropped)} dropped" if dropped else "")
         + ("" if report else "; model carried over")
         + ("; noise alone released" if report and not payloads else "")
         + f" ({summary['seconds']:.1f} s)")
    return summary


def run_rounds(settings: RoundSettings, resume: bool = False, talk=lambda s: None,
               warn=None) -> RoundsResult:
    """``asrpriv fl-rounds``: ``settings.rounds`` federated rounds in this process (module doc).

    Every check first (:func:`check_settings`, the data, the run directory); then per round:
    :func:`sample_cohort`, :func:`client_payloads` on the model of the round before,
    :func:`server_round`. Returns the rounds' reports and the final model's path.
    """
    from asrpriv.federated import client
    from asrpriv.nnlm.runtime import check_device, use_threads

    warn = warn or talk
    check_settings(settings)
    check_device(settings.device)
    groups = client_data(settings)
    population = population_of(settings, groups)
    loaded: list = []
    first = prepare_run_dir(settings, resume, loaded=loaded)
    use_threads(settings.threads)
    batched = None
    if settings.batch_clients > 1:
        from asrpriv.federated.batched import BatchedClients

        batched = BatchedClients(settings, warn=warn)
    result = RoundsResult()
    begun = time.monotonic()
    if loaded:  # a fresh run: model-0.pt is a byte copy of the --init just loaded
        from dataclasses import replace

        init = replace(loaded[0], path=model_path(settings.run_dir, 0))
    else:
        init = client.load_init(model_path(settings.run_dir, first - 1), settings.device)
    with contextlib.ExitStack() as stack:
        pool = None
        if settings.workers > 1:
            from asrpriv.federated.client_pool import ClientPool

            pool = stack.enter_context(ClientPool(init, groups, settings, settings.workers))
        for t in range(first, settings.rounds + 1):
            started = time.monotonic()
            cohort = sample_cohort(settings, population, t)
            if t > first:  # the model the round before wrote, into the same module and tensors
                init = client.reload_init(init, model_path(settings.run_dir, t - 1))
            client.refuse_seeded_init(init, settings.allow_seeded)
            clock = time.monotonic()
            payloads, skipped = client_payloads(init, groups, cohort, settings, t, batched, pool)
            result.client_seconds += time.monotonic() - clock
            result.client_updates += len(cohort)
            result.rounds.append(server_round(settings, t, cohort, payloads, skipped=skipped,
                                              started=started, talk=talk, made_here=True))
            del payloads
    result.final_model = model_path(settings.run_dir, last_round(settings.run_dir))
    result.seconds = time.monotonic() - begun
    return result
