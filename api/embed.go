package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/wiring"
)

// The embed endpoints (spec Part 3, CONTRACT 12): HTTP over embed.Service.
// Three authentication modes: public (config by slug, auto-session, the
// OAuth callback), an organization credential with embed:manage (config,
// sessions, end users, events) and an est_ session token (bridges, bridge
// types, end-user webhooks). An est_ token is refused everywhere else
// (requireOrg does not know it) and an API key or user token is refused on
// the session routes.

// embedLimits bound the public and session routes against floods.
type embedLimits struct {
	autoSessionIP *limiterSet
	callbackIP    *limiterSet
	session       *limiterSet
	// badTokenIP counts refused session tokens per address: past it the
	// address is refused before any lookup (guessing or replaying tokens).
	badTokenIP *limiterSet
}

func newEmbedLimits() embedLimits {
	return embedLimits{
		autoSessionIP: newLimiterSet("embed sessions from this address", config.Rate{Events: 60, Per: time.Minute}),
		callbackIP:    newLimiterSet("OAuth callbacks from this address", config.Rate{Events: 60, Per: time.Minute}),
		session:       newLimiterSet("requests with this embed session", config.Rate{Events: 600, Per: time.Minute}),
		badTokenIP:    newLimiterSet("refused embed session tokens from this address", config.Rate{Events: 60, Per: time.Minute}),
	}
}

type embedActorKeyT struct{}

// mountEmbed registers the /api/v1/embed endpoints.
func (s *Server) mountEmbed(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.embedPreflight)
		r.Get("/embed/config", s.h(s.getPublicEmbedConfig))
		r.Post("/embed/sessions/auto", s.h(s.createAutoSession))
		r.Get("/embed/oauth/storefront_a/callback", s.storefrontACallback)
		r.Options("/embed/*", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	})
	r.Group(func(r chi.Router) {
		r.Use(s.requireOrg, s.apiKeyBudget, s.scope(embed.ScopeManage))
		r.Get("/embed/config/me", s.h(s.getEmbedConfig))
		r.Patch("/embed/config", s.h(s.patchEmbedConfig))
		r.Post("/embed/sessions", s.h(s.createEmbedSession))
		r.Delete("/embed/sessions/{id}", s.h(s.revokeEmbedSession))
		r.Get("/embed/users", s.h(s.listEndUsers))
		r.Get("/embed/users/{id}", s.h(s.getEndUser))
		r.Delete("/embed/users/{id}", s.h(s.deleteEndUser))
		r.Get("/embed/events", s.h(s.listEmbedEvents))
	})
	r.Group(func(r chi.Router) {
		r.Use(s.embedPreflight, s.requireEmbedSession)
		r.Get("/embed/bridges", s.h(s.listEmbedBridges))
		r.Post("/embed/bridges", s.h(s.createEmbedBridge))
		r.Post("/embed/bridges/storefront_a/oauth/start", s.h(s.startStorefrontAOAuth))
		r.Patch("/embed/bridges/{id}", s.h(s.updateEmbedBridge))
		r.Delete("/embed/bridges/{id}", s.h(s.deleteEmbedBridge))
		r.Post("/embed/bridges/{id}/test", s.h(s.testEmbedBridge))
		r.Get("/embed/bridge-types", s.h(s.listEmbedBridgeTypes))
		s.mountEndUserWebhooks(r)
	})
}

// mountEndUserWebhooks registers the end-user webhook routes (also under
// the unversioned /api alias, spec Part 3); behind requireEmbedSession.
func (s *Server) mountEndUserWebhooks(r chi.Router) {
	r.Post("/embed/webhooks", s.h(s.createEndUserWebhook))
	r.Get("/embed/webhooks", s.h(s.listEndUserWebhooks))
	r.Get("/embed/webhooks/event-types", s.h(s.listWebhookEventTypes))
	r.Patch("/embed/webhooks/{id}", s.h(s.updateEndUserWebhook))
	r.Delete("/embed/webhooks/{id}", s.h(s.deleteEndUserWebhook))
	r.Post("/embed/webhooks/{id}/test", s.h(s.testEndUserWebhook))
	r.Get("/embed/webhooks/{id}/deliveries", s.h(s.listWebhookDeliveries))
	r.Post("/embed/webhooks/{id}/deliveries/{deliveryId}/redeliver", s.h(s.redeliverWebhook))
}

// mountEmbedAlias registers the unversioned /api/embed/webhooks routes.
func (s *Server) mountEmbedAlias(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.embedPreflight, s.requireEmbedSession)
		s.mountEndUserWebhooks(r)
	})
	r.With(s.embedPreflight).Options("/embed/*", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
}

// embedCtx carries the client address to the event log.
func (s *Server) embedCtx(r *http.Request) context.Context {
	return embed.WithClientIP(r.Context(), s.clientIP(r))
}

// embedPreflight answers CORS preflights of the public and session routes.
// A preflight carries no credential, so it is answered for any origin; the
// real request gets Access-Control-Allow-Origin only for an origin its
// embed config allows.
func (s *Server) embedPreflight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if o := embed.NormalizeOrigin(r.Header.Get("Origin")); o != "" {
				h := w.Header()
				h.Set("Access-Control-Allow-Origin", o)
				h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				h.Set("Access-Control-Max-Age", "600")
				h.Add("Vary", "Origin")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowOrigin sets the CORS answer for an origin the config allows.
func allowOrigin(w http.ResponseWriter, r *http.Request, allowed bool) {
	w.Header().Add("Vary", "Origin")
	if o := embed.NormalizeOrigin(r.Header.Get("Origin")); o != "" && allowed {
		w.Header().Set("Access-Control-Allow-Origin", o)
	}
}

// requireEmbedSession admits est_ session tokens only, and makes their
// embed Actor the request's.
func (s *Server) requireEmbedSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if !strings.HasPrefix(tok, embed.SessionTokenPrefix) {
			s.respondError(w, r, errUnauthorized("this endpoint needs an embed session token (Bearer est_...)"))
			return
		}
		ip := s.clientIP(r)
		if err := s.embedLimits.badTokenIP.blocked(ip); err != nil {
			s.respondError(w, r, err)
			return
		}
		ctx, a, origins, err := s.Embed.AuthenticateRequest(r.Context(), tok)
		if err != nil {
			var de *domain.Error
			if errors.As(err, &de) && de.Kind == domain.KindUnauthorized {
				_ = s.embedLimits.badTokenIP.check(ip)
			}
			s.respondError(w, r, err)
			return
		}
		if err := s.embedLimits.session.check(a.ID.String()); err != nil {
			s.respondError(w, r, err)
			return
		}
		if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
			ri.orgID = a.OrganizationID
		}
		if r.Header.Get("Origin") != "" {
			allowOrigin(w, r, embed.OriginAllowed(embed.Config{AllowedOrigins: origins}, r.Header.Get("Origin")))
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, embedActorKeyT{}, a)))
	})
}

func embedActorOf(r *http.Request) domain.Actor {
	a, _ := r.Context().Value(embedActorKeyT{}).(domain.Actor)
	return a
}

// configJSON is the embed config resource.
type configJSON struct {
	ID                  uuid.UUID      `json:"id"`
	OrganizationID      uuid.UUID      `json:"organization_id"`
	Slug                string         `json:"slug"`
	PublishableKey      string         `json:"publishable_key"`
	Branding            map[string]any `json:"branding"`
	AllowedOrigins      []string       `json:"allowed_origins"`
	AllowedBridgeTypes  []string       `json:"allowed_bridge_types"`
	DefaultDispatcherID *uuid.UUID     `json:"default_dispatcher_id"`
	Settings            map[string]any `json:"settings"`
	EnabledFeatures     []string       `json:"enabled_features"`
	IsActive            bool           `json:"is_active"`
	CreatedAt           time.Time      `json:"created_at"`
	UpdatedAt           time.Time      `json:"updated_at"`
}

func toConfigJSON(c embed.Config) configJSON {
	return configJSON{ID: c.ID, OrganizationID: c.OrganizationID, Slug: c.Slug, PublishableKey: c.PublishableKey,
		Branding: c.Branding, AllowedOrigins: c.AllowedOrigins, AllowedBridgeTypes: c.AllowedBridgeTypes,
		DefaultDispatcherID: c.DefaultDispatcherID, Settings: c.Settings, EnabledFeatures: c.EnabledFeatures,
		IsActive: c.IsActive, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func (s *Server) getPublicEmbedConfig(w http.ResponseWriter, r *http.Request) error {
	pc, origins, err := s.Embed.GetPublicConfigWithOrigins(r.Context(), r.URL.Query().Get("slug"))
	if err != nil {
		return err
	}
	allowOrigin(w, r, len(origins) == 0 || embed.OriginAllowed(embed.Config{AllowedOrigins: origins}, r.Header.Get("Origin")))
	writeData(w, http.StatusOK, pc)
	return nil
}

func (s *Server) createAutoSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.embedLimits.autoSessionIP.check(s.clientIP(r)); err != nil {
		return err
	}
	var in embed.AutoSessionInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	in.Origin = r.Header.Get("Origin")
	res, err := s.Embed.AutoSession(s.embedCtx(r), in)
	if err != nil {
		return err
	}
	allowOrigin(w, r, true) // AutoSession checked the origin
	writeData(w, http.StatusCreated, res)
	return nil
}

func (s *Server) getEmbedConfig(w http.ResponseWriter, r *http.Request) error {
	c, err := s.Embed.GetConfig(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toConfigJSON(c))
	return nil
}

func (s *Server) patchEmbedConfig(w http.ResponseWriter, r *http.Request) error {
	var in embed.ConfigInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	c, err := s.Embed.UpsertConfig(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toConfigJSON(c))
	return nil
}

func (s *Server) createEmbedSession(w http.ResponseWriter, r *http.Request) error {
	var in embed.SessionInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	res, err := s.Embed.CreateSession(s.embedCtx(r), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, res)
	return nil
}

func (s *Server) revokeEmbedSession(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "session")
	if err != nil {
		return err
	}
	if err := s.Embed.RevokeSession(s.embedCtx(r), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// randomNonce is a CSP nonce.
func randomNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// EmbedDeps configure the embed endpoints (wiring.EmbedDeps).
type EmbedDeps = wiring.EmbedDeps
