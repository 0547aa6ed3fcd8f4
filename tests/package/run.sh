#!/usr/bin/env bash
# Builds and runs the consumers of an installed mbopt: tests/package through find_package (the
# shared and the static library) and tests/consumer/main.c through pkg-config. Arguments: the
# install prefix, a scratch folder.
set -eu
prefix=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer_shared"
"$work/cmake/consumer_static"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
cc "$here/../consumer/main.c" $(pkg-config --cflags --libs mbopt) -o "$work/consumer_pkgconfig"
LD_LIBRARY_PATH=$prefix/lib "$work/consumer_pkgconfig"
# the Python package, importable from the installed folder, finds the installed library
PYTHONPATH=$prefix/lib/python3/dist-packages /usr/bin/python3 -c \
  "import mbopt; assert mbopt.version() and mbopt.__file__.startswith('$prefix'); print('PASS: python', mbopt.version())"
# the docs and the examples are installed too
[ -f "$prefix/share/doc/mbopt/api.md" ] && [ -f "$prefix/share/doc/mbopt/examples/gradient.c" ] || {
  echo "FAIL docs or examples not installed"
  exit 1
}
echo "PASS find_package (shared and static) and pkg-config against $prefix"
