"""count-unigrams' library half: settings checked, inputs read into count accumulators,
counts files written. :func:`count_unigrams` is the step's entry (CLI and API call it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.counts import write_counts
from asrpriv.io.output import open_output
from asrpriv.unigram.counting import CountAccumulator, nbest_contribution
from asrpriv.unigram.meta import base_meta

#: client name -> accumulator; the key "" holds the single accumulator when not split by client
Accumulators = dict[str, CountAccumulator]


class _Router:
    """Routes unit contributions to per-client accumulators, merging client units."""

    def __init__(self, unit: str, split: bool, make: Callable[[], CountAccumulator]) -> None:
        self.unit = unit
        self.split = split
        self.make = make
        self.accumulators: Accumulators = {}
        self.pending: dict[str, dict[str, float]] = {}  # per-client sums when unit == client

    def add(self, client: str | None, contribution: dict[str, float]) -> None:
        if self.unit == "client":
            pending = self.pending.setdefault(client or "", {})
            for word, value in contribution.items():
                pending[word] = pending.get(word, 0.0) + value
            return
        self._accumulator(client).add_unit(contribution)

    def _accumulator(self, client: str | None) -> CountAccumulator:
        key = (client or "") if self.split else ""
        if key not in self.accumulators:
            self.accumulators[key] = self.make()
        return self.accumulators[key]

    def finish(self) -> Accumulators:
        for client, contribution in self.pending.items():
            self._accumulator(client).add_unit(contribution)
        self.pending.clear()
        if not self.accumulators and not self.split:
            self.accumulators[""] = self.make()
        return self.accumulators


def count_nbest(path: str, sigma: float, top: int | None, client_of: dict[str, str] | None,
                unit: str, split: bool, make: Callable[[], CountAccumulator],
                drop: frozenset[str] = frozenset()) -> Accumulators:
    """Kernel-weighted counts of an N-best TSV, one unit per utterance or per client.

    ``drop``: tokens that are not words (:mod:`asrpriv.io.tokens`), removed before counting.
    """
    from asrpriv.io.nbest import NbestReader

    reader = NbestReader(path, drop=drop)
    needs_client = split or unit == "client"
    if needs_client and client_of is None and "client" not in reader.index:
        raise InputError(path, 1, f"no 'client' column: give {arg('utt2client')} for {arg('by_client')}/{arg('unit')} client")
    router = _Router(unit, split, make)
    for utt in reader:
        client = None
        if needs_client:
            client = client_of.get(utt.utt_id) if client_of is not None else utt.client
            if client is None:
                raise InputError(path, utt.hyps[0].lineno, f"utterance {utt.utt_id!r} has no client in {arg('utt2client')}")
        contribution = nbest_contribution(((h.rank, h.words) for h in utt.hyps), sigma, top)
        router.add(client, contribution)
    return router.finish()


def sniff_text(lines: list[tuple[int, str]], path: str | None, ids: bool) -> str | None:
    """Refuse an N-best header (misspelt or not) in text; a warning if ids look like words."""
    from asrpriv.io.sniff import ids_warning, tsv_header_problem

    first = next(((n, line) for n, line in lines if line.strip()), None)
    if first is None:
        return None
    columns = first[1].split("\t")
    if "utt_id" in columns and "text" in columns:
        raise InputError(path, first[0], f"an N-best TSV header: count an N-best TSV without {arg('text')}")
    problem = tsv_header_problem(first[1])
    if problem:
        raise InputError(path, first[0], problem)
    return None if ids else ids_warning(line for _, line in lines)


def _sniff_and_warn(head, path, ids, warn) -> None:
    from asrpriv.errors import display_name

    note = sniff_text(head, path, ids)
    if note:
        warn(f"{display_name(path)}: {note}")


def count_text(path: str, ids: bool, client_of: dict[str, str] | None, unit: str, split: bool,
               make: Callable[[], CountAccumulator],
               warn: Callable[[str], None] = lambda s: None,
               drop: frozenset[str] = frozenset()) -> Accumulators:
    """Counts of text, each word weighing 1; one unit per line (utterance) or per client.

    ``drop``: tokens that are not words (:mod:`asrpriv.io.tokens`), not counted. Without a
    bound each word counts on its own, so the fast path removes them from the totals.

    Kaldi text (``ids``) with a duplicate utterance id is refused (it would be two units).
    """
    import itertools

    from asrpriv.io.lines import iter_lines
    from asrpriv.io.sniff import SAMPLE_LINES

    probe = make()
    if not ids and probe.max_l1 is None and not split:  # fast path: whole blocks of text
        from asrpriv.io.lines import iter_blocks
        from asrpriv.unigram.counting import count_text_fast
        from asrpriv.unigram.fastcount import count_words

        if path is None or str(path) == "-" or not os.path.isfile(path):
            # stdin, a pipe or a FIFO cannot be re-read: sniff its first block
            blocks = iter_blocks(path)
            first = next(blocks, None)
            head = [] if first is None else \
                list(enumerate(first[1].splitlines()[:SAMPLE_LINES], 1))
            _sniff_and_warn(head, path, ids, warn)
            counter, probe.units = count_text_fast(itertools.chain([first] if first else [], blocks))
        else:
            lines = iter_lines(path)
            head = list(itertools.islice(lines, SAMPLE_LINES))
            lines.close()
            _sniff_and_warn(head, path, ids, warn)
            counter, probe.units = count_words(path)
        probe.counts = {w: c for w, c in counter.items() if w not in drop}
        return {"": probe}
    lines = iter_lines(path)
    head = list(itertools.islice(lines, SAMPLE_LINES))
    _sniff_and_warn(head, path, ids, warn)
    from asrpriv.io.kaldi import iter_text

    router = _Router(unit, split, make)
    source = itertools.chain(head, lines)
    if ids:
        records = iter_text(path, source)
    else:
        records = ((lineno, None, line.split()) for lineno, line in source)
    for lineno, utt_id, words in records:
        client = None
        if ids and client_of is not None:
            client = client_of.get(utt_id)
            if client is None and (split or unit == "client"):
                raise InputError(path, lineno, f"utterance {utt_id!r} has no client in {arg('utt2client')}")
        contribution: dict[str, float] = {}
        for word in words:
            if word in drop:
                continue
            contribution[word] = contribution.get(word, 0.0) + 1.0
        router.add(client, contribution)
    return router.finish()


def _client_label(partition: str, client: str) -> str:
    from asrpriv.privacy.history import check_partition

    label = f"{partition}/{client}"
    try:
        check_partition(label)
    except ValueError as err:
        raise AsrprivError(f"{arg('partition')} with {arg('by_client')}: client {client!r}: {err}") from None
    return label


def output_metas(accumulators: Accumulators, settings: dict, by_client: bool) -> dict[str, dict[str, str]]:
    """The metadata of each output file (client -> meta); per-client files carry their own
    partition label NAME/<client>."""
    metas = {}
    for client, acc in sorted(accumulators.items()):
        meta = base_meta(**settings, units=acc.units)
        if by_client and "partition" in meta:  # each client's file is its own, disjoint part
            meta["partition"] = _client_label(meta["partition"], client)
        metas[client] = meta
    return metas


def write_outputs(accumulators: Accumulators, output: str, by_client: str | None,
                  settings: dict) -> tuple[int, int]:
    """Write one counts file (or one per client, all or none); returns (clipped units, units).

    Per-client files are first all written to temporary files, then renamed; on any error
    the temporary files are removed, and so is DIR if this call created it.
    """
    import contextlib

    from asrpriv.io.output import atomic_path

    clipped = sum(acc.clipped_units for acc in accumulators.values())
    units = sum(acc.units for acc in accumulators.values())
    items = sorted(accumulators.items())
    if not by_client:
        for _client, acc in items:
            with open_output(output) as stream:
                write_counts(stream, base_meta(**settings, units=acc.units), acc.counts)
        return clipped, units
    for client, _acc in items:
        if not client or "/" in client or client.startswith(".") or "\0" in client:
            raise AsrprivError(f"client name {client!r} cannot be a file name")
    metas = output_metas(accumulators, settings, True)
    created = not os.path.isdir(by_client)
    try:
        os.makedirs(by_client, exist_ok=True)
        with contextlib.ExitStack() as stack:  # every rename happens at the end, after all writes
            for client, acc in items:
                tmp = stack.enter_context(atomic_path(os.path.join(by_client, f"{client}.counts")))
                with open(tmp, "w", encoding="utf-8", newline="\n") as stream:
                    write_counts(stream, metas[client], acc.counts)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(by_client)
        raise
    return clipped, units


#: the default grid of --max-l1 (counts are floored onto its multiples)
DEFAULT_GRID = 2.0 ** -10


@dataclass
class CountSettings:
    """The settings of ``count-unigrams`` (its options by their Python names).

    ``sigma`` is the rank kernel's bandwidth (000 Eq. 3), ``max_l1`` the per-unit L1 bound in
    pseudo-counts (None: no bound), ``grid`` the step counts are floored onto. ``output``:
    the counts file (``-`` = stdout; None = write nothing, return the counts only).
    """

    input: str = "-"
    text: bool = False
    ids: bool = False
    sigma: float = 5.0
    top: int | None = None
    by_client: str | None = None
    utt2client: str | None = None
    unit: str = "utterance"
    max_l1: float | None = None
    grid: float = DEFAULT_GRID
    partition: str | None = None
    public: bool = False
    output: str | None = "-"
    drop_tokens: str | None = None  # tokens that are not words (asrpriv.io.tokens SPEC)


@dataclass
class CountResult:
    """What ``count-unigrams`` made: client ("" when not split) -> (metadata, counts), and
    the exact (un-noised, private) numbers of units and of clipped units."""

    files: dict[str, tuple[dict[str, str], dict[str, float]]]
    units: int
    clipped: int


def check_count_settings(s: CountSettings) -> dict:
    """Every check of count-unigrams' settings (before any input is read); returns the
    labels (``partition``, ``public``) for the metadata."""
    import math

    if s.unit not in ("utterance", "client"):
        raise AsrprivError(f"{arg('unit')} must be 'utterance' or 'client', got {s.unit!r}")
    if s.top is not None and s.top < 1:
        raise AsrprivError(f"{arg('top')} must be >= 1, got {s.top}")
    if not (math.isfinite(s.sigma) and s.sigma > 0):
        raise AsrprivError(f"{arg('sigma')} must be a finite number > 0, got {s.sigma}")
    if s.max_l1 is not None and not (math.isfinite(s.max_l1) and s.max_l1 > 0):
        raise AsrprivError(f"{arg('max_l1')} must be a finite number > 0, got {s.max_l1}")
    if not (math.isfinite(s.grid) and s.grid > 0):
        raise AsrprivError(f"{arg('grid')} must be a finite number > 0, got {s.grid}")
    if s.max_l1 is not None and s.max_l1 / s.grid > 2.0 ** 52:
        raise AsrprivError(f"{arg('max_l1')} / {arg('grid')} must be at most 2^52 grid steps (exact float sums), "
                           f"got {s.max_l1 / s.grid:.3g}")
    labels: dict = {}
    if s.partition is not None:
        from asrpriv.privacy.history import check_partition

        try:
            if "," in s.partition:
                raise ValueError("give one label (no comma)")
            if not s.partition:  # check_partition reads '' as "no labels"; aggregate refuses it
                raise ValueError("expected a label, got an empty one")
            check_partition(s.partition)
        except ValueError as err:
            raise AsrprivError(f"{arg('partition')}: {err}") from None
        if s.public:
            raise AsrprivError(f"{arg('partition')} labels private data; {arg('public')} data needs none")
        labels["partition"] = s.partition
    if s.public:
        labels["public"] = 1
    if s.ids and not s.text:
        raise AsrprivError(f"{arg('ids')} applies to {arg('text')} input only")
    return labels


def count_unigrams(s: CountSettings, warn: Callable[[str], None] | None = None) -> CountResult:
    """The step ``count-unigrams``: unigram pseudo-counts of an N-best TSV (each hypothesis of
    rank r adds K(r) c_s(w), 000 Eq. 3-5) or of text (``text``: each word weighs 1), clipped
    per unit to ``max_l1`` (L1) when given; written to ``output`` (or one file per client in
    ``by_client``) unless ``output`` is None. Bad settings raise :class:`AsrprivError`, bad
    input :class:`InputError` (file and line)."""
    import dataclasses

    if warn is None:
        from asrpriv.talk import warn
    labels = check_count_settings(s)
    s = dataclasses.replace(s, sigma=float(s.sigma), grid=float(s.grid),  # as metadata: 15.0
                            max_l1=None if s.max_l1 is None else float(s.max_l1))
    client_of = None
    if s.utt2client:
        from asrpriv.io.kaldi import read_map

        client_of = read_map(s.utt2client, "client")
    if s.text and (s.by_client or s.unit == "client") and not (s.ids and client_of):
        raise AsrprivError(f"{arg('by_client')} and {arg('unit')} client on text need {arg('ids')} and {arg('utt2client')}")
    if s.by_client and s.output not in ("-", None):
        raise AsrprivError(f"{arg('by_client')} writes DIR/<client>.counts; do not combine it with -o")

    def make_accumulator() -> CountAccumulator:
        return CountAccumulator(s.max_l1, s.grid)

    from asrpriv.io.tokens import parse_drop

    drop = parse_drop(s.drop_tokens)
    if s.text:
        result = count_text(s.input, s.ids, client_of, s.unit, s.by_client is not None,
                            make_accumulator, warn=warn, drop=drop)
        settings: dict = {"source": "text"}
    else:
        result = count_nbest(s.input, s.sigma, s.top, client_of, s.unit, s.by_client is not None,
                             make_accumulator, drop=drop)
        settings = {"source": "nbest", "sigma": s.sigma, "top": s.top}
    bound = {"unit": s.unit, "max_l1": s.max_l1, "grid": s.grid} if s.max_l1 is not None else {}
    settings = {**settings, **bound, **labels}
    if s.output is not None:
        clipped, units = write_outputs(result, s.output, s.by_client, settings)
    else:
        clipped = sum(acc.clipped_units for acc in result.values())
        units = sum(acc.units for acc in result.values())
    metas = output_metas(result, settings, s.by_client is not None)
    files = {client: (metas[client], acc.counts) for client, acc in sorted(result.items())}
    return CountResult(files, units, clipped)
