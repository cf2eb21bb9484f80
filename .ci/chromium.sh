#!/usr/bin/env bash
# Makes sure Chromium is installed for the browser test (tests/browser_test.go
# drives the simulator's shopper pages in headless Chromium). make test
# (.ci/test.sh) runs it first:
#
#   Chromium present                      nothing to do
#   missing, root or sudo with no password  installed from the distribution's
#                                         packages (apt-get install chromium)
#   missing otherwise                     fails, printing the command to run
set -euo pipefail

have_chromium() {
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
    command -v google-chrome >/dev/null 2>&1
}
have_chromium && exit 0

packages="apt-get install -y --no-install-recommends chromium"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "make test: Chromium is not installed and there is no apt-get here: install Chromium (or Google Chrome) with this system's package manager, then run make test again" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    as_root=(sudo -n)
  else
    echo "make test: Chromium is not installed, and installing it needs root (or sudo without a password). Run:" >&2
    echo "  sudo apt-get update && sudo $packages" >&2
    echo "then make test again." >&2
    exit 1
  fi
fi
echo "== Chromium is missing: ${as_root[*]:+${as_root[*]} }$packages"
if ! "${as_root[@]}" apt-get update || ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive $packages; then
  echo "make test: installing Chromium failed (above); install it by hand: ${as_root[*]:+${as_root[*]} }apt-get update && ${as_root[*]:+${as_root[*]} }$packages" >&2
  exit 1
fi
if ! have_chromium; then
  echo "make test: apt-get installed chromium, but no chromium command is on PATH" >&2
  exit 1
fi
