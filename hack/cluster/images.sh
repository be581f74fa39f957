#!/usr/bin/env bash
# Builds the container images of the local single-node cluster as OCI archives
# that `ctr -n k8s.io images import` loads; no registry is involved.
#
#   hack/cluster/images.sh [IMAGE...]    # default: all of them
#   IMAGE: pause busybox python-base operator runner mariadb mysql postgresql ferretdb
#   or a preparation step only: roots (the debootstrapped Debian roots),
#   wheels (the operator's and runner's wheels); hack/setup.sh runs these
#   while the Go tools build, so that the image builds later only assemble.
#   With DBBENCH_BUILD=demo (`make demo`) the default is what the quickstart
#   runs (pause busybox python-base operator runner mariadb), and roots builds
#   only theirs; the other images are built when something asks for them.
#
# Output: ${DBBENCH_IMAGES_DIR:-.cluster/images}/<image>.tar and manifest.txt
# ("<archive> <image reference>" per line). Debian root filesystems are cached
# under ${DBBENCH_ROOTS_DIR:-.cluster/roots}. Each archive carries a stamp of
# everything it is built from; a re-run without changes only compares stamps.
#
# Why it looks like this (docs/local-cluster.md): no registry is reachable, so
# every image starts from a debootstrapped Debian root or from scratch; TLS to
# PyPI fails inside builds, so wheels are downloaded on the host; the charts
# run MariaDB, MySQL and PostgreSQL as uid 999 like the official images. The database
# images carry references of their own (localhost/dbbench/...), never an
# official image's: the chart's `engines` values point the operator at them
# (hack/dbbench_local/install.py reads manifest.txt).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$REPO/hack/cluster
OUT=${DBBENCH_IMAGES_DIR:-$REPO/.cluster/images}
ROOTS=${DBBENCH_ROOTS_DIR:-$REPO/.cluster/roots}
TOOLS_DIR=${TOOLS_DIR:-$REPO/.tools}
SUITE=trixie
# Oracle MySQL is only in Debian's unstable suite (as for the tests' chroot).
MYSQL_SUITE=sid
PYTHON_VERSION=3.13 # trixie's python3; every wheel must be cp313
APP_VERSION=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$REPO/Chart.yaml")

REF_PAUSE=registry.k8s.io/pause:3.10
REF_BUSYBOX=docker.io/library/busybox:1.36
REF_PYTHON_BASE=localhost/dbbench/python-base:$SUITE
REF_OPERATOR=docker.io/dbbench/operator:$APP_VERSION
REF_RUNNER=docker.io/dbbench/runner:$APP_VERSION
REF_MARIADB=localhost/dbbench/mariadb:11.8
# The tag is the packaged major.minor (sid moves): set by build_mysql.
REF_MYSQL_REPOSITORY=localhost/dbbench/mysql
# trixie's PostgreSQL major; the tag is that major, as the official image's.
POSTGRES_MAJOR=17
REF_POSTGRES=localhost/dbbench/postgres:$POSTGRES_MAJOR
# Not MongoDB: a MongoDB-protocol server standing in for it (docs/local-cluster.md).
FERRETDB_VERSION=v1.24.0
REF_FERRETDB=localhost/dbbench/ferretdb-mongodb-standin:${FERRETDB_VERSION#v}

# podman needs an explicit open-files limit here (no CAP_SYS_RESOURCE to raise it).
NOFILE=$(ulimit -Hn)
[[ $NOFILE == unlimited || $NOFILE -gt 1048576 ]] && NOFILE=1048576
BUILD_FLAGS=(--ulimit "nofile=$NOFILE:$NOFILE" --network host --layers=false --isolation chroot)

log() { printf '==> %s\n' "$*"; }
die() {
  printf 'images.sh: %s\n' "$*" >&2
  exit 1
}

# Runs a step and prints how long it took.
timed() {
  local what=$1 start=$SECONDS
  shift
  "$@"
  log "$what: done in $((SECONDS - start)) s"
}

# sha256 of strings and file trees (sorted, caches excluded).
digest_of() {
  local item
  for item in "$@"; do
    if [[ -d $item ]]; then
      (cd "$item" && find . -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 |
        LC_ALL=C sort -z | xargs -0 -r sha256sum)
    elif [[ -f $item ]]; then
      sha256sum <"$item"
    else
      printf '%s\n' "$item"
    fi
  done | sha256sum | cut -c1-24
}

is_fresh() { [[ -f $OUT/$1.tar && -f $OUT/$1.stamp && $(<"$OUT/$1.stamp") == "$2" ]]; }

# Records an archive in manifest.txt (one line per archive, latest wins);
# locked, as images are built at once.
record() {
  local name=$1 ref=$2 manifest=$OUT/manifest.txt lock
  exec {lock}>"$manifest.lock"
  flock "$lock"
  touch "$manifest"
  { grep -v "^$name.tar " "$manifest" || true; } >"$manifest.new"
  printf '%s.tar %s\n' "$name" "$ref" >>"$manifest.new"
  LC_ALL=C sort -o "$manifest" "$manifest.new" && rm -f "$manifest.new"
  exec {lock}>&-
}

# The image a reference names before a rebuild; save() removes it afterwards
# so that rebuilds leave no untagged images behind in podman's store.
PREVIOUS_ID=
remember() { PREVIOUS_ID=$(podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true); }

# Saves a podman image as an OCI archive with its stamp.
save() {
  local name=$1 ref=$2 key=$3 id
  id=$(podman image inspect --format '{{.Id}}' "$ref")
  if [[ -n $PREVIOUS_ID && $PREVIOUS_ID != "$id" ]]; then
    podman rmi "$PREVIOUS_ID" >/dev/null 2>&1 || true # still used elsewhere: keep it
  fi
  rm -f "$OUT/$name.tar" "$OUT/$name.stamp"
  podman save --quiet --format oci-archive -o "$OUT/$name.tar.part" "$ref"
  mv "$OUT/$name.tar.part" "$OUT/$name.tar"
  printf '%s\n' "$key" >"$OUT/$name.stamp"
  record "$name" "$ref"
  log "$OUT/$name.tar ($(du -h "$OUT/$name.tar" | cut -f1)) = $ref"
}

# A built image whose archive is current but that podman no longer holds
# (another machine's cache, `podman system reset`) is loaded from the archive.
ensure_in_podman() {
  local name=$1 ref=$2
  podman image exists "$ref" || podman load --quiet -i "$OUT/$name.tar" >/dev/null
}

# Imports a directory as a single-layer image; extra args are --change lines.
import_dir() {
  local dir=$1 ref=$2
  shift 2
  local changes=() change
  for change in "$@"; do changes+=(--change "$change"); done
  tar -C "$dir" --numeric-owner --sort=name \
    --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* \
    --exclude=./var/cache/apt/archives/*.deb --exclude=./var/cache/apt/*.bin \
    --exclude=./var/lib/apt/lists/* --exclude=./var/log/* --exclude=./tmp/* \
    --exclude=./etc/resolv.conf --exclude=./etc/hostname \
    -cf - . | podman import --quiet "${changes[@]}" - "$ref" >/dev/null
}

ensure_packages() {
  local missing=() pkg
  for pkg in podman debootstrap busybox-static gcc libc6-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return
  log "installing ${missing[*]} (apt, about 1-3 min)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
    --no-install-recommends "${missing[@]}"
}

# debian_mirror: the mirror this machine's apt uses (no other is reachable
# here, and none is written into the scripts); set in main.
# shellcheck source=hack/debian-mirror.sh
source "$REPO/hack/debian-mirror.sh"
MIRROR=

# Runs a command chrooted in ROOT with /proc, /dev and /tmp private to it;
# the mounts vanish with the mount namespace, so the cached root stays clean.
in_root() {
  local root=$1
  shift
  unshare --mount --propagation private -- bash -ec '
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/tmp"
    exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"' in_root "$root" "$@"
}

# debootstrap ROOTS/NAME (SUITE, default trixie; minbase) with the given
# packages, then runs the optional SETUP function on it; cached under the stamp
# of all of them.
debootstrap_root() {
  local name=$1 include=$2 setup=${3:-} suite=${4:-$SUITE} key
  local root=$ROOTS/$name lock
  key=$(digest_of "$suite" "$MIRROR" "$include" "$(declare -f "${setup:-true}" || true)")
  mkdir -p "$ROOTS"
  # One lock per root: the preparation steps (roots, wheels) may run at once.
  exec {lock}>"$root.lock"
  flock "$lock"
  if [[ -f $root.stamp && $(<"$root.stamp") == "$key" ]]; then
    exec {lock}>&-
    return
  fi
  log "debootstrap $suite into $root (${include:-minbase only}; first time about 2-6 min)"
  rm -rf "$root" "$root.stamp"
  local args=(--variant=minbase)
  [[ -n $include ]] && args+=("--include=$include")
  local start=$SECONDS
  nice debootstrap "${args[@]}" "$suite" "$root" "$MIRROR" >"$root.log" 2>&1 ||
    die "debootstrap $name failed; see $root.log"
  log "debootstrap $name: done in $((SECONDS - start)) s ($(du -sh "$root" | cut -f1))"
  if [[ -n $setup ]]; then
    "$setup" "$root" >>"$root.log" 2>&1 || die "setting up $name failed; see $root.log"
  fi
  printf '%s\n' "$key" >"$root.stamp"
  exec {lock}>&-
}

# The image-specific extra Debian packages for a root are installed through apt
# inside the root; host networking reaches the (http) mirror there.
apt_in_root() {
  local root=$1
  shift
  in_root "$root" apt-get update -q
  in_root "$root" apt-get install -y -q --no-install-recommends "$@"
  in_root "$root" apt-get clean
}

# ---------------------------------------------------------------- the images

build_pause() {
  local key
  key=$(digest_of "$HERE/pause.c" "$(gcc --version | head -n1)" v1)
  if is_fresh pause "$key"; then log "pause: current ($REF_PAUSE)"; return; fi
  log "pause: static C binary from hack/cluster/pause.c (a few seconds)"
  local dir
  dir=$(mktemp -d)
  gcc -static -O2 -Wall -Wextra -Werror -o "$dir/pause" "$HERE/pause.c"
  strip "$dir/pause"
  remember "$REF_PAUSE"
  import_dir "$dir" "$REF_PAUSE" 'ENTRYPOINT ["/pause"]' 'USER 65535:65535'
  rm -rf "$dir"
  save pause "$REF_PAUSE" "$key"
}

build_busybox() {
  local busybox key
  busybox=$(dpkg -L busybox-static | grep -E '/bin/busybox$' | head -n1)
  key=$(digest_of "$busybox" v1)
  if is_fresh busybox "$key"; then log "busybox: current ($REF_BUSYBOX)"; return; fi
  log "busybox: Debian busybox-static in a minimal root (a few seconds)"
  local dir
  dir=$(mktemp -d)
  mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,var/tmp}
  chmod 1777 "$dir/tmp" "$dir/var/tmp"
  cp "$busybox" "$dir/bin/busybox"
  chroot "$dir" /bin/busybox --install -s
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
  remember "$REF_BUSYBOX"
  import_dir "$dir" "$REF_BUSYBOX" 'CMD ["sh"]'
  rm -rf "$dir"
  save busybox "$REF_BUSYBOX" "$key"
}

python_base_root() {
  debootstrap_root python-base python3,python3-venv,ca-certificates
}

build_python_base() {
  python_base_root
  local key
  key=$(digest_of "$(<"$ROOTS/python-base.stamp")" v1)
  if is_fresh python-base "$key"; then
    ensure_in_podman python-base "$REF_PYTHON_BASE"
    log "python-base: current ($REF_PYTHON_BASE)"
    return
  fi
  log "python-base: importing the $SUITE root (about 30 s)"
  remember "$REF_PYTHON_BASE"
  import_dir "$ROOTS/python-base" "$REF_PYTHON_BASE" 'CMD ["python3"]' 'ENV LANG=C.UTF-8'
  save python-base "$REF_PYTHON_BASE" "$key"
}

pip_cmd() {
  if [[ -n ${PIP:-} ]]; then
    printf '%s\n' "$PIP"
  elif [[ -x $REPO/.venv/bin/pip ]]; then
    printf '%s\n' "$REPO/.venv/bin/pip"
  else
    die "no pip: run \`make venv\` first (or set PIP=/path/to/pip)"
  fi
}

# Wheels of the operator: the project's build backend, dependencies and the
# [operator] extra, read from pyproject.toml so the list cannot drift.
operator_wheels() {
  local dir=$REPO/build/wheels reqs key
  reqs=$(python3 -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    d = tomllib.load(f)
print("\n".join(d["build-system"]["requires"] + d["project"]["dependencies"]
                + d["project"]["optional-dependencies"]["operator"]))' </dev/null)
  key=$(digest_of "$reqs" "$PYTHON_VERSION" v1)
  if [[ -f $dir/.stamp && $(<"$dir/.stamp") == "$key" ]]; then return; fi
  log "operator: downloading wheels for CPython $PYTHON_VERSION on the host (about 30 s)"
  rm -rf "$dir"
  mkdir -p "$dir"
  local pip
  pip=$(pip_cmd)
  mapfile -t req_list <<<"$reqs"
  "$pip" download --quiet --dest "$dir" --only-binary=:all: \
    --python-version "$PYTHON_VERSION" --implementation cp --abi "cp${PYTHON_VERSION/./}" \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform any "${req_list[@]}"
  printf '%s\n' "$key" >"$dir/.stamp"
}

build_operator() {
  local helm=$TOOLS_DIR/bin/helm key
  [[ -x $helm ]] || die "no helm at $helm: run \`make tools\` (or set TOOLS_DIR)"
  # The operator runs helm in a base without Go's libc needs: only a static one fits.
  if ldd "$helm" >/dev/null 2>&1; then die "$helm is dynamically linked; build it with CGO_ENABLED=0"; fi
  operator_wheels
  key=$(digest_of "$(<"$OUT/python-base.stamp")" "$(<"$REPO/build/wheels/.stamp")" "$helm" \
    "$REPO/Dockerfile" "$REPO/.dockerignore" "$REPO/pyproject.toml" "$REPO/README.md" \
    "$REPO/operator" "$REPO/runner-image/dbbench_contract" "$REPO/charts" v1)
  if is_fresh operator "$key"; then log "operator: current ($REF_OPERATOR)"; return; fi
  log "operator: podman build of ./Dockerfile on $REF_PYTHON_BASE (about 1-2 min)"
  cp "$helm" "$REPO/build/helm"
  remember "$REF_OPERATOR"
  podman build "${BUILD_FLAGS[@]}" --quiet \
    --build-arg "BASE_IMAGE=$REF_PYTHON_BASE" --build-arg HELM_BINARY=build/helm \
    --build-arg WHEELS_DIR=build/wheels -t "$REF_OPERATOR" -f "$REPO/Dockerfile" "$REPO" >/dev/null
  save operator "$REF_OPERATOR" "$key"
}

# A trixie root with compilers and client headers, for the Python packages
# that have no binary wheel (mysqlclient, for one); used only when one shows up.
build_root_setup() { :; }
python_build_root() {
  debootstrap_root python-build \
    python3,python3-venv,python3-dev,python3-pip,python3-setuptools,python3-wheel,gcc,libc6-dev,pkg-config,libmariadb-dev,libmariadb-dev-compat \
    build_root_setup
}

# Turns every source distribution in DIR into a cp313 wheel, built chrooted in
# the trixie build root (the host's Python is 3.11, its libraries are older).
wheels_from_sdists() {
  local dir=$1 sdists=()
  mapfile -t sdists < <(find "$dir" -maxdepth 1 \( -name '*.tar.gz' -o -name '*.zip' \) -printf '%f\n')
  ((${#sdists[@]} == 0)) && return
  log "building wheels from source for ${sdists[*]} in the $SUITE build root (first time about 2 min)"
  python_build_root
  local root=$ROOTS/python-build
  unshare --mount --propagation private -- bash -ec '
    root=$1 dir=$2; shift 2
    mkdir -p "$root/wheels"
    mount --bind "$dir" "$root/wheels"
    mount -t proc proc "$root/proc"
    mount -t tmpfs tmpfs "$root/tmp"
    for sdist; do
      chroot "$root" env -i PATH=/usr/bin:/bin HOME=/tmp PIP_DISABLE_PIP_VERSION_CHECK=1 \
        python3 -m pip wheel --no-index --find-links /wheels --no-deps --no-build-isolation \
        --wheel-dir /wheels "/wheels/$sdist"
    done' sdists "$root" "$dir" "${sdists[@]}"
  # Out of the build context: the image needs the wheels only.
  mkdir -p "$REPO/build/sdists"
  local sdist
  for sdist in "${sdists[@]}"; do mv "$dir/$sdist" "$REPO/build/sdists/"; done
}

runner_wheels() {
  local dir=$REPO/runner-image/wheels key
  key=$(digest_of "$REPO/runner-image/download-wheels.sh" "$PYTHON_VERSION" v1)
  if [[ -f $dir/.stamp && $(<"$dir/.stamp") == "$key" ]]; then return; fi
  log "runner: downloading wheels for CPython $PYTHON_VERSION on the host (about 30 s)"
  rm -rf "$dir"
  WHEELS_DIR=$dir PIP=$(pip_cmd) PYTHON_VERSION=$PYTHON_VERSION \
    "$REPO/runner-image/download-wheels.sh" >/dev/null
  wheels_from_sdists "$dir"
  printf '%s\n' "$key" >"$dir/.stamp"
}

build_runner() {
  runner_wheels
  local key
  key=$(digest_of "$(<"$OUT/python-base.stamp")" "$(<"$REPO/runner-image/wheels/.stamp")" \
    "$REPO/runner-image/Dockerfile" "$REPO/runner-image/dbbench_contract" \
    "$REPO/runner-image/dbbench_runner" "$REPO/runner-image/dbbench_results" \
    "$REPO/runner-image/dbbench_report" "$REPO/runner-image/presets" v1)
  if is_fresh runner "$key"; then log "runner: current ($REF_RUNNER)"; return; fi
  log "runner: podman build of runner-image/Dockerfile on $REF_PYTHON_BASE (about 1 min)"
  remember "$REF_RUNNER"
  podman build "${BUILD_FLAGS[@]}" --quiet --build-arg "BASE_IMAGE=$REF_PYTHON_BASE" \
    -t "$REF_RUNNER" -f "$REPO/runner-image/Dockerfile" "$REPO/runner-image" >/dev/null
  save runner "$REF_RUNNER" "$key"
}

# mysql must be uid/gid 999 (the chart's runAsUser, as in the official image)
# before the package creates it with whatever id is free.
mariadb_setup() {
  local root=$1
  in_root "$root" groupadd --system --gid 999 mysql
  in_root "$root" useradd --system --uid 999 --gid 999 --home-dir /nonexistent \
    --no-create-home --shell /usr/sbin/nologin mysql
  # No service starts during installation.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  apt_in_root "$root" mariadb-server mariadb-client
  rm -f "$root/usr/sbin/policy-rc.d"
  # The data lives on the pod's volume; the package's own initialisation goes.
  rm -rf "$root/var/lib/mysql" "$root/run/mysqld"
  mkdir -p "$root/var/lib/mysql" "$root/run/mysqld"
  chown 999:999 "$root/var/lib/mysql" "$root/run/mysqld"
  # As in the official image: any uid the pod runs as can use them.
  chmod 1777 "$root/var/lib/mysql" "$root/run/mysqld"
  # Debian binds to 127.0.0.1 by default; a pod serves its address.
  sed -i 's/^\(bind-address\)/#\1/' "$root/etc/mysql/mariadb.conf.d/50-server.cnf"
}

build_mariadb() {
  debootstrap_root mariadb "" mariadb_setup
  local root=$ROOTS/mariadb key
  key=$(digest_of "$(<"$root.stamp")" "$HERE/mariadb" v1)
  if is_fresh mariadb "$key"; then log "mariadb: current ($REF_MARIADB)"; return; fi
  log "mariadb: importing the $SUITE root with mariadb-server (about 30 s)"
  install -m 0755 "$HERE/mariadb/docker-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  install -m 0644 "$HERE/mariadb/99-dbbench.cnf" "$root/etc/mysql/mariadb.conf.d/99-dbbench.cnf"
  local version
  version=$(chroot "$root" dpkg-query -W -f='${Version}' mariadb-server)
  remember "$REF_MARIADB"
  import_dir "$root" "$REF_MARIADB" 'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["mariadbd"]' \
    'EXPOSE 3306' 'ENV LANG=C.UTF-8' "ENV MARIADB_VERSION=$version"
  save mariadb "$REF_MARIADB" "$key"
}

# Oracle MySQL from sid's mysql-server-core / mysql-client-core (the packages
# the tests' chroot runs), uid/gid 999 as in the official image, and the
# directories its configuration names (/etc/my.cnf from hack/cluster/mysql).
mysql_setup() {
  local root=$1
  in_root "$root" groupadd --system --gid 999 mysql
  in_root "$root" useradd --system --uid 999 --gid 999 --home-dir /nonexistent \
    --no-create-home --shell /usr/sbin/nologin mysql
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  # tzdata: the entrypoint loads the time-zone tables like the official one.
  apt_in_root "$root" mysql-server-core mysql-client-core tzdata
  rm -f "$root/usr/sbin/policy-rc.d"
  rm -rf "$root/var/lib/mysql" "$root/run/mysqld"
  mkdir -p "$root/var/lib/mysql" "$root/run/mysqld" "$root/var/lib/mysql-files" \
    "$root/etc/mysql/conf.d" "$root/docker-entrypoint-initdb.d"
  chown 999:999 "$root/var/lib/mysql" "$root/run/mysqld" "$root/var/lib/mysql-files"
  # As in the official image: any uid the pod runs as can use them.
  chmod 1777 "$root/var/lib/mysql" "$root/run/mysqld"
  chmod 0750 "$root/var/lib/mysql-files"
}

build_mysql() {
  debootstrap_root mysql "" mysql_setup "$MYSQL_SUITE"
  local root=$ROOTS/mysql key version ref
  version=$(chroot "$root" dpkg-query -W -f='${Version}' mysql-server-core)
  # 9.7.0-1 -> 9.7: the official image's tag for the same series.
  [[ $version =~ ^([0-9]+\.[0-9]+)\. ]] || die "unexpected mysql-server-core version '$version'"
  ref=$REF_MYSQL_REPOSITORY:${BASH_REMATCH[1]}
  key=$(digest_of "$(<"$root.stamp")" "$HERE/mysql" "$version" v1)
  if is_fresh mysql "$key"; then log "mysql: current ($ref)"; return; fi
  log "mysql: importing the $MYSQL_SUITE root with mysql-server-core $version (about 1 min)"
  install -m 0755 "$HERE/mysql/docker-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  install -m 0644 "$HERE/mysql/my.cnf" "$root/etc/my.cnf"
  remember "$ref"
  import_dir "$root" "$ref" 'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["mysqld"]' \
    'EXPOSE 3306' 'EXPOSE 33060' 'ENV LANG=C.UTF-8' "ENV MYSQL_VERSION=$version"
  save mysql "$ref" "$key"
}

# PostgreSQL from trixie's postgresql-17, laid out as the official image is:
# postgres uid/gid 999 with its home, no cluster of Debian's own (the data
# lives in the pod's PGDATA), the sample configuration listening on every
# address, /var/run/postgresql writable by any uid, /docker-entrypoint-initdb.d.
postgres_setup() {
  local root=$1
  in_root "$root" groupadd --system --gid 999 postgres
  in_root "$root" useradd --system --uid 999 --gid 999 --home-dir /var/lib/postgresql \
    --no-create-home --shell /bin/bash postgres
  install -d -o 999 -g 999 -m 1777 "$root/var/lib/postgresql"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  apt_in_root "$root" postgresql-common
  # Debian would create and start a cluster of its own on installation.
  sed -ri 's/#(create_main_cluster) .*$/\1 = false/' "$root/etc/postgresql-common/createcluster.conf"
  grep -q '^create_main_cluster = false' "$root/etc/postgresql-common/createcluster.conf"
  # xz-utils, zstd: the entrypoint's compressed init files, as in the official image.
  apt_in_root "$root" "postgresql-$POSTGRES_MAJOR" xz-utils zstd
  rm -f "$root/usr/sbin/policy-rc.d"
  [[ ! -d $root/var/lib/postgresql/$POSTGRES_MAJOR ]] || die "Debian created a cluster in $root"
  sed -ri "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" \
    "$root/usr/share/postgresql/$POSTGRES_MAJOR/postgresql.conf.sample"
  grep -qF "listen_addresses = '*'" "$root/usr/share/postgresql/$POSTGRES_MAJOR/postgresql.conf.sample"
  # /run, not /var/run: the root's /var/run is a symlink to an absolute /run.
  install -d -o 999 -g 999 -m 3777 "$root/run/postgresql"
  # 1777 until the entrypoint makes PGDATA 0700 (any uid the pod runs as can use it).
  install -d -o 999 -g 999 -m 1777 "$root/var/lib/postgresql/data"
  mkdir -p "$root/docker-entrypoint-initdb.d"
}

postgresql_root() {
  # A root of another major (POSTGRES_MAJOR changed) is rebuilt.
  [[ -x $ROOTS/postgresql/usr/lib/postgresql/$POSTGRES_MAJOR/bin/postgres ]] ||
    rm -f "$ROOTS/postgresql.stamp"
  debootstrap_root postgresql "" postgres_setup
}

build_postgresql() {
  postgresql_root
  local root=$ROOTS/postgresql key version bin=/usr/lib/postgresql/$POSTGRES_MAJOR/bin
  version=$(chroot "$root" dpkg-query -W -f='${Version}' "postgresql-$POSTGRES_MAJOR")
  key=$(digest_of "$(<"$root.stamp")" "$HERE/postgres" "$version" v1)
  if is_fresh postgresql "$key"; then log "postgresql: current ($REF_POSTGRES)"; return; fi
  log "postgresql: importing the $SUITE root with postgresql-$POSTGRES_MAJOR $version (about 1 min)"
  install -m 0755 "$HERE/postgres/docker-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  # The major's own binaries first: postgres, initdb and pg_ctl exist only
  # there, and /usr/bin's psql/pg_basebackup are Debian's version-picking wrappers.
  remember "$REF_POSTGRES"
  import_dir "$root" "$REF_POSTGRES" 'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["postgres"]' \
    'EXPOSE 5432' 'ENV LANG=C.UTF-8' "ENV PG_MAJOR=$POSTGRES_MAJOR" "ENV PG_VERSION=$version" \
    "ENV PATH=$bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    'ENV PGDATA=/var/lib/postgresql/data' 'STOPSIGNAL SIGINT'
  save postgresql "$REF_POSTGRES" "$key"
}

# FerretDB as `make tools` builds it for the tests (pinned, patched for w:0
# writes; static), with busybox for the entrypoint's shell. A stand-in for
# MongoDB's wire protocol, named so: never tagged as a mongo image.
build_ferretdb() {
  local ferretdb=$TOOLS_DIR/bin/ferretdb busybox key
  [[ -x $ferretdb ]] || die "no ferretdb at $ferretdb: run \`make tools\` (or set TOOLS_DIR)"
  # Read whole first: `| grep -q` may close the pipe early, and with pipefail
  # ferretdb's SIGPIPE then failed the check at random (seen in a make e2e).
  local version_text
  version_text=$("$ferretdb" --version 2>&1) || die "$ferretdb --version failed: $version_text"
  [[ ${version_text,,} == *"version: ${FERRETDB_VERSION,,}"* ]] ||
    die "$ferretdb is not FerretDB $FERRETDB_VERSION: run \`make tools\`"
  if ldd "$ferretdb" >/dev/null 2>&1; then die "$ferretdb is dynamically linked; build it with CGO_ENABLED=0"; fi
  busybox=$(dpkg -L busybox-static | grep -E '/bin/busybox$' | head -n1)
  key=$(digest_of "$ferretdb" "$busybox" "$HERE/ferretdb" v1)
  if is_fresh ferretdb "$key"; then log "ferretdb: current ($REF_FERRETDB)"; return; fi
  log "ferretdb: $ferretdb with busybox-static (a few seconds)"
  # Kept under ROOTS (like the Debian roots) for tests/integration/images/test_ferretdb_image.py.
  local dir=$ROOTS/ferretdb
  rm -rf "$dir" "$dir.stamp"
  mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,proc,dev,mnt,data/db,docker-entrypoint-initdb.d}
  chmod 1777 "$dir/tmp" "$dir/data/db"
  cp "$busybox" "$dir/bin/busybox"
  chroot "$dir" /bin/busybox --install -s
  install -m 0755 "$ferretdb" "$dir/usr/local/bin/ferretdb"
  install -m 0755 "$HERE/ferretdb/docker-entrypoint.sh" "$dir/usr/local/bin/docker-entrypoint.sh"
  # mongodb is uid/gid 999, as in the official mongo image the chart expects.
  printf 'root:x:0:0:root:/root:/bin/sh\nmongodb:x:999:999:mongodb:/data/db:/bin/false\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nmongodb:x:999:\n' >"$dir/etc/group"
  remember "$REF_FERRETDB"
  import_dir "$dir" "$REF_FERRETDB" 'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["mongod"]' \
    'EXPOSE 27017' 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
    "ENV FERRETDB_VERSION=$FERRETDB_VERSION" 'LABEL dbbench.io/protocol-stand-in=mongodb'
  printf '%s\n' "$key" >"$dir.stamp"
  save ferretdb "$REF_FERRETDB" "$key"
}

# ------------------------------------------------------- running them at once

# Image builds are mostly waiting (debootstrap and pip downloads, dpkg, tar):
# independent ones run at once. Each background build's lines carry its name.
BG_PIDS=()
BG_NAMES=()
spawn() {
  local name=$1
  shift
  # The subshell waits only for its own builds (see await_all).
  (BG_PIDS=(); BG_NAMES=(); "$@" 2>&1 | sed -u "s/^/[$name] /") &
  BG_PIDS+=("$!")
  BG_NAMES+=("$name")
}
# Waits for every spawned build; fails naming the ones that failed.
await_all() {
  local i failed=()
  for i in "${!BG_PIDS[@]}"; do
    wait "${BG_PIDS[$i]}" || failed+=("${BG_NAMES[$i]}")
  done
  BG_PIDS=()
  BG_NAMES=()
  ((${#failed[@]} == 0)) || die "failed: ${failed[*]} (see the lines marked with their names)"
}

# The network- and disk-bound parts of the images, ahead of the builds.
build_roots() {
  spawn python-base-root python_base_root
  spawn mariadb-root debootstrap_root mariadb "" mariadb_setup
  if [[ ${DBBENCH_BUILD:-all} != demo ]]; then
    spawn mysql-root debootstrap_root mysql "" mysql_setup "$MYSQL_SUITE"
    spawn postgresql-root postgresql_root
  fi
  await_all
}
build_wheels() {
  operator_wheels
  runner_wheels
}

# python-base, then the images built on it (at once).
python_chain() {
  local image
  if [[ " $* " == *" python-base "* ]]; then timed python-base build_python_base; else build_python_base; fi
  for image in operator runner; do
    [[ " $* " == *" $image "* ]] && spawn "$image" timed "$image" "build_$image"
  done
  await_all
}

main() {
  local images=("$@")
  if ((${#images[@]} == 0)); then
    images=(pause busybox python-base operator runner mariadb)
    [[ ${DBBENCH_BUILD:-all} == demo ]] || images+=(mysql postgresql ferretdb)
  fi
  [[ $(id -u) == 0 ]] || die "run as root (debootstrap, chroot and podman's store need it)"
  [[ -n $APP_VERSION ]] || die "no appVersion in Chart.yaml"
  ensure_packages
  MIRROR=$(debian_mirror) || exit 1
  mkdir -p "$OUT" "$ROOTS"
  # Two builds at once would race on podman's tags, the archives and the wheels;
  # the preparation steps alone lock only the roots they build.
  if [[ " ${images[*]} " != " roots " && " ${images[*]} " != " wheels " ]]; then
    exec 9>"$ROOTS/.lock"
    flock -n 9 || { log "waiting for another images.sh run to finish"; flock 9; }
  fi
  log "images into $OUT (Debian $SUITE from $MIRROR)"
  local image start=$SECONDS chain=()
  for image in "${images[@]}"; do
    case $image in
      pause | busybox | mariadb | mysql | postgresql | ferretdb | roots | wheels)
        spawn "$image" timed "$image" "build_$image"
        ;;
      python-base | operator | runner) chain+=("$image") ;;
      *) die "unknown image '$image' (pause busybox python-base operator runner mariadb mysql postgresql ferretdb; roots wheels)" ;;
    esac
  done
  ((${#chain[@]} == 0)) || spawn python "python_chain" "${chain[@]}"
  await_all
  log "${images[*]}: current in $((SECONDS - start)) s; manifest: $OUT/manifest.txt"
}

# Sourcing (tests, debugging) defines the functions without building anything.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
