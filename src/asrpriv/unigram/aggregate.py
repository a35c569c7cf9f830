"""Summing counts files with consistent metadata (paper 000, Eq. 6)."""

from __future__ import annotations

import os

from asrpriv.errors import AsrprivError, InputError
from asrpriv.io.counts import read_counts
from asrpriv.provenance import Inputs
from asrpriv.unigram.meta import merge


def sum_counts(parts: list[dict[str, float]]) -> dict[str, float]:
    """Word-wise sum. Exact for grid-valued (bounded) counts; otherwise float addition."""
    total: dict[str, float] = {}
    for counts in parts:
        for word, value in counts.items():
            total[word] = total.get(word, 0.0) + value
    return total


def _content_digest(meta: dict[str, str], counts: dict[str, float]) -> str:
    """A digest of a counts file's content (rows and the keys that describe the data; the
    version line aside), the same for a file and its copy."""
    import hashlib

    h = hashlib.sha256()
    for key in sorted(meta):
        if key != "version":
            h.update(f"#{key}={meta[key]}\n".encode())
    for word in sorted(counts):
        h.update(f"{word}\t{counts[word]!r}\n".encode())
    return h.hexdigest()


def _path_key(path: str) -> str:
    """The same file under any name (device and inode), for the same-file check."""
    try:
        st = os.stat(path)
        return f"file:{st.st_dev}:{st.st_ino}"
    except OSError:
        return f"name:{path}"


def aggregate_files(paths: list[str], disjoint: bool = False,
                    allow_empty: bool = False,
                    allow_seeded: bool = False,
                    refuse_copies: bool = True) -> tuple[dict[str, str], dict[str, float]]:
    """Read and sum counts files; ``-`` is stdin (at most once).

    Inputs with seeded (not private) noise are refused unless ``allow_seeded``; the sum of a
    seeded input stays marked seeded (its history says so). The same file twice, or two
    files with the same content (a copy under another name), are refused: the same data
    counted twice is not a larger sample (:func:`asrpriv.unigram.meta.merge` composes the
    bounds of different files). ``refuse_copies=False``: callers that sum files they wrote
    themselves, one per client (two clients may have the same counts), skip the content check
    (the same path twice is still refused).
    """
    if paths.count("-") > 1:
        raise AsrprivError("stdin ('-') can be read only once")
    metas = []
    parts = []
    inputs = Inputs(allow_seeded)
    seen: dict[str, str] = {}  # content digest -> input number
    for path in paths:
        meta, counts = read_counts(path, allow_empty=allow_empty)
        name = path if path != "-" else "<stdin>"
        inputs.add_counts(path, meta)
        digest = _content_digest(meta, counts) if refuse_copies else _path_key(path)
        if digest in seen:
            raise InputError(path, None, f"the same counts as input {seen[digest]} (the same "
                                         "file, or a copy): the same data cannot be summed twice")
        seen[digest] = str(len(seen) + 1)
        metas.append((name, meta))
        parts.append(counts)
    return merge(metas, disjoint), sum_counts(parts)


def aggregate_to_file(paths: list[str], output: str, disjoint: bool = False,
                      allow_empty: bool = False, allow_seeded: bool = False,
                      refuse_copies: bool = True) -> None:
    """``aggregate`` on counts: :func:`aggregate_files`, written atomically to ``output``."""
    from asrpriv.io.counts import write_counts
    from asrpriv.io.output import open_output

    meta, counts = aggregate_files(paths, disjoint, allow_empty, allow_seeded, refuse_copies)
    with open_output(output) as stream:
        write_counts(stream, meta, counts)
