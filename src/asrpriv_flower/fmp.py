"""FMP's rounds (paper 000) on Flower: the second app, by the same library round as
``asrpriv fmp-rounds`` (``bin/fmp-experiment``): :mod:`asrpriv.federated.fmp`.

The round (count, aggregate, noise, factors) runs here as messages:

* each client cuts its own N-best lists into T+1 time-ordered parts, once (the code of
  ``split-nbest --parts T+1`` kept to its client: part t is what it says in round t);
* round t = 0..T, every client (``train.fmp`` message, carrying the global counts qbar^{t-1}
  as our counts file's text):

  1. writes the received qbar^{t-1} as ``RUN/clients/C/qbar-(t-1).counts`` and computes its
     factors (``fma-adapt --background U --global qbar --personal cache --alpha --beta
     --lambda``; paper 000 Eq. 1-2), if it has a cache;
  2. rescores its round-t utterances with them (``rescore-nbest --nnlm --weights --factors``);
  3. t < T: counts their kernel-weighted unigrams (``count-unigrams --sigma``; with DP
     ``--unit utterance --max-l1 B --partition round<t>``), adds them to its running cache
     (``aggregate``), and replies with the cache (no DP) or the new counts (DP);

* the server (t < T) writes the replies as ``RUN/round-t/counts/C.counts`` and forms
  qbar^t: the sum of the caches (000 Eq. 6) without DP; with DP the sum of the round's new
  counts released by ``add-noise --epsilon E --vocab U`` (discrete Laplace over the whole public
  vocabulary, sensitivity from the enforced bound) and added to qbar^{t-1} (``aggregate
  --disjoint``: the rounds' partitions are disjoint, so epsilon composes in parallel).

Every step is the library function of :mod:`asrpriv.federated.fmp`, with typed values, so
the files are those ``asrpriv fmp-rounds`` writes. Client state (its parts, the cache) lives in
``RUN/clients/C/``:
a simulated client is stateless between rounds. A client that raises or does not reply in
time is dropped from the round and listed in ``RUN/round-t/report.json``: without DP its
cache is missing from that round's sum; with DP its new counts are (the release's sensitivity
is the bound B whoever contributes). ``RUN/hyp.txt``: every utterance's best hypothesis (Kaldi
text, round by round), what the recipe scores.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

from asrpriv.errors import AsrprivError
from asrpriv.federated.fmp import FmpRoundsSettings


@dataclass
class FmpSettings:
    """The settings of ``asrpriv fl-fmp``: the FMP run's (the same as ``fmp-rounds``') and
    Flower's own.

    Attributes:
        fmp: the run (:class:`asrpriv.federated.fmp.FmpRoundsSettings`: inputs, run directory,
            T and the round's settings).
        round_timeout: seconds after which a client that has not replied is dropped.
        threads: torch threads of each client's rescoring.
        test_faults: tests only: "client" or "client@round" -> "raise" (sent in its message).
    """

    fmp: FmpRoundsSettings
    round_timeout: float | None = None
    threads: int = 1
    test_faults: dict | None = None


def client_dir(run: str, client: str) -> str:
    return os.path.join(run, "clients", client)


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def write_text(path: str, text: str) -> None:
    from asrpriv.io.output import open_output

    with open_output(path) as f:
        f.write(text)


def own_part(nbest: str, client: str, parts: int, home: str, t: int) -> str | None:
    """``client``'s round-t utterances: ``HOME/groups/part-t.tsv`` (None if it has none).

    The first call cuts the client's rows of ``nbest`` into ``parts`` time-ordered parts with
    :func:`asrpriv.rescore.split.split_by_client` (``split-nbest``'s code: the same parts as
    the shell recipe's global split) and records their sizes in ``groups/sizes.json``.
    """
    from asrpriv.rescore.split import split_by_client

    groups = os.path.join(home, "groups")
    sizes_path = os.path.join(groups, "sizes.json")
    if not os.path.exists(sizes_path):
        sizes = split_by_client(nbest, parts, groups, {client}, set(), None, None)
        write_text(sizes_path, json.dumps([size.get(client, 0) for size in sizes]) + "\n")
    with open(sizes_path, encoding="utf-8") as f:
        sizes = json.load(f)
    return os.path.join(groups, f"part-{t}.tsv") if sizes[t] else None


# ---------------------------------------------------------------------------- client

def client_round(cfg) -> dict:
    """One client's round t (see the module doc); returns the reply's fields."""
    from asrpriv.federated.fmp import (FmpRescorer, FmpSettings as RoundSettings,
                                       client_factors, count_round, update_cache)

    run, name, t, last = cfg["run"], str(cfg["client"]), int(cfg["round"]), int(cfg["last"])
    if cfg.get("test-fault") == "raise":
        raise RuntimeError(f"client {name}: injected test fault")
    settings = RoundSettings(sigma=cfg["sigma"], alpha=cfg["alpha"], beta=cfg["beta"],
                             lam=cfg["lambda"], epsilon=cfg.get("epsilon"), max_l1=cfg["max-l1"],
                             allow_seeded=bool(cfg.get("allow-seeded")))
    home = client_dir(run, name)
    os.makedirs(home, exist_ok=True)
    prev_cache = os.path.join(home, f"cache-{t - 1}.counts")
    if not os.path.exists(prev_cache):
        prev_cache = None
    factors = None
    if t > 0 and prev_cache and cfg.get("qbar"):
        qbar = os.path.join(home, f"qbar-{t - 1}.counts")
        write_text(qbar, str(cfg["qbar"]))
        factors = os.path.join(home, f"factors-{t - 1}.tsv")
        client_factors(cfg["background"], qbar, prev_cache, factors, settings)
    mine = own_part(cfg["nbest"], name, last + 1, home, t)
    reply: dict = {"client": name}
    cache = os.path.join(home, f"cache-{t}.counts")
    new = None
    if mine is not None:
        rescored = os.path.join(home, f"rescored-{t}.tsv")
        FmpRescorer(cfg["nnlm"], cfg["weights"], cfg["threads"],
                    settings.allow_seeded).rescore(mine, rescored, factors)
        if t < last:
            new = count_round(rescored, os.path.join(home, f"new-{t}"), t, settings)[name]
            if settings.dp:
                reply["counts"] = read_text(new)
    if t < last:
        update_cache(new, prev_cache, cache)  # nothing said this round: the cache carries over
        if not settings.dp and os.path.exists(cache):
            reply["counts"] = read_text(cache)
    return reply


def fmp_message(msg, context):
    """Handle a ``train.fmp`` message: one client's FMP round; reply its counts (or none)."""
    from flwr.app import ConfigRecord, Message, RecordDict

    reply = client_round(msg.content["config"])
    return Message(RecordDict({"fmp": ConfigRecord(reply)}), reply_to=msg)


# ---------------------------------------------------------------------------- server

def population_of(nbest: str) -> list[str]:
    """The clients of the N-best TSV's ``client`` column, sorted."""
    from asrpriv.errors import InputError
    from asrpriv.federated.by_client import check_client_name
    from asrpriv.io.nbest import NbestReader

    reader = NbestReader(nbest)
    if "client" not in reader.index:
        raise InputError(nbest, 1, "no 'client' column: FMP needs the clients of the N-best rows")
    clients = {utt.client for utt in reader}
    for name in clients:
        check_client_name(name)
    if not clients:
        raise InputError(nbest, None, "no N-best rows")
    return sorted(clients)


class FmpServer:
    """The server's side of :mod:`asrpriv_flower.fmp` (see the module doc)."""

    def __init__(self, settings: FmpSettings, population: list[str], talk=lambda s: None) -> None:
        self.s = settings
        self.population = population
        self.talk = talk
        self.reports: list[dict] = []

    def run(self, grid) -> None:
        from flwr.app import ConfigRecord, Message, RecordDict

        from asrpriv_flower.strategy import connect_nodes, write_json

        s, f, r = self.s, self.s.fmp, self.s.fmp.round
        run = os.path.abspath(f.run_dir)
        node_of = connect_nodes(grid, self.population)
        common = {"run": run, "last": f.rounds, "nbest": os.path.abspath(f.nbest),
                  "nnlm": os.path.abspath(f.nnlm),
                  "weights": os.path.abspath(f.weights), "background": os.path.abspath(f.background),
                  "sigma": r.sigma, "alpha": r.alpha, "beta": r.beta, "lambda": r.lam,
                  "max-l1": r.max_l1, "threads": s.threads, "allow-seeded": bool(r.allow_seeded)}
        if r.epsilon:
            common["epsilon"] = r.epsilon
        qbar = ""
        for t in range(f.rounds + 1):
            started = time.monotonic()
            messages, sent = [], {}
            for name in self.population:
                cfg = dict(common, client=name, round=t, qbar=qbar)
                faults = s.test_faults or {}
                fault = faults.get(f"{name}@{t}", faults.get(name))
                if fault:
                    cfg["test-fault"] = fault
                sent[node_of[name]] = name
                messages.append(Message(RecordDict({"config": ConfigRecord(cfg)}),
                                        dst_node_id=node_of[name], message_type="train.fmp",
                                        group_id=str(t)))
            replies = list(grid.send_and_receive(messages, timeout=s.round_timeout))
            here = os.path.join(run, f"round-{t}")
            counts_dir = os.path.join(here, "counts")
            os.makedirs(counts_dir, exist_ok=True)
            dropped, answered = [], set()
            for reply in replies:
                name = sent.get(reply.metadata.src_node_id)
                if name is None:
                    continue
                answered.add(name)
                if reply.has_error():
                    dropped.append({"client": name, "reason": f"error: {reply.error.reason}"})
                    continue
                body = reply.content["fmp"]
                if "counts" in body:
                    write_text(os.path.join(counts_dir, f"{name}.counts"), str(body["counts"]))
            for name in self.population:
                if name not in answered:
                    wait = f"within {s.round_timeout:g} s" if s.round_timeout else "(the run ended)"
                    dropped.append({"client": name, "reason": f"no reply {wait}"})
            contributed = sorted(f[:-7] for f in os.listdir(counts_dir) if f.endswith(".counts"))
            if t < f.rounds:
                qbar = self.global_counts(run, t, counts_dir, contributed)
            report = {"round": t, "contributed": contributed,
                      "dropped": sorted(dropped, key=lambda d: d["client"]),
                      "seconds": round(time.monotonic() - started, 3)}
            write_json(os.path.join(here, "report.json"), report)
            self.reports.append(report)
            self.talk(f"fl-fmp: round {t}: {len(contributed)} client(s) counted"
                      + (f", {len(dropped)} dropped" if dropped else ""))
        self.write_hypotheses(run)

    def global_counts(self, run: str, t: int, counts_dir: str, contributed: list[str]) -> str:
        """qbar^t from the round's counts files (written as RUN/qbar-t.counts); its text."""
        from asrpriv.federated.fmp import global_counts

        if not contributed:
            raise AsrprivError(f"round {t}: no client's counts arrived: nothing to aggregate")
        out = os.path.join(run, f"qbar-{t}.counts")
        global_counts([os.path.join(counts_dir, f"{c}.counts") for c in contributed], t, out,
                      self.s.fmp.round, os.path.abspath(self.s.fmp.background),
                      os.path.join(run, f"qbar-{t - 1}.counts") if t > 0 else None,
                      os.path.join(os.path.dirname(counts_dir), "noisy-new.counts"))
        return read_text(out)

    def write_hypotheses(self, run: str) -> None:
        """RUN/hyp.txt: each utterance's best hypothesis, round by round (the recipe's hyp.txt)."""
        from asrpriv.federated.fmp import best_lines

        lines = []
        for t in range(self.s.fmp.rounds + 1):
            for name in self.population:
                path = os.path.join(client_dir(run, name), f"rescored-{t}.tsv")
                if os.path.exists(path):
                    lines.extend(best_lines(path))
        write_text(os.path.join(run, "hyp.txt"), "".join(lines))


def settings_json(settings: FmpSettings) -> dict:
    """RUN/run.json: the run's settings, the round's, then Flower's (one flat record)."""
    run = asdict(settings.fmp)
    if not run["round"].get("noise_draw"):  # draw 0 (the default) is left out: as before
        run["round"].pop("noise_draw", None)
    return {**run, **run.pop("round"), "round_timeout": settings.round_timeout,
            "threads": settings.threads}


def fmp_summary(reports: list) -> str:
    """The line ``fl-fmp`` says on stderr: rounds and dropped client rounds."""
    dropped = sum(len(r["dropped"]) for r in reports)
    return f"fl-fmp: {len(reports)} round(s)" + (f", {dropped} client round(s) dropped" if dropped else "")


def simulate_fmp(settings: FmpSettings, *, workers: int = 1, talk=lambda s: None,
                 verbose: bool = False):
    """``fl-fmp``: run FMP's T+1 rounds on Flower's simulation engine; every check first
    (:meth:`asrpriv.federated.fmp.FmpRoundsSettings.check`, flwr installed); returns the
    server's reports (one dict a round: contributed, dropped, seconds)."""
    from asrpriv_flower import check_resources, require_flower

    require_flower("fl-fmp")
    from asrpriv_flower.simulate import run_apps, run_environment
    from asrpriv_flower.strategy import write_json

    check_resources(workers)
    if settings.round_timeout is not None and not settings.round_timeout > 0:
        raise AsrprivError(f"--round-timeout must be > 0, got {settings.round_timeout}")
    settings.fmp.check()
    population = population_of(settings.fmp.nbest)
    run = settings.fmp.run_dir
    os.makedirs(run, exist_ok=True)
    write_json(os.path.join(run, "run.json"), settings_json(settings))
    server = FmpServer(settings, population, talk)
    with run_environment(run):
        from flwr.clientapp import ClientApp
        from flwr.serverapp import ServerApp

        from asrpriv_flower.client_app import query_message

        client = ClientApp()
        client.train("fmp")(fmp_message)
        client.query()(query_message)
        app = ServerApp()

        @app.main()
        def main(grid, context) -> None:
            server.run(grid)

        run_apps(app, client, len(population), workers=workers, verbose=verbose)
    if len(server.reports) != settings.fmp.rounds + 1:
        raise AsrprivError(f"the FMP run stopped after {len(server.reports)} of "
                           f"{settings.fmp.rounds + 1} rounds (see {run}/round-*/report.json)")
    return server.reports
