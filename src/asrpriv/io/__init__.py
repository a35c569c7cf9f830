"""Readers and writers of the file formats in DESIGN.md, one module per format."""
