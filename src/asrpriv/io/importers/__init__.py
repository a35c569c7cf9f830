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
    "kaldi-lattice": "kaldi_lattice",
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


def read_once(path: str) -> bool:
    """True when ``path`` can be read only once: ``-`` (stdin), or a Kaldi specifier whose
    stream is stdin or a command (``ark,t:-``, ``ark:gunzip -c x.gz |``)."""
    if path == "-":
        return True
    from asrpriv.io import kaldi_tables

    if kaldi_tables.is_specifier(path):
        rx = kaldi_tables.parse(path).rx
        return rx == "-" or rx.endswith("|")
    return False


def import_nbest(source: str, path: str, output: str | None = "-", drop: frozenset[str] = frozenset(),
                 ref_out: str | None = None, **options):
    """The ``import-nbest`` step: read ``path`` in format ``source``, write our N-best TSV.

    The whole input is read and checked first (a pass that writes nothing; not for ``-``,
    stdin cannot be read twice, nor a Kaldi specifier's stdin or command: :func:`read_once`), then written to ``output`` (``-``/None = stdout; a file is
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

    once = read_once(path)
    if not once and os.path.exists(path) and not os.path.isdir(path):  # read twice: never a FIFO
        from asrpriv.io.lines import require_regular_file

        require_regular_file(path, "an N-best file to import")
    module = importer(source)
    with contextlib.ExitStack() as stack:
        if not once:
            write_table(module.read(path, **{**options, "ref_out": None}), _Discard(), drop)
        if ref_out is not None:
            options["ref_out"] = stack.enter_context(open_output(ref_out))
        table = module.read(path, **options)
        with open_output(output) as out, abort_marker(out, output in (None, "-")) as marked:
            table.utterances = write_table(table, marked, drop)
    return table
