# Sourced by hack/tools.sh and hack/cluster-tools.sh (they define BIN and log):
# a tool built from pinned inputs is built again only when its inputs change.
#
# A tool's stamp is the empty file $BIN/.<name>-<key>, where <key> names the
# inputs (a version, a hash of its sources). Older stamps of the tool go when
# it is built; a tool whose name starts another's (coredns, coredns-kind) may
# take the other's stamp with it, which costs one needless build, never a
# stale binary.

# once NAME KEY BUILD...: run BUILD unless $BIN/NAME is there, built from KEY.
once() {
  local name="$1" key="$2"
  shift 2
  if [[ -x "$BIN/$name" && -f "$BIN/.$name-$key" ]]; then
    log "$name $key present"
    return
  fi
  "$@"
  rm -f "$BIN/.$name-"*
  touch "$BIN/.$name-$key"
}
