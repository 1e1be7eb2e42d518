"""``python -m mill`` is the ``mill`` console script."""

from mill.cli import run

if __name__ == "__main__":
    run()
