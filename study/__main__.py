"""``python -m study``: list the ladders, compare them on the GPU, render reports.

Exit status: 0 success, 1 a measurement was wrong or crashed, 2 bad usage or no GPU.
"""

from __future__ import annotations

import sys

from study.catalog import PluginError
from study.cli.commands import COMMANDS
from study.cli.parser import parser
from study.select import UsageError


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (UsageError, PluginError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
