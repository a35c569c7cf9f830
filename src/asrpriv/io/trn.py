"""sclite ``trn`` transcripts: ``word word ... (utt_id)`` per line."""

from __future__ import annotations

from asrpriv.errors import InputError


def parse_trn_line(line: str, path: str | None, lineno: int) -> tuple[str, list[str]]:
    """Split one trn line into ``(utt_id, words)``."""
    utt_id, text = parse_trn_text(line, path, lineno)
    return utt_id, text.split()


def parse_trn_text(line: str, path: str | None, lineno: int) -> tuple[str, str]:
    """Split one trn line into ``(utt_id, text before the id)``."""
    stripped = line.rstrip()
    if not stripped.endswith(")"):
        raise InputError(path, lineno, "unterminated trn id: expected the line to end with '(utt_id)'")
    start = stripped.rfind("(")
    if start < 0:
        raise InputError(path, lineno, "unterminated trn id: no '(' before the final ')'")
    utt_id = stripped[start + 1:-1].strip()
    if not utt_id or " " in utt_id:
        raise InputError(path, lineno, f"bad trn id {utt_id!r}")
    return utt_id, stripped[:start]
