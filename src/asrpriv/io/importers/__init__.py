"""Importers: other recognizers' N-best lists to our N-best TSV (docs/FORMATS.md).

One module per source format; each exposes ``read(path, **options) -> NbestTable``: the
columns it will fill and a stream of :class:`~asrpriv.io.importers.common.Row`. Scores are
converted to natural log (higher is better) as each module's docstring states; ranks are
1-based (1 = best). :func:`asrpriv.io.importers.common.write_table` writes the TSV and
checks what every importer must guarantee (contiguous utterances, unique ranks, no NaN).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, fields

from asrpriv.errors import AsrprivError, arg

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


#: which of :class:`ImportSettings`' source options apply to each format (the rest must keep
#: their defaults); a new format adds one row here and one to :data:`FORMATS`
SOURCE_OPTIONS: dict[str, frozenset[str]] = {
    "kaldi": frozenset({"words", "acoustic_scale"}),
    "kaldi-lattice": frozenset({"words", "acoustic_scale", "n"}),
    "espnet": frozenset(),
    "nemo": frozenset({"manifest", "id_field", "beam_size"}),
    "srilm": frozenset(),
    "icefall": frozenset({"ref_out"}),
    "tsv": frozenset({"mapping", "delimiter", "log_base"}),
}
#: the drop_tokens specification used when none is given (``srilm``: SRILM's non-events)
DEFAULT_DROP: dict[str, str] = {"srilm": "srilm"}


@dataclass
class ImportSettings:
    """The settings of ``import-nbest``.

    Attributes:
        source: the format (:data:`FORMATS`); path: what the tool left (``-``: stdin).
        output: our N-best TSV (``-``: stdout); None: write nothing, return the rows.
        drop_tokens: tokens removed from every text (:mod:`asrpriv.io.tokens`; None: the
            format's default, :data:`DEFAULT_DROP`).
        The source options (only those of :data:`SOURCE_OPTIONS` for ``source`` may differ
        from their defaults): words (kaldi symbol table), acoustic_scale (kaldi),
        n (kaldi-lattice: how many distinct word sequences; None: 1, lattice-to-nbest's default),
        manifest, id_field, beam_size (nemo), ref_out (icefall: write the references),
        mapping (``"SRC=OURS,..."`` or a dict), delimiter (one character or ``tab``),
        log_base (``e`` or ``10``) (tsv).
    """

    source: str
    path: str
    output: str | None = "-"
    drop_tokens: str | None = None
    # (in the order in which options that do not apply are reported)
    manifest: str | None = None
    id_field: str | None = None
    beam_size: int | None = None
    words: str | None = None
    mapping: str | dict | None = None
    delimiter: str | None = None
    ref_out: str | None = None
    acoustic_scale: float = 1.0
    log_base: str = "e"
    n: int | None = None


@dataclass
class ImportResult:
    """What ``import-nbest`` read: the table's columns, the utterances, the tokens dropped,
    a note about the layout, and the rows (a list, when the settings' output is None)."""

    source: str
    path: str
    score_columns: list[str]
    extra_columns: list[str]
    utterances: int
    dropped: int
    drop: frozenset
    note: str | None = None
    rows: list = field(default_factory=list)

    def summary(self) -> str:
        """The line ``import-nbest`` says on stderr."""
        return (f"import-nbest: {self.utterances} utterances from {self.source} {self.path}"
                + (f"; {self.dropped} non-word tokens dropped" if self.drop else ""))


def run_import(s: ImportSettings) -> ImportResult:
    """The step ``import-nbest``: check which options apply to ``s.source``
    (:data:`SOURCE_OPTIONS`), read ``s.path`` and write our N-best TSV to ``s.output`` -- or,
    with ``output=None``, write nothing and return the rows as a list."""
    from asrpriv.io.tokens import parse_drop

    if s.source not in FORMATS:
        raise AsrprivError(f"{arg('source')} must be one of {', '.join(FORMATS)}, got {s.source!r}")
    allowed = SOURCE_OPTIONS[s.source]
    for f in fields(ImportSettings):
        if f.name in ("source", "path", "output", "drop_tokens") or f.name in allowed:
            continue
        if getattr(s, f.name) != f.default:
            raise AsrprivError(f"{arg(f.name)} does not apply to {arg('source')} {s.source}")
    options = {"words": s.words, "acoustic_scale": s.acoustic_scale, "manifest": s.manifest,
               "id_field": s.id_field, "beam_size": s.beam_size}
    if s.source == "kaldi-lattice":
        options["n"] = s.n if s.n is not None else 1  # lattice-to-nbest's default
    if s.source == "tsv":
        from asrpriv.io.importers.tsv import parse_map

        options["mapping"] = s.mapping if isinstance(s.mapping, dict) else parse_map(s.mapping)
        options["delimiter"] = "\t" if s.delimiter == "tab" else s.delimiter
        options["log_base"] = s.log_base
        if s.delimiter is not None and len(options["delimiter"]) != 1:
            raise AsrprivError(f"{arg('delimiter')}: expected one character (or 'tab')")
    drop = parse_drop(s.drop_tokens if s.drop_tokens is not None else DEFAULT_DROP.get(s.source))
    rows: list = []
    table = import_nbest(s.source, s.path, s.output, drop, s.ref_out,
                         keep=rows if s.output is None else None, **options)
    return ImportResult(s.source, s.path, list(table.score_columns), list(table.extra_columns),
                        table.utterances, table.dropped, drop, table.note, rows)


def importer(name: str):
    """The module that reads format ``name`` (one of :data:`FORMATS`)."""
    return importlib.import_module(f"asrpriv.io.importers.{FORMATS[name]}")


def read_once(path: str) -> bool:
    """True when ``path`` can be read only once: a Kaldi specifier whose stream is stdin or a
    command (``ark,t:-``, ``ark:gunzip -c x.gz |``). (``-`` itself is copied once into a
    temporary file, :func:`asrpriv.io.lines.stdin_spooled`.)"""
    if path == "-":
        return True
    from asrpriv.io import kaldi_tables

    if kaldi_tables.is_specifier(path):
        rx = kaldi_tables.parse(path).rx
        return rx == "-" or rx.endswith("|")
    return False


class _Discard:
    """An output that keeps nothing (the checking pass)."""

    def write(self, text: str) -> int:
        return len(text)


def import_nbest(source: str, path: str, output: str | None = "-", drop: frozenset[str] = frozenset(),
                 ref_out: str | None = None, keep: list | None = None, **options):
    """The ``import-nbest`` step: read ``path`` in format ``source``, write our N-best TSV.

    The whole input is read and checked first (a pass that writes nothing; ``-`` for the
    input, the manifest or the word list is standard input, copied once into a temporary
    file; a Kaldi specifier on stdin or a command is read once, unchecked: :func:`read_once`),
    then written to ``output`` (``-``/None = stdout; a file is
    atomic). A failure while writing to stdout ends the stream with
    :data:`asrpriv.io.nbest.ABORT_MARKER`. ``drop``: tokens removed from every text.
    ``output=None`` writes nothing; ``keep``, a list, receives the checked rows (their text
    after ``drop``).

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
        once = read_once(path)
        if not once and os.path.exists(path) and not os.path.isdir(path):  # read twice: never a FIFO
            require_regular_file(path, "an N-best file to import")
        if not once:
            write_table(module.read(path, **{**options, "ref_out": None}), _Discard(), drop)
        if ref_out is not None:
            options["ref_out"] = stack.enter_context(open_output(ref_out))
        table = module.read(path, **options)
        if output is None:
            table.utterances = write_table(table, _Discard(), drop, keep=keep)
            return table
        with open_output(output) as out, abort_marker(out, output == "-") as marked:
            table.utterances = write_table(table, marked, drop, keep=keep)
    return table
