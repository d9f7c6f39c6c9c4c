package devenv

import (
	"context"
	"log/slog"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// temporalLogger routes the Temporal server's logs to slog, dropping
// records below a minimum level (changeable while running: the server warns
// routinely while its services find each other at start and at stop) and a
// few known-benign warnings. Panic and fatal records are logged as errors:
// an embedded server must not take the process down through its logger.
type temporalLogger struct {
	logger *slog.Logger
	min    *slog.LevelVar
}

// benignTemporalWarnings are messages of a single-host dev server that say
// nothing actionable.
var benignTemporalWarnings = map[string]bool{
	// fos uses no Nexus endpoints.
	"HTTP API port has not been set. Nexus HTTP endpoints will not be available. To enable Nexus, follow these instructions: https://github.com/temporalio/temporal/blob/main/docs/architecture/nexus.md#enabling-nexus.": true,
}

var (
	_ log.Logger     = temporalLogger{}
	_ log.WithLogger = temporalLogger{}
)

func newTemporalLogger(logger *slog.Logger, minLevel *slog.LevelVar) temporalLogger {
	return temporalLogger{logger: logger, min: minLevel}
}

func (l temporalLogger) Debug(msg string, tags ...tag.Tag)  { l.log(slog.LevelDebug, msg, tags) }
func (l temporalLogger) Info(msg string, tags ...tag.Tag)   { l.log(slog.LevelInfo, msg, tags) }
func (l temporalLogger) Warn(msg string, tags ...tag.Tag)   { l.log(slog.LevelWarn, msg, tags) }
func (l temporalLogger) Error(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }
func (l temporalLogger) DPanic(msg string, tags ...tag.Tag) { l.log(slog.LevelError, msg, tags) }
func (l temporalLogger) Panic(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }
func (l temporalLogger) Fatal(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }

func (l temporalLogger) With(tags ...tag.Tag) log.Logger {
	if len(tags) == 0 {
		return l
	}
	args := make([]any, 0, len(tags))
	for _, t := range tags {
		args = append(args, slog.Any(t.Key(), t.Value()))
	}
	return temporalLogger{logger: l.logger.With(args...), min: l.min}
}

func (l temporalLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if level < l.min.Level() || !l.logger.Enabled(ctx, level) || level == slog.LevelWarn && benignTemporalWarnings[msg] {
		return
	}
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		attrs = append(attrs, slog.Any(t.Key(), t.Value()))
	}
	l.logger.LogAttrs(ctx, level, msg, attrs...)
}

// levelHandler drops records below a minimum level before passing them on.
type levelHandler struct {
	inner slog.Handler
	min   slog.Level
}

func newLevelHandler(inner slog.Handler, minLevel slog.Level) slog.Handler {
	return levelHandler{inner: inner, min: minLevel}
}

func (h levelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.inner.Enabled(ctx, level)
}

func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{inner: h.inner.WithAttrs(attrs), min: h.min}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{inner: h.inner.WithGroup(name), min: h.min}
}
