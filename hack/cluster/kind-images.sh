#!/usr/bin/env bash
# The operator and runner images for kind, built with a Docker engine from
# the upstream Python base; `make cluster-up` then loads them with `kind load`.
# (Without an engine, hack/cluster/images.sh builds everything here instead.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/Chart.yaml")"
cd "$ROOT"
echo "kind-images: wheels for the images' Python 3.13 (pip download, cached)"
python3 -m pip download --quiet --dest build/wheels --only-binary=:all: \
  --python-version 3.13 --implementation cp --abi cp313 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 \
  'setuptools>=75' kopf==1.45.2 kubernetes==37.0.2 pymongo==4.20.0 \
  mysql-connector-python==26.10.0 psycopg==3.3.8 psycopg-binary==3.3.8 pydantic==2.14.3 \
  PyYAML==6.0.3 prometheus-client==0.26.0
(cd runner-image && ./download-wheels.sh)
echo "kind-images: docker build dbbench/operator:$VERSION and dbbench/runner:$VERSION (a few minutes the first time)"
docker build -t "dbbench/operator:$VERSION" .
docker build -t "dbbench/runner:$VERSION" runner-image
