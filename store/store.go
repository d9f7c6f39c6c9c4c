// Package store is the PostgreSQL data layer: one file per domain, SQL in
// constants next to the function that runs it, rows scanned by name.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/migrations"
)

// Domain errors: the values of domain.ErrNoRecord, ErrRecordConflict and
// ErrRecordInvalid, so the API maps them to statuses in one place without
// importing the store.
var (
	// ErrNotFound means no row matched (including a row of another organization).
	ErrNotFound = domain.ErrNoRecord
	// ErrConflict means a unique constraint refused the write.
	ErrConflict = domain.ErrRecordConflict
	// ErrInvalidInput means PostgreSQL refused a value (e.g. a character it
	// cannot store); the request was bad, not the server.
	ErrInvalidInput = domain.ErrRecordInvalid
)

// DBTX is satisfied by a pool and by a transaction, so one query function
// serves both.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
}

// Store wraps the connection pool.
type Store struct {
	Pool *pgxpool.Pool
}

// Option adjusts the pool's configuration before it connects.
type Option func(*pgxpool.Config)

// WithQueryTracer traces every statement the pool runs (telemetry's
// otelpgx tracer); nil: none.
func WithQueryTracer(t pgx.QueryTracer) Option {
	return func(cfg *pgxpool.Config) {
		if t != nil {
			cfg.ConnConfig.Tracer = t
		}
	}
}

// Open connects to PostgreSQL and checks the connection.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	ConfigurePool(cfg)
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return &Store{Pool: pool}, nil
}

// ConfigurePool sets what every pool of the service needs on each new
// connection (the uuid codec).
func ConfigurePool(cfg *pgxpool.Config) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		RegisterUUID(conn)
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
}

// Close releases the pool.
func (s *Store) Close() { s.Pool.Close() }

// Ping checks the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error { return s.Pool.Ping(ctx) }

// InTx runs fn in a transaction, committing when it returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.Pool, fn)
}

// Migrator returns a goose provider over the embedded migrations, guarded by
// a PostgreSQL session advisory lock so that two processes starting at once
// do not race. Migrations are applied out of order when a database already
// has a newer one: features land from parallel branches, each with its own
// number range, and a development database that applied a later range must
// still take an earlier one that lands after it.
func Migrator(pool *pgxpool.Pool) (*goose.Provider, func() error, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker), goose.WithAllowOutofOrder(true))
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return p, db.Close, nil
}

// Migrate applies every pending migration.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	p, closeDB, err := Migrator(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range res {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration_ms", r.Duration.Milliseconds())
		}
	}
	return nil
}

// mapErr turns driver errors into domain errors.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case "22P02": // invalid_text_representation (e.g. a malformed uuid)
			return ErrNotFound
		case "23514": // check_violation: the value broke a rule of the table
			return fmt.Errorf("%w: %w", ErrInvalidInput, err)
		case "22021", "22P05", "22001", "22003": // bad character, untranslatable, too long, out of range
			return fmt.Errorf("%w: %s", ErrInvalidInput, pgErr.Message)
		}
	}
	return err
}

// IsConstraint reports whether err is a unique violation of the named constraint.
func IsConstraint(err error, name string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == name
}
