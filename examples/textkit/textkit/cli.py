"""Command line entry point: ``python -m textkit.cli FILE``."""

import sys

from .words import word_count


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: textkit FILE", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        text = handle.read()
    print(word_count(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
