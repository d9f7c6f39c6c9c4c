package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

func runMigrate(ctx context.Context, args []string) error {
	if len(args) != 1 || (args[0] != "up" && args[0] != "down" && args[0] != "status") {
		return fmt.Errorf("usage: fos migrate up|down|status")
	}
	cfg, err := config.Load(config.ModeMigrate, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel)
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "up":
		if err := store.Migrate(ctx, st.Pool, log); err != nil {
			return err
		}
		// Secrets are re-sealed by Go, not SQL (it needs the key); serve
		// and worker do it at start too.
		if cfg.EncryptionKey == "" {
			log.Info("FOS_ENCRYPTION_KEY not set: stored secrets are upgraded when serve or worker starts")
			return nil
		}
		box, err := secrets.NewBox(cfg.EncryptionKey)
		if err != nil {
			return err
		}
		_, err = store.UpgradeSecrets(ctx, st, box, log)
		return err
	}
	p, closeDB, err := store.Migrator(st.Pool)
	if err != nil {
		return err
	}
	defer closeDB()
	if args[0] == "down" {
		r, err := p.Down(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("rolled back %s\n", r.Source.Path)
		return nil
	}
	statuses, err := p.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range statuses {
		applied := "pending"
		if !s.AppliedAt.IsZero() {
			applied = "applied " + s.AppliedAt.Format("2006-01-02 15:04:05")
		}
		fmt.Printf("%05d  %-40s %s\n", s.Source.Version, s.Source.Path, applied)
	}
	return nil
}
