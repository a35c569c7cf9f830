"""``python -m asrpriv``."""

from asrpriv.cli import main

if __name__ == "__main__":
    main()
