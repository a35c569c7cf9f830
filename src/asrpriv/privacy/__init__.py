"""Privacy mechanisms and their randomness."""
