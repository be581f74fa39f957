"""python -m dbbench_results --root DIR --key-file FILE [--host H] [--port P]"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

from dbbench_results.server import Config, make_server
from dbbench_results.store import Store

DEFAULT_MAX_UPLOAD_MB = 512


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dbbench_results", description=__doc__)
    parser.add_argument("--root", type=Path, required=True, help="results root (the claim)")
    parser.add_argument("--key-file", type=Path, required=True, help="file holding the service key")
    parser.add_argument("--host", default="0.0.0.0")  # noqa: S104 - a Service fronts it
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--max-upload-mb",
        type=int,
        default=int(os.environ.get("DBBENCH_RESULTS_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MB)),
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    key = args.key_file.read_bytes().strip()
    if len(key) < 16:
        raise SystemExit(f"{args.key_file}: the service key must be at least 16 bytes")
    config = Config(Store(args.root), key, args.max_upload_mb * 1024 * 1024)
    server = make_server(args.host, args.port, config)

    def stop(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.info("serving %s on %s:%d", config.store.root, args.host, args.port)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
