"""asrpriv: composable steps for privacy-preserving LM personalization in speech recognition."""

__version__ = "0.1.0"
