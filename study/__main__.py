"""``python -m study``: list the ladders, compare them on the GPU, render reports.

Exit status: 0 success, 1 a measurement was wrong, crashed or impossible, 2 bad usage or no GPU,
130 interrupted.
"""

from __future__ import annotations

import os
import sys

from study.catalog import PluginError
from study.cli.commands import COMMANDS
from study.cli.parser import parser
from study.registry import RegistryError
from study.select import UsageError


def joined_negative_values(argv: list[str]) -> list[str]:
    """``--shape -1x4x4`` as ``--shape=-1x4x4``: argparse takes a value that starts with a dash and is
    no plain number for an option and says only "expected one argument"; joined, the value reaches
    the op's own check and its one-line message."""
    out: list[str] = []
    for arg in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1] and arg[:1] == "-" and arg[1:2].isdigit()):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(joined_negative_values(sys.argv[1:] if argv is None else argv))
    try:
        return COMMANDS[args.command](args)
    except (UsageError, PluginError, RegistryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python -m study list | head`: the reader left; no traceback for that
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
