"""sclite's time-marked formats: ``stm`` references and ``ctm`` hypotheses.

stm (reference): ``file channel speaker begin end [<label>] word ...`` per segment, ``;;``
comment lines. A segment whose text is ``IGNORE_TIME_SEGMENT_IN_SCORING`` is out of bounds:
hypothesis words falling in it are dropped. With ``optional_deletable`` (sclite ``-D``), a
reference word in parentheses, ``(uh)``, is optionally deletable: deleting it counts as
correct, as does matching it; it stays in the reference word count (sclite's ``# Wrd``).
Without it, ``(uh)`` is a word like any other, as in sclite without ``-D``. ``%HESITATION``
is an ordinary word (sclite gives it no meaning without a GLM filter). Transcript
alternations ``{ a / b / @ }`` are scored as in trn (:mod:`asrpriv.wer.network`; not with
``-D``); word tags (``word;tag``) are stripped as sclite does.

ctm (hypothesis): ``file channel begin duration word [confidence [more fields]]``: as sclite
(``fillmrks.c``) reads it, fields after the word (confidence, and the type/speaker fields of
asclite's 8-field ctm) do not change the score; ctm alternations (``<ALT_BEGIN>``) are
refused. Words are chopped into
the stm segments of their file and channel (channels compared case-insensitively) as sclite
does: a word belongs to the first segment, in time order, whose end is after the
word's midpoint (so a word between two segments, or with its midpoint exactly on a
boundary, goes to the next one), and words after the last segment to the last one. Checked against sclite 2.4 (tests/test_score_wer_formats.py).

Segment ids (the utterance ids of reports): ``file-channel-BEGIN-END`` with times in
centiseconds, zero-padded to 7 digits.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from asrpriv.errors import InputError
from asrpriv.wer.transcripts import Normalizer, Transcript, decoded_lines

IGNORE = "IGNORE_TIME_SEGMENT_IN_SCORING"


@dataclass
class StmReference:
    """An stm file: the segments as a transcript, their speakers, optional flags, and times."""

    transcript: Transcript
    speakers: dict[str, str]
    optional: dict[str, list[bool]]
    #: (file, channel) -> sorted [(begin, end, segment id, or None for an ignored region)]
    segments: dict[tuple[str, str], list[tuple[float, float, str | None]]] = field(default_factory=dict)


def _time(text: str, path, lineno, what) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, lineno, f"{what}: expected seconds, got {text!r}") from None
    if not math.isfinite(value):  # NaN/inf times cannot be ordered or turned into segment ids
        raise InputError(path, lineno, f"{what}: expected a finite number of seconds, got {text!r}")
    return value


def segment_id(file: str, channel: str, begin: float, end: float) -> str:
    return f"{file}-{channel}-{round(begin * 100):07d}-{round(end * 100):07d}"


def read_stm(path: str, normalizer: Normalizer, optional_deletable: bool = False,
             encoding: str = "utf-8") -> StmReference:
    words: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    speakers: dict[str, str] = {}
    optional: dict[str, list[bool]] = {}
    segments: dict[tuple[str, str], list] = {}
    networks: dict[str, tuple] = {}
    for lineno, line in decoded_lines(path, encoding):
        if not line.strip() or line.lstrip().startswith(";;"):
            continue
        parts = line.split()
        if len(parts) < 5:
            raise InputError(path, lineno, "expected 'file channel speaker begin end [<label>] words...'")
        file, channel, speaker = parts[0], parts[1].lower(), parts[2]
        begin = _time(parts[3], path, lineno, "begin")
        end = _time(parts[4], path, lineno, "end")
        if end < begin:
            raise InputError(path, lineno, f"segment ends ({end}) before it begins ({begin})")
        toks = parts[5:]
        if toks and toks[0].startswith("<") and toks[0].endswith(">"):
            toks = toks[1:]
        key = (file, channel)
        if toks == [IGNORE]:
            segments.setdefault(key, []).append((begin, end, None))
            continue
        network = None
        text = " ".join(toks)
        if "{" in text or "}" in text:
            if optional_deletable:
                raise InputError(path, lineno, "alternations { a / b } together with -D "
                                 "(optionally deletable words) are not supported")
            from asrpriv.wer.network import parse_alternations, simplify

            def fold(ws: list[str]) -> list[str]:
                return normalizer.words([normalizer.line(w) for w in ws])

            toks, network = simplify(parse_alternations(text, path, lineno), fold)
            toks = toks or []
            flags = []
        else:
            if ";" in text:
                from asrpriv.wer.network import strip_all_tags

                toks = strip_all_tags(toks)
            if "@" in toks:
                toks = [t for t in toks if t != "@"]
            flags = []
            if optional_deletable:
                out = []
                for t in toks:
                    is_opt = len(t) > 2 and t.startswith("(") and t.endswith(")")
                    out.append(t[1:-1] if is_opt else t)
                    flags.append(is_opt)
                toks = out
            toks = [normalizer.line(t) for t in toks]
            if normalizer.strip_punct:
                kept = [(w, f) for w, f in zip(toks, flags or [False] * len(toks)) if normalizer.words([w])]
                toks = [normalizer.words([w])[0] for w, _f in kept]
                flags = [f for _w, f in kept]
        uid = segment_id(file, channel, begin, end)
        if uid in words:
            raise InputError(path, lineno, f"two segments of {file} {channel} at {begin}-{end}")
        words[uid], lines[uid], speakers[uid] = toks, lineno, speaker
        if network is not None:
            networks[uid] = network
        if any(flags):
            optional[uid] = flags
        segments.setdefault(key, []).append((begin, end, uid))
    for segs in segments.values():
        segs.sort(key=lambda s: (s[0], s[1]))
    return StmReference(Transcript(path, "stm", words, lines, networks), speakers, optional, segments)


def read_ctm(path: str, stm: StmReference, normalizer: Normalizer,
             encoding: str = "utf-8") -> Transcript:
    """Chop a ctm into the stm's segments (see the module docstring); ids are segment ids."""
    per_key: dict[tuple[str, str], list[tuple[float, int, str]]] = {}
    for lineno, line in decoded_lines(path, encoding):
        if not line.strip() or line.lstrip().startswith(";"):  # sclite fillmrks.c comment_char
            continue
        parts = line.split()
        if len(parts) < 5:
            raise InputError(path, lineno, "expected 'file channel begin duration word [confidence]'")
        if parts[4][:4].upper() == "<ALT":
            raise InputError(path, lineno, "ctm alternations (<ALT_BEGIN> ... <ALT_END>) are not supported")
        key = (parts[0], parts[1].lower())
        if key not in stm.segments:
            raise InputError(path, lineno, f"file {parts[0]} channel {parts[1]} has no segment in the reference stm")
        begin = _time(parts[2], path, lineno, "begin")
        dur = _time(parts[3], path, lineno, "duration")
        word = parts[4]
        if ";" in word:
            from asrpriv.wer.network import strip_tags

            word = strip_tags(word)
            if not word:
                continue
        per_key.setdefault(key, []).append((begin + dur / 2.0, lineno, normalizer.line(word)))
    words: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for key, items in per_key.items():
        segs = stm.segments[key]
        ends = [s[1] for s in segs]
        items.sort(key=lambda t: (t[0], t[1]))
        for mid, lineno, word in items:
            k = min(bisect.bisect_right(ends, mid), len(segs) - 1)
            uid = segs[k][2]
            if uid is None:
                continue
            words.setdefault(uid, []).append(word)
            lines.setdefault(uid, lineno)
    if normalizer.strip_punct:
        words = {u: normalizer.words(w) for u, w in words.items()}
    # every scored segment is present (an empty hypothesis where no word fell)
    for uid in stm.transcript.words:
        words.setdefault(uid, [])
        lines.setdefault(uid, 0)
    return Transcript(path, "ctm", words, lines)


def count_optional(ref, optional, hyp) -> tuple[int, int, int]:
    """``(S, D, I)`` of sclite's alignment when optional reference words may vanish (``-D``).

    sclite's programme (as :func:`asrpriv.wer.alignment.sclite_align`: substitution 4,
    insertion and deletion 3, match 0; ties to substitution/match, then deletion, then
    insertion, back-traced from the end) with the deletion of an optional word costing 2; a
    deleted optional word counts as correct. The cost 2 was found against Debian's sclite
    2.4.10 -D on 1,500 random utterances (all equal; with cost 3 and fewer-errors ties, 8
    differed in the S/D/I split), and tests/test_score_wer_differential.py keeps checking.
    """
    n, m = len(ref), len(hyp)
    cost = [3 * b for b in range(m + 1)]
    back = [bytearray([2] * (m + 1))]
    for a in range(1, n + 1):
        dc = 2 if optional[a - 1] else 3
        word = ref[a - 1]
        cur = [cost[0] + dc] + [0] * m
        row = bytearray(m + 1)
        row[0] = 1
        for b in range(1, m + 1):
            sub = cost[b - 1] + (0 if hyp[b - 1] == word else 4)
            dele = cost[b] + dc
            ins = cur[b - 1] + 3
            if sub <= dele and sub <= ins:
                cur[b] = sub
            elif dele < ins:
                cur[b] = dele
                row[b] = 1
            else:
                cur[b] = ins
                row[b] = 2
        back.append(row)
        cost = cur
    a, b = n, m
    subs = dels = ins = 0
    while a > 0 or b > 0:
        move = back[a][b] if a > 0 else 2
        if move == 0:
            a -= 1
            b -= 1
            subs += hyp[b] != ref[a]
        elif move == 1:
            a -= 1
            dels += not optional[a]
        else:
            b -= 1
            ins += 1
    return subs, dels, ins
