"""``add-noise`` on counts files: the discrete Laplace release of paper 000 Eq. 8-9.

The mechanism itself is :func:`asrpriv.privacy.counts_mechanism.laplace_counts`; this module
reads and writes the files around it (seeded inputs refused, the public vocabulary read).
"""

from __future__ import annotations

from fractions import Fraction


def release_counts(meta: dict[str, str], counts: dict[str, float], name: str, vocab_path: str,
                   epsilon: Fraction, seed: int | None = None,
                   sensitivity: Fraction | None = None, clamp: bool = True,
                   allow_seeded: bool = False):
    """One epsilon-DP release of ``counts`` over the public vocabulary in ``vocab_path``.

    Args:
        meta, counts: the counts file's metadata and rows (``name``: its name in errors).
        epsilon: this release's epsilon (pure DP); the scale is sensitivity / epsilon.
        seed: None = the OS's secure source; an int makes the noise repeatable and NOT
            private (the output is marked seeded).
        sensitivity: overrides the recorded bound ``max_l1`` (recorded as an override).

    Returns:
        (new metadata, noisy counts, the mechanism's report).
    """
    from asrpriv.io.counts import read_wordlist
    from asrpriv.privacy.counts_mechanism import laplace_counts
    from asrpriv.privacy.randomness import noise_rng
    from asrpriv.unigram.meta import refuse_seeded

    refuse_seeded(name, meta, allow_seeded)
    vocab = read_wordlist(vocab_path)
    return laplace_counts(meta, counts, vocab, epsilon, noise_rng(seed), sensitivity,
                          clamp=clamp, seeded=seed is not None)


def release_counts_file(input_path: str, output: str, vocab_path: str, epsilon: Fraction,
                        seed: int | None = None, sensitivity: Fraction | None = None,
                        clamp: bool = True, allow_seeded: bool = False):
    """:func:`release_counts` from the counts file ``input_path`` (``-`` = stdin) to ``output``
    (written atomically); returns (new metadata, input metadata, report)."""
    from asrpriv.io.counts import read_counts, write_counts
    from asrpriv.io.output import open_output

    meta, counts = read_counts(input_path)
    name = input_path if input_path != "-" else "<stdin>"
    new_meta, noisy, report = release_counts(meta, counts, name, vocab_path, epsilon, seed,
                                             sensitivity, clamp, allow_seeded)
    with open_output(output) as stream:
        write_counts(stream, new_meta, noisy)
    return new_meta, meta, report
