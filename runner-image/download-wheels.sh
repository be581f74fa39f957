#!/usr/bin/env bash
# Download the runner image's wheels on the host (the image build is offline).
# PYTHON_VERSION must match the base image's Python (trixie: 3.13).
# WHEELS_DIR (default: ./wheels, the image build context) is where they go;
# `make bench` points it at its cached trixie chroot's folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
PYTHON_VERSION="${PYTHON_VERSION:-3.13}"
PIP="${PIP:-../.venv/bin/pip}"
WHEELS_DIR="${WHEELS_DIR:-wheels}"
mkdir -p "$WHEELS_DIR"
"$PIP" download --dest "$WHEELS_DIR" --only-binary=:all: \
  --python-version "$PYTHON_VERSION" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
  pydantic==2.14.3 PyYAML==6.0.3 pymongo==4.20.0 \
  mysql-connector-python==26.10.0 psycopg==3.3.8 psycopg-binary==3.3.8 \
  hdrhistogram==0.10.8 matplotlib==3.11.2 prometheus-client==0.26.0 scipy==1.16.3
# Apache Otava (the results service's change-point detection) without its
# dependencies: its analysis needs numpy and scipy only (above); the rest serve
# its CLI. In no-deps/, which the image installs with --no-deps and the bench's
# chroot (every *.whl of WHEELS_DIR, with their dependencies) does not see.
"$PIP" download --dest "$WHEELS_DIR/no-deps" --no-deps --only-binary=:all: apache-otava==0.8.0
# mysqlclient has no manylinux wheel: its source distribution (and the
# setuptools it builds with; it finds libmariadb with the pkg-config binary)
# for the image's builder stage, which compiles it against libmariadb-dev.
# The bench's chroot installs only the *.whl files.
"$PIP" download --dest "$WHEELS_DIR" --no-deps --no-binary=mysqlclient mysqlclient==2.3.1
"$PIP" download --dest "$WHEELS_DIR" --no-deps --only-binary=:all: \
  --python-version "$PYTHON_VERSION" --implementation cp --platform any \
  "setuptools>=75"
echo "wheels for CPython $PYTHON_VERSION in $(cd "$WHEELS_DIR" && pwd)"
