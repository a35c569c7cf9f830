"""Back-off n-gram language models: modified Kneser-Ney training and ARPA files (log10).

- :func:`train_arpa` / :func:`train` (in :mod:`asrpriv.ngram.trainer`): interpolated modified
  Kneser-Ney estimation as KenLM's lmplz does it (:mod:`asrpriv.ngram.kneser_ney`).
- :func:`read_arpa` / :class:`ArpaModel` (in :mod:`asrpriv.ngram.arpa`): exact ARPA reader and
  writer with back-off queries (``.prob(word, context)``, ``.score_sentence(words)``, log10).

``asrpriv.ngram.arpa`` is pure Python; the trainer (numpy) is imported only when used.
"""

from __future__ import annotations

from asrpriv.ngram.arpa import ArpaModel, read_arpa

__all__ = ["ArpaModel", "read_arpa", "train", "train_arpa"]


def __getattr__(name: str):
    if name in ("train", "train_arpa"):
        from asrpriv.ngram import trainer as _train_module

        return getattr(_train_module, name)
    raise AttributeError(name)
