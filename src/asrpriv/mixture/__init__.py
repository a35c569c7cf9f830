"""Linear mixtures of language models (paper 003 Eq. 3; SRILM ``compute-best-mix`` / ``-mix-lm``).

- :mod:`asrpriv.mixture.streams`: per-token log-probability streams of any LM kind (ARPA /
  kenlm n-grams, asrpriv NNLM model files; another kind plugs in through :data:`LOADERS`).
- :mod:`asrpriv.mixture.em`: dynamic interpolation of streams and EM estimation of weights.
- :mod:`asrpriv.mixture.report`: perplexity summaries (asrpriv and SRILM conventions) and the
  per-word output of ``perplexity --per-word``.
- :mod:`asrpriv.mixture.weights`: parsing and checking ``--weights 0.3,0.7`` (no numpy).

The static ARPA mixture of n-gram LMs is :mod:`asrpriv.ngram.mix`.
"""
