# shellcheck shell=bash
# Helpers shared by the scripts that need PostgreSQL's own binaries.
# Source it; it defines functions only.

# find_pg_bindir prints the directory holding initdb, pg_ctl and postgres:
# PATH first, then /usr/lib/postgresql/<version>/bin, newest version first.
find_pg_bindir() {
	local initdb dir
	if initdb=$(command -v initdb 2>/dev/null); then
		dir=$(dirname "$(readlink -f "$initdb")")
		if [[ -x $dir/pg_ctl && -x $dir/postgres ]]; then
			echo "$dir"
			return 0
		fi
	fi
	for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -V -r); do
		if [[ -x $dir/initdb && -x $dir/pg_ctl && -x $dir/postgres ]]; then
			echo "$dir"
			return 0
		fi
	done
	return 1
}

# as_root runs a command as root: directly when we are root, else through
# sudo when it needs no password.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		echo "error: '$*' needs root; run it yourself or install PostgreSQL (Debian: apt-get install postgresql)" >&2
		return 1
	fi
}

# ensure_pg_binaries installs Debian's postgresql package when the server
# binaries are missing.
ensure_pg_binaries() {
	if find_pg_bindir >/dev/null; then
		return 0
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "error: PostgreSQL server binaries (initdb) not found and apt-get is not available; install PostgreSQL or set DATABASE_URL / TEST_DATABASE_URL" >&2
		return 1
	fi
	echo "==> installing PostgreSQL from the OS packages (initdb not found)" >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
	find_pg_bindir >/dev/null || {
		echo "error: PostgreSQL was installed but initdb is still not found" >&2
		return 1
	}
}
