"""Command line:

``python -m shardviz demo [--devices N] [--out PATH]``

``python -m shardviz launch [--processes N] [--devices-per-process K] [--port P] [--timeout S]
script.py [args...]``

``python -m shardviz workshop [--dir PATH] [--port N] [--no-browser]``
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

LAUNCH_HELP = (
    "run a script as N local jax processes with K CPU devices each, joined by jax.distributed "
    "(gloo); output prefixed [p0], [p1], ...; exit code of the process that failed (128+N for "
    "a death by signal N, 124 after the timeout)"
)

WORKSHOP_HELP = (
    "copy the course notebooks into a folder of yours (missing ones only: your edits are kept) "
    "and start JupyterLab on it, on 127.0.0.1; Ctrl-C stops it"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m shardviz", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="place an MLP several ways and write an HTML report")
    demo.add_argument("--devices", type=int, default=8, help="fake CPU devices (default 8)")
    demo.add_argument("--out", default="shardviz-demo.html", help="where to write the report")
    launch = sub.add_parser("launch", help=LAUNCH_HELP, description=LAUNCH_HELP)
    launch.add_argument("--processes", type=int, default=2, help="processes (default 2)")
    launch.add_argument(
        "--devices-per-process", type=int, default=4, help="CPU devices per process (default 4)"
    )
    launch.add_argument(
        "--port", type=int, default=None,
        help="coordinator port (default 8476, or a free one if that is taken)",
    )  # fmt: skip
    launch.add_argument(
        "--timeout", type=float, default=120.0,
        help="seconds before every process is stopped (default 120)",
    )  # fmt: skip
    launch.add_argument("script", help="the Python script every process runs as __main__")
    launch.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    workshop = sub.add_parser("workshop", help=WORKSHOP_HELP, description=WORKSHOP_HELP)
    workshop.add_argument(
        "--dir", default="shardviz-workshop",
        help="the folder to copy the notebooks into (default ./shardviz-workshop)",
    )  # fmt: skip
    workshop.add_argument(
        "--port", type=int, default=None, help="JupyterLab's port (default 8888, or a free one)"
    )
    workshop.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if args.command == "launch":
        return _launch(args)
    if args.command == "workshop":
        return _workshop(args)
    return _demo(args)


def _demo(args: argparse.Namespace) -> int:
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


def _workshop(args: argparse.Namespace) -> int:
    from shardviz.errors import ShardvizError
    from shardviz.workshop import run_workshop

    try:
        return run_workshop(args.dir, port=args.port, open_browser=not args.no_browser)
    except ShardvizError as err:
        print(f"shardviz: {err}", file=sys.stderr)
        return 2


def _launch(args: argparse.Namespace) -> int:
    """Run the launch; SIGTERM to the launcher stops the processes as Ctrl-C does."""
    from shardviz.errors import ShardvizError
    from shardviz.launch import LaunchError, run

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        run(
            args.script,
            processes=args.processes,
            devices_per_process=args.devices_per_process,
            args=args.args,
            port=args.port,
            timeout=args.timeout,
        )
    except LaunchError as err:
        print(f"shardviz: {err}", file=sys.stderr)
        return err.result.exit_code
    except ShardvizError as err:
        print(f"shardviz: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("shardviz: launch interrupted; every process was stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
