"""Unigram pseudo-counts for federated marginal personalization (paper 000, Section 2.2)."""
