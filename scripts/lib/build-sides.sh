# shellcheck shell=bash
# The two sides of a comparison, an older commit (the base) and the working tree or another
# commit (the new side), as Release builds of mbopt; sourced by scripts/bench-compare.sh and
# scripts/check-agreement.sh.
#   source scripts/lib/build-sides.sh; prog=NAME; sides_setup; build_sides BASE [NEW]
# A commit is exported with git archive and built once in build-bench/<commit hash>/ (reused by
# later runs as long as build-bench/<hash>/.built exists); the working tree, as it is with its
# uncommitted changes, is built incrementally in build-bench/worktree/ (build/ is left alone).
# The caller sets prog (the prefix of the messages) first, and jobs (parallel build jobs; default:
# nproc) when it has a --jobs option, and flavour and flavour_args (a name and the CMake options of
# builds other than the default ones, kept apart in build-bench/<hash>/build-<flavour>/ and
# build-bench/worktree-<flavour>/) when it needs such builds.

die() {
  echo "${prog:?}: $*" >&2
  exit 1
}
bad_usage() {
  echo "${prog:?}: $*" >&2
  echo "Run 'scripts/$prog.sh --help' for the options." >&2
  exit 2
}
# absolute path of FILE relative to the caller's directory (sides_setup moves to the repo root)
abs_path() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
# need OPTION ARGS...: an option of the command line has its value
need() { [ $# -ge 2 ] || bad_usage "$1 needs a value"; }
# sides_option OPTION VALUE: the options every script of both sides takes, --base COMMIT,
# --new COMMIT, --out FILE and --json FILE; sets base, new, out or json (FILE made absolute)
# shellcheck disable=SC2034  # the variables are the result, read by the caller
sides_option() {
  case $1 in
  --base) base=$2 ;;
  --new) new=$2 ;;
  --out) out=$(abs_path "$2") ;;
  --json) json=$(abs_path "$2") ;;
  *) die "sides_option: '$1' is not an option of the sides" ;;
  esac
}

# sides_setup: moves to the repository root and checks the tools; sets root, cache (build-bench)
# and tmp (a scratch folder in the cache, removed on exit)
sides_setup() {
  cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
  root=$PWD
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$root is not a git work tree"
  local tool
  for tool in cmake tar; do command -v "$tool" >/dev/null || die "$tool is needed"; done
  cache=$root/build-bench
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
}

resolve() {
  git rev-parse --verify --quiet "$1^{commit}" || die "'$1' is not a commit of this repository"
}

# cmake_build SRC BUILD LABEL: a Release build of the mbopt target, its output in BUILD.log
cmake_build() {
  local src=$1 bld=$2 label=$3 log=$2.log nj=${jobs:-$(nproc 2>/dev/null || echo 2)}
  echo "$prog: building $label in ${bld#"$root"/} (log: ${log#"$root"/})" >&2
  # shellcheck disable=SC2154  # flavour_args: the caller's, when it wants other builds
  if ! { cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release ${flavour_args[@]+"${flavour_args[@]}"} &&
    cmake --build "$bld" --target mbopt -j"$nj"; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "$prog: the build of $label failed (the whole log: ${log#"$root"/})" >&2
    return 1
  fi
  [ -x "$bld/mbopt" ] || { echo "$prog: the build of $label made no $bld/mbopt" >&2; return 1; }
}

# build_commit HASH: exports the commit (once) and builds it (once); prints the binary
build_commit() {
  local hash=$1 dir=$cache/$1 build=build${flavour:+-$flavour}
  if [ -f "$dir/.built${flavour:+-$flavour}" ] && [ -x "$dir/$build/mbopt" ]; then
    echo "$prog: reusing the build of ${hash:0:12} in build-bench/$hash/$build" >&2
  else
    mkdir -p "$dir"
    if [ ! -d "$dir/src" ]; then
      # extracted beside, then renamed in whole: a tree that is there is complete
      local part
      part=$(mktemp -d "$tmp/src.XXXXXX")
      git archive --format=tar "$hash" | tar -x -C "$part" || die "git archive of $hash failed"
      chmod 755 "$part"
      mv -T "$part" "$dir/src" || die "could not move the export of $hash to $dir/src"
    fi
    cmake_build "$dir/src" "$dir/$build" "commit ${hash:0:12}" || exit 1
    touch "$dir/.built${flavour:+-$flavour}"
  fi
  printf '%s\n' "$dir/$build/mbopt"
}

# build_sides BASE [NEW]: builds the base commit, and the commit NEW or, without it, the working
# tree; sets base_hash, base_bin, new_hash (HEAD for the working tree), new_bin and new_kind
# (commit or worktree). new_hint, when set, ends the message of a working tree that does not build.
# shellcheck disable=SC2034  # the variables are the result, read by the caller
build_sides() {
  base_hash=$(resolve "$1")
  base_bin=$(build_commit "$base_hash")
  if [ -n "${2:-}" ]; then
    new_hash=$(resolve "$2")
    new_bin=$(build_commit "$new_hash")
    new_kind=commit
  else
    new_hash=$(git rev-parse --verify HEAD)
    local worktree=$cache/worktree${flavour:+-$flavour}
    cmake_build "$root" "$worktree" "the working tree" ||
      die "the working tree does not build as it is${new_hint:+; $new_hint}"
    new_bin=$worktree/mbopt
    new_kind=worktree
  fi
}
