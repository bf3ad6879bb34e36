#!/usr/bin/env bash
# Runs a Windows program under Wine: CMake's CMAKE_CROSSCOMPILING_EMULATOR
# of the mingw-w64 build (cmake/mingw-w64.cmake), so that ctest in
# build-windows/ runs every C test this way. The Wine prefix is
# $ONNXIO_WINEPREFIX, else build-windows/wineprefix beside this script's
# tree; Wine's own messages are off (WINEDEBUG=-all).
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export WINEPREFIX="${ONNXIO_WINEPREFIX:-$root/build-windows/wineprefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
wine=""
for w in wine64 /usr/lib/wine/wine64 wine; do
    if command -v "$w" >/dev/null 2>&1; then wine="$w"; break; fi
done
[[ -n "$wine" ]] || { echo "wine_run.sh: no wine64 or wine (make windows installs it)" >&2; exit 127; }
exec "$wine" "$@"
