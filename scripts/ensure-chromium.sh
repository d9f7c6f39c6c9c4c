#!/usr/bin/env bash
# Installs Debian's chromium for the connect widget's browser test
# (e2e/embed_browser_test.go) when no chromium is on the PATH: apt-get as
# root, else through sudo when it works without a password. When it cannot
# be installed, says so loudly and succeeds: the browser test then skips
# with its own loud message; nothing else needs chromium.
set -uo pipefail

for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		exit 0
	fi
done

as_root=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		as_root=(sudo -n)
	else
		echo "==> WARNING: chromium is missing and cannot be installed (not root, no passwordless sudo); the browser test will SKIP" >&2
		exit 0
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "==> WARNING: chromium is missing and this is not a Debian-like system (no apt-get); the browser test will SKIP" >&2
	exit 0
fi
echo "==> installing Debian's chromium for the browser test" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${as_root[@]}" apt-get install -y --no-install-recommends chromium >&2; then
	"${as_root[@]}" apt-get update >&2 && "${as_root[@]}" apt-get install -y --no-install-recommends chromium >&2 ||
		echo "==> WARNING: installing chromium failed; the browser test will SKIP" >&2
fi
exit 0
