#!/bin/bash
# Entrypoint of the Oracle MySQL image built from Debian packages for the local
# node (hack/cluster/images.sh). It keeps the environment contract of the
# official image (docker-library/mysql) that the charts rely on:
#
#   MYSQL_ROOT_PASSWORD | MYSQL_ALLOW_EMPTY_PASSWORD | MYSQL_RANDOM_ROOT_PASSWORD
#   (one is required on an empty data directory), MYSQL_ROOT_HOST (default %),
#   MYSQL_DATABASE, MYSQL_USER + MYSQL_PASSWORD (MYSQL_USER=root is refused),
#   MYSQL_ONETIME_PASSWORD, MYSQL_INITDB_SKIP_TZINFO; each value also as
#   *_FILE (read from a file); /docker-entrypoint-initdb.d/*.sh|.sql|.sql.gz
#   run once, after the accounts exist.
#
# On a data directory without mysql/ (the directory comes from `mysqld
# --verbose --help` with the given flags, so --datadir counts) it runs
# `mysqld --initialize-insecure` with the same flags, sets the accounts up
# through a temporary server reachable only on a private socket, stops it and
# execs the real command. A data directory that holds a database is never
# touched. The first initialisation is atomic (docs/decisions.md): it is done
# in <datadir>/dbbench-initialising, marked complete there as its last step,
# and only then moved into place; a start that finds that directory without
# the mark (a kill, an OOM kill, a failed step) removes it and initialises
# again, one with the mark finishes the move.
# Differences from the official script: the accounts, the time zones and
# MYSQL_DATABASE/MYSQL_USER are all created with the binary log off (a
# replica's own CREATE USER would be an errant GTID that breaks replicating
# the primary's); no /docker-entrypoint-startdb.d; the temporary server is
# stopped by its PID instead of mysqladmin; a server that fills more than 95%
# of the container's memory limit just by starting is stopped with a message
# (check_memory_headroom), not left to stall at the limit.
set -eo pipefail
shopt -s nullglob

note() { printf '%s [Note] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*"; }
warn() { printf '%s [Warn] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2; }
fail() {
  printf '%s [ERROR] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2
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

# A server setting as the given command line and the config files make it.
# --log-bin-index: with --log-bin, --help would otherwise open the real index.
server_setting() {
  local name=$1
  shift
  "$@" --verbose --help --log-bin-index="$(mktemp -u)" 2>/dev/null |
    awk -v name="$name" '$1 == name && /^[^ \t]/ { sub(/^[^ \t]+[ \t]+/, ""); print; exit }'
}

check_config() {
  local errors
  if ! errors=$("$@" --verbose --help --log-bin-index="$(mktemp -u)" 2>&1 >/dev/null); then
    fail "mysqld refuses its configuration: $* --verbose --help: $errors"
  fi
}

# Escapes a value for a single-quoted SQL string literal.
sql_string() {
  local value=${1//\\/\\\\}
  value=${value//$'\n'/\\n}
  printf '%s' "${value//\'/\\\'}"
}

# An identifier for backquotes.
sql_name() { printf '%s' "${1//\`/\`\`}"; }

wants_help() {
  local arg
  for arg; do
    case $arg in -'?' | --help | --print-defaults | -V | --version) return 0 ;; esac
  done
  return 1
}

# The client logs in as root with the password in force (none until the
# accounts are set up) from an options file, never on its command line.
client_password() {
  local value=${1//\\/\\\\}
  printf '[client]\nuser=root\npassword="%s"\n' "${value//\"/\\\"}" >"$INIT_DIR/client.cnf"
}

client() {
  mysql --defaults-extra-file="$INIT_DIR/client.cnf" --protocol=socket --socket="$INIT_SOCKET" \
    --comments "$@"
}

# The container's memory limit in bytes (cgroup v2, then v1); nothing if none.
memory_limit() {
  local file value
  for file in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
    [[ -r $file ]] || continue
    value=$(<"$file")
    # v2 says "max"; v1 says a page-aligned number near 2^63.
    if [[ $value =~ ^[0-9]+$ ]] && ((value < 1 << 50)); then printf '%s' "$value"; fi
    return 0
  done
}

mib() { printf '%d MiB' $(($1 / 1048576)); }

# A server that fills its memory limit just by starting never gets through a
# load: at the limit the kernel evicts its code pages over and over (it stalls
# for minutes, answering nothing) and then kills it. Seen with MySQL 9.7 at its
# defaults (performance_schema, a 64 MiB redo log buffer) and a 64 MiB pool:
# about 520 MiB resident (VmRSS) once it answers; in a 512Mi container it
# stalled for minutes in the time-zone load or was OOM-killed within seconds
# of an insert load, while at 600Mi (87% at start) the same load completed.
# So only a server at more than this share is stopped, saying what to change;
# the share is always logged. What it wants at its defaults is the operator's
# admission floor (runner-image/dbbench_contract/api/memory_floors.py, measured
# with tests/integration/images/measure_memory.py): tests/unit/contract/api/test_memory_floors.py
# checks that the figure below is the one the floor suggests.
MAX_START_SHARE=95

check_memory_headroom() {
  local limit rss_kb
  limit=$(memory_limit)
  [[ -n $limit ]] || return 0
  rss_kb=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$SERVER_PID/status" 2>/dev/null) || return 0
  [[ -n $rss_kb ]] || return 0
  note "the temporary server holds $(mib $((rss_kb * 1024))) of the $(mib "$limit") memory limit ($((rss_kb * 1024 * 100 / limit))%)"
  if ((rss_kb * 1024 * 100 > limit * MAX_START_SHARE)); then
    kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" || true
    fail "mysqld holds $(mib $((rss_kb * 1024))) just after starting, more than ${MAX_START_SHARE}% of the container's $(mib "$limit") memory limit: with no room left it stalls and is OOM-killed. Raise the memory limit (hardware.resources.limits.memory; MySQL 9.7 at its defaults wants 768Mi) or shrink the server (innodb_buffer_pool_size, performance_schema=OFF)."
  fi
}

# First initialisation in a staging directory inside the data directory (so
# on the same volume, also when the data directory is the volume's root):
# nothing in the data directory itself changes until it is complete.
# Not a hidden name: InnoDB's file discovery skips hidden directories, so
# mysqld cannot use one as its data directory.
STAGING_NAME=dbbench-initialising
COMPLETE_MARK=.dbbench-initialised

# The entries of the staging directory moved up into the data directory, one
# rename each, then the mark and the directory removed: safe to repeat after
# an interruption at any point.
publish_staging() {
  local staging=$DATADIR/$STAGING_NAME entry
  for entry in "$staging"/* "$staging"/.[!.]* "$staging"/..?*; do
    [[ ${entry##*/} == "$COMPLETE_MARK" ]] && continue
    mv -T "$entry" "$DATADIR/${entry##*/}"
  done
  rm -f "$staging/$COMPLETE_MARK"
  rmdir "$staging"
}

# What an interrupted first start left: finished, or removed (it holds only
# what the initialisation created) so that this start initialises again.
recover_interrupted_initialisation() {
  local staging=$DATADIR/$STAGING_NAME
  [[ -e $staging ]] || return 0
  if [[ -e $staging/$COMPLETE_MARK ]]; then
    note "$DATADIR: the first initialisation completed but was stopped while moving its files into place; finishing the move"
    publish_staging
  else
    warn "$DATADIR: the first initialisation did not complete (no $COMPLETE_MARK in $staging: the server or the container was stopped during it); removing what it created and initialising again"
    rm -rf "$staging"
  fi
}

start_temporary_server() {
  "$@" --skip-networking --socket="$INIT_SOCKET" --mysqlx=OFF --skip-replica-start \
    --default-time-zone=SYSTEM --pid-file="$INIT_DIR/mysqld.pid" &
  SERVER_PID=$!
  local attempt error= limit
  for attempt in $(seq 1 120); do
    if error=$(client --execute='SELECT 1' 2>&1 >/dev/null); then
      check_memory_headroom
      return
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      limit=$(memory_limit)
      fail "the temporary server exited during initialisation${limit:+ (memory limit $(mib "$limit"): an OOM kill leaves no line in its log)}"
    fi
    sleep 1
  done
  fail "the temporary server did not answer on $INIT_SOCKET within 120 s: $error"
}

stop_temporary_server() {
  kill "$SERVER_PID"
  wait "$SERVER_PID" || fail "the temporary server did not shut down cleanly"
}

verify_minimum_env() {
  if [[ -z $MYSQL_ROOT_PASSWORD && -z $MYSQL_ALLOW_EMPTY_PASSWORD && -z $MYSQL_RANDOM_ROOT_PASSWORD ]]; then
    fail "the data directory $DATADIR is empty and no root password is given: set MYSQL_ROOT_PASSWORD (or MYSQL_ALLOW_EMPTY_PASSWORD / MYSQL_RANDOM_ROOT_PASSWORD)"
  fi
  if [[ $MYSQL_USER == root ]]; then
    fail "MYSQL_USER=root: MYSQL_USER and MYSQL_PASSWORD are for a regular user; use MYSQL_ROOT_PASSWORD for root"
  fi
  if [[ -n $MYSQL_USER && -z $MYSQL_PASSWORD ]]; then
    warn "MYSQL_USER given without MYSQL_PASSWORD: the user is not created"
  elif [[ -z $MYSQL_USER && -n $MYSQL_PASSWORD ]]; then
    warn "MYSQL_PASSWORD given without MYSQL_USER: it is ignored"
  fi
}

accounts_sql() {
  local password root_host=$MYSQL_ROOT_HOST
  password=$(sql_string "$MYSQL_ROOT_PASSWORD")
  cat <<-EOSQL
	SET autocommit = 1;
	SET @@SESSION.SQL_LOG_BIN = 0;
	ALTER USER 'root'@'localhost' IDENTIFIED BY '$password';
	GRANT ALL ON *.* TO 'root'@'localhost' WITH GRANT OPTION;
	FLUSH PRIVILEGES;
	DROP DATABASE IF EXISTS test;
	EOSQL
  if [[ -n $root_host && $root_host != localhost ]]; then
    cat <<-EOSQL
	CREATE USER 'root'@'$(sql_string "$root_host")' IDENTIFIED BY '$password';
	GRANT ALL ON *.* TO 'root'@'$(sql_string "$root_host")' WITH GRANT OPTION;
	EOSQL
  fi
  if [[ -n $MYSQL_DATABASE ]]; then
    printf 'CREATE DATABASE IF NOT EXISTS `%s`;\n' "$(sql_name "$MYSQL_DATABASE")"
  fi
  if [[ -n $MYSQL_USER && -n $MYSQL_PASSWORD ]]; then
    printf "CREATE USER '%s'@'%%' IDENTIFIED BY '%s';\n" \
      "$(sql_string "$MYSQL_USER")" "$(sql_string "$MYSQL_PASSWORD")"
    if [[ -n $MYSQL_DATABASE ]]; then
      printf "GRANT ALL ON \`%s\`.* TO '%s'@'%%';\n" \
        "$(sql_name "${MYSQL_DATABASE//_/\\_}")" "$(sql_string "$MYSQL_USER")"
    fi
  fi
  if [[ -n $MYSQL_ONETIME_PASSWORD && -n $root_host && $root_host != localhost ]]; then
    printf "ALTER USER 'root'@'%s' PASSWORD EXPIRE;\n" "$(sql_string "$root_host")"
  fi
}

load_time_zones() {
  if [[ -n $MYSQL_INITDB_SKIP_TZINFO ]]; then return; fi
  if ! command -v mysql_tzinfo_to_sql >/dev/null || [[ ! -d /usr/share/zoneinfo ]]; then
    warn "no mysql_tzinfo_to_sql or /usr/share/zoneinfo: time-zone tables not loaded"
    return
  fi
  # sed: https://bugs.mysql.com/bug.php?id=20545, as in the official script.
  { echo 'SET @@SESSION.SQL_LOG_BIN = 0;'
    mysql_tzinfo_to_sql /usr/share/zoneinfo 2>/dev/null |
      sed 's/Local time zone must be set--see zic manual page/FCTY/'
  } | client --database=mysql
}

init_files() {
  local file database=()
  if [[ -n $MYSQL_DATABASE ]]; then database=(--database="$MYSQL_DATABASE"); fi
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
      *.sql) note "running $file"; client "${database[@]}" <"$file" ;;
      *.sql.gz) note "running $file"; gunzip -c "$file" | client "${database[@]}" ;;
      *) warn "ignoring $file (not .sh, .sql or .sql.gz)" ;;
    esac
  done
}

initialise() {
  verify_minimum_env
  # Fail before initialising rather than half-way.
  ls /docker-entrypoint-initdb.d/ >/dev/null
  local staging=$DATADIR/$STAGING_NAME
  note "initialising $DATADIR (in $staging until complete)"
  # The container's flags, then the staging directory as the data directory.
  set -- "$@" --datadir="$staging"
  "$@" --initialize-insecure --default-time-zone=SYSTEM
  INIT_DIR=$(mktemp -d /tmp/mysql-init.XXXXXX)
  INIT_SOCKET=$INIT_DIR/mysqld.sock
  client_password ""
  note "starting a temporary server on $INIT_SOCKET"
  start_temporary_server "$@"
  load_time_zones
  if [[ -n $MYSQL_RANDOM_ROOT_PASSWORD && -z $MYSQL_ROOT_PASSWORD ]]; then
    MYSQL_ROOT_PASSWORD=$(head -c 18 /dev/urandom | base64)
    export MYSQL_ROOT_PASSWORD
    note "GENERATED ROOT PASSWORD: $MYSQL_ROOT_PASSWORD"
  fi
  accounts_sql | client --database=mysql
  client_password "$MYSQL_ROOT_PASSWORD"
  init_files
  stop_temporary_server
  rm -rf "$INIT_DIR"
  # The last step: from here on the initialisation counts as complete.
  : >"$staging/$COMPLETE_MARK"
  publish_staging
  note "initialisation done"
}

main() {
  # An option first means "mysqld with these options".
  if [[ ${1:0:1} == - ]]; then set -- mysqld "$@"; fi
  if [[ $1 != mysqld ]] || wants_help "$@"; then
    exec "$@"
  fi
  check_config "$@"
  DATADIR=$(server_setting datadir "$@")
  [[ -n $DATADIR ]] || fail "cannot read datadir from: $* --verbose --help"
  DATADIR=${DATADIR%/}
  if [[ $(id -u) == 0 ]]; then
    # As root (docker run without --user): drop to mysql like the official image.
    mkdir -p "$DATADIR"
    chown mysql:mysql "$DATADIR"
    exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
  fi
  load_env MYSQL_ROOT_HOST %
  load_env MYSQL_DATABASE
  load_env MYSQL_USER
  load_env MYSQL_PASSWORD
  load_env MYSQL_ROOT_PASSWORD
  mkdir -p "$DATADIR"
  recover_interrupted_initialisation
  if [[ -d $DATADIR/mysql ]]; then
    note "$DATADIR holds a database; starting without initialisation"
  else
    initialise "$@"
  fi
  exec "$@"
}

main "$@"
