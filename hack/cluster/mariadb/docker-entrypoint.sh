#!/bin/bash
# Entrypoint of the MariaDB image built from Debian packages for the local
# node (hack/cluster/images.sh). It keeps the environment contract of the
# official image (MariaDB/mariadb-docker) that the charts rely on:
#
#   MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_ROOT_HOST
#   (default %), MARIADB_DATABASE, MARIADB_USER, MARIADB_PASSWORD, each also as
#   MYSQL_* and as *_FILE (read from a file).
#
# On an empty data directory (no <datadir>/mysql) it initialises one, sets the
# accounts up through a temporary server reachable only on a private socket,
# stops it and then execs the real command. A data directory that holds a
# database is never touched. The first initialisation is atomic
# (docs/decisions.md): it is done in <datadir>/dbbench-initialising, marked
# complete there as its last step, and only then moved into place; a start
# that finds that directory without the mark removes it and initialises
# again, one with the mark finishes the move. Differences from the official script: no time-zone tables,
# no /docker-entrypoint-initdb.d, no healthcheck users, no upgrade step; all
# initial SQL stays out of the binary log (a replica's own CREATE USER would
# be an errant GTID).
set -eo pipefail
shopt -s nullglob

note() { printf '%s [Note] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*"; }
warn() { printf '%s [Warn] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2; }
fail() {
  printf '%s [ERROR] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2
  exit 1
}

# VAR from VAR, else VAR_FILE, else MYSQL_* with the same suffix, else DEFAULT.
load_env() {
  local var=$1 default=${2:-} legacy=MYSQL_${1#MARIADB_}
  local file_var=${var}_FILE legacy_file=${legacy}_FILE
  if [[ -n ${!var:-} && -n ${!file_var:-} ]]; then
    fail "both $var and $file_var are set; set only one"
  fi
  local value=$default
  if [[ -n ${!var:-} ]]; then
    value=${!var}
  elif [[ -n ${!file_var:-} ]]; then
    value=$(<"${!file_var}")
  elif [[ -n ${!legacy:-} ]]; then
    value=${!legacy}
  elif [[ -n ${!legacy_file:-} ]]; then
    value=$(<"${!legacy_file}")
  fi
  export "$var=$value"
  unset "$file_var" "$legacy_file"
}

# A server setting as the given command line and the config files make it
# (what `mariadbd --verbose --help` prints, so flags win over files).
server_setting() {
  local name=$1
  shift
  "$@" --verbose --help 2>/dev/null |
    awk -v name="$name" '$1 == name && /^[^ \t]/ { sub(/^[^ \t]+[ \t]+/, ""); print; exit }'
}

# Escapes a value for a single-quoted SQL string literal.
sql_string() {
  local value=${1//\\/\\\\}
  value=${value//$'\n'/\\n}
  printf '%s' "${value//\'/\\\'}"
}

wants_help() {
  local arg
  for arg; do
    case $arg in -'?' | --help | --print-defaults | -V | --version) return 0 ;; esac
  done
  return 1
}

client() { mariadb --protocol=socket --user=root --socket="$INIT_SOCKET" --skip-ssl "$@"; }

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
  "$@" --skip-networking --socket="$INIT_SOCKET" --skip-slave-start \
    --skip-ssl --loose-innodb-buffer-pool-load-at-startup=0 &
  SERVER_PID=$!
  local attempt error=
  for attempt in $(seq 1 60); do
    if error=$(client --execute='SELECT 1' 2>&1 >/dev/null); then return; fi
    kill -0 "$SERVER_PID" 2>/dev/null || fail "the temporary server exited during initialisation"
    sleep 1
  done
  fail "the temporary server did not answer on $INIT_SOCKET within 60 s: $error"
}

stop_temporary_server() {
  kill "$SERVER_PID"
  wait "$SERVER_PID" || fail "the temporary server did not shut down cleanly"
}

initial_sql() {
  local password root_host=$MARIADB_ROOT_HOST
  password=$(sql_string "$MARIADB_ROOT_PASSWORD")
  cat <<-EOSQL
	SET @@SESSION.SQL_LOG_BIN=0;
	SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');
	DELETE FROM mysql.global_priv WHERE User='';
	FLUSH PRIVILEGES;
	DROP USER IF EXISTS root@'127.0.0.1', root@'::1';
	EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\'', @@hostname, '\'');
	SET PASSWORD FOR 'root'@'localhost' = PASSWORD('$password');
	EOSQL
  if [[ -n $root_host && $root_host != localhost ]]; then
    cat <<-EOSQL
	CREATE USER 'root'@'$root_host' IDENTIFIED BY '$password';
	GRANT ALL ON *.* TO 'root'@'$root_host' WITH GRANT OPTION;
	GRANT PROXY ON ''@'%' TO 'root'@'$root_host' WITH GRANT OPTION;
	EOSQL
  fi
  if [[ -n $MARIADB_DATABASE ]]; then
    printf 'CREATE DATABASE IF NOT EXISTS `%s`;\n' "$MARIADB_DATABASE"
  fi
  if [[ -n $MARIADB_USER && -n $MARIADB_PASSWORD ]]; then
    printf "CREATE USER '%s'@'%%' IDENTIFIED BY '%s';\n" "$MARIADB_USER" "$(sql_string "$MARIADB_PASSWORD")"
    if [[ -n $MARIADB_DATABASE ]]; then
      printf "GRANT ALL ON \`%s\`.* TO '%s'@'%%';\n" "${MARIADB_DATABASE//_/\\_}" "$MARIADB_USER"
    fi
  fi
}

initialise() {
  if [[ -z $MARIADB_ROOT_PASSWORD && -z $MARIADB_ALLOW_EMPTY_ROOT_PASSWORD ]]; then
    fail "the data directory $DATADIR is empty and no root password is given: set MARIADB_ROOT_PASSWORD (or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1)"
  fi
  local staging=$DATADIR/$STAGING_NAME
  note "initialising $DATADIR (in $staging until complete)"
  # The container's flags, then the staging directory as the data directory.
  set -- "$@" --datadir="$staging"
  # The server's own flags apply to the new files too (page size, log sizes),
  # except the binary log: bootstrap statements never belong in it.
  local install_args=() arg
  for arg in "${@:2}"; do
    [[ $arg =~ [[:space:]] ]] || install_args+=("$arg")
  done
  mariadb-install-db "${install_args[@]}" \
    --auth-root-authentication-method=normal --skip-test-db --skip-log-bin \
    --cross-bootstrap --rpm --skip-name-resolve >/dev/null
  INIT_DIR=$(mktemp -d /tmp/mariadb-init.XXXXXX)
  INIT_SOCKET=$INIT_DIR/mysqld.sock
  note "starting a temporary server on $INIT_SOCKET"
  start_temporary_server "$@"
  initial_sql | client --database=mysql --binary-mode
  stop_temporary_server
  rm -rf "$INIT_DIR"
  # The last step: from here on the initialisation counts as complete.
  : >"$staging/$COMPLETE_MARK"
  publish_staging
  note "initialisation done"
}

main() {
  # An option first means "mariadbd with these options".
  if [[ ${1:0:1} == - ]]; then set -- mariadbd "$@"; fi
  if [[ $1 != mariadbd && $1 != mysqld ]] || wants_help "$@"; then
    exec "$@"
  fi
  if [[ $(id -u) == 0 ]]; then
    # As root (docker run without --user): drop to mysql like the official image.
    DATADIR=$(server_setting datadir "$@")
    mkdir -p "$DATADIR"
    chown mysql:mysql "$DATADIR"
    exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
  fi
  DATADIR=$(server_setting datadir "$@")
  [[ -n $DATADIR ]] || fail "cannot read datadir from: $* --verbose --help"
  DATADIR=${DATADIR%/}
  load_env MARIADB_ROOT_PASSWORD
  load_env MARIADB_ALLOW_EMPTY_ROOT_PASSWORD
  load_env MARIADB_ROOT_HOST %
  load_env MARIADB_DATABASE
  load_env MARIADB_USER
  load_env MARIADB_PASSWORD
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
