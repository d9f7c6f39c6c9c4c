// Package migrations holds the goose SQL migrations, embedded in the binary.
package migrations

import "embed"

// FS is the directory of *.sql migrations.
//
//go:embed *.sql
var FS embed.FS
