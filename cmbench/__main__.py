"""``python -m cmbench``: the same command as the ``cmbench`` console script."""
from .cli import run

if __name__ == "__main__":
    run()
