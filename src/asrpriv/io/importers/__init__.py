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


class _Discard:
    """An output that keeps nothing (the checking pass)."""

    def write(self, text: str) -> int:
        return len(text)


def import_nbest(source: str, path: str, output: str | None = "-", drop: frozenset[str] = frozenset(),
                 ref_out: str | None = None, **options):
    """The ``import-nbest`` step: read ``path`` in format ``source``, write our N-best TSV.

    The whole input is read and checked first (a pass that writes nothing; ``-`` for the
    input, the manifest or the word list is standard input, copied once into a temporary
    file), then written to ``output`` (``-``/None = stdout; a file is
    atomic). A failure while writing to stdout ends the stream with
    :data:`asrpriv.io.nbest.ABORT_MARKER`. ``drop``: tokens removed from every text.

    Returns:
        The :class:`~asrpriv.io.importers.common.NbestTable` written, with ``utterances``
        set to the number of utterances and ``dropped`` to the tokens removed.
    """
    import contextlib

    from asrpriv.io.importers.common import write_table
    from asrpriv.io.nbest import abort_marker
    from asrpriv.io.output import open_output

    import os

    from asrpriv.io.lines import require_regular_file, stdin_spooled

    module = importer(source)
    with contextlib.ExitStack() as stack:
        # '-' (the N-best input, --manifest or --words) is standard input, copied once into
        # a temporary file: every importer reads a regular file, checked in a first pass
        path, manifest, words = stack.enter_context(stdin_spooled(
            path, options.get("manifest"), options.get("words")))
        options = {**options, "manifest": manifest, "words": words} if (
            "manifest" in options or "words" in options) else options
        if os.path.exists(path) and not os.path.isdir(path):  # read twice: never a FIFO
            require_regular_file(path, "an N-best file to import")
        write_table(module.read(path, **{**options, "ref_out": None}), _Discard(), drop)
        if ref_out is not None:
            options["ref_out"] = stack.enter_context(open_output(ref_out))
        table = module.read(path, **options)
        with open_output(output) as out, abort_marker(out, output in (None, "-")) as marked:
            table.utterances = write_table(table, marked, drop)
    return table
