"""The local single-node cluster: ``python hack/cluster.py up|down|status|import-images``.

``up`` returns once the node is Ready and prints ``export KUBECONFIG=...``; the
processes keep running until ``down`` stops each one by PID. See
docs/local-cluster.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from dbbench_local.cluster import (
    LocalCluster,
    chosen,
    flavour,
    forget_flavour,
    images_recipe,
    record_flavour,
)
from dbbench_local.kind_pools import NODES_VARIABLE, nodes_problem, requested_nodes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "command", choices=["up", "down", "status", "import-images", "flavour", "images-recipe"]
    )
    args = parser.parse_args(argv)
    if args.command in ("up", "images-recipe"):
        # `make cluster-up` asks for the recipe first: refused before any build.
        problem = nodes_problem(flavour(), requested_nodes(os.environ.get(NODES_VARIABLE)))
        if problem is not None:
            raise RuntimeError(problem)
    if args.command == "flavour":
        print(flavour())
        return 0
    if args.command == "images-recipe":
        print(images_recipe())
        return 0
    cluster = chosen()
    if args.command == "up":
        cluster.up()
        record_flavour()
        print(f"export KUBECONFIG={cluster.kubeconfig}")
    elif args.command == "down":
        cluster.down()
        forget_flavour()
    elif args.command == "import-images":
        cluster.import_images()
    elif isinstance(cluster, LocalCluster):
        report = {"processes": cluster.process_states(), "nodeReady": cluster.node_ready()}
        print(json.dumps(report, indent=2))
        return 0 if cluster.healthy() else 1
    else:
        print(json.dumps({"kind": True, "healthy": cluster.healthy()}))
        return 0 if cluster.healthy() else 1
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except RuntimeError as error:
        print(f"cluster: {error}", file=sys.stderr)
        raise SystemExit(1) from None
