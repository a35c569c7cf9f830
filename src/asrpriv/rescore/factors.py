"""FMP factors mapped onto a neural LM's vocabulary (paper 000, Eq. 1).

A factors file holds ``word<TAB>log_factor`` rows (natural log), e.g. ``lambda * ln(g(w)/u(w))``
as written by ``fma-adapt``. For an NNLM with vocabulary V it becomes a vector ``f`` of length
``|V|``: ``f[id(w)] = log_factor(w)`` for every factor word in V, 0 (factor 1) for the words
without a factor. Factor words outside V are ignored and counted (a word that V does not know
is scored as ``<unk>``; moving ``<unk>``'s mass would need the factor of ``<unk>`` itself, which
a file may give explicitly).
"""

from __future__ import annotations

import os
from collections import OrderedDict

from asrpriv.errors import AsrprivError, arg
from asrpriv.io.factors import read_factors

#: how many clients' factor vectors stay in memory at once (LRU)
CACHE_SIZE = 512


class FactorTable:
    """Where each utterance's factors come from, and their vectors over the NNLM vocabulary.

    Args:
        vocab: the NNLM's :class:`asrpriv.nnlm.vocab.Vocabulary`.
        factors_file: one factors file for every utterance, or None.
        factors_dir: a directory with ``<client>.tsv`` per value of the ``client`` column.
        missing: ``"error"`` (a client without a file stops the step) or ``"ignore"``
            (that client's utterances are scored without factors).
        device: torch device of the vectors.
        allow_seeded: accept factors made with seeded (repeatable, NOT private) test noise;
            otherwise a file's privacy record is checked as it is read (each file once).

    Attributes:
        ignored_words: factor words outside the vocabulary, summed over the files loaded.
        files_loaded: how many factor files were read.
        missing_clients: clients that had no file (with ``missing="ignore"``).
    """

    def __init__(self, vocab, factors_file: str | None = None, factors_dir: str | None = None,
                 missing: str = "error", device: str = "cpu", allow_seeded: bool = False) -> None:
        if (factors_file is None) == (factors_dir is None):
            raise ValueError("give exactly one of factors_file and factors_dir")
        if factors_dir is not None and not os.path.isdir(factors_dir):
            raise AsrprivError(f"{factors_dir}: not a directory ({arg('factors_dir')})")
        self.vocab = vocab
        self.factors_file = factors_file
        self.factors_dir = factors_dir
        self.missing = missing
        self.device = device
        self.allow_seeded = allow_seeded
        self.ignored_words = 0
        self.files_loaded = 0
        self.missing_clients: set[str] = set()
        self._cache: OrderedDict[str, object] = OrderedDict()
        self._seen: set[str] = set()

    def path_for(self, client: str | None, where: str = "") -> str | None:
        """The factors file of an utterance of ``client`` (None: score without factors)."""
        if self.factors_file is not None:
            return self.factors_file
        if client is None:
            raise AsrprivError(f"{arg('factors_dir')} needs a 'client' column in the N-best TSV")
        if not client or "/" in client or client in (".", ".."):
            raise AsrprivError(f"{where}client {client!r} cannot name a factors file")
        path = os.path.join(self.factors_dir, f"{client}.tsv")
        if os.path.isfile(path):
            return path
        if self.missing == "ignore":
            self.missing_clients.add(client)
            return None
        raise AsrprivError(f"{path}: no factors file for client {client!r} "
                           f"(use {arg('missing_factors')} ignore to score such clients without factors)")

    def vector(self, path: str):
        """The log-factor vector (torch float32, length |V|, natural log) of a factors file."""
        vec = self._cache.get(path)
        if vec is not None:
            self._cache.move_to_end(path)
            return vec
        import torch

        meta, factors = read_factors(path)
        if path not in self._seen:
            from asrpriv.provenance import Inputs

            Inputs(self.allow_seeded).add_factors(path, meta)
        ids, values = [], []
        index = self.vocab._index if hasattr(self.vocab, "_index") else None
        for word, value in factors.items():
            i = index.get(word) if index is not None else (self.vocab.id(word) if word in self.vocab else None)
            if i is None:
                if path not in self._seen:
                    self.ignored_words += 1
                continue
            ids.append(i)
            values.append(value)
        vec = torch.zeros(len(self.vocab), dtype=torch.float32)
        if ids:
            vec[torch.tensor(ids, dtype=torch.long)] = torch.tensor(values, dtype=torch.float32)
        vec = vec.to(self.device)
        if path not in self._seen:
            self._seen.add(path)
            self.files_loaded += 1
        self._cache[path] = vec
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return vec

    def summary(self) -> str:
        """A one-line note for stderr."""
        note = f"factors: {self.files_loaded} file(s) read"
        if self.ignored_words:
            note += f", {self.ignored_words} factor word(s) outside the NNLM vocabulary ignored"
        if self.missing_clients:
            note += f", {len(self.missing_clients)} client(s) without a factors file scored without factors"
        return note
