"""Word confidences from N-best lists (paper 001 uses them to weight fine-tuning losses).

- :mod:`asrpriv.confidence.posteriors`: hypothesis posteriors from the first-pass totals and
  word confidences as the posterior mass of the hypotheses that agree with a word;
- :mod:`asrpriv.confidence.metrics`: word correctness labels against references, and the
  standard confidence metrics (NCE as NIST sclite reports it, ECE, ROC AUC);
- :mod:`asrpriv.confidence.calibration`: an isotonic map fitted on labelled words, stored as
  its breakpoints (JSON) and applied by linear interpolation;
- :mod:`asrpriv.confidence.step`: the ``asrpriv confidence`` pipeline over an N-best TSV.
"""
