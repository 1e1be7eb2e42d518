"""``python -m mill`` is the ``mill`` console script."""

from mill.cli import main

if __name__ == "__main__":
    main()
