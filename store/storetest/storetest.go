// Package storetest gives tests a migrated PostgreSQL database of their own.
//
// A test package calls Run from TestMain; every test then calls New, which
// returns a Store on a database created (and migrated) once for the package
// and dropped when the package's tests end. Tests stay independent by
// creating their own organizations.
//
// The server comes from TEST_DATABASE_URL (make test sets it), else
// postgres://postgres@127.0.0.1:5432/postgres.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fos-dev/fos/store"
)

const defaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

var (
	// running is set by Run: New refuses to make a database nobody drops.
	running bool
	once    sync.Once
	shared  *store.Store
	dbName  string
	initErr error
)

// ServerURL is the URL of the PostgreSQL server tests use.
func ServerURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultURL
}

// Run runs the package's tests and drops the package database afterwards.
func Run(m *testing.M) int {
	running = true
	code := m.Run()
	if shared != nil {
		shared.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, ServerURL()); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{dbName}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
	}
	return code
}

// New returns the package's migrated database. It fails the test when no
// PostgreSQL server answers: store tests are never silently skipped.
func New(t testing.TB) *store.Store {
	t.Helper()
	if !running {
		t.Fatalf("storetest: call storetest.Run from the package's TestMain, or its database is never dropped")
	}
	once.Do(func() { shared, initErr = create() })
	if initErr != nil {
		t.Fatalf("storetest: %v (set TEST_DATABASE_URL or run `make test`)", initErr)
	}
	return shared
}

// URL is the connection URL of the package database (valid after New).
func URL() string { return withDB(ServerURL(), dbName) }

func create() (*store.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redact(ServerURL()), err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	dbName = "fos_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbName}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(withDB(ServerURL(), dbName))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 40
	store.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, pool, nil); err != nil {
		pool.Close()
		return nil, err
	}
	return &store.Store{Pool: pool}, nil
}

func withDB(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + db
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the test database"
	}
	return u.Redacted()
}
