// Package config reads the service's configuration from the environment and
// validates it at start, reporting one clear line per problem.
package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/fos-dev/fos/secrets"
)

// Mode is the command being run; it decides what is required.
type Mode string

// Modes.
const (
	ModeServe   Mode = "serve"
	ModeWorker  Mode = "worker"
	ModeMigrate Mode = "migrate"
	ModeDev     Mode = "dev"
)

// Config is the whole configuration.
type Config struct {
	DatabaseURL       string
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	HTTPAddr          string
	BaseURL           string
	EncryptionKey     string
	JWTSecret         string
	TokenTTL          time.Duration
	// RateTimeout is each carrier's deadline when quoting rates.
	RateTimeout time.Duration
	Sandbox     bool
	// SandboxAddr is where `fos dev` serves the sandbox platforms and carriers.
	SandboxAddr string
	// SandboxURL is the base URL adapters use when Sandbox is on.
	SandboxURL string
	SMTPURL    string
	// SMTPInsecure (FOS_SMTP_INSECURE=1) allows SMTP without TLS.
	SMTPInsecure bool
	MailFrom     string
	LogLevel     string
	LLMProvider  string
	LLMBaseURL   string
	LLMAPIKey    string
	LLMModel     string
	// Limits are the abuse limits (config/limits.go).
	Limits Limits

	// CarrierURLs holds the set CarrierURLVars (variable name to base URL);
	// a missing one defaults to the sandbox prefix under Sandbox, else to
	// the vendor's real host (see urls.go).
	CarrierURLs map[string]string
	// PlatformURLs holds the set PlatformURLVars, the same way.
	PlatformURLs map[string]string
	// AllowPrivateURLs lets tenant-supplied URLs reach loopback, private,
	// link-local and metadata addresses (FOS_ALLOW_PRIVATE_URLS; default
	// only under `fos dev`).
	AllowPrivateURLs bool
	// HTTPWriteTimeout bounds a request's handling and answer; it must
	// exceed the longest synchronous path (a label purchase: about two
	// minutes at worst). ShutdownGrace is how long a stopping server lets
	// in-flight requests finish.
	HTTPWriteTimeout time.Duration
	ShutdownGrace    time.Duration
	// IdempotencyLease is how long an in-flight Idempotency-Key claim holds
	// its key after its process died.
	IdempotencyLease time.Duration
	// Temporal: TLS, API key, worker tuning, bulk queue, metrics, payload
	// codec (config/temporal.go).
	Temporal Temporal
}

// Problems lists everything wrong with a configuration.
type Problems []string

func (p Problems) Error() string {
	return "invalid configuration:\n  " + strings.Join(p, "\n  ")
}

// Load reads the configuration for mode. In dev mode, values left empty
// (DATABASE_URL, TEMPORAL_ADDRESS, FOS_ENCRYPTION_KEY, FOS_JWT_SECRET) are
// filled in by the dev environment afterwards, so they are not required.
func Load(mode Mode, getenv func(string) string) (Config, error) {
	get := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	dev := mode == ModeDev
	c := Config{
		DatabaseURL:       get("DATABASE_URL", ""),
		TemporalAddress:   get("TEMPORAL_ADDRESS", ""),
		TemporalNamespace: get("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:         get("FOS_TASK_QUEUE", "fos"),
		HTTPAddr:          get("FOS_HTTP_ADDR", "127.0.0.1:8080"),
		EncryptionKey:     get("FOS_ENCRYPTION_KEY", ""),
		JWTSecret:         get("FOS_JWT_SECRET", ""),
		SandboxAddr:       get("FOS_SANDBOX_ADDR", "127.0.0.1:8089"),
		SMTPURL:           get("FOS_SMTP_URL", ""),
		MailFrom:          get("FOS_MAIL_FROM", "fos <no-reply@fos.local>"),
		LogLevel:          get("FOS_LOG_LEVEL", "info"),
		LLMProvider:       get("FOS_LLM_PROVIDER", map[bool]string{true: "sandbox", false: ""}[dev]),
		LLMBaseURL:        get("FOS_LLM_BASE_URL", ""),
		LLMAPIKey:         get("FOS_LLM_API_KEY", ""),
		LLMModel:          get("FOS_LLM_MODEL", ""),
	}
	c.BaseURL = strings.TrimRight(get("FOS_BASE_URL", "http://"+c.HTTPAddr), "/")
	c.SandboxURL = strings.TrimRight(get("FOS_SANDBOX_URL", "http://"+c.SandboxAddr), "/")

	var p Problems
	sandbox := get("FOS_SANDBOX", map[bool]string{true: "1", false: "0"}[dev])
	switch sandbox {
	case "1", "true":
		c.Sandbox = true
	case "0", "false":
	default:
		p = append(p, fmt.Sprintf("FOS_SANDBOX=%q: must be 1 or 0", sandbox))
	}
	p = append(p, loadURLs(&c, get, dev)...)
	ttl := get("FOS_TOKEN_TTL", "12h")
	if d, err := time.ParseDuration(ttl); err != nil || d <= 0 {
		p = append(p, fmt.Sprintf("FOS_TOKEN_TTL=%q: must be a positive duration such as 12h", ttl))
	} else {
		c.TokenTTL = d
	}
	rt := get("FOS_RATE_TIMEOUT", "10s")
	if d, err := time.ParseDuration(rt); err != nil || d <= 0 {
		p = append(p, fmt.Sprintf("FOS_RATE_TIMEOUT=%q: must be a positive duration such as 10s", rt))
	} else {
		c.RateTimeout = d
	}
	switch v := get("FOS_SMTP_INSECURE", "0"); v {
	case "1", "true":
		c.SMTPInsecure = true
	case "0", "false":
	default:
		p = append(p, fmt.Sprintf("FOS_SMTP_INSECURE=%q: must be 1 or 0", v))
	}
	limits, lp := loadLimits(get)
	c.Limits = limits
	p = append(p, lp...)
	for _, d := range []struct {
		env, def string
		dst      *time.Duration
	}{
		{"FOS_HTTP_WRITE_TIMEOUT", "3m", &c.HTTPWriteTimeout},
		{"FOS_SHUTDOWN_GRACE", "3m", &c.ShutdownGrace},
		{"FOS_IDEMPOTENCY_LEASE", "2m", &c.IdempotencyLease},
	} {
		v := get(d.env, d.def)
		if x, err := time.ParseDuration(v); err != nil || x <= 0 {
			p = append(p, fmt.Sprintf("%s=%q: must be a positive duration such as %s", d.env, v, d.def))
		} else {
			*d.dst = x
		}
	}
	needsDB := mode == ModeServe || mode == ModeWorker || mode == ModeMigrate
	if c.DatabaseURL == "" && needsDB {
		p = append(p, "DATABASE_URL is required (a PostgreSQL URL, e.g. postgres://fos@localhost:5432/fos)")
	} else if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			p = append(p, "DATABASE_URL must be a postgres:// URL")
		}
	}
	if mode == ModeServe || mode == ModeWorker {
		if c.TemporalAddress == "" {
			p = append(p, "TEMPORAL_ADDRESS is required (host:port of the Temporal frontend)")
		}
		if c.EncryptionKey == "" {
			p = append(p, "FOS_ENCRYPTION_KEY is required (base64 of 32 random bytes: `openssl rand -base64 32`)")
		}
		if c.JWTSecret == "" && mode == ModeServe {
			p = append(p, "FOS_JWT_SECRET is required (a long random string)")
		}
		p = append(p, checkSecrets(c)...)
	}
	if c.TemporalAddress != "" {
		if _, _, err := net.SplitHostPort(c.TemporalAddress); err != nil {
			p = append(p, fmt.Sprintf("TEMPORAL_ADDRESS=%q: must be host:port", c.TemporalAddress))
		}
	}
	if c.EncryptionKey != "" {
		if _, err := secrets.NewBox(c.EncryptionKey); err != nil {
			p = append(p, "FOS_ENCRYPTION_KEY: must be base64 of exactly 32 bytes")
		}
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 32 {
		p = append(p, "FOS_JWT_SECRET: must be at least 32 characters")
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		p = append(p, fmt.Sprintf("FOS_HTTP_ADDR=%q: must be host:port", c.HTTPAddr))
	}
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p = append(p, fmt.Sprintf("FOS_BASE_URL=%q: must be an http(s) URL", c.BaseURL))
	}
	if c.SMTPURL != "" {
		if u, err := url.Parse(c.SMTPURL); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
			p = append(p, "FOS_SMTP_URL: must be smtp://user:pass@host:port or smtps://…")
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p = append(p, fmt.Sprintf("FOS_LOG_LEVEL=%q: must be debug, info, warn or error", c.LogLevel))
	}
	switch c.LLMProvider {
	case "", "sandbox", "anthropic", "openai":
	default:
		p = append(p, fmt.Sprintf("FOS_LLM_PROVIDER=%q: must be anthropic, openai or sandbox", c.LLMProvider))
	}
	c.Temporal, p = loadTemporal(get, mode, c.TaskQueue, p)
	if len(p) > 0 {
		return c, p
	}
	return c, nil
}
