#!/bin/bash
# Entrypoint of the PostgreSQL image built from Debian packages for the local
# node (hack/cluster/images.sh). It keeps the environment contract of the
# official image (docker-library/postgres) that charts/postgresql relies on:
#
#   POSTGRES_PASSWORD (required on an empty data directory unless
#   POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER (default postgres),
#   POSTGRES_DB (default POSTGRES_USER), POSTGRES_INITDB_ARGS, each also as
#   *_FILE (read from a file); POSTGRES_INITDB_WALDIR, POSTGRES_HOST_AUTH_METHOD
#   (default: the server's password_encryption), PGDATA (default
#   /var/lib/postgresql/data), PGPORT; /docker-entrypoint-initdb.d/*.sh, *.sql,
#   *.sql.gz, *.sql.xz, *.sql.zst run once, after POSTGRES_DB exists.
#
# `postgres ...` (or options alone) on a PGDATA without PG_VERSION runs initdb
# with the superuser POSTGRES_USER (its password from a pipe, never on a
# command line), admits TCP logins with POSTGRES_HOST_AUTH_METHOD in
# $PGDATA/pg_hba.conf, starts a temporary server on the socket only (with the
# container's own options, so a chart's hba_file applies), creates
# POSTGRES_DB, runs the init files, stops the server and execs the command.
# A PGDATA that holds a database (a standby's pg_basebackup copy included) is
# started as it is. The first initialisation is atomic (docs/decisions.md):
# it is done in $PGDATA/dbbench-initialising, marked complete there as its
# last step, and only then moved into place; a start that finds that
# directory without the mark removes it (and what initdb put in
# POSTGRES_INITDB_WALDIR) and initialises again, one with the mark finishes
# the move. As root it makes the directories postgres's and re-runs
# itself as postgres. Differences from the official script: no nss_wrapper
# (the image's uids are the chart's), no 18+ data-layout check, the locale is
# the image's C.UTF-8.
set -Eeo pipefail
shopt -s nullglob

note() { printf '%s [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*"; }
warn() { printf '%s [Entrypoint] WARNING: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2; }
fail() {
  printf '%s [Entrypoint] ERROR: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2
  exit 1
}

# VAR from VAR, else VAR_FILE, else DEFAULT (both set is an error).
load_env() {
  local var=$1 default=${2:-} file_var=${1}_FILE
  if [[ -n ${!var:-} && -n ${!file_var:-} ]]; then
    fail "both $var and $file_var are set; set only one"
  fi
  local value=$default
  if [[ -n ${!var:-} ]]; then
    value=${!var}
  elif [[ -n ${!file_var:-} ]]; then
    value=$(<"${!file_var}")
  fi
  export "$var=$value"
  unset "$file_var"
}

wants_help() {
  local arg
  for arg; do
    case $arg in -'?' | --help | --describe-config | -V | --version) return 0 ;; esac
  done
  return 1
}

# PGDATA (and the WAL directory) 0700, the socket directory writable; as root,
# everything in them handed to postgres. Failures are left for postgres to
# report: a volume may not allow chmod, and the image's own directories are
# already right.
prepare_directories() {
  mkdir -p "$PGDATA"
  chmod 0700 "$PGDATA" 2>/dev/null || :
  mkdir -p /var/run/postgresql 2>/dev/null || :
  chmod 3775 /var/run/postgresql 2>/dev/null || :
  if [[ -n $POSTGRES_INITDB_WALDIR ]]; then
    mkdir -p "$POSTGRES_INITDB_WALDIR"
    chmod 0700 "$POSTGRES_INITDB_WALDIR"
  fi
  if [[ $(id -u) == 0 ]]; then
    local dir
    for dir in "$PGDATA" /var/run/postgresql ${POSTGRES_INITDB_WALDIR:+"$POSTGRES_INITDB_WALDIR"}; do
      find "$dir" \! -user postgres -exec chown postgres: '{}' +
    done
  fi
}

verify_minimum_env() {
  if [[ -z $POSTGRES_PASSWORD && $POSTGRES_HOST_AUTH_METHOD != trust ]]; then
    fail "$PGDATA holds no database and no superuser password is given: set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust, which admits anyone without a password)"
  fi
  if [[ $POSTGRES_HOST_AUTH_METHOD == trust ]]; then
    warn "POSTGRES_HOST_AUTH_METHOD=trust: every TCP client logs in without a password"
  fi
}

# First initialisation in a staging directory inside PGDATA (so on the same
# volume, also when PGDATA is the volume's root): nothing in PGDATA itself
# changes until it is complete.
# Not a hidden name, as in the MySQL and MariaDB images (InnoDB's file
# discovery skips hidden directories): one name for every image.
STAGING_NAME=dbbench-initialising
COMPLETE_MARK=.dbbench-initialised

# The entries of the staging directory moved up into PGDATA, one rename each,
# then the mark and the directory removed: safe to repeat after an
# interruption at any point.
publish_staging() {
  local staging=$PGDATA/$STAGING_NAME entry
  for entry in "$staging"/* "$staging"/.[!.]* "$staging"/..?*; do
    [[ ${entry##*/} == "$COMPLETE_MARK" ]] && continue
    mv -T "$entry" "$PGDATA/${entry##*/}"
  done
  rm -f "$staging/$COMPLETE_MARK"
  rmdir "$staging"
}

# What an interrupted first start left: finished, or removed (it holds only
# what the initialisation created) so that this start initialises again.
recover_interrupted_initialisation() {
  local staging=$PGDATA/$STAGING_NAME
  [[ -e $staging ]] || return 0
  if [[ -e $staging/$COMPLETE_MARK ]]; then
    note "$PGDATA: the first initialisation completed but was stopped while moving its files into place; finishing the move"
    publish_staging
    return
  fi
  warn "$PGDATA: the first initialisation did not complete (no $COMPLETE_MARK in $staging: the server or the container was stopped during it); removing what it created and initialising again"
  # initdb --waldir left its WAL there, behind the pg_wal link: emptied too,
  # or the next initdb refuses the directory.
  if [[ -L $staging/pg_wal && -n $POSTGRES_INITDB_WALDIR ]]; then
    find "$POSTGRES_INITDB_WALDIR" -mindepth 1 -delete
  fi
  rm -rf "$staging"
}

init_database_dir() {
  local args=()
  if [[ -n $POSTGRES_INITDB_WALDIR ]]; then args+=(--waldir "$POSTGRES_INITDB_WALDIR"); fi
  # POSTGRES_INITDB_ARGS is a string of options, split as a shell would (the
  # official contract); the password goes through a pipe, with a newline since
  # --pwfile refuses an empty file.
  eval "initdb --username=\"\$POSTGRES_USER\" --pwfile=<(printf '%s\n' \"\$POSTGRES_PASSWORD\") $POSTGRES_INITDB_ARGS \"\${args[@]}\""
}

# TCP logins in the data directory's own pg_hba.conf (a chart may name another
# file with -c hba_file=...; the temporary server then uses that one).
setup_hba_conf() {
  if [[ -z $POSTGRES_HOST_AUTH_METHOD ]]; then
    POSTGRES_HOST_AUTH_METHOD=$(postgres -C password_encryption "$@")
  fi
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"
}

start_temporary_server() {
  # Socket only: nothing reaches it over the network while it is being set up.
  PGUSER=${PGUSER:-$POSTGRES_USER} pg_ctl -D "$PGDATA" -w start \
    -o "$(printf '%q ' "$@" -c listen_addresses= -p "${PGPORT:-5432}")"
}

stop_temporary_server() {
  PGUSER=${PGUSER:-$POSTGRES_USER} pg_ctl -D "$PGDATA" -m fast -w stop
}

sql() {
  PGHOST= PGHOSTADDR= psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password \
    --no-psqlrc "$@"
}

create_database() {
  local exists
  exists=$(sql --dbname postgres --set db="$POSTGRES_DB" --tuples-only --no-align \
    <<<"SELECT 1 FROM pg_database WHERE datname = :'db';")
  if [[ -z $exists ]]; then
    sql --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
}

init_files() {
  local file
  for file in /docker-entrypoint-initdb.d/*; do
    case $file in
      *.sh)
        if [[ -x $file ]]; then
          note "running $file"
          "$file"
        else
          note "sourcing $file"
          # shellcheck disable=SC1090
          . "$file"
        fi
        ;;
      *.sql) note "running $file"; sql --dbname "$POSTGRES_DB" -f "$file" ;;
      *.sql.gz) note "running $file"; gunzip -c "$file" | sql --dbname "$POSTGRES_DB" ;;
      *.sql.xz) note "running $file"; xzcat "$file" | sql --dbname "$POSTGRES_DB" ;;
      *.sql.zst) note "running $file"; zstd -dc "$file" | sql --dbname "$POSTGRES_DB" ;;
      *) warn "ignoring $file (not .sh, .sql, .sql.gz, .sql.xz or .sql.zst)" ;;
    esac
  done
}

initialise() {
  verify_minimum_env
  # Fail before initialising rather than half-way.
  ls /docker-entrypoint-initdb.d/ >/dev/null
  local final=$PGDATA
  note "initialising $final (in $final/$STAGING_NAME until complete)"
  # initdb, pg_ctl and the init files work on the staging directory.
  export PGDATA=$final/$STAGING_NAME
  init_database_dir
  setup_hba_conf "$@"
  # psql needs it where a chart's file asks for passwords on the socket too.
  export PGPASSWORD=${PGPASSWORD:-$POSTGRES_PASSWORD}
  start_temporary_server "$@"
  create_database
  init_files
  stop_temporary_server
  unset PGPASSWORD
  # The last step: from here on the initialisation counts as complete.
  : >"$PGDATA/$COMPLETE_MARK"
  export PGDATA=$final
  publish_staging
  note "initialisation done"
}

main() {
  # An option first means "postgres with these options".
  if [[ ${1:0:1} == - ]]; then set -- postgres "$@"; fi
  if [[ $1 != postgres ]] || wants_help "$@"; then
    exec "$@"
  fi
  export PGDATA=${PGDATA:-/var/lib/postgresql/data}
  load_env POSTGRES_PASSWORD
  load_env POSTGRES_USER postgres
  load_env POSTGRES_DB "$POSTGRES_USER"
  load_env POSTGRES_INITDB_ARGS
  POSTGRES_HOST_AUTH_METHOD=${POSTGRES_HOST_AUTH_METHOD:-}
  prepare_directories
  if [[ $(id -u) == 0 ]]; then
    # As root (docker run without --user): drop to postgres like the official image.
    exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
  fi
  shift
  recover_interrupted_initialisation
  if [[ -s $PGDATA/PG_VERSION ]]; then
    note "$PGDATA holds a database; starting without initialisation"
  else
    initialise "$@"
  fi
  # The server needs none of them; they hold the superuser's password.
  unset "${!POSTGRES_@}"
  exec postgres "$@"
}

main "$@"
