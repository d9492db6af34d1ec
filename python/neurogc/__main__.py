"""``python -m neurogc``: the ``neurogc`` command (see :mod:`neurogc._cli`)."""

from neurogc._cli import main

if __name__ == "__main__":
    main()
