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
#
# FerretDB creates the `admin` database and then the user, and skips both when
# `admin` exists: a first start stopped in between left a server nobody could
# log in to. So, as in the other images (docs/decisions.md), the first start
# with a user runs FerretDB once in <dbpath>/dbbench-initialising, on a Unix
# socket only (it listens once the setup is done), stops it, writes a
# completion mark there and moves the files into place; a start that finds
# that directory without the mark removes it and sets up again, one with the
# mark finishes the move. A data directory that holds a database is started
# as it is.
set -eu

fail() {
  echo "docker-entrypoint (MongoDB-protocol stand-in, FerretDB): $*" >&2
  exit 2
}
note() { echo "docker-entrypoint (MongoDB-protocol stand-in, FerretDB): $*"; }

STAGING_NAME=dbbench-initialising
COMPLETE_MARK=.dbbench-initialised

# The staging directory's files moved up into the data directory (one rename
# each), then the mark and the directory removed: safe to repeat.
publish_staging() {
  for entry in "$staging"/* "$staging"/.[!.]* "$staging"/..?*; do
    [ -e "$entry" ] || continue
    [ "${entry##*/}" = "$COMPLETE_MARK" ] && continue
    mv -f "$entry" "$dbpath/${entry##*/}"
  done
  rm -f "$staging/$COMPLETE_MARK"
  rmdir "$staging"
}

recover_interrupted_setup() {
  [ -e "$staging" ] || return 0
  if [ -e "$staging/$COMPLETE_MARK" ]; then
    note "$dbpath: the first setup completed but was stopped while moving its files into place; finishing the move"
    publish_staging
  else
    note "$dbpath: the first initialisation did not complete (no $COMPLETE_MARK in $staging: the server or the container was stopped during it); removing what it created and initialising again"
    rm -rf "$staging"
  fi
}

# FerretDB's own setup (the admin database, then the user) on a private Unix
# socket in the staging directory; FerretDB listens only once it is done.
first_setup() {
  note "initialising $dbpath (in $staging until complete)"
  mkdir -p "$staging"
  socket=/tmp/ferretdb-setup.sock
  rm -f "$socket"
  ferretdb --handler=sqlite --sqlite-url="file:$staging/" --state-dir="$dbpath/.ferretdb-state" \
    --listen-addr= --listen-unix="$socket" --debug-addr=- --telemetry=disable \
    --log-format=console &
  pid=$!
  waited=0
  until [ -S "$socket" ]; do
    kill -0 "$pid" 2>/dev/null || fail "FerretDB exited during its first setup"
    waited=$((waited + 1))
    [ "$waited" -le 600 ] || fail "FerretDB did not finish its first setup within 60 s"
    sleep 0.1
  done
  kill "$pid"
  wait "$pid" || fail "FerretDB did not stop cleanly after its first setup"
  # The last step: from here on the setup counts as complete.
  : >"$staging/$COMPLETE_MARK"
  publish_staging
  note "initialisation done"
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
staging=$dbpath/$STAGING_NAME
recover_interrupted_setup
if [ -n "${FERRETDB_SETUP_USERNAME:-}" ]; then
  if [ -n "$(find "$dbpath" -maxdepth 1 -name '*.sqlite' 2>/dev/null)" ]; then
    note "$dbpath holds a database; starting without initialisation"
  else
    first_setup
  fi
fi
exec ferretdb --handler=sqlite --sqlite-url="file:$dbpath/" \
  --state-dir="$dbpath/.ferretdb-state" --listen-addr="$host:$port" \
  --debug-addr=- --telemetry=disable --log-format=console
