"""Selections from the house text files: N-best TSVs and Kaldi text (``select-nbest``,
``select-text``).

What a batch job needs between two steps -- the clients of an N-best list, the rows of some
clients, each utterance's best hypothesis, the references of the utterances of a list, a
line sample of a corpus of about N words, its vocabulary -- done once here, so that recipes
do not parse these files themselves (columns are found by name, never by position).

Line numbers are 1-based and count every line (blank ones too), as ``awk``'s ``NR``; a
"word" of Kaldi text is every white-space field after the utterance id.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable as _Iterable
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, Sequence

from asrpriv.errors import AsrprivError, InputError, arg
from asrpriv.io.lines import iter_lines
from asrpriv.io.nbest import NbestReader, write_header, write_rows

# ---------------------------------------------------------------------------- N-best TSV


def clients_of(path: str) -> list[str]:
    """The distinct values of the ``client`` column, sorted (code-point order)."""
    reader = NbestReader(path)
    if "client" not in reader.index:
        raise InputError(path, 1, "no 'client' column")
    return sorted({utt.client for utt in reader})


def every_kth(items: list[str], k: int, others: bool = False) -> list[str]:
    """Items 1, k+1, 2k+1, ... (1-based), or with ``others`` every item but those."""
    if k < 1:
        raise AsrprivError(f"{arg('every')} must be >= 1, got {k}")
    return [x for i, x in enumerate(items) if (i % k == 0) != others]


def contiguous_part(items: list[str], part: int, parts: int) -> list[str]:
    """Part ``part`` (1-based) of ``parts`` contiguous parts of ``items``: items
    floor((part-1) n / parts) .. floor(part n / parts) - 1 (0-based), n = len(items)."""
    if not 1 <= part <= parts:
        raise AsrprivError(f"{arg('part')} must be between 1 and {arg('parts')} ({parts}), "
                           f"got {part}")
    n = len(items)
    return items[(part - 1) * n // parts:part * n // parts]


def select_utterances(path: str, clients: set[str] | None = None,
                      exclude: set[str] = frozenset(), max_per_client: int | None = None,
                      ) -> tuple[NbestReader, Iterator]:
    """The N-best utterances of ``path`` of the kept clients (all when ``clients`` is None,
    minus ``exclude``), the first ``max_per_client`` of each client (file order)."""
    reader = NbestReader(path)
    if (clients is not None or exclude or max_per_client) and "client" not in reader.index:
        raise InputError(path, 1, "no 'client' column: cannot select by client")

    def utterances():
        seen: dict[str, int] = {}
        for utt in reader:
            if clients is not None or exclude or max_per_client:
                if (clients is not None and utt.client not in clients) or utt.client in exclude:
                    continue
                n = seen[utt.client] = seen.get(utt.client, 0) + 1
                if max_per_client and n > max_per_client:
                    continue
            yield utt

    return reader, utterances()


def write_nbest(reader: NbestReader, utterances: Iterable, out: IO[str],
                top: int | None = None) -> int:
    """Write the header and the rows of ``utterances`` (best ``top`` of each by rank); returns
    the number of utterances."""
    write_header(out, reader.columns)
    n = 0
    for utt in utterances:
        write_rows(out, (h.values for h in (utt.hyps[:top] if top else utt.hyps)))
        n += 1
    return n


def best_lines(reader: NbestReader, utterances: Iterable) -> Iterator[str]:
    """Kaldi text lines (``utt_id text``) of each utterance's best hypothesis (rank 1, else
    the first row)."""
    for utt in utterances:
        yield f"{utt.utt_id} {reader.column(utt.hyps[0], 'text')}\n"


def reference_lines(utterances: Iterable, ref_path: str) -> Iterator[str]:
    """The lines of the Kaldi text ``ref_path`` whose utterance is among ``utterances``, as
    they are, in the reference's order."""
    from asrpriv.io.kaldi import text_lines

    wanted = {utt.utt_id for utt in utterances}
    for _lineno, line in text_lines(ref_path):
        fields = line.split(None, 1)
        if fields and fields[0] in wanted:
            yield line + "\n"


def reference_rows(reader: NbestReader, utterances: Iterable, ref_path: str) -> Iterator[str]:
    """An N-best TSV (``utt_id client rank text``) with each utterance's reference as its only
    hypothesis (rank 1), in the reference's order: text trained on instead of the 1-best."""
    from asrpriv.io.kaldi import text_lines

    client = {utt.utt_id: (utt.client or "") for utt in utterances}
    yield "utt_id\tclient\trank\ttext\n"
    for _lineno, line in text_lines(ref_path):
        fields = line.split()
        if fields and fields[0] in client:
            yield f"{fields[0]}\t{client[fields[0]]}\t1\t{' '.join(fields[1:])}\n"


@dataclass
class SelectNbestSettings:
    """The settings of ``select-nbest`` (one step entry: :func:`select_nbest`).

    Attributes:
        input: the N-best TSV (``-`` = stdin); columns are found by name.
        clients / exclude_clients: keep only / drop these clients (a comma- or space-separated
            string, or names); None keeps every client.
        max_per_client: each client's first N utterances (file order).
        top: the first N hypotheses of each utterance (by rank), in the TSV output only.
        best / references / reference_rows / list_clients: what to write instead of the TSV
            rows (at most one): each utterance's best hypothesis as Kaldi text, the lines of the
            Kaldi text ``references``, an N-best TSV of the references of ``reference_rows``,
            or the distinct clients, sorted.
        every / others: with ``list_clients``, the 1st, (K+1)th, ... client, or the others.
        part / parts: with ``list_clients``, then part I of K contiguous parts of the list:
            of n clients, part I holds clients floor((I-1) n / K) + 1 .. floor(I n / K)
            (1-based; K = 2: the first half, rounded down, and the rest).
        first: with ``list_clients``, then only the first N clients (all when fewer).
        utt2client: with ``list_clients``, a Kaldi map (``utt_id client``) whose clients are
            listed instead of the TSV's client column (e.g. ``adapt/utt2spk``: speakers, the
            unit of user-level DP); every selected utterance must be in it.
        output: where to write (``-`` = stdout; a file is written atomically).
    """

    input: str = "-"
    clients: str | Iterable[str] | None = None
    exclude_clients: str | Iterable[str] | None = None
    max_per_client: int | None = None
    top: int | None = None
    best: bool = False
    references: str | None = None
    reference_rows: str | None = None
    list_clients: bool = False
    every: int | None = None
    others: bool = False
    part: int | None = None
    parts: int | None = None
    first: int | None = None
    utt2client: str | None = None
    output: str = "-"
    #: ``kaldi``: with ``best`` or ``references``, ``output`` is a Kaldi wspecifier and the
    #: lines are written as a table (of word ids with ``words``, a words.txt)
    out_format: str = "text"
    words: str | None = None


@dataclass
class SelectResult:
    """What a selection wrote: ``written`` records (utterances, lines or clients) to ``output``."""

    output: str
    written: int


def _names(value: str | Iterable[str] | None) -> set[str] | None:
    """Client names from ``"a,b c"`` or an iterable of names (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        return set(value.replace(",", " ").split())
    if not isinstance(value, _Iterable):
        raise AsrprivError(f"expected client names, got {type(value).__name__}")
    return {str(v) for v in value}


def _at_least_one(**values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise AsrprivError(f"{arg(name)} must be >= 1, got {value}")


def _write_lines(out: IO[str], lines: Iterable[str]) -> int:
    n = 0
    for line in lines:
        out.write(line)
        n += 1
    return n


def _pick_clients(names: list[str], s: SelectNbestSettings) -> list[str]:
    """The listed clients after ``every``/``others``, then ``part`` of ``parts``, then ``first``."""
    if s.every:
        names = every_kth(names, s.every, s.others)
    if s.parts:
        names = contiguous_part(names, s.part, s.parts)
    if s.first:
        names = names[:s.first]
    return names


def select_nbest(s: SelectNbestSettings) -> SelectResult:
    """``select-nbest``: the rows of some clients of an N-best TSV (an N-best TSV with the
    input's header), or of the selected utterances the 1-best text, the references, reference
    rows or the clients; see :class:`SelectNbestSettings`. Every check is here (AsrprivError;
    InputError with file and line)."""
    from asrpriv.io.output import open_output

    modes = [m for m, on in ((arg("best"), s.best), (arg("references"), s.references),
                             (arg("reference_rows"), s.reference_rows),
                             (arg("list_clients"), s.list_clients)) if on]
    if len(modes) > 1:
        raise AsrprivError(f"give one of {', '.join(modes)}")
    if (s.every or s.others) and not s.list_clients:
        raise AsrprivError(f"{arg('every')} and {arg('others')} apply to {arg('list_clients')}")
    if s.others and not s.every:
        raise AsrprivError(f"{arg('others')} needs {arg('every')} K")
    if (s.part is None) != (s.parts is None):
        raise AsrprivError(f"{arg('part')} and {arg('parts')} go together")
    if (s.parts or s.first) and not s.list_clients:
        raise AsrprivError(f"{arg('part')} and {arg('first')} apply to {arg('list_clients')}")
    if s.utt2client and not s.list_clients:
        raise AsrprivError(f"{arg('utt2client')} applies to {arg('list_clients')}")
    if s.top and modes:
        raise AsrprivError(f"{arg('top')} selects rows of the TSV output, not of {modes[0]}")
    _at_least_one(max_per_client=s.max_per_client, top=s.top, every=s.every, part=s.part,
                  parts=s.parts, first=s.first)
    keep = _names(s.clients)
    drop = _names(s.exclude_clients) or set()
    if s.out_format == "kaldi" and not (s.best or s.references):
        raise AsrprivError("--out-format kaldi applies to --best and --references (Kaldi text)")
    if s.words is not None and s.out_format != "kaldi":
        raise AsrprivError("--words applies to --out-format kaldi")
    reader, utterances = select_utterances(s.input, keep, drop, s.max_per_client)
    if s.out_format == "kaldi":
        from asrpriv.io.kaldi import write_lines

        lines = (best_lines(reader, utterances) if s.best
                 else reference_lines(utterances, s.references))
        return SelectResult(s.output, write_lines(s.output, lines, s.words))
    with open_output(s.output) as out:
        if s.best:
            n = _write_lines(out, best_lines(reader, utterances))
        elif s.references:
            n = _write_lines(out, reference_lines(utterances, s.references))
        elif s.reference_rows:
            n = _write_lines(out, reference_rows(reader, utterances, s.reference_rows)) - 1
        elif s.list_clients and s.utt2client:
            from asrpriv.io.kaldi import read_map

            client_of = read_map(s.utt2client, "client")
            utterances = list(utterances)
            missing = [utt.utt_id for utt in utterances if utt.utt_id not in client_of]
            if missing:
                raise InputError(s.utt2client, None, f"utterance {missing[0]!r} of {s.input} has "
                                                     f"no client ({len(missing)} such)")
            names = sorted({client_of[utt.utt_id] for utt in utterances})
            n = _write_lines(out, (f"{name}\n" for name in _pick_clients(names, s)))
        elif s.list_clients:
            if "client" not in reader.index:
                raise InputError(s.input, 1, "no 'client' column")
            names = sorted({utt.client for utt in utterances})
            n = _write_lines(out, (f"{name}\n" for name in _pick_clients(names, s)))
        else:
            n = write_nbest(reader, utterances, out, s.top)
    return SelectResult(s.output, n)


# ---------------------------------------------------------------------------- Kaldi text


def words_of(line: str, ids: bool) -> int:
    """Words of one line (fields after the id with ``ids``)."""
    n = len(line.split())
    return max(n - 1, 0) if ids else n


def count_words(path: str, ids: bool = True) -> int:
    """Words of a text file (fields after the id of each line with ``ids``)."""
    from asrpriv.io.kaldi import text_lines

    return total_words((line for _n, line in text_lines(path)), ids)


def sample_step(words: int, max_words: int) -> int:
    """k of the every-k-th-line sample of about ``max_words`` of ``words`` words:
    ceil(words / max_words), at least 1."""
    if max_words < 1:
        raise AsrprivError(f"{arg('max_words')} must be >= 1, got {max_words}")
    return max(1, -(-words // max_words))


def select_lines(path: str, ids: bool = True, id_regex: str | None = None,
                 exclude_regex: str | None = None, every: int | None = None,
                 drop_every: int | None = None, max_words_per_line: int | None = None,
                 words: str | None = None) -> list[str]:
    """The lines of a (Kaldi) text file that pass every filter given, in file order.

    ``path`` may be a Kaldi table or a lhotse manifest (:func:`asrpriv.io.kaldi.text_lines`;
    ``words``: the symbol table of a table of word ids).

    Args:
        id_regex / exclude_regex: keep lines whose first field matches / does not match
            (``re.search``: anchor with ``^``).
        max_words_per_line: keep lines of at most this many words (:func:`words_of`), with
            the id filters (before the numbering of ``every`` / ``drop_every``).
        every: keep lines every, 2*every, ... (numbered over the lines the id filters kept).
        drop_every: drop those lines instead.
    """
    keep = _compile(id_regex, arg("id_regex"))
    drop = _compile(exclude_regex, arg("exclude_id_regex"))
    for name, k in ((arg("every"), every), (arg("drop_every"), drop_every)):
        if k is not None and k < 1:
            raise AsrprivError(f"{name} must be >= 1, got {k}")
    if max_words_per_line is not None and max_words_per_line < 0:
        raise AsrprivError(f"{arg('max_words_per_line')} must be >= 0, got {max_words_per_line}")
    from asrpriv.io.kaldi import text_lines

    out = []
    n = 0  # lines that passed the id filters
    for _lineno, line in text_lines(path, words):
        if keep or drop:
            first = line.split(None, 1)[0] if line.split() else ""
            if (keep and not keep.search(first)) or (drop and drop.search(first)):
                continue
        if max_words_per_line is not None and words_of(line, ids) > max_words_per_line:
            continue
        n += 1
        if every and n % every:
            continue
        if drop_every and n % drop_every == 0:
            continue
        out.append(line)
    return out


def sample_lines(lines: list[str], max_words: int, ids: bool = True, words: int | None = None,
                 spread: bool = False) -> list[str]:
    """About ``max_words`` words of ``lines``, taken evenly over them.

    Default: every k-th line (the k-th, 2k-th, ...), k = :func:`sample_step` of ``words``
    (default: the words of ``lines``; give another file's so that two files are cut alike).
    ``spread``: line i (1-based) is kept when floor(i r) > floor((i - 1) r), r = max_words /
    words (every line when r >= 1).
    """
    total = total_words(lines, ids) if words is None else words
    if spread:
        if total <= 0:
            return list(lines)
        r = max_words / total
        if r >= 1:
            return list(lines)
        return [line for i, line in enumerate(lines, 1) if math.floor(i * r) > math.floor((i - 1) * r)]
    k = sample_step(total, max_words)
    return [line for i, line in enumerate(lines, 1) if i % k == 0]


def vocabulary(lines: Iterable[str], ids: bool = True) -> list[str]:
    """The distinct words of ``lines``, sorted (code-point order)."""
    words: set[str] = set()
    for line in lines:
        fields = line.split()
        words.update(fields[1:] if ids else fields)
    return sorted(words)


def total_words(lines: Iterable[str], ids: bool = True) -> int:
    """The words of ``lines``."""
    return sum(words_of(line, ids) for line in lines)


def map_lines(lines: Iterable[str], class_map, ids: bool = True) -> Iterator[str]:
    """``lines`` with every member word of ``class_map``
    (:class:`asrpriv.io.classes.ClassMap`) replaced by its class token; fields joined by
    one space."""
    for line in lines:
        fields = line.split()
        head, words = (fields[:1], fields[1:]) if ids else ([], fields)
        yield " ".join(head + list(class_map.map_words(words))) + "\n"


@dataclass
class SelectTextSettings:
    """The settings of ``select-text`` (one step entry: :func:`select_text`).

    Filters apply in this order: ``id_regex`` / ``exclude_id_regex`` (``re.search`` on the
    first field), ``max_words_per_line`` (lines of at most N words), ``every`` / ``drop_every`` (keep / drop lines K, 2K, ... of those kept),
    ``max_words`` (about N words, lines taken evenly: every k-th line, or with ``spread``
    line i when floor(i r) > floor((i-1) r); W = the words of ``words_of`` if given). The
    output is the lines, or (at most one of) their word count (``count_words``), vocabulary
    (``vocab``) or the lines with member words replaced by the class tokens of the membership
    file ``classes`` (train-ngram --classes).
    """

    input: str = "-"
    ids: bool = True
    id_regex: str | None = None
    exclude_id_regex: str | None = None
    max_words_per_line: int | None = None
    every: int | None = None
    drop_every: int | None = None
    max_words: int | None = None
    words_of: str | None = None
    spread: bool = False
    count_words: bool = False
    vocab: bool = False
    classes: str | None = None
    output: str = "-"
    #: ``kaldi``: ``output`` is a Kaldi wspecifier (``ark,t:FILE``, ``ark:| gzip -c > x.gz``,
    #: ``ark,scp:A.ark,A.scp``) and the selected lines are written as a table, of word ids
    #: with ``words`` (a words.txt; binary unless ``t``); ``words`` also maps the word ids
    #: of an input Kaldi table
    out_format: str = "text"
    words: str | None = None
    #: the split by whole meetings (:func:`asrpriv.io.meetings.split_meetings`, paper 003's
    #: sets): with ``split_dir``, the input is split into that folder (train, heldout and
    #: adapt<F> as ``.txt`` and ``_ne.tsv``, and ``split.json``) instead of selected: the rows
    #: of the span TSV ``spans`` follow their lines; ``heldout_share`` % of all words are held
    #: out, ``adapt_shares`` (percents of T, e.g. "12 15 20") give the nested adaptation sets;
    #: ``seed`` shuffles the meetings
    split_dir: str | None = None
    spans: str | None = None
    heldout_share: float | None = None
    adapt_shares: str | Sequence[int] | None = None
    seed: int | None = None


def _split_text(s: SelectTextSettings) -> SelectResult:
    """``select-text --split-dir``: :func:`asrpriv.io.meetings.split_meetings`; ``written``: the
    lines of the input's meetings (every non-blank line), ``output``: the folder."""
    from asrpriv.io.meetings import split_counted

    others = [arg(name) for name, on in (
        ("id_regex", s.id_regex), ("exclude_id_regex", s.exclude_id_regex),
        ("max_words_per_line", s.max_words_per_line is not None), ("every", s.every),
        ("drop_every", s.drop_every), ("max_words", s.max_words), ("count_words", s.count_words),
        ("vocab", s.vocab), ("classes", s.classes), ("words", s.words),
        ("output", s.output not in (None, "-")), ("out_format", s.out_format != "text"),
        ("ids", not s.ids)) if on]
    if others:
        raise AsrprivError(f"{arg('split_dir')} writes its own files and takes no other selection: "
                           f"drop {', '.join(others)}")
    missing = [arg(name) for name, v in (("spans", s.spans), ("heldout_share", s.heldout_share),
                                         ("adapt_shares", s.adapt_shares), ("seed", s.seed)) if v is None]
    if missing:
        raise AsrprivError(f"{arg('split_dir')} needs {', '.join(missing)}")
    shares = s.adapt_shares.split() if isinstance(s.adapt_shares, str) else list(s.adapt_shares)
    try:
        fractions = [int(f) for f in shares]
    except ValueError:
        raise AsrprivError(f"{arg('adapt_shares')}: whole percents, e.g. \"12 15 20\"; got "
                           f"{s.adapt_shares!r}") from None
    _stats, lines = split_counted(s.input, s.spans, s.split_dir, s.seed, s.heldout_share, fractions)
    return SelectResult(s.split_dir, lines)


def select_text(s: SelectTextSettings) -> SelectResult:
    """``select-text``: select lines of (Kaldi) text and write them, or their word count,
    vocabulary or class-mapped text; see :class:`SelectTextSettings`. ``written``: the lines
    selected."""
    from asrpriv.io.output import open_output

    if s.split_dir is not None:
        return _split_text(s)
    split_only = [arg(name) for name in ("spans", "heldout_share", "adapt_shares", "seed")
                  if getattr(s, name) is not None]
    if split_only:
        raise AsrprivError(f"{', '.join(split_only)} apply to {arg('split_dir')}")
    if sum(map(bool, (s.count_words, s.vocab, s.classes))) > 1:
        raise AsrprivError(f"give one of {arg('count_words')}, {arg('vocab')}, {arg('classes')}")
    if (s.words_of or s.spread) and not s.max_words:
        raise AsrprivError(f"{arg('words_of')} and {arg('spread')} apply to {arg('max_words')}")
    _at_least_one(max_words=s.max_words)
    from asrpriv.io import kaldi_tables

    table_in = kaldi_tables.is_specifier(s.input)
    if s.words is not None and not table_in and s.out_format != "kaldi":
        raise AsrprivError("--words applies to a Kaldi table input or --out-format kaldi")
    lines = select_lines(s.input, s.ids, s.id_regex, s.exclude_id_regex, s.every, s.drop_every,
                         s.max_words_per_line, s.words if table_in else None)
    if s.max_words:
        total = count_words(s.words_of, s.ids) if s.words_of else None
        lines = sample_lines(lines, s.max_words, s.ids, total, s.spread)
    if s.out_format == "kaldi":
        if s.count_words or s.vocab:
            raise AsrprivError("--out-format kaldi writes lines (not --count-words or --vocab)")
        from asrpriv.io.kaldi import write_lines

        if s.classes:
            from asrpriv.io.classes import read_class_map

            lines = [line.rstrip("\n") for line in map_lines(lines, read_class_map(s.classes), s.ids)]
        if not s.ids:
            raise AsrprivError("--out-format kaldi needs --ids (a table is keyed by utterance id)")
        write_lines(s.output, lines, s.words)
        return SelectResult(s.output, len(lines))
    if s.output not in (None, "-"):
        if kaldi_tables.is_specifier(s.output):
            raise AsrprivError(f"-o {s.output}: a Kaldi wspecifier needs --out-format kaldi")
    with open_output(s.output) as out:
        if s.count_words:
            out.write(f"{total_words(lines, s.ids)}\n")
        elif s.vocab:
            out.writelines(f"{w}\n" for w in vocabulary(lines, s.ids))
        elif s.classes:
            from asrpriv.io.classes import read_class_map

            out.writelines(map_lines(lines, read_class_map(s.classes), s.ids))
        else:
            out.writelines(f"{line}\n" for line in lines)
    return SelectResult(s.output, len(lines))


def _compile(pattern: str | None, option: str):
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as err:
        raise AsrprivError(f"{option}: bad regular expression {pattern!r}: {err}") from None


# ---------------------------------------------------------------------------- JSON reports


def pick_lowest(candidates: list[tuple[str, str]], key: str) -> tuple[str, list[float], bool]:
    """The label whose JSON report (``score-wer --format json``, ``perplexity --json``...) has
    the lowest number under ``key``; ties go to the first.

    Args:
        candidates: (label, report path) in grid order.

    Returns:
        (best label, every candidate's value, whether the best is the first or last of two or
        more candidates: on the edge of the grid).
    """
    import json

    if not candidates:
        raise AsrprivError("no candidate given (LABEL=REPORT ...)")
    values = []
    for label, path in candidates:
        text = "\n".join(line for _n, line in iter_lines(path))
        try:
            report = json.loads(text)
        except ValueError as err:
            raise InputError(path, None, f"not a JSON report: {err}") from None
        except RecursionError:
            raise InputError(path, None, "not a JSON report: nested too deeply") from None
        value = report.get(key) if isinstance(report, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError(path, None, f"no finite number under {key!r}")
        values.append(float(value))
    best = min(range(len(values)), key=lambda i: (values[i], i))
    return candidates[best][0], values, on_grid_edge(best, len(values))


def lowest_mean(candidates: list[tuple[str, list[float]]]) -> tuple[str, float, bool]:
    """``pick-best``'s rule over candidates with several values each (noise draws): the label
    with the lowest mean, that mean, and whether it lies on the edge of the grid. CANDIDATES:
    (label, its values), in grid order; ties go to the first."""
    if not candidates:
        raise ValueError("lowest_mean: no candidate")
    means = [sum(v) / len(v) for _label, v in candidates]
    best = min(range(len(means)), key=lambda i: (means[i], i))
    return candidates[best][0], means[best], on_grid_edge(best, len(means))


def on_grid_edge(position: int, size: int) -> bool:
    """The grid-edge rule of every step that chooses on a grid (``pick-best``,
    ``tune-weights``): the choice is the first or the last of two or more grid points, so
    the optimum may lie beyond the grid."""
    return size > 1 and position in (0, size - 1)


@dataclass
class PickSettings:
    """The settings of ``pick-best`` (one step entry: :func:`pick_best`).

    Attributes:
        candidates: ``"LABEL=REPORT"`` strings or (label, report path) pairs, in grid order.
        key: the number compared, lowest wins (``wer``, ``ppl``, ...).
        name: what the labels are (e.g. ``lambda``), for the messages.
        output: where the best label is written (``-`` = stdout).
    """

    candidates: Iterable[str | tuple[str, str]] = ()
    key: str = "wer"
    name: str = "setting"
    output: str = "-"


@dataclass
class PickResult:
    """The best label, every candidate (label, value) in grid order, and whether the best is
    on the edge of the grid (the first or last of two or more)."""

    best: str
    values: list[tuple[str, float]]
    edge: bool
    key: str
    name: str

    def summary(self) -> str:
        """The line ``pick-best`` says on stderr."""
        return (f"pick-best: {self.name} "
                + ", ".join(f"{label}: {self.key} {v:.6g}" for label, v in self.values)
                + f"; best {self.best}")

    def edge_warning(self) -> str | None:
        """The warning when the best lies on the edge of the grid (else None)."""
        if not self.edge:
            return None
        return (f"best {self.name} {self.best} on the edge of the grid "
                f"({' '.join(label for label, _ in self.values)}): consider widening it")


def parse_candidate(arg: str | tuple[str, str]) -> tuple[str, str]:
    """``"LABEL=REPORT"`` (or a pair) -> (label, path)."""
    if isinstance(arg, tuple):
        label, path = arg
        sep = "="
    else:
        label, sep, path = str(arg).partition("=")
    if not sep or not label or not path:
        raise AsrprivError(f"expected LABEL=REPORT, got {arg!r}")
    return str(label), str(path)


def pick_best(s: PickSettings) -> PickResult:
    """``pick-best``: write the label whose JSON report has the lowest ``key`` (ties: the
    first given); see :class:`PickSettings` and :func:`pick_lowest`."""
    from asrpriv.io.output import open_output

    pairs = [parse_candidate(arg) for arg in s.candidates]
    best, values, edge = pick_lowest(pairs, s.key)
    with open_output(s.output) as out:
        out.write(f"{best}\n")
    return PickResult(best, [(label, v) for (label, _), v in zip(pairs, values)], edge,
                      s.key, s.name)
