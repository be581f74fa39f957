#!/bin/sh
# Entrypoint of the local node's MongoDB-protocol STAND-IN (hack/cluster/images.sh):
# FerretDB v1.24.0 (SQLite backend, patched for w:0 writes), not MongoDB. No
# mongod image can be had on the development machines; this one lets the
# mongodb chart run a standalone target so the runner's MongoDB path runs end
# to end. Use it for correctness, never for speed: every query is a table scan.
#
# It takes the chart's mongod command line and the official mongo image's
# variables, and refuses what it cannot honour instead of ignoring it:
#
#   mongod --bind_ip_all | --bind_ip=ADDR, --port=N, --dbpath=DIR  (translated)
#   any other mongod option (--replSet, --keyFile, --configsvr,
#   --wiredTigerCacheSizeGB, ...)                                  refused
#   MONGO_INITDB_ROOT_USERNAME + MONGO_INITDB_ROOT_PASSWORD (or *_FILE): on an
#   empty data directory, FerretDB's own setup creates that user in `admin`
#   and every connection must authenticate (SCRAM-SHA-256); without them, no
#   authentication, as in the official image
#   /docker-entrypoint-initdb.d with files in it                    refused
#
# The user setup and authentication use FerretDB's experimental
# --test-enable-new-auth; the password goes by environment, never argv.
set -eu

fail() {
  echo "docker-entrypoint (MongoDB-protocol stand-in, FerretDB): $*" >&2
  exit 2
}

# VAR from VAR, else from the file VAR_FILE names.
load_env() {
  eval "value=\${$1:-}; file=\${$1_FILE:-}"
  if [ -n "$value" ] && [ -n "$file" ]; then fail "both $1 and $1_FILE are set; set only one"; fi
  if [ -z "$value" ] && [ -n "$file" ]; then value=$(cat "$file"); fi
  eval "$1=\$value"
  unset "$1_FILE"
}

# An option first means "mongod with these options"; other commands run as given.
case "${1:-mongod}" in
  -*) set -- mongod "$@" ;;
esac
if [ "${1:-mongod}" != mongod ]; then exec "$@"; fi
[ $# -gt 0 ] && shift

host=127.0.0.1
port=27017
dbpath=/data/db
for arg in "$@"; do
  case $arg in
    --bind_ip_all) host=0.0.0.0 ;;
    --bind_ip=*,*) fail "one --bind_ip address only: $arg" ;;
    --bind_ip=*) host=${arg#--bind_ip=} ;;
    --port=*) port=${arg#--port=} ;;
    --dbpath=*) dbpath=${arg#--dbpath=} ;;
    *) fail "mongod option $arg cannot be honoured: this image stands in for MongoDB's wire protocol (standalone, no replica sets, sharding or WiredTiger settings)" ;;
  esac
done

if [ -n "$(ls -A /docker-entrypoint-initdb.d 2>/dev/null)" ]; then
  fail "/docker-entrypoint-initdb.d is not supported (it needs the mongo shell)"
fi

load_env MONGO_INITDB_ROOT_USERNAME
load_env MONGO_INITDB_ROOT_PASSWORD
if [ -n "$MONGO_INITDB_ROOT_USERNAME" ] || [ -n "$MONGO_INITDB_ROOT_PASSWORD" ]; then
  if [ -z "$MONGO_INITDB_ROOT_USERNAME" ] || [ -z "$MONGO_INITDB_ROOT_PASSWORD" ]; then
    fail "set both MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD, or neither"
  fi
  # FerretDB creates the user only while the `admin` database does not exist
  # (an empty data directory), like the official image's first start.
  export FERRETDB_TEST_ENABLE_NEW_AUTH=true
  export FERRETDB_SETUP_DATABASE=admin
  export FERRETDB_SETUP_USERNAME="$MONGO_INITDB_ROOT_USERNAME"
  export FERRETDB_SETUP_PASSWORD="$MONGO_INITDB_ROOT_PASSWORD"
fi
unset MONGO_INITDB_ROOT_USERNAME MONGO_INITDB_ROOT_PASSWORD

mkdir -p "$dbpath/.ferretdb-state"
exec ferretdb --handler=sqlite --sqlite-url="file:$dbpath/" \
  --state-dir="$dbpath/.ferretdb-state" --listen-addr="$host:$port" \
  --debug-addr=- --telemetry=disable --log-format=console
