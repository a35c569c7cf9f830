"""The Flower ClientApp and ServerApp of ``asrpriv fl-simulate``.

Messages: the server sends each sampled client's node a ``train`` message holding the global
model's tensors (ArrayRecord "arrays") and a ConfigRecord "config" (client name, round, seed,
clip, paths of the template model and the adaptation TSV). The client answers with its delta
(ArrayRecord "arrays", ``init - new``) and a MetricRecord "metrics" (weight = training words,
norm = L2 norm before clipping, clip_l2, or -1 when not clipped). Clients' data come from our
files; a node serves whichever client the server names (simulation: nodes are workers).

Each round the server writes every returned delta as our delta file (``ROUND/<client>.delta.pt``
with ``init_fingerprint``, ``weight``, ``clip_l2``) and runs :func:`run_round` on them, writing
``ROUND/model.pt`` and updating ``state.pt``: the same files as the shell recipe
(``sample-clients | finetune-lm --by-client | aggregate``), so any round can be inspected or
resumed with the CLI steps. A client whose update fails or does not answer is dropped and
listed in ``ROUND/failed.txt``; under DP the fixed denominator keeps the sensitivity bound.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp


@dataclass
class RunSettings:
    """What ``fl-simulate`` runs (JSON in the run directory, read by the ServerApp)."""

    init: str
    train: str
    out: str
    rounds: int
    sample_rate: float
    server: str = "fedadam"
    hparams: dict = field(default_factory=dict)
    seed: int = 0
    clip: float | None = None
    noise_multiplier: float | None = None
    expected_clients: float | None = None
    noise_seed: int | None = None
    client_timeout: float | None = None  # seconds a round waits for its clients (None: all)
    fail_clients: list = field(default_factory=list)  # tests: these clients raise

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(asdict(self), f, indent=1, sort_keys=True)

    @classmethod
    def load(cls, path: str) -> "RunSettings":
        with open(path, encoding="utf-8") as f:
            return cls(**json.load(f))


# ---------------------------------------------------------------------------- client

_CACHE: dict = {}


def _client_data(train: str) -> dict:
    """The adaptation TSV split by its client column (read once per worker process)."""
    if ("data", train) not in _CACHE:
        from asrpriv.federated.by_client import group_by_client
        from asrpriv.nnlm.data import read_corpus

        corpus = read_corpus(train)
        _CACHE[("data", train)] = group_by_client(corpus, train, None)
    return _CACHE[("data", train)]


def _init_model(template: str, arrays: ArrayRecord):
    """The round's global model: the template's architecture and vocabulary, the sent weights."""
    from asrpriv.federated import client
    from asrpriv.federated.fingerprint import model_fingerprint

    if ("init", template) not in _CACHE:
        _CACHE[("init", template)] = client.load_init(template)
    init = _CACHE[("init", template)]
    state = arrays.to_torch_state_dict()
    init.model.load_state_dict(state)
    init.state = {k: v.detach().clone() for k, v in init.model.state_dict().items()}
    init.fingerprint = model_fingerprint(init.config, init.vocab.words, init.state)
    return init


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    """Fine-tune the named client from the sent global model (paper 001's client recipe)."""
    from asrpriv.federated import client
    from asrpriv.nnlm.train import RECIPES

    cfg = msg.content["config"]
    name = str(cfg["client"])
    if name in json.loads(str(cfg.get("fail_clients", "[]"))):
        raise RuntimeError(f"client {name}: failure requested by the test")
    init = _init_model(str(cfg["template"]), msg.content["arrays"])
    data = _client_data(str(cfg["train"]))[name]
    clip = float(cfg["clip"]) if float(cfg["clip"]) > 0 else None
    result = client.client_update(init, data.sentences, data.confidences,
                                  settings=dict(RECIPES[client.CLIENT_RECIPE]),
                                  seed=int(cfg["seed"]), clip=clip)
    content = RecordDict({
        "arrays": ArrayRecord(result.delta),
        "metrics": MetricRecord({"weight": int(result.weight), "norm": float(result.norm),
                                 "clip_l2": -1.0 if result.clip_l2 is None else result.clip_l2}),
        "config": ConfigRecord({"client": name, "fingerprint": init.fingerprint}),
    })
    return Message(content=content, reply_to=msg)


# ---------------------------------------------------------------------------- server

server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    """Rounds: Poisson-sample, send the model, write the deltas, run asrpriv's server round."""
    settings = RunSettings.load(os.environ["ASRPRIV_FL_SETTINGS"])
    run_rounds(grid, settings)


def run_rounds(grid: Grid, s: RunSettings) -> None:
    """Run ``s.rounds`` rounds; the last round's model is ``OUT/round_T/model.pt``."""
    from asrpriv.federated.aggregate import DpSettings, run_round
    from asrpriv.federated.by_client import group_by_client
    from asrpriv.federated.sampling import poisson_sample
    from asrpriv.nnlm import modelfile
    from asrpriv.nnlm.data import read_corpus

    clients = sorted(group_by_client(read_corpus(s.train), s.train, None))
    nodes = sorted(grid.get_node_ids())
    model_path = s.init
    state_path = os.path.join(s.out, "state.pt")
    dp = None
    if s.clip is not None or s.noise_multiplier:
        dp = DpSettings(noise_multiplier=s.noise_multiplier, clip=s.clip,
                        expected_clients=s.expected_clients,
                        sample_rate=s.sample_rate if s.noise_multiplier else None)
    for t in range(s.rounds):
        round_dir = os.path.join(s.out, f"round_{t + 1}")
        os.makedirs(round_dir, exist_ok=True)
        chosen = poisson_sample(clients, s.sample_rate, t, s.seed)
        payload = modelfile.read_model_file(model_path)
        arrays = ArrayRecord({k: v for k, v in payload["state_dict"].items()})
        messages = []
        for i, name in enumerate(chosen):
            config = ConfigRecord({"client": name, "round": t + 1, "seed": int(s.seed),
                                   "clip": float(s.clip or 0.0), "template": s.init,
                                   "train": s.train, "fail_clients": json.dumps(s.fail_clients)})
            messages.append(Message(content=RecordDict({"arrays": arrays, "config": config}),
                                    message_type="train", dst_node_id=nodes[i % len(nodes)]))
        replies = (list(grid.send_and_receive(messages, timeout=s.client_timeout))
                   if messages else [])  # a client past the timeout is dropped like a failure
        answered = set()
        vocab, config = modelfile.vocab_and_config(payload, model_path)
        deltas = []
        for reply in replies:
            if reply.has_error():
                continue
            name = str(reply.content["config"]["client"])
            metrics = reply.content["metrics"]
            delta = reply.content["arrays"].to_torch_state_dict()
            extra = {"init_fingerprint": str(reply.content["config"]["fingerprint"])}
            if float(metrics["clip_l2"]) > 0:
                extra["clip_l2"] = float(metrics["clip_l2"])
            path = os.path.join(round_dir, f"{name}.delta.pt")
            modelfile.save_delta(path, {k: v.to(payload["state_dict"][k].dtype)
                                        for k, v in delta.items()}, vocab, config,
                                 weight=int(metrics["weight"]), **extra)
            answered.add(name)
            deltas.append(path)
        failed = [c for c in chosen if c not in answered]
        with open(os.path.join(round_dir, "failed.txt"), "w", encoding="utf-8") as f:
            f.write("".join(c + "\n" for c in failed))
        with open(os.path.join(round_dir, "clients.txt"), "w", encoding="utf-8") as f:
            f.write("".join(c + "\n" for c in chosen))
        out_model = os.path.join(round_dir, "model.pt")
        if deltas:
            run_round(model_path, deltas, out_model, s.server, dict(s.hparams),
                      state_path, dp=dp, seed=s.noise_seed,
                      allow_seeded=s.noise_seed is not None)
            model_path = out_model
