package bridgetasks

import (
	"context"
	"maps"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/netguard"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Bridges: an organization's connections to its platforms (CONTRACT 5).
// A bridge's config keeps its secrets sealed at rest (store.SplitBridgeConfig)
// and shows them redacted (platforms.RedactedValue); a value equal to the
// placeholder in an input is ignored, so a client sending back what it
// read does not overwrite a credential with it.

// BridgeStatuses are the bridge statuses, in spec order.
var BridgeStatuses = store.BridgeStatuses

// BridgeNameMax bounds a bridge's name.
const BridgeNameMax = 100

// BridgeTypes are the bridge type slugs, in catalog order.
func BridgeTypes() []string {
	types := platforms.Types()
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.Slug
	}
	return out
}

// BridgeFilter selects bridges ("": any type or status).
type BridgeFilter struct {
	Type, Status  string
	Limit, Offset int
}

// BridgePage is one page of bridges and the number of all.
type BridgePage struct {
	Items []Bridge
	Total int
}

// ListBridges lists the organization's bridges. The actor needs
// bridges:read.
func (s *Service) ListBridges(ctx context.Context, actor domain.Actor, f BridgeFilter) (BridgePage, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return BridgePage{}, err
	}
	list, total, err := store.ListBridges(ctx, s.store.Pool, actor.OrganizationID, store.BridgeFilter{
		Type: f.Type, Status: f.Status, Limit: f.Limit, Offset: f.Offset,
	})
	return BridgePage{Items: list, Total: total}, err
}

// ShownConfig is a bridge's full config as it is shown: every credential
// value redacted, the webhook keys present. Credentials that cannot be
// opened (a changed encryption key) are left out, and logged.
func (s *Service) ShownConfig(ctx context.Context, b Bridge) map[string]any {
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		s.log.WarnContext(ctx, "cannot open bridge credentials", "bridge_id", b.ID.String(), "error", err.Error())
		full = maps.Clone(b.Config)
		if full == nil {
			full = map[string]any{}
		}
	}
	cfg := platforms.RedactConfig(b.Type, full)
	withWebhookKeys(cfg)
	return cfg
}

func withWebhookKeys(cfg map[string]any) {
	if _, ok := cfg[platforms.ConfigEnabledWebhooks]; !ok {
		cfg[platforms.ConfigEnabledWebhooks] = []string{}
	}
	if _, ok := cfg[platforms.ConfigRegisteredWebhooks]; !ok {
		cfg[platforms.ConfigRegisteredWebhooks] = map[string]any{}
	}
}

// BridgeInput is a new bridge; nil fields are missing.
type BridgeInput struct {
	Type   *string
	Name   *string
	Config map[string]any
}

// CreateBridge creates an active bridge after checking its type, name and
// config (CheckBridgeConfig). The actor needs bridges:write.
func (s *Service) CreateBridge(ctx context.Context, actor domain.Actor, in BridgeInput) (Bridge, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Bridge{}, err
	}
	var v domain.FieldErrors
	typeOK := false
	if v.Required("type", in.Type) {
		typeOK = v.OneOf("type", *in.Type, BridgeTypes()...)
	}
	if v.Required("name", in.Name) {
		v.Length("name", strings.TrimSpace(*in.Name), BridgeNameMax)
	}
	var cfg map[string]any
	if in.Config == nil {
		v.Add("config", "is required")
	} else if typeOK {
		var errs []domain.FieldError
		cfg, errs = s.CheckBridgeConfig(*in.Type, in.Config)
		v = append(v, errs...)
	}
	if err := v.Err(); err != nil {
		return Bridge{}, err
	}
	withWebhookKeys(cfg)
	bridgeID, orgID := uuid.New(), actor.OrganizationID
	config, creds, err := store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(orgID, bridgeID), *in.Type, cfg)
	if err != nil {
		return Bridge{}, err
	}
	return store.CreateBridge(ctx, s.store.Pool, store.Bridge{
		ID: bridgeID, OrganizationID: orgID, Type: *in.Type,
		Name: strings.TrimSpace(*in.Name), Config: config, Credentials: creds, Status: store.BridgeActive,
	})
}

// CheckBridgeConfig normalizes a complete config of a bridge type and
// names each problem config.<key>: the catalog's rules, URL fields
// (netguard), required keys and the connector's own rules. Redacted
// placeholders are dropped. It implements embed.BridgeConfigChecker.
func (s *Service) CheckBridgeConfig(bridgeType string, cfg map[string]any) (map[string]any, []domain.FieldError) {
	var v domain.FieldErrors
	out, errs := platforms.NormalizeConfig(bridgeType, cfg)
	addConfigErrors(&v, errs)
	dropRedacted(out)
	s.checkURLFields(&v, bridgeType, out)
	for _, k := range platforms.MissingRequired(bridgeType, out) {
		if !hasField(v, "config."+k) {
			v.Add("config."+k, "is required")
		}
	}
	s.checkConnectorConfig(&v, bridgeType, out)
	return out, v
}

// BridgeChange changes the fields set: Config's keys are merged into the
// stored config (null removes a key).
type BridgeChange struct {
	Name   *string
	Config map[string]any
	Status *string
}

// UpdateBridge changes a bridge under its row lock. A change of where the
// credentials go needs every stored credential again
// (credentialsFollowEndpoint). The actor needs bridges:write.
func (s *Service) UpdateBridge(ctx context.Context, actor domain.Actor, id uuid.UUID, ch BridgeChange) (Bridge, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Bridge{}, err
	}
	orgID := actor.OrganizationID
	var out Bridge
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		b, err := store.LockBridge(ctx, tx, orgID, id)
		if err != nil {
			return notFound(err, "bridge")
		}
		var v domain.FieldErrors
		patch := store.BridgePatch{Status: ch.Status}
		if ch.Name != nil {
			name := strings.TrimSpace(*ch.Name)
			v.Length("name", name, BridgeNameMax)
			patch.Name = &name
		}
		if ch.Status != nil {
			v.OneOf("status", *ch.Status, BridgeStatuses...)
		}
		if ch.Config != nil {
			update, errs := platforms.NormalizeConfig(b.Type, ch.Config)
			addConfigErrors(&v, errs)
			dropRedacted(update)
			s.checkURLFields(&v, b.Type, update)
			full, err := store.BridgeFullConfig(s.secrets, b)
			if err != nil {
				return err
			}
			old := maps.Clone(full)
			for k, val := range update {
				if val == nil {
					delete(full, k)
					continue
				}
				full[k] = val
			}
			for _, k := range platforms.MissingRequired(b.Type, full) {
				if !hasField(v, "config."+k) {
					v.Add("config."+k, "is required")
				}
			}
			s.checkConnectorConfig(&v, b.Type, full)
			credentialsFollowEndpoint(&v, b.Type, old, update)
			if len(v) == 0 {
				patch.Config, patch.Credentials, err = store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(b.OrganizationID, b.ID), b.Type, full)
				if err != nil {
					return err
				}
			}
		}
		if err := v.Err(); err != nil {
			return err
		}
		out, err = store.UpdateBridge(ctx, tx, orgID, id, patch)
		return err
	})
	return out, err
}

// DeleteBridge deletes a bridge. The actor needs bridges:write.
func (s *Service) DeleteBridge(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	return notFound(store.DeleteBridge(ctx, s.store.Pool, actor.OrganizationID, id), "bridge")
}

// checkURLFields names the URL fields of a bridge config (storefront_b's
// storeUrl) that are no absolute http(s) URL or that, unless private URLs
// are allowed, name a loopback, private, link-local or metadata address or
// a local name (CONTRACT 8b). Names that resolve to such addresses are
// refused when dialed (netguard.NewClient).
func (s *Service) checkURLFields(v *domain.FieldErrors, bridgeType string, cfg map[string]any) {
	bt, ok := platforms.TypeBySlug(bridgeType)
	if !ok {
		return
	}
	for _, f := range bt.ConfigFields {
		u, isString := cfg[f.Key].(string)
		if f.Type != platforms.FieldTypeURL || !isString || u == "" || hasField(*v, "config."+f.Key) {
			continue
		}
		if err := netguard.CheckURL(u, s.allowPrivateURLs); err != nil {
			v.Add("config."+f.Key, err.Error())
		}
	}
}

// checkConnectorConfig applies the bridge type's connector's own rules to
// a complete config that passed the catalog's (storefront_a's shop must be
// a .myshopify.com domain unless FOS_STOREFRONT_A_URL is set, storefront_b's
// storeUrl https:// outside the sandbox, ...), so a bridge that could never
// reach its platform is refused with the field named.
func (s *Service) checkConnectorConfig(v *domain.FieldErrors, bridgeType string, cfg map[string]any) {
	if s.platforms == nil || len(*v) > 0 {
		return
	}
	addConfigErrors(v, s.platforms.CheckConfig(bridgeType, cfg))
}

// addConfigErrors copies config validation problems into v.
func addConfigErrors(v *domain.FieldErrors, errs []platforms.FieldError) {
	for _, e := range errs {
		v.Add(e.Field, e.Message)
	}
}

// dropRedacted removes values equal to the redaction placeholder.
func dropRedacted(cfg map[string]any) {
	for k, v := range cfg {
		if s, ok := v.(string); ok && s == platforms.RedactedValue {
			delete(cfg, k)
		}
	}
}

// hasField reports whether field itself is named already.
func hasField(v domain.FieldErrors, field string) bool {
	for _, e := range v {
		if e.Field == field {
			return true
		}
	}
	return false
}
