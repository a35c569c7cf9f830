"""A small progress meter on stderr: shown only on a terminal and never with ``--quiet``."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts work done and redraws one stderr line at most every 0.2 s.

    Args:
        label: what is being counted ("utt", "tokens").
        total: the expected total, or None when unknown.
        enabled: None = decide from ``stderr.isatty()`` and ``--quiet``.
    """

    def __init__(self, label: str, total: int | None = None, enabled: bool | None = None) -> None:
        if enabled is None:
            from asrpriv.talk import is_quiet

            enabled = sys.stderr.isatty() and not is_quiet()
        self.label = label
        self.total = total
        self.enabled = enabled
        self.done = 0
        self.postfix = ""
        self._start = time.monotonic()
        self._last = 0.0

    def update(self, n: int = 1, postfix: str | None = None) -> None:
        self.done += n
        if postfix is not None:
            self.postfix = postfix
        if self.enabled:
            now = time.monotonic()
            if now - self._last >= 0.2:
                self._last = now
                self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The progress line: ``done/total label (pct%) rate/s elapsed ETA``, where the total
        is known; ``done label rate/s elapsed`` where it is not."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            head = f"{self.done}/{self.total} {self.label} ({100.0 * self.done / self.total:.0f}%)"
            left = max(self.total - self.done, 0)
            eta = f" ETA {format_seconds(left / rate)}" if rate > 0 else " ETA ?"
        else:
            head, eta = f"{self.done} {self.label}", ""
        tail = f" {self.postfix}" if self.postfix else ""
        return f"{head} {rate:.1f}/s {format_seconds(elapsed)}{eta}{tail}"

    def _draw(self, now: float) -> None:
        sys.stderr.write(f"\r{self.line(now)}\x1b[K")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            sys.stderr.write("\n")
            sys.stderr.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def format_seconds(seconds: float) -> str:
    """``42s``, ``3m07s``, ``2h05m``: a duration as a progress line shows it."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
