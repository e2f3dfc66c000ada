"""Command line: ``python -m shardviz demo [--devices N] [--out PATH]``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shardviz", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="place an MLP several ways and write an HTML report")
    demo.add_argument("--devices", type=int, default=8, help="fake CPU devices (default 8)")
    demo.add_argument("--out", default="shardviz-demo.html", help="where to write the report")
    args = parser.parse_args(argv)

    from shardviz.capture.devices import use_cpu_devices
    from shardviz.errors import ShardvizError

    try:
        use_cpu_devices(args.devices)
        from shardviz.demo import run_demo

        _, summary = run_demo(args.out)
    except ShardvizError as err:
        print(f"shardviz: {err}", file=sys.stderr)
        return 2
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
