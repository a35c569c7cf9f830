"""A round's client updates in worker processes (``fl-rounds --workers N``).

The clients of one round are independent given the round's model, so N processes can train
N of them at once. Each worker is forked once, before the first round: it inherits the
clients' data, the settings and the model module, so a task is a client's name and the
round's training seed, and a result is the update's four numbers. The weights travel through
shared memory, not pickles:

* ``init.state`` (the round's model): moved to shared memory here; the main process writes
  each round's model into it in place (:func:`asrpriv.federated.client.reload_init`) while
  the workers wait, and every worker resets its module from it before each client, as the
  in-process path resets its own;
* two delta buffers per worker: :func:`asrpriv.federated.client.client_update` writes the
  (clipped) delta into one (``delta_out``); the main process gives the worker its next client
  with the other buffer, then copies the finished delta out.

Same bits as one process: a worker trains a client exactly as the in-process path does
(:func:`asrpriv.federated.rounds.train_client`, the round's seed, the same torch thread
count), so every delta is the same bit for bit, and :func:`asrpriv.federated.rounds.server_round` sums them in the
cohort's sorted order whatever order they finished in (test: ``--workers 2`` gives the
``--workers 1`` run's files). Without a seed, each worker's torch generator is reseeded from
the OS when it starts, so forked workers never repeat one another's dropout masks.

Lifetime: a worker ignores SIGINT (the main process unwinds and stops it), dies with the main
process (``PR_SET_PDEATHSIG`` on Linux, so a ``kill -9`` of the step leaves no orphan), and is
stopped by :meth:`ClientPool.close`. A worker that dies mid-round is an error naming it.
CPU only (CUDA does not survive a fork); not with ``--batch-clients``.
"""

from __future__ import annotations

import os
import signal
import traceback

from asrpriv.errors import AsrprivError


class ClientPool:
    """N forked workers that train the clients of each round (see the module doc).

    Use as a context manager (the workers are stopped on the way out, whatever happened)."""

    def __init__(self, init, groups: dict, settings, workers: int) -> None:
        import multiprocessing

        import torch

        if workers < 2:
            raise ValueError("a pool needs at least 2 workers")
        check_shared_memory(init.state, workers)
        for tensor in init.state.values():
            tensor.share_memory_()
        self.state = init.state
        # two delta buffers per worker: it trains its next client into one while the main
        # process copies the other out
        self._slots = [[{name: torch.empty_like(t).share_memory_() for name, t in init.state.items()}
                        for _ in range(2)] for _ in range(workers)]
        ctx = multiprocessing.get_context("fork")
        self._conns, self._procs = [], []
        try:
            for k in range(workers):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=_work, name=f"fl-rounds client worker {k + 1}",
                                   args=(theirs, init, groups, settings, self._slots[k]),
                                   daemon=True)
                proc.start()
                theirs.close()
                self._conns.append(mine)
                self._procs.append(proc)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "ClientPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def updates(self, init, cohort: list[str], seed: int | None) -> dict:
        """``{client: ClientResult or None}`` for every client of ``cohort`` (None: no
        training words), trained from ``init`` (the round's model, whose ``state`` must be
        this pool's shared tensors) with training seed ``seed``."""
        from multiprocessing.connection import wait

        from asrpriv.federated.client import ClientResult

        if init.state is not self.state:
            raise AsrprivError("the round's model is not in the workers' shared memory "
                               "(its shapes changed between rounds?)")
        todo = list(cohort)
        idle = list(range(len(self._procs)))[::-1]
        busy: dict[int, tuple[str, int]] = {}  # worker -> (client, delta buffer)
        results: dict = {}

        def give(k: int, slot: int) -> None:
            busy[k] = (todo.pop(0), slot)
            try:
                self._conns[k].send((busy[k][0], seed, slot))
            except OSError:  # its end of the pipe is gone: the worker died
                self._died(k, busy[k][0])

        while todo or busy:
            while idle and todo:
                give(idle.pop(), 0)
            ready = wait([self._conns[k] for k in busy] + [self._procs[k].sentinel for k in busy])
            for k in [k for k in busy if self._conns[k] in ready or self._procs[k].sentinel in ready]:
                name, slot = busy.pop(k)
                try:
                    kind, value = self._conns[k].recv()
                except (EOFError, OSError):
                    self._died(k, name)
                if kind in ("ok", "empty") and todo:
                    give(k, 1 - slot)  # its next client, into the other buffer, first
                else:
                    idle.append(k)
                if kind == "ok":
                    weight, norm, clip, train = value
                    delta = {n: t.clone() for n, t in self._slots[k][slot].items()}
                    results[name] = ClientResult(delta, weight, norm, clip, train)
                elif kind == "empty":
                    results[name] = None
                elif kind == "refused":
                    raise AsrprivError(value)
                else:
                    raise RuntimeError(f"client worker {k + 1}, client {name}:\n{value}")
        return results

    def _died(self, k: int, name: str):
        self._procs[k].join(1)
        raise AsrprivError(f"client worker {k + 1} died while training client {name} "
                           f"(exit code {self._procs[k].exitcode})") from None

    def close(self) -> None:
        """Stop every worker (a polite end-of-work message, then SIGTERM for a slow one)."""
        for conn in self._conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for proc in self._procs:
            proc.join(5)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []


def _work(conn, init, groups: dict, settings, slots: list) -> None:
    """A worker's loop: ``(client, seed)`` in, ``(kind, value)`` out, until ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    _die_with_parent()
    import torch

    from asrpriv.federated.rounds import train_client
    from asrpriv.nnlm.runtime import use_threads

    use_threads(worker_threads(settings.threads, settings.workers))
    torch.seed()  # fresh dropout draws when unseeded (a seeded client reseeds in train_lm)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        name, seed, buffer = task
        try:
            update = train_client(init, name, groups[name], settings, seed, slots[buffer])
            reply = (("empty", None) if update is None else
                     ("ok", (update.weight, update.norm, update.clip_l2, update.train)))
        except AsrprivError as err:
            reply = ("refused", str(err))
        except Exception:  # noqa: BLE001 -- reported by the main process, with its traceback
            reply = ("crash", traceback.format_exc())
        conn.send(reply)


#: where torch puts shared CPU tensors (its file-descriptor strategy on Linux)
SHM_DIR = "/dev/shm"


def check_shared_memory(state: dict, workers: int) -> None:
    """Refuse (AsrprivError) when ``/dev/shm`` cannot hold the pool's shared tensors: the
    round's model and two delta buffers per worker. A container's default /dev/shm (64 MB)
    is smaller than that for paper 001's LSTM, and a process that touches shared memory beyond
    it dies of SIGBUS, so this is said before anything starts."""
    need = sum(t.numel() * t.element_size() for t in state.values()) * (1 + 2 * workers)
    try:
        stat = os.statvfs(SHM_DIR)
    except OSError:
        return  # no /dev/shm to measure (torch then shares through other means)
    free = stat.f_bavail * stat.f_frsize
    if free < need * 1.05:
        raise AsrprivError(f"--workers {workers} needs {need / 2**20:,.1f} MiB of shared memory "
                           f"({SHM_DIR} has {free / 2**20:,.1f} MiB free): use fewer workers, "
                           "a larger /dev/shm (docker run --shm-size), or --workers 1")


def worker_threads(requested: int, workers: int) -> int:
    """Each worker's torch threads: ``requested`` when given (per worker), else the default
    count (:func:`asrpriv.nnlm.runtime.choose_threads`) divided among the workers, at least 1
    (N workers of the default count each would oversubscribe the cores, and waiting OpenMP
    threads spin)."""
    from asrpriv.nnlm.runtime import choose_threads

    return requested if requested else max(1, choose_threads(0) // max(1, workers))


def _die_with_parent() -> None:
    """Linux: SIGTERM this process when its parent dies (no orphaned workers)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)
    except (OSError, AttributeError):
        pass
