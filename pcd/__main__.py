"""``python -m pcd <command> ...``: the command line (:func:`pcd.cli.main`)."""
import sys

from pcd.cli import main

if __name__ == "__main__":
    sys.exit(main())
