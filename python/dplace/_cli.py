"""The `dplace` command pip installs: runs the command-line program built with the package
(dplace/bin/dplace), with the same arguments, exit code and output."""

import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "dplace")
    if not os.access(binary, os.X_OK):
        sys.stderr.write(f"dplace: the command-line program is missing from the package "
                         f"({binary}): reinstall it (pip install .)\n")
        return 2
    os.execv(binary, [binary] + sys.argv[1:])
    return 1  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
