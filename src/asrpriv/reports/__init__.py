"""Results tables and plots of the recipes in bin/ (importable and tested; bin/*-report are thin wrappers).

fmp (bin/fmp-experiment), fl (bin/fl-finetune-experiment), leakage (bin/leakage-audit),
sanitized_lm (bin/sanitized-lm-experiment), frontier (bin/privacy-frontier); common holds the
data sentence and the run-time sentence they share. Run one with `python -m asrpriv.reports.NAME`.
"""
