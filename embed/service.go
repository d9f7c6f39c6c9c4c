// Package embed is the embed domain (spec Part 3, CONTRACT 7 and 12): the
// white-label config, end users and their sessions, embed bridges (with
// storefront_a OAuth), end-user webhooks and their deliveries, and the
// event log. The API's handlers and the Temporal activities call the one
// Service; methods take (ctx, domain.Actor, input) and return domain
// errors.
//
// Who may call what: an organization actor (user or API key with
// embed:manage) manages the config, sessions, end users and the event log;
// an embed actor (ActorEmbed, built by Authenticate from an est_ session
// token) reaches only its own end user's bridges and webhooks: every query
// of those is scoped to the session's end user, so another end user's ids
// are not found.
package embed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/netguard"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
)

// Session scopes (CONTRACT 12).
const (
	ScopeBridgesRead  = "bridges:read"
	ScopeBridgesWrite = "bridges:write"
	// ScopeManage is the API key scope of the management endpoints.
	ScopeManage = "embed:manage"
)

// Token prefixes (CONTRACT 12).
const (
	SessionTokenPrefix   = "est_"
	PublishableKeyPrefix = "pk_"
)

// BridgeConfigChecker validates and normalizes a bridge config exactly as
// POST /bridges does (the API's rules: catalog fields, URL fields through
// netguard, required keys, the connector's own checks). Field names in the
// answer are dot paths under "config".
type BridgeConfigChecker interface {
	CheckBridgeConfig(bridgeType string, cfg map[string]any) (map[string]any, []domain.FieldError)
}

// OAuthRuns runs a storefront_a authorization code exchange as a workflow
// whose activity calls Service.ExchangeOAuthCode, and waits for it.
type OAuthRuns interface {
	ExchangeOAuthCode(ctx context.Context, in ExchangeInput) (ExchangeResult, error)
}

// RedeliveryRuns starts the workflow of a delivery whose first attempt
// failed (WebhookDelivery, webhook-delivery/<deliveryId>), which makes
// attempts firstAttempt (1 or 2) and on.
type RedeliveryRuns interface {
	StartDeliveryRetries(ctx context.Context, orgID, deliveryID uuid.UUID, firstAttempt int) error
}

// StorefrontAApp is the OAuth app of storefront_a.
type StorefrontAApp struct {
	ClientID     string
	ClientSecret string
	// BaseURL replaces https://<shop> (FOS_STOREFRONT_A_URL, CONTRACT 8b);
	// "" talks to the shop's own host.
	BaseURL string
	// Scopes requested (default read_orders, read_locations, the
	// fulfillment order scopes).
	Scopes string
}

// Deps are the Service's dependencies.
type Deps struct {
	Store   *store.Store
	Secrets *secrets.Box
	Logger  *slog.Logger
	// Platforms are the connectors a bridge test calls.
	Platforms *platforms.Registry
	// Shipments renders shipments as the API shows them (webhook
	// payloads; their signed label URLs). Nil: one over Store, Secrets and
	// BaseURL.
	Shipments *shipping.Service
	// BridgeConfigs validates embed bridge configs (nil: catalog rules
	// only).
	BridgeConfigs BridgeConfigChecker
	// OAuth runs code exchanges (nil: the callback answers unavailable).
	OAuth OAuthRuns
	// Retries starts delivery retries (nil: a failed first attempt is
	// only recorded).
	Retries     RedeliveryRuns
	StorefrontA StorefrontAApp
	// BaseURL is the service's public URL (the OAuth redirect_uri).
	BaseURL string
	// AllowPrivateURLs lets webhook targets be private (fos dev).
	AllowPrivateURLs bool
	// WebhookClient sends deliveries (nil: a netguard client, 15 s).
	WebhookClient *http.Client
	// TokenClient calls the storefront_a token endpoint (nil: 15 s).
	TokenClient *http.Client
}

// Service is the embed domain's operations.
type Service struct {
	store         *store.Store
	secrets       *secrets.Box
	log           *slog.Logger
	platforms     *platforms.Registry
	shipments     *shipping.Service
	configs       BridgeConfigChecker
	oauth         OAuthRuns
	retries       RedeliveryRuns
	sfa           StorefrontAApp
	baseURL       string
	allowPrivate  bool
	webhookClient *http.Client
	tokenClient   *http.Client
	now           func() time.Time
}

// DeliveryTimeout bounds one delivery attempt (CONTRACT 12).
const DeliveryTimeout = 15 * time.Second

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	wc := d.WebhookClient
	if wc == nil {
		wc = netguard.NewClient(netguard.Options{AllowPrivate: d.AllowPrivateURLs, Timeout: DeliveryTimeout})
		wc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		if tr, ok := wc.Transport.(*http.Transport); ok {
			// A fan-out sends up to fanOutConcurrency requests to one host
			// at once: keep those connections instead of redialing.
			tr.MaxIdleConnsPerHost = fanOutConcurrency
		}
	}
	tc := d.TokenClient
	if tc == nil {
		tc = &http.Client{Timeout: 15 * time.Second}
	}
	if d.StorefrontA.Scopes == "" {
		d.StorefrontA.Scopes = "read_orders,read_locations,read_merchant_managed_fulfillment_orders,write_merchant_managed_fulfillment_orders"
	}
	sh := d.Shipments
	if sh == nil {
		sh = shipping.New(shipping.Deps{Store: d.Store, Secrets: d.Secrets, Logger: log, BaseURL: d.BaseURL})
	}
	return &Service{store: d.Store, secrets: d.Secrets, log: log, platforms: d.Platforms, shipments: sh, configs: d.BridgeConfigs,
		oauth: d.OAuth, retries: d.Retries, sfa: d.StorefrontA, baseURL: d.BaseURL, allowPrivate: d.AllowPrivateURLs,
		webhookClient: wc, tokenClient: tc, now: time.Now}
}

// SetClock replaces the clock (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// randomToken is prefix + 2n hex characters of crypto randomness.
func randomToken(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// hashToken is the stored form of a session token or OAuth state.
func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

type ctxKey int

const ipKey ctxKey = 1

// WithClientIP records the caller's address (the rate limiter's trusted
// proxy rule) for the event log.
func WithClientIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, ipKey, ip)
}

func clientIP(ctx context.Context) *string {
	if ip, ok := ctx.Value(ipKey).(string); ok && ip != "" {
		return &ip
	}
	return nil
}

// requireOrgActor refuses embed actors on management operations (a session
// token reaches only its own end user's routes) and API keys without
// embed:manage.
func requireOrgActor(a domain.Actor) error {
	if a.Kind == domain.ActorEmbed {
		return domain.Forbidden("an embed session cannot manage the embed configuration")
	}
	if a.OrganizationID == uuid.Nil {
		return &domain.Error{Kind: domain.KindUnauthorized, Message: "no organization"}
	}
	return a.RequireScope(ScopeManage)
}

func notFoundAs(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound(what)
	}
	return err
}

func ptr[T any](v T) *T { return &v }
