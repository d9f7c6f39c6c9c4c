package embed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Session lifetimes (spec Part 3, CONTRACT 12).
const (
	MinTTLSeconds     = 60
	MaxTTLSeconds     = 86400
	DefaultTTLSeconds = 3600
)

// SessionScopes are the scopes a session may hold.
var SessionScopes = []string{ScopeBridgesRead, ScopeBridgesWrite}

// SessionInput is POST /embed/sessions.
type SessionInput struct {
	ExternalID         *string        `json:"externalId"`
	Name               *string        `json:"name"`
	Email              *string        `json:"email"`
	Metadata           map[string]any `json:"metadata"`
	Scopes             *[]string      `json:"scopes"`
	AllowedBridgeTypes *[]string      `json:"allowedBridgeTypes"`
	TTLSeconds         *int           `json:"ttlSeconds"`
}

// AutoSessionInput is POST /embed/sessions/auto; Origin is the request's
// Origin header.
type AutoSessionInput struct {
	Key        *string `json:"key"`
	ExternalID *string `json:"externalId"`
	Name       *string `json:"name"`
	Email      *string `json:"email"`
	Origin     string  `json:"-"`
}

// SessionEndUser is the end user of a session result.
type SessionEndUser struct {
	ID         uuid.UUID `json:"id"`
	ExternalID string    `json:"externalId"`
	Name       *string   `json:"name"`
	Email      *string   `json:"email"`
}

// SessionResult is a new session; SessionID and EndUser only from the
// server-side call.
type SessionResult struct {
	Token           string          `json:"token"`
	SessionID       *uuid.UUID      `json:"sessionId,omitempty"`
	ExpiresAt       time.Time       `json:"expiresAt"`
	Scopes          []string        `json:"scopes"`
	EnabledFeatures []string        `json:"enabledFeatures"`
	EndUser         *SessionEndUser `json:"endUser,omitempty"`
}

func checkEndUserFields(fe *domain.FieldErrors, externalID, name, email *string) string {
	ext := ""
	if externalID == nil || strings.TrimSpace(*externalID) == "" {
		fe.Add("externalId", "is required")
	} else {
		ext = strings.TrimSpace(*externalID)
		fe.MaxLen("externalId", ext, 255)
	}
	if name != nil {
		fe.MaxLen("name", *name, 255)
	}
	if email != nil && *email != "" {
		fe.MaxLen("email", *email, 320)
		if at := strings.IndexByte(*email, '@'); at < 1 || at == len(*email)-1 {
			fe.Add("email", "must be an e-mail address")
		}
	}
	return ext
}

// CreateSession is the server-side session of an end user (upserted by
// externalId), for an API key with embed:manage or a user.
func (s *Service) CreateSession(ctx context.Context, a domain.Actor, in SessionInput) (SessionResult, error) {
	if err := requireOrgActor(a); err != nil {
		return SessionResult{}, err
	}
	var fe domain.FieldErrors
	ext := checkEndUserFields(&fe, in.ExternalID, in.Name, in.Email)
	if len(in.Metadata) > 50 {
		fe.Add("metadata", "must hold at most 50 keys")
	}
	scopes := SessionScopes
	if in.Scopes != nil {
		scopes = []string{}
		for i, sc := range *in.Scopes {
			if !slices.Contains(SessionScopes, sc) {
				fe.Add(fmt.Sprintf("scopes[%d]", i), "must be one of "+strings.Join(SessionScopes, ", "))
			} else if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
		if len(scopes) == 0 && !fe.Has("scopes") {
			fe.Add("scopes", "must name at least one scope")
		}
	}
	var types []string
	if in.AllowedBridgeTypes != nil {
		types = []string{}
		for i, t := range *in.AllowedBridgeTypes {
			if !platforms.IsValidType(t) {
				fe.Add(fmt.Sprintf("allowedBridgeTypes[%d]", i), "must be one of "+strings.Join(typeSlugs(), ", "))
			} else if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	ttl := DefaultTTLSeconds
	if in.TTLSeconds != nil {
		ttl = *in.TTLSeconds
		if ttl < MinTTLSeconds || ttl > MaxTTLSeconds {
			fe.Add("ttlSeconds", fmt.Sprintf("must be from %d to %d", MinTTLSeconds, MaxTTLSeconds))
		}
	}
	if err := fe.Err(); err != nil {
		return SessionResult{}, err
	}
	features := DefaultFeatures
	if c, err := store.EmbedConfigByOrganization(ctx, s.store.Pool, a.OrganizationID); err == nil {
		features = c.EnabledFeatures
	} else if !errors.Is(err, store.ErrNotFound) {
		return SessionResult{}, err
	}
	return s.newSession(ctx, a.OrganizationID, "manual", ext, in.Name, in.Email, in.Metadata, scopes, types, ttl, features, true)
}

// AutoSession opens a session with a publishable key (public): both
// scopes, one hour. When the config names allowed origins, the request's
// Origin must be one of them.
func (s *Service) AutoSession(ctx context.Context, in AutoSessionInput) (SessionResult, error) {
	var fe domain.FieldErrors
	if in.Key == nil || *in.Key == "" {
		fe.Add("key", "is required")
	}
	ext := checkEndUserFields(&fe, in.ExternalID, in.Name, in.Email)
	if err := fe.Err(); err != nil {
		return SessionResult{}, err
	}
	if !strings.HasPrefix(*in.Key, PublishableKeyPrefix) || len(*in.Key) > 100 {
		return SessionResult{}, unauthorized("invalid publishable key")
	}
	c, err := store.EmbedConfigByPublishableKey(ctx, s.store.Pool, *in.Key)
	if errors.Is(err, store.ErrNotFound) {
		return SessionResult{}, unauthorized("invalid publishable key")
	}
	if err != nil {
		return SessionResult{}, err
	}
	if !c.IsActive {
		return SessionResult{}, domain.Forbidden("the embed configuration is not active")
	}
	if !OriginAllowed(c, in.Origin) {
		return SessionResult{}, domain.Forbidden("this origin is not allowed to open embed sessions")
	}
	res, err := s.newSession(ctx, c.OrganizationID, "auto", ext, in.Name, in.Email, nil, SessionScopes, nil, DefaultTTLSeconds, c.EnabledFeatures, false)
	return res, err
}

// OriginAllowed reports whether a request from origin may use the config:
// any origin when the config names none.
func OriginAllowed(c Config, origin string) bool {
	if len(c.AllowedOrigins) == 0 {
		return true
	}
	n := NormalizeOrigin(origin)
	return n != "" && slices.Contains(c.AllowedOrigins, n)
}

func unauthorized(msg string) error {
	return &domain.Error{Kind: domain.KindUnauthorized, Message: msg}
}

func (s *Service) newSession(ctx context.Context, orgID uuid.UUID, kind, ext string, name, email *string, meta map[string]any,
	scopes, types []string, ttl int, features []string, full bool) (SessionResult, error) {
	token := randomToken(SessionTokenPrefix, 32)
	var res SessionResult
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		u, err := store.UpsertEndUser(ctx, tx, orgID, uuid.New(), ext, name, email, meta)
		if err != nil {
			return err
		}
		sess, err := store.CreateEmbedSession(ctx, tx, store.EmbedSession{
			ID: uuid.New(), OrganizationID: orgID, EndUserID: u.ID, Kind: kind, Scopes: scopes,
			AllowedBridgeTypes: types, ExpiresAt: s.now().Add(time.Duration(ttl) * time.Second).UTC().Truncate(time.Millisecond),
		}, hashToken(token))
		if err != nil {
			return err
		}
		event := "session.created"
		if kind == "auto" {
			event = "session.auto_created"
		}
		if err := s.logEvent(ctx, tx, orgID, &u.ID, &sess.ID, event, "session", sess.ID.String(), map[string]any{"externalId": ext}); err != nil {
			return err
		}
		res = SessionResult{Token: token, ExpiresAt: sess.ExpiresAt, Scopes: sess.Scopes, EnabledFeatures: features}
		if full {
			res.SessionID = &sess.ID
			res.EndUser = &SessionEndUser{ID: u.ID, ExternalID: u.ExternalID, Name: u.Name, Email: u.Email}
		}
		return nil
	})
	if res.EnabledFeatures == nil {
		res.EnabledFeatures = []string{}
	}
	return res, err
}

// RevokeSession revokes a session: its token is refused from the next
// request on.
func (s *Service) RevokeSession(ctx context.Context, a domain.Actor, id uuid.UUID) error {
	if err := requireOrgActor(a); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx pgx.Tx) error {
		sess, err := store.RevokeEmbedSession(ctx, tx, a.OrganizationID, id)
		if err != nil {
			return notFoundAs(err, "session")
		}
		return s.logEvent(ctx, tx, a.OrganizationID, &sess.EndUserID, &sess.ID, "session.revoked", "session", sess.ID.String(), nil)
	})
}

// Authenticate turns an est_ token into the embed Actor of its session
// (ID: the session id). An unknown, revoked or expired token is
// Unauthorized. One unique-index lookup, never cached across requests, so
// a revocation holds from the next request on.
func (s *Service) Authenticate(ctx context.Context, token string) (domain.Actor, error) {
	_, a, _, err := s.AuthenticateRequest(ctx, token)
	return a, err
}

// AuthenticateRequest is Authenticate for one request: the same single
// round trip also reads the session's scope and config, which the returned
// context carries, so the request's operations do not read them again,
// and answers the config's allowed origins (for CORS; empty: any).
func (s *Service) AuthenticateRequest(ctx context.Context, token string) (context.Context, domain.Actor, []string, error) {
	if !strings.HasPrefix(token, SessionTokenPrefix) || len(token) > 200 {
		return ctx, domain.Actor{}, nil, unauthorized("invalid, revoked or expired session token")
	}
	sc, err := store.EmbedSessionScopeByTokenHash(ctx, s.store.Pool, hashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return ctx, domain.Actor{}, nil, unauthorized("invalid, revoked or expired session token")
	}
	if err != nil {
		return ctx, domain.Actor{}, nil, err
	}
	if sc.RevokedAt != nil || !s.now().Before(sc.ExpiresAt) {
		return ctx, domain.Actor{}, nil, unauthorized("invalid, revoked or expired session token")
	}
	a := domain.Actor{Kind: domain.ActorEmbed, ID: sc.ID, OrganizationID: sc.OrganizationID,
		Name: "embed session", Scopes: sc.Scopes, Scoped: true}
	return context.WithValue(ctx, scopeKey, sc), a, sc.ConfigAllowedOrigins, nil
}

// scopeKey carries the session scope read by AuthenticateRequest.
const scopeKey ctxKey = 2

// sessionScope is what an embed actor may reach: its session, end user
// and the organization's config (only the parts a session uses: allowed
// types, features, settings).
type sessionScope struct {
	session store.EmbedSession
	config  Config
}

// endUser is the session's end user id.
func (c sessionScope) endUser() uuid.UUID { return c.session.EndUserID }

// types are the bridge types the session may use.
func (c sessionScope) types() []platforms.BridgeType {
	return allowedTypes(c.config, c.session.AllowedBridgeTypes)
}

func (c sessionScope) typeAllowed(t string) bool {
	return slices.ContainsFunc(c.types(), func(b platforms.BridgeType) bool { return b.Slug == t })
}

func (c sessionScope) feature(f string) bool { return slices.Contains(c.config.EnabledFeatures, f) }

// scopeOf is the embed actor's session as this request's authentication
// read it (AuthenticateRequest), or read again (still valid: revoked or
// expired is refused), and checks scope.
func (s *Service) scopeOf(ctx context.Context, a domain.Actor, scope string) (sessionScope, error) {
	if a.Kind != domain.ActorEmbed {
		return sessionScope{}, domain.Forbidden("this endpoint needs an embed session token (est_)")
	}
	if scope != "" {
		if err := a.RequireScope(scope); err != nil {
			return sessionScope{}, err
		}
	}
	// Read with this request's authentication, or else now.
	sc, ok := ctx.Value(scopeKey).(store.EmbedSessionScope)
	var err error
	if !ok || sc.ID != a.ID || sc.OrganizationID != a.OrganizationID {
		sc, err = store.EmbedSessionScopeByID(ctx, s.store.Pool, a.OrganizationID, a.ID)
	}
	if err != nil || sc.RevokedAt != nil || !s.now().Before(sc.ExpiresAt) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return sessionScope{}, err
		}
		return sessionScope{}, unauthorized("invalid, revoked or expired session token")
	}
	c := Config{OrganizationID: a.OrganizationID, EnabledFeatures: DefaultFeatures, IsActive: true, Settings: map[string]any{}}
	if sc.HasConfig {
		c.AllowedBridgeTypes, c.EnabledFeatures, c.Settings = sc.ConfigAllowedBridgeTypes, sc.ConfigEnabledFeatures, sc.ConfigSettings
	}
	sess := sc.EmbedSession
	return sessionScope{session: sess, config: c}, nil
}
