"""The Flower ServerApp: connect the client nodes, then run :class:`AsrprivStrategy`'s rounds."""

from __future__ import annotations


def make_server_app(settings, population: list[str], first_round: int = 1,
                    talk=lambda s: None, holder: dict | None = None):
    """A :class:`flwr.serverapp.ServerApp` running ``settings.rounds - first_round + 1`` rounds.

    ``holder["strategy"]`` receives the strategy (its per-round reports) -- the simulation
    runs the ServerApp in a thread of the calling process.
    """
    from flwr.app import ArrayRecord
    from flwr.serverapp import ServerApp

    from asrpriv.nnlm.modelfile import read_model_file

    from asrpriv_flower.strategy import AsrprivStrategy, model_path

    app = ServerApp()

    @app.main()
    def main(grid, context) -> None:
        strategy = AsrprivStrategy(settings, population, first_round, talk)
        if holder is not None:
            holder["strategy"] = strategy
        strategy.connect(grid)
        initial = read_model_file(model_path(settings.run_dir, first_round - 1))["state_dict"]
        strategy.start(grid, ArrayRecord(torch_state_dict=initial),
                       num_rounds=settings.rounds - first_round + 1,
                       timeout=settings.round_timeout)

    return app
