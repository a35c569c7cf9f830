"""One module per step: click parsing only; the work is in the library packages."""
