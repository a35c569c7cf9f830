"""Federated learning of the neural LM (paper 001): server update, client-level DP, sampling."""
