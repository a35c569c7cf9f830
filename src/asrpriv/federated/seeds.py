"""The one seed-derivation rule of repeatable multi-round runs (tests only: seeded noise is
NOT private; without a seed every draw comes from the OS's secure source).

From one base seed ``S`` every round ``t`` of noise draw ``d`` (0 <= d < 100; 0 <= t < 1000
for d > 0, t < 100000 for the single draw d = 0) gets its own seed::

    seed(S, t, d) = S * 100000 + d * 1000 + t

so that rounds and draws never share a seed, and a run with base ``S`` never meets a run with
another base. Draw 0 is a run without repeated draws; a recipe's draws k = 1, 2, ... of the
same setting are draws 1, 2, ... (never 0, so a draw never repeats the single run's noise).

Used by FMP's rounds (``fmp-rounds``/``fl-fmp``: ``--noise-seed S [--noise-draw d]``, the
noise of round t), the federated rounds (``fl-rounds``: ``--seed S`` trains round t's clients
with seed(S, t, 0), ``--noise-seed S [--noise-draw d]`` noises it with seed(S, t, d);
``fl-simulate`` alike) and the recipes' one-shot noise (``bin/lib/recipe.sh``'s
``derive_seed S T D``, which runs ``python -m asrpriv.federated.seeds S T D``: e.g.
``bin/leakage-audit``'s item t of draw d, ``bin/ngram-fma-experiment``'s draw d). No recipe
writes seed arithmetic of its own.
"""

from __future__ import annotations

from asrpriv.errors import AsrprivError

#: the base seed's stride (room for 100 draws of 1000 rounds)
BASE_STRIDE = 100000
#: a draw's stride within a base
DRAW_STRIDE = 1000


def derive_seed(base: int | None, t: int, draw: int = 0) -> int | None:
    """``base * 100000 + draw * 1000 + t``: the seed of round ``t`` of draw ``draw``; None
    (the OS's secure source) when ``base`` is None."""
    if base is None:
        return None
    # one draw (draw 0) may run up to 99,999 rounds (paper 001's 1,000 included); runs with
    # several draws keep each draw's rounds below 1000, so that no two share a seed
    limit = BASE_STRIDE if draw == 0 else DRAW_STRIDE
    if not 0 <= t < limit or not 0 <= draw < BASE_STRIDE // DRAW_STRIDE:
        raise AsrprivError(f"seeded runs derive one seed per round (< {DRAW_STRIDE} with several "
                           f"draws, < {BASE_STRIDE} with one) and draw "
                           f"(< {BASE_STRIDE // DRAW_STRIDE}); got round {t}, draw {draw}")
    return int(base) * BASE_STRIDE + draw * DRAW_STRIDE + t


def check_rounds(base: int | None, last_round: int, draw: int = 0) -> None:
    """Refuse (AsrprivError), before a run starts, a seeded run whose rounds up to
    ``last_round`` would leave :func:`derive_seed`'s range."""
    if base is not None:
        derive_seed(base, last_round, draw)


def main(argv: list[str] | None = None) -> int:
    """``python -m asrpriv.federated.seeds S T [D]``: print seed(S, T, D) (D = 0 when left out);
    exit 2 with one line on anything else. The recipes' one door to the rule."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) not in (2, 3) or not all(a.isascii() and a.isdigit() for a in args):
            raise AsrprivError("usage: python -m asrpriv.federated.seeds BASE ROUND [DRAW] "
                               f"(whole numbers), got {' '.join(args) or 'nothing'}")
        print(derive_seed(*(int(a) for a in args)))
        return 0
    except AsrprivError as err:
        print(f"asrpriv.federated.seeds: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
