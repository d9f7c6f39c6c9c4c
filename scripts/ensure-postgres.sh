#!/usr/bin/env bash
# Installs PostgreSQL's server binaries from the OS packages when initdb is
# missing (what `fos dev` needs for its private cluster). Does nothing when
# DATABASE_URL is set.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-postgres.sh
. scripts/lib-postgres.sh

if [[ -n ${DATABASE_URL:-} ]]; then
	exit 0
fi
ensure_pg_binaries
