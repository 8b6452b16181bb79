# SPDX-License-Identifier: BSD-3-Clause
"""What the plot scripts of the examples share: the command line (a CSV in, a PNG out) and
matplotlib with a non-interactive backend."""
import sys


def pyplot_for(script: str, usage: str):
    """matplotlib.pyplot, or None after printing why the script cannot run (the usage for a wrong
    command line, the install hint for a missing matplotlib) to stderr."""
    if len(sys.argv) != 3:
        print(usage, file=sys.stderr)
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{script}: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return None
    return plt
