# syntax=docker/dockerfile:1
#
# The dbbench operator image: kopf + the dbbench_operator package.
#
# Python packages come from wheels downloaded on the host, never from the
# network inside the build: on the development machine a fresh root
# filesystem lacks the CA that TLS to the registries needs (see
# docs/chart.md, "Building the operator image"). On the host:
#
#   pip download --dest build/wheels --only-binary=:all: \
#       --python-version 3.13 --implementation cp --abi cp313 \
#       --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
#       --platform manylinux_2_17_x86_64 \
#       'setuptools>=75' kopf==1.45.2 kubernetes==37.0.2 pymongo==4.20.0 \
#       mysql-connector-python==26.10.0 psycopg==3.3.8 psycopg-binary==3.3.8 \
#       pydantic==2.14.3 PyYAML==6.0.3 prometheus-client==0.26.0 croniter==7.0.0 \
#       tzdata==2026.6
#   (hack/cluster/images.sh reads the list from pyproject.toml's [operator] extra)
#   make tools     # .tools/bin/helm: a static helm the operator runs to render charts/
#   docker build --build-arg BASE_IMAGE=python:3.13-slim-trixie -t dbbench/operator:0.1.0 .
#
# BASE_IMAGE is any Debian-like image with python3 and the venv module:
# python:3.13-slim-trixie where images can be pulled, or a debootstrapped
# trixie root filesystem (python3, python3-venv, ca-certificates) imported
# with `podman import` where they cannot. The wheels must match its Python.
ARG BASE_IMAGE=python:3.13-slim-trixie

FROM ${BASE_IMAGE} AS build
ARG WHEELS_DIR=build/wheels
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/dbbench
COPY ${WHEELS_DIR}/ /wheels/
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
# The formats the operator shares with the runner and the results service.
COPY runner-image/dbbench_contract/ runner-image/dbbench_contract/
# pyproject.toml also names hack/ as a package root; the runner, the results
# service and the local tooling are not part of this image.
RUN mkdir -p runner-image hack \
 && /opt/dbbench/bin/pip install --no-index --find-links /wheels '.[operator]' \
 && /opt/dbbench/bin/kopf --version \
 && /opt/dbbench/bin/python -c "import dbbench_operator, dbbench_contract"

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="dbbench operator" \
      org.opencontainers.image.description="kopf operator that runs dbbench BenchmarkRuns" \
      org.opencontainers.image.licenses="Apache-2.0"
ARG HELM_BINARY=.tools/bin/helm
COPY --from=build /opt/dbbench /opt/dbbench
# The operator renders each run's databases with `helm template` from the
# topology charts (operator/dbbench_operator/specs/databases/rendering.py). helm is
# the statically linked (CGO_ENABLED=0) build from `make tools`.
COPY ${HELM_BINARY} /usr/local/bin/helm
COPY charts/ /opt/dbbench/charts/
# kopf names the operator's identity after the user (getpass), and uid 10001
# has no passwd entry: USER stands in for it. Unbuffered logs; no .pyc writes (the chart mounts the root filesystem
# read-only); helm's caches go to the writable /tmp.
ENV PATH=/opt/dbbench/bin:$PATH \
    USER=dbbench \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DBBENCH_CHARTS_DIR=/opt/dbbench/charts \
    DBBENCH_HELM=/usr/local/bin/helm \
    HELM_CACHE_HOME=/tmp/helm/cache \
    HELM_CONFIG_HOME=/tmp/helm/config \
    HELM_DATA_HOME=/tmp/helm/data
# The chart runs as uid/gid 10001 with runAsNonRoot; the numeric USER lets the
# kubelet verify that without an /etc/passwd entry.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["kopf"]
CMD ["run", "--module=dbbench_operator.handlers", "--standalone", "--liveness=http://0.0.0.0:8080/healthz", "--all-namespaces"]
