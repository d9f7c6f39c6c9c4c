package embed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Bridge is the embed bridge resource (snake_case). Config is redacted in
// reads and unmasked only in create and update answers (spec Part 3).
type Bridge struct {
	ID             uuid.UUID      `json:"id"`
	OrganizationID uuid.UUID      `json:"organization_id"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	Config         map[string]any `json:"config"`
	Status         string         `json:"status"`
	EndUserID      *uuid.UUID     `json:"end_user_id"`
	LastSyncAt     *time.Time     `json:"last_sync_at"`
	ErrorMessage   *string        `json:"error_message"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

// ToBridge renders a stored bridge of endUser; unmasked shows the secret
// values (create and update answers only).
func (s *Service) ToBridge(b store.Bridge, endUser *uuid.UUID, unmasked bool) Bridge {
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		s.log.Warn("cannot open bridge credentials", "bridge_id", b.ID.String(), "error", err.Error())
		full = maps.Clone(b.Config)
	}
	if !unmasked {
		full = platforms.RedactConfig(b.Type, full)
	}
	if full == nil {
		full = map[string]any{}
	}
	return Bridge{ID: b.ID, OrganizationID: b.OrganizationID, Type: b.Type, Name: b.Name, Config: full, Status: b.Status,
		EndUserID: endUser, LastSyncAt: b.LastSyncAt, ErrorMessage: b.LastError, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
}

// BridgeInput is POST /embed/bridges.
type BridgeInput struct {
	Type   *string        `json:"type"`
	Name   *string        `json:"name"`
	Config map[string]any `json:"config"`
}

// BridgePatchInput is PATCH /embed/bridges/:id (config: shallow merge, a
// null removes a key).
type BridgePatchInput struct {
	Name   *string        `json:"name"`
	Status *string        `json:"status"`
	Config map[string]any `json:"config"`
}

func (s *Service) bridgeScope(ctx context.Context, a domain.Actor, scope string) (sessionScope, error) {
	sc, err := s.scopeOf(ctx, a, scope)
	if err != nil {
		return sc, err
	}
	if !sc.feature("bridges") {
		return sc, domain.Forbidden("the bridges feature is not enabled for this embed configuration")
	}
	return sc, nil
}

// ListBridges are the session's end user's bridges.
func (s *Service) ListBridges(ctx context.Context, a domain.Actor) ([]Bridge, error) {
	sc, err := s.bridgeScope(ctx, a, ScopeBridgesRead)
	if err != nil {
		return nil, err
	}
	list, err := store.EndUserBridges(ctx, s.store.Pool, a.OrganizationID, sc.endUser())
	if err != nil {
		return nil, err
	}
	eu := sc.endUser()
	out := make([]Bridge, 0, len(list))
	for _, b := range list {
		out = append(out, s.ToBridge(b, &eu, false))
	}
	return out, nil
}

// checkConfig validates a full config of a type like POST /bridges.
func (s *Service) checkConfig(bridgeType string, cfg map[string]any) (map[string]any, error) {
	if len(cfg) > 100 {
		return nil, domain.InvalidField("config", "must hold at most 100 keys")
	}
	var out map[string]any
	var errs []domain.FieldError
	if s.configs != nil {
		out, errs = s.configs.CheckBridgeConfig(bridgeType, cfg)
	} else {
		var perrs []platforms.FieldError
		out, perrs = platforms.NormalizeConfig(bridgeType, cfg)
		for _, e := range perrs {
			errs = append(errs, domain.FieldError{Field: e.Field, Message: e.Message})
		}
		for _, k := range platforms.MissingRequired(bridgeType, out) {
			errs = append(errs, domain.FieldError{Field: "config." + k, Message: "is required"})
		}
	}
	if len(errs) > 0 {
		return nil, domain.Invalid(errs...)
	}
	if _, ok := out[platforms.ConfigEnabledWebhooks]; !ok {
		out[platforms.ConfigEnabledWebhooks] = []string{}
	}
	if _, ok := out[platforms.ConfigRegisteredWebhooks]; !ok {
		out[platforms.ConfigRegisteredWebhooks] = map[string]any{}
	}
	return out, nil
}

// CreateBridge creates a bridge of the session's end user: the type must be
// allowed by the config and the session, and the config's
// maxBridgesPerUser holds. The answer shows the config unmasked.
func (s *Service) CreateBridge(ctx context.Context, a domain.Actor, in BridgeInput) (Bridge, error) {
	sc, err := s.bridgeScope(ctx, a, ScopeBridgesWrite)
	if err != nil {
		return Bridge{}, err
	}
	var fe domain.FieldErrors
	if in.Type == nil || *in.Type == "" {
		fe.Add("type", "is required")
	} else if !sc.typeAllowed(*in.Type) {
		fe.Add("type", "is not allowed for this session; allowed: "+strings.Join(slugsOf(sc.types()), ", "))
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		fe.Add("name", "is required")
	} else {
		fe.MaxLen("name", *in.Name, 100)
	}
	if in.Config == nil {
		fe.Add("config", "is required")
	}
	if err := fe.Err(); err != nil {
		return Bridge{}, err
	}
	cfg, err := s.checkConfig(*in.Type, in.Config)
	if err != nil {
		return Bridge{}, err
	}
	b, err := s.insertBridge(ctx, sc, *in.Type, strings.TrimSpace(*in.Name), cfg, store.BridgeActive, "bridge.created")
	if err != nil {
		return Bridge{}, err
	}
	eu := sc.endUser()
	return s.ToBridge(b, &eu, true), nil
}

// insertBridge inserts a bridge of the end user under the per-user limit,
// logs event and, for an active bridge, queues bridge.connected.
func (s *Service) insertBridge(ctx context.Context, sc sessionScope, typ, name string, cfg map[string]any, status, event string) (store.Bridge, error) {
	orgID, eu := sc.session.OrganizationID, sc.endUser()
	id := uuid.New()
	config, creds, err := store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(orgID, id), typ, cfg)
	if err != nil {
		return store.Bridge{}, err
	}
	var b store.Bridge
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := store.LockEndUser(ctx, tx, orgID, eu); err != nil {
			return notFoundAs(err, "end user")
		}
		if limit := maxBridgesPerUser(sc.config); limit > 0 {
			n, err := store.CountEndUserBridges(ctx, tx, orgID, eu)
			if err != nil {
				return err
			}
			if n >= limit {
				return domain.Conflict(fmt.Sprintf("this user already has the maximum of %d bridges", limit))
			}
		}
		if b, err = store.CreateBridge(ctx, tx, store.Bridge{ID: id, OrganizationID: orgID, Type: typ, Name: name,
			Config: config, Credentials: creds, Status: status}); err != nil {
			return err
		}
		if err := store.SetBridgeEndUser(ctx, tx, orgID, id, eu); err != nil {
			return err
		}
		if err := s.logEvent(ctx, tx, orgID, &eu, &sc.session.ID, event, "bridge", id.String(), map[string]any{"type": typ}); err != nil {
			return err
		}
		if status == store.BridgeActive {
			return store.EnqueueEmbedEvent(ctx, tx, orgID, eu, "bridge.connected", s.ToBridge(b, &eu, false))
		}
		return nil
	})
	return b, err
}

func slugsOf(ts []platforms.BridgeType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Slug
	}
	return out
}

// UpdateBridge renames, changes the status of, or merges config into a
// bridge of the session's end user.
func (s *Service) UpdateBridge(ctx context.Context, a domain.Actor, id uuid.UUID, in BridgePatchInput) (Bridge, error) {
	sc, err := s.bridgeScope(ctx, a, ScopeBridgesWrite)
	if err != nil {
		return Bridge{}, err
	}
	var fe domain.FieldErrors
	if in.Name != nil {
		if strings.TrimSpace(*in.Name) == "" {
			fe.Add("name", "must not be empty")
		}
		fe.MaxLen("name", *in.Name, 100)
		n := strings.TrimSpace(*in.Name)
		in.Name = &n
	}
	if in.Status != nil && !slices.Contains(store.BridgeStatuses, *in.Status) {
		fe.Add("status", "must be one of "+strings.Join(store.BridgeStatuses, ", "))
	}
	if err := fe.Err(); err != nil {
		return Bridge{}, err
	}
	orgID, eu := a.OrganizationID, sc.endUser()
	var out store.Bridge
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := store.EndUserBridgeByID(ctx, tx, orgID, eu, id)
		if err != nil {
			return notFoundAs(err, "bridge")
		}
		b, err := store.LockBridge(ctx, tx, orgID, rows.ID)
		if err != nil {
			return notFoundAs(err, "bridge")
		}
		p := store.BridgePatch{Name: in.Name, Status: in.Status}
		if in.Config != nil {
			full, err := store.BridgeFullConfig(s.secrets, b)
			if err != nil {
				return err
			}
			for k, v := range in.Config {
				if v == nil {
					delete(full, k)
				} else if sv, ok := v.(string); !ok || sv != platforms.RedactedValue {
					full[k] = v
				}
			}
			cfg, err := s.checkConfig(b.Type, full)
			if err != nil {
				return err
			}
			if p.Config, p.Credentials, err = store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(orgID, b.ID), b.Type, cfg); err != nil {
				return err
			}
		}
		if out, err = store.UpdateBridge(ctx, tx, orgID, b.ID, p); err != nil {
			return err
		}
		return s.logEvent(ctx, tx, orgID, &eu, &sc.session.ID, "bridge.updated", "bridge", b.ID.String(), nil)
	})
	if err != nil {
		return Bridge{}, err
	}
	return s.ToBridge(out, &eu, true), nil
}

// DeleteBridge deletes a bridge of the session's end user with the data it
// synced.
func (s *Service) DeleteBridge(ctx context.Context, a domain.Actor, id uuid.UUID) error {
	sc, err := s.bridgeScope(ctx, a, ScopeBridgesWrite)
	if err != nil {
		return err
	}
	eu := sc.endUser()
	return s.store.InTx(ctx, func(tx pgx.Tx) error {
		b, err := store.EndUserBridgeByID(ctx, tx, a.OrganizationID, eu, id)
		if err != nil {
			return notFoundAs(err, "bridge")
		}
		if err := store.DeleteBridgeWithData(ctx, tx, a.OrganizationID, b.ID); err != nil {
			return notFoundAs(err, "bridge")
		}
		return s.logEvent(ctx, tx, a.OrganizationID, &eu, &sc.session.ID, "bridge.deleted", "bridge", b.ID.String(), map[string]any{"type": b.Type})
	})
}

// TestResult is POST /embed/bridges/:id/test.
type TestResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// TestBridge makes one real call through the bridge's connector (a page of
// orders updated from now on) and reports how it went.
func (s *Service) TestBridge(ctx context.Context, a domain.Actor, id uuid.UUID) (TestResult, error) {
	sc, err := s.bridgeScope(ctx, a, ScopeBridgesRead)
	if err != nil {
		return TestResult{}, err
	}
	b, err := store.EndUserBridgeByID(ctx, s.store.Pool, a.OrganizationID, sc.endUser(), id)
	if err != nil {
		return TestResult{}, notFoundAs(err, "bridge")
	}
	if s.platforms == nil {
		return TestResult{}, domain.Unavailable("no platform connectors are configured", nil)
	}
	conn, err := s.platforms.Get(b.Type)
	if err != nil {
		return TestResult{Success: false, Message: "this bridge type cannot be tested: " + err.Error()}, nil
	}
	pb, err := store.PlatformBridge(s.secrets, b)
	if err != nil {
		return TestResult{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, _, err := conn.ListOrders(tctx, pb, s.now().Add(-time.Minute), ""); err != nil {
		var perr *platforms.Error
		msg := "the platform refused the connection"
		if errors.As(err, &perr) && perr.Message != "" {
			msg = domain.TenantText(perr.Message)
		}
		return TestResult{Success: false, Message: msg}, nil
	}
	return TestResult{Success: true, Message: "connected to " + b.Type}, nil
}

// BridgeType is the embed bridge type resource.
type BridgeType struct {
	ID             string                  `json:"id"`
	Name           string                  `json:"name"`
	Description    string                  `json:"description"`
	Icon           *string                 `json:"icon"`
	Category       string                  `json:"category"`
	AuthMethods    []string                `json:"auth_methods"`
	ConfigFields   []platforms.ConfigField `json:"config_fields"`
	WebhookSupport bool                    `json:"webhook_support"`
	DocsURL        *string                 `json:"docs_url"`
}

// BridgeTypes are the types the config and the session allow.
func (s *Service) BridgeTypes(ctx context.Context, a domain.Actor) ([]BridgeType, error) {
	sc, err := s.scopeOf(ctx, a, "")
	if err != nil {
		return nil, err
	}
	out := []BridgeType{}
	for _, t := range sc.types() {
		auth := t.AuthMethods
		if t.Slug == platforms.TypeStorefrontA && !slices.Contains(auth, "oauth2") {
			auth = append(slices.Clone(auth), "oauth2")
		}
		out = append(out, BridgeType{ID: t.Slug, Name: t.Name, Description: t.Description, Icon: t.IconURL, Category: t.Category,
			AuthMethods: auth, ConfigFields: t.ConfigFields, WebhookSupport: t.Slug == platforms.TypeStorefrontA || t.Slug == platforms.TypeShippingHubA})
	}
	return out, nil
}
