"""The leakage audit of shared artifacts (paper 004, Akani): what model updates reveal about who made them.

Items (model files, deltas, unigram count vectors, raw ``.npy`` vectors) become vectors; their
pairwise Euclidean geometry is computed once, streaming, as a centred Gram matrix
(:mod:`asrpriv.audit.gram`); everything else works on that n x n matrix or on the exact
isometric embedding it gives: Ward and fixed-size clustering (:mod:`asrpriv.audit.clustering`),
purity and entropy (:mod:`asrpriv.audit.metrics`), the speaker-identification rank test
(:mod:`asrpriv.audit.rank_test`), and a cross-validated linear probe
(:mod:`asrpriv.audit.probe`).
"""
