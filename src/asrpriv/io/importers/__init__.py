"""Importers: other recognizers' N-best lists to our N-best TSV (docs/FORMATS.md).

One module per source format; each exposes ``read(path, **options) -> NbestTable``: the
columns it will fill and a stream of :class:`~asrpriv.io.importers.common.Row`. Scores are
converted to natural log (higher is better) as each module's docstring states; ranks are
1-based (1 = best). :func:`asrpriv.io.importers.common.write_table` writes the TSV and
checks what every importer must guarantee (contiguous utterances, unique ranks, no NaN).
"""

from __future__ import annotations

import importlib

#: ``--from`` name -> module under asrpriv.io.importers
FORMATS: dict[str, str] = {
    "kaldi": "kaldi",
    "espnet": "espnet",
    "nemo": "nemo",
    "srilm": "srilm",
    "icefall": "icefall",
    "tsv": "tsv",
}


def importer(name: str):
    """The module that reads format ``name`` (one of :data:`FORMATS`)."""
    return importlib.import_module(f"asrpriv.io.importers.{FORMATS[name]}")
