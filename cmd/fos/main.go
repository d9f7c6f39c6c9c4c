// Command fos is the fulfillment orchestration service: the HTTP API, the
// Temporal worker, migrations, and a one-command dev environment.
//
//	fos serve               the HTTP API only
//	fos worker              the Temporal worker only
//	fos migrate up|down|status
//	fos dev [--seed]        everything on one machine (see CONTRACT section 1)
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/sandbox"
)

const usage = `usage: fos <command>

commands:
  serve                 run the HTTP API
  worker                run the Temporal worker
  migrate up|down|status
                        apply, roll back one, or list database migrations
  dev [--seed]          run everything locally: private PostgreSQL, embedded
                        Temporal with its Web UI, sandbox platforms, API and
                        worker; --seed creates a demo organization

configuration is read from the environment; see README.md`

func main() {
	// A sandbox process of the transformation pool (this binary, started
	// by the API or the worker) serves runs here and exits.
	sandbox.ServeIfChild()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = runServe(ctx)
	case "worker":
		err = runWorker(ctx)
	case "migrate":
		err = runMigrate(ctx, args)
	case "dev":
		err = runDev(ctx, args)
	case "help", "-h", "--help":
		fmt.Println(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "fos: unknown command %q\n\n%s\n", cmd, usage)
		os.Exit(2)
	}
	if code := exitCode(ctx, err); code != 0 {
		var p config.Problems
		if errors.As(err, &p) {
			fmt.Fprintln(os.Stderr, "fos: "+p.Error())
		} else {
			fmt.Fprintln(os.Stderr, "fos: "+err.Error())
		}
		os.Exit(code)
	}
}

// exitCode is the process's exit status for a command's error: 0 when it
// succeeded, and when it only stopped because Ctrl-C or SIGTERM cancelled
// ctx (a clean stop: `make run` then ends without "Error 1"); 1 otherwise.
func exitCode(ctx context.Context, err error) int {
	if err == nil || ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return 0
	}
	return 1
}

// newLogger is the process logger: JSON lines on stderr.
func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
