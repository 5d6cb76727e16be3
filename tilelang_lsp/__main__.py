"""`tilelang-lsp` / `python -m tilelang_lsp`: start the language server."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    from . import __version__

    p = argparse.ArgumentParser(prog="tilelang-lsp", description="Language server for TileLang kernels.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    mode.add_argument("--tcp", type=int, metavar="PORT", help="listen for one client on a TCP port")
    p.add_argument("--host", default="127.0.0.1", help="address for --tcp (default 127.0.0.1)")
    p.add_argument("--log-file", help="write the server log here (default: stderr)")
    p.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--version", action="version", version=f"tilelang-lsp {__version__}")
    args = p.parse_args(argv)

    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        level=args.log_level, handlers=[handler], format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLevelName(args.log_level)))

    from .worker import WorkerPool

    worker = WorkerPool()  # two workers: a kernel that hangs holds up only its own document
    worker.start()  # the workers import tilelang while we import pygls and the client initialises

    from .server import server

    server.use_worker(worker)
    try:
        if args.tcp is not None:
            server.start_tcp(args.host, args.tcp)
        else:
            server.start_io()
    finally:
        server.worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
