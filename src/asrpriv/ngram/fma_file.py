"""fma-adapt on ARPA files: counts in, adapted ARPA out (the step's library half)."""

from __future__ import annotations

from asrpriv.errors import arg


def adapt_arpa_file(arpa_path: str, adapt_path: str, output: str, beta: float = 0.5,
                    reversed_: bool = False, prior: float = 0.1,
                    background_path: str | None = None, oov_to_unk: bool = False,
                    precision: int | None = 7, allow_seeded: bool = False) -> None:
    """Adapt the ARPA ``arpa_path`` to the counts file ``adapt_path``; write ``output``.

    Reads, adapts (:func:`asrpriv.ngram.fma.adapt_arpa`: 003 Eq. 1, or Eq. 2 with
    ``reversed_``), and writes an ARPA (log10) with the metadata and privacy history of the
    count inputs as ``#key=value`` lines before ``\\data\\`` (kenlm skips them). Talk goes
    to stderr through asrpriv.talk (silent with -q).
    """
    import math

    from asrpriv import __version__
    from asrpriv.errors import AsrprivError
    from asrpriv.io.counts import read_counts
    from asrpriv.io.output import check_writable, open_output
    from asrpriv.ngram.arpa_writer import write_arpa_lines
    from asrpriv.ngram.fma import adapt_arpa, marginals, small_pages
    from asrpriv.ngram.packed import read_packed
    from asrpriv.talk import info, warn
    from asrpriv.privacy.state import to_meta
    from asrpriv.provenance import Inputs

    if not math.isfinite(beta) or beta < 0:
        raise AsrprivError(f"{arg('beta')} must be a finite number >= 0, got {beta}")
    check_writable(output)
    inputs = Inputs(allow_seeded)

    def read(path):
        meta, counts = read_counts(path)
        inputs.add_counts(path, meta)
        return counts

    adapt_counts = read(adapt_path)
    background_counts = read(background_path) if background_path else None
    inputs.add_arpa(arpa_path)
    model = read_packed(arpa_path)
    marg = marginals(model, adapt_counts, prior, background_counts, adapt_path, oov_to_unk)
    if marg.clipped:
        warn(f"{marg.clipped} negative adaptation/background count(s) clipped to 0")
    if marg.dropped_words:
        where = "and no <unk>" if oov_to_unk else "(--oov-to-unk: count them as <unk>)"
        warn(f"{marg.dropped_words} adaptation word(s) outside the ARPA vocabulary {where} "
             f"dropped (mass {marg.dropped_mass:g})")
    with small_pages():
        adapted = adapt_arpa(model, marg, beta, reversed_)
    meta = {"format": "asrpriv-arpa-meta/1", "step": "fma-adapt",
            "variant": "reversed" if reversed_ else "standard", "beta": f"{beta:g}",
            "prior": f"{prior:g}", "oov": "unk" if oov_to_unk else "dropped", "marginal": "counts" if background_path else "arpa-unigrams",
            "version": __version__}
    meta = to_meta(meta, inputs.state(), always_raw=True)
    with open_output(output) as stream:
        for key, value in meta.items():
            stream.write(f"#{key}={value}\n")
        write_arpa_lines(stream, adapted, precision)
    info(f"adapted {arpa_path} ({'reversed' if reversed_ else 'standard'} FMA, beta {beta:g}): "
         f"n-grams {model.counts()} -> {adapted.counts()}")
