"""The items of a leakage audit (paper 004 §4.3): each speaker's utterances cut into subsets.

A speaker's utterances (in file, i.e. time, order) are cut into ``subsets`` contiguous parts
by words ("sub-talks"); item ``SPEAKER_k`` (k = 1..subsets) holds the utterances of part k,
at most ``max_words`` words of them (0 = all). Speakers need ``subsets * min_words`` words;
at most ``speakers`` are kept (0 = all), the most talkative first, half of them of each
gender where possible (the gender is the first letter of an AMI speaker id, F or M). Labels of
an item: its speaker, gender and meeting (the meeting of most of its utterances, 004's case 1
"talk"; ties: the first in sorted order).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from asrpriv.errors import AsrprivError, arg
from asrpriv.io.kaldi import read_map
from asrpriv.io.lines import iter_lines


@dataclass
class AuditItems:
    """utt2item: utterance -> item, in file order; labels: item -> (speaker, gender, meeting)."""

    speakers: list[str]
    utt2item: dict[str, str] = field(default_factory=dict)
    labels: dict[str, tuple[str, str, str]] = field(default_factory=dict)


@dataclass
class AuditItemsSettings:
    """The settings of ``audit-items`` (one step entry: :func:`audit_items`): the Kaldi
    ``text``, its ``utt2spk``, the output directory, and :func:`make_items`' knobs."""

    text: str
    utt2spk: str
    output_dir: str
    id_regex: str = "^(ES|IS|TS)"
    speakers: int = 0
    subsets: int = 4
    max_words: int = 0
    min_words: int = 100


def audit_items(s: AuditItemsSettings) -> AuditItems:
    """``audit-items``: check the settings, cut the items (:func:`make_items`) and write them
    (:func:`write_items`); returns the items."""
    for name, value, least in ((arg("speakers"), s.speakers, 0), (arg("subsets"), s.subsets, 1),
                               (arg("max_words"), s.max_words, 0), (arg("min_words"), s.min_words, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise AsrprivError(f"{name} must be a whole number >= {least}, got {value!r}")
    try:
        re.compile(s.id_regex)
    except re.error as err:
        raise AsrprivError(f"{arg('id_regex')}: bad regular expression {s.id_regex!r}: {err}") from None
    items = make_items(s.text, s.utt2spk, s.id_regex, s.speakers, s.subsets, s.max_words,
                       s.min_words)
    write_items(items, s.text, s.output_dir)
    return items


def make_items(text: str, utt2spk: str, id_regex: str = "^(ES|IS|TS)", speakers: int = 0,
               subsets: int = 4, max_words: int = 0, min_words: int = 100) -> AuditItems:
    """Cut the speakers of Kaldi ``text`` (utterances whose id matches ``id_regex`` and has a
    speaker in ``utt2spk``) into items, as the module doc says."""
    if subsets < 1:
        raise AsrprivError(f"{arg('subsets')} must be >= 1, got {subsets}")
    pattern = re.compile(id_regex)
    spk = read_map(utt2spk, "speaker")
    utts = []  # (utt, speaker, words), file order
    for _n, line in iter_lines(text):
        fields = line.split()
        if fields and pattern.search(fields[0]) and fields[0] in spk:
            utts.append((fields[0], spk[fields[0]], len(fields) - 1))
    total: dict[str, int] = {}
    for _u, s, n in utts:
        total[s] = total.get(s, 0) + n
    eligible = sorted((s for s, n in total.items() if n >= subsets * min_words),
                      key=lambda s: (-total[s], s))
    taken: dict[str, int] = {}
    chosen = []
    for s in eligible:
        g = s[:1]
        if speakers == 0 or taken.get(g, 0) < speakers / 2:
            taken[g] = taken.get(g, 0) + 1
            chosen.append(s)
    result = AuditItems(sorted(chosen))
    keep = set(chosen)
    seen: dict[str, int] = {}
    used: dict[str, int] = {}
    for u, s, n in utts:
        if s not in keep:
            continue
        k = int(subsets * seen.get(s, 0) / total[s]) + 1
        seen[s] = seen.get(s, 0) + n
        item = f"{s}_{k}"
        if max_words == 0 or used.get(item, 0) < max_words:
            used[item] = used.get(item, 0) + n
            result.utt2item[u] = item
    meetings: dict[str, dict[str, int]] = {}
    for u, item in result.utt2item.items():
        m = u.split("_")[0]
        meetings.setdefault(item, {})[m] = meetings.setdefault(item, {}).get(m, 0) + 1
    for item in sorted(meetings):
        best = min(meetings[item], key=lambda m: (-meetings[item][m], m))
        speaker = re.sub(r"_[0-9]+$", "", item)
        result.labels[item] = (speaker, speaker[:1], best)
    return result


def write_items(items: AuditItems, text: str, out_dir: str) -> None:
    """Write OUT_DIR/speakers, utt2item, items.tsv (an N-best-style TSV, client = item, for
    finetune-lm --by-client), items.txt (the items' Kaldi text) and labels.tsv."""
    from asrpriv.io.output import open_output

    os.makedirs(out_dir, exist_ok=True)
    path = lambda name: os.path.join(out_dir, name)  # noqa: E731
    with open_output(path("speakers")) as out:
        out.writelines(f"{s}\n" for s in items.speakers)
    with open_output(path("utt2item")) as out:
        out.writelines(f"{u} {item}\n" for u, item in items.utt2item.items())
    with open_output(path("items.tsv")) as tsv, open_output(path("items.txt")) as txt:
        tsv.write("utt_id\tclient\trank\ttext\n")
        for _n, line in iter_lines(text):
            fields = line.split()
            if fields and fields[0] in items.utt2item:
                tsv.write(f"{fields[0]}\t{items.utt2item[fields[0]]}\t1\t{' '.join(fields[1:])}\n")
                txt.write(line + "\n")
    with open_output(path("labels.tsv")) as out:
        out.write("item\tspeaker\tgender\tmeeting\n")
        out.writelines(f"{item}\t{s}\t{g}\t{m}\n" for item, (s, g, m) in sorted(items.labels.items()))
