# shellcheck shell=bash
# Sourced by hack/tools.sh and hack/cluster/images.sh: the Debian mirror that
# this machine's own apt uses, for debootstrap. No host is written into the
# scripts: a machine reaches only the mirror its apt is configured with.
#
#   debian_mirror [APT_DIR]   # prints the mirror URL, or fails saying how to set one
#
# DBBENCH_DEBIAN_MIRROR wins when set. Otherwise the first enabled `deb` source
# of the main archive is taken, from deb822 files (sources.list.d/*.sources)
# and one-line files (sources.list, sources.list.d/*.list): a URI whose path
# ends in /debian, for a suite that is not a -security one (debian-security
# has no full suites to bootstrap from).

debian_mirror() {
  local apt_dir=${1:-/etc/apt}
  if [[ -n ${DBBENCH_DEBIAN_MIRROR:-} ]]; then
    printf '%s\n' "${DBBENCH_DEBIAN_MIRROR%/}"
    return
  fi
  local files=() file
  for file in "$apt_dir"/sources.list.d/*.sources "$apt_dir"/sources.list "$apt_dir"/sources.list.d/*.list; do
    [[ -f $file ]] && files+=("$file")
  done
  local mirror=
  if ((${#files[@]})); then
    mirror=$(awk '
      function main_archive(uri, suite) {
        return uri ~ /^https?:\/\/[^ ]+\/debian\/?$/ && suite !~ /-security$/
      }
      function flush(   n, uris, suites, i, j) {
        if (!deb || disabled) { reset(); return }
        n = split(st_uris, uris, /[ \t]+/)
        split(st_suites, suites, /[ \t]+/)
        for (i = 1; i <= n; i++)
          for (j in suites)
            if (uris[i] != "" && suites[j] != "" && main_archive(uris[i], suites[j])) { print uris[i]; found = 1; exit }
        reset()
      }
      function reset() { deb = 0; disabled = 0; st_uris = ""; st_suites = "" }
      FNR == 1 { if (deb822) flush(); deb822 = FILENAME ~ /\.sources$/; reset() }
      /^[ \t]*#/ { next }
      deb822 && /^[ \t]*$/ { flush(); next }
      deb822 && tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1; next }
      deb822 && tolower($1) == "enabled:" { disabled = (tolower($2) == "no"); next }
      deb822 && tolower($1) == "uris:" { st_uris = substr($0, index($0, ":") + 1); next }
      deb822 && tolower($1) == "suites:" { st_suites = substr($0, index($0, ":") + 1); next }
      !deb822 && $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if (main_archive($i, $(i + 1))) { print $i; found = 1; exit }
      }
      END { if (!found && deb822) flush() }
    ' "${files[@]}")
  fi
  if [[ -z $mirror ]]; then
    printf 'no Debian mirror in %s (sources.list, sources.list.d/*.sources or *.list): ' "$apt_dir" >&2
    printf 'configure apt, or set DBBENCH_DEBIAN_MIRROR to the mirror URL\n' >&2
    return 1
  fi
  printf '%s\n' "${mirror%/}"
}
