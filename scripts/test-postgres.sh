#!/usr/bin/env bash
# Usage: scripts/test-postgres.sh COMMAND [ARGS...]
#
# Runs COMMAND (e.g. go test ./...) with TEST_DATABASE_URL pointing at a
# PostgreSQL server in which the tests create their own throwaway databases:
#   1. TEST_DATABASE_URL from the environment, when set;
#   2. else a server on 127.0.0.1:5432 accepting user postgres without a
#      password (the usual development setup);
#   3. else a private cluster under .fos/testpg on a free loopback port,
#      started from the machine's own binaries (Debian's postgresql package
#      is installed first when initdb is missing) as the postgres OS user when
#      we are root, and stopped when COMMAND ends.
# FOS_TEST_PRIVATE_PG=1 skips step 2.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-postgres.sh
. "$repo/scripts/lib-postgres.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 COMMAND [ARGS...]" >&2
	exit 2
fi

log() { echo "==> $*" >&2; }


# 1. Given by the caller.
if [[ -n ${TEST_DATABASE_URL:-} ]]; then
	log "tests use TEST_DATABASE_URL from the environment"
	exec "$@"
fi

# 2. A local server on the standard port.
local_server_ready() {
	local url=$1
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h 127.0.0.1 -p 5432 -t 3 || return 1
	else
		timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432' 2>/dev/null || return 1
	fi
	# When psql is there, make sure we can log in, not only connect.
	if command -v psql >/dev/null 2>&1; then
		PGCONNECT_TIMEOUT=5 psql "$url" -Atqc 'SELECT 1' >/dev/null 2>&1 || return 1
	fi
}

standard_url='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
if [[ ${FOS_TEST_PRIVATE_PG:-} != 1 ]] && local_server_ready "$standard_url"; then
	log "tests use the PostgreSQL server on 127.0.0.1:5432"
	export TEST_DATABASE_URL=$standard_url
	exec "$@"
fi

# 3. A private cluster.
ensure_pg_binaries
bindir=$(find_pg_bindir)

pg_user=""
if [[ $(id -u) -eq 0 ]]; then
	if ! id postgres >/dev/null 2>&1; then
		echo "error: running as root, the private cluster must run as the postgres OS user, which does not exist (install Debian's postgresql package)" >&2
		exit 1
	fi
	pg_user=postgres
fi

base=$repo/.fos/testpg
tmp_base=""
mkdir -p "$base"
if [[ -n $pg_user ]]; then
	chown -R "$pg_user:" "$base"
	if ! runuser -u "$pg_user" -- test -w "$base"; then
		# The postgres user cannot reach the checkout (e.g. under /root).
		tmp_base=$(mktemp -d /tmp/fos-testpg.XXXXXX)
		chmod 755 "$tmp_base"
		chown "$pg_user:" "$tmp_base"
		log "the postgres OS user cannot reach $base, using $tmp_base"
		base=$tmp_base
	fi
fi
datadir=$base/data
logfile=$base/postgres.log

# as_pg runs a PostgreSQL binary as the cluster's owner, from a directory it can read.
as_pg() {
	if [[ -n $pg_user ]]; then
		(cd "$base" && runuser -u "$pg_user" -- env LC_ALL=C LANG=C "$@")
	else
		(cd "$base" && env LC_ALL=C LANG=C "$@")
	fi
}

if [[ ! -f $datadir/PG_VERSION ]]; then
	rm -rf "$datadir"
	log "initializing a private PostgreSQL cluster in $datadir"
	as_pg "$bindir/initdb" --pgdata="$datadir" --username=postgres --auth=trust \
		--encoding=UTF8 --no-locale --no-instructions >/dev/null
fi

# A server left by an earlier run that was killed: stop it. A pid file naming
# anything else is stale: remove it.
if [[ -f $datadir/postmaster.pid ]]; then
	old_pid=$(head -n1 "$datadir/postmaster.pid")
	if [[ $old_pid =~ ^[0-9]+$ && -r /proc/$old_pid/cmdline ]] &&
		tr '\0' '\n' <"/proc/$old_pid/cmdline" | grep -qxF -- "$datadir"; then
		log "stopping a PostgreSQL server left by an earlier run (pid $old_pid)"
		as_pg "$bindir/pg_ctl" stop -D "$datadir" -m fast -w -t 60 >/dev/null
	else
		rm -f "$datadir/postmaster.pid"
	fi
fi

port_in_use() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

started=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $started ]]; then
		log "stopping the private PostgreSQL cluster"
		as_pg "$bindir/pg_ctl" stop -D "$datadir" -m fast -w -t 60 >/dev/null ||
			as_pg "$bindir/pg_ctl" stop -D "$datadir" -m immediate -w -t 30 >/dev/null || true
	fi
	if [[ -n $tmp_base ]]; then
		rm -rf "$tmp_base"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for attempt in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 40000))
	if port_in_use "$port"; then
		continue
	fi
	# Throwaway test data: durability off for speed. No unix socket (the
	# checkout path may be too long for one); TCP on loopback only.
	if as_pg "$bindir/pg_ctl" start -D "$datadir" -l "$logfile" -w -t 60 -s \
		-o "-c listen_addresses=127.0.0.1 -c port=$port -k '' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"; then
		started=1
		break
	fi
	log "PostgreSQL did not start on port $port (attempt $attempt); log: $logfile"
	tail -n 5 "$logfile" >&2 || true
done
if [[ -z $started ]]; then
	echo "error: could not start the private PostgreSQL cluster; see $logfile" >&2
	exit 1
fi

export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
log "tests use a private PostgreSQL cluster on 127.0.0.1:$port ($datadir)"
"$@"
