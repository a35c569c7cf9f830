"""Second-pass N-best rescoring: LM scorers, FMP factors, score combination and weight tuning.

Modules (import the one you need; this ``__init__`` imports nothing, so no torch):

- :mod:`asrpriv.rescore.ngram` -- n-gram sentence scores through kenlm (log10 -> natural log).
- :mod:`asrpriv.rescore.nnlm` -- batched neural-LM sentence scores, with FMP factors.
- :mod:`asrpriv.rescore.factors` -- FMP log-factor files mapped onto an NNLM vocabulary.
- :mod:`asrpriv.rescore.combine` -- the total score and the weights file.
- :mod:`asrpriv.rescore.pipeline` -- the streaming rescorer behind ``asrpriv rescore-nbest``.
- :mod:`asrpriv.rescore.tune` -- grid search of the weights on a dev set (``asrpriv tune-weights``).
"""
