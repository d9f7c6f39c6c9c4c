package embed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Features are the enabled-feature flags of Part 3.
var Features = []string{"bridges", "data_room", "action_requests", "smart_alerts", "end_user_webhooks", "branded_tracking"}

// DefaultFeatures are a new config's features.
var DefaultFeatures = []string{"bridges", "end_user_webhooks"}

// Limits of the config.
const (
	maxOrigins      = 20
	maxSettingsKeys = 50
	// MaxBridgesPerUserCap bounds settings.maxBridgesPerUser.
	MaxBridgesPerUserCap = 1000
)

var (
	slugRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)
	colorRE = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
)

// Branding is the widget's look.
type Branding struct {
	PrimaryColor *string `json:"primary_color"`
	LogoURL      *string `json:"logo_url"`
	CompanyName  *string `json:"company_name"`
}

// ConfigInput is PATCH /embed/config: every field optional.
type ConfigInput struct {
	Slug                *string        `json:"slug"`
	Branding            *Branding      `json:"branding"`
	AllowedOrigins      *[]string      `json:"allowed_origins"`
	AllowedBridgeTypes  *[]string      `json:"allowed_bridge_types"`
	DefaultDispatcherID OptionalUUID   `json:"default_dispatcher_id"`
	Settings            map[string]any `json:"settings"`
	EnabledFeatures     *[]string      `json:"enabled_features"`
	IsActive            *bool          `json:"is_active"`
}

// OptionalUUID tells an absent field from null: Set is true when the field
// was sent; ID is nil for null.
type OptionalUUID struct {
	Set bool
	ID  *uuid.UUID
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *OptionalUUID) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.ID = nil
		return nil
	}
	var s string
	if len(b) < 2 || b[0] != '"' {
		return errors.New("must be a UUID string or null")
	}
	s = string(b[1 : len(b)-1])
	id, err := uuid.Parse(s)
	if err != nil {
		return errors.New("must be a UUID string or null")
	}
	o.ID = &id
	return nil
}

// Config is the embed config resource.
type Config = store.EmbedConfig

// GetConfig is the organization's config (GET /embed/config/me).
func (s *Service) GetConfig(ctx context.Context, a domain.Actor) (Config, error) {
	if err := requireOrgActor(a); err != nil {
		return Config{}, err
	}
	c, err := store.EmbedConfigByOrganization(ctx, s.store.Pool, a.OrganizationID)
	return c, notFoundAs(err, "embed config")
}

// UpsertConfig creates or patches the organization's config. A new config
// gets a publishable key (kept after) and, without a slug, one generated.
func (s *Service) UpsertConfig(ctx context.Context, a domain.Actor, in ConfigInput) (Config, error) {
	if err := requireOrgActor(a); err != nil {
		return Config{}, err
	}
	var fe domain.FieldErrors
	p := store.EmbedConfigPatch{IsActive: in.IsActive, SetDispatcher: in.DefaultDispatcherID.Set, DefaultDispatcherID: in.DefaultDispatcherID.ID}
	if in.Slug != nil {
		slug := strings.ToLower(strings.TrimSpace(*in.Slug))
		if !slugRE.MatchString(slug) {
			fe.Add("slug", "must be 2-63 lowercase letters, digits or hyphens, starting with a letter or digit")
		}
		p.Slug = &slug
	}
	if in.Branding != nil {
		p.Branding = checkBranding(&fe, *in.Branding)
	}
	if in.AllowedOrigins != nil {
		p.AllowedOrigins = checkOrigins(&fe, *in.AllowedOrigins)
	}
	if in.AllowedBridgeTypes != nil {
		p.AllowedBridgeTypes = make([]string, 0, len(*in.AllowedBridgeTypes))
		for i, t := range *in.AllowedBridgeTypes {
			if !platforms.IsValidType(t) {
				fe.Add(fmt.Sprintf("allowed_bridge_types[%d]", i), "must be one of "+strings.Join(typeSlugs(), ", "))
				continue
			}
			if !slices.Contains(p.AllowedBridgeTypes, t) {
				p.AllowedBridgeTypes = append(p.AllowedBridgeTypes, t)
			}
		}
	}
	if in.Settings != nil {
		checkSettings(&fe, in.Settings)
		p.Settings = in.Settings
	}
	if in.EnabledFeatures != nil {
		p.EnabledFeatures = make([]string, 0, len(*in.EnabledFeatures))
		for i, f := range *in.EnabledFeatures {
			if !slices.Contains(Features, f) {
				fe.Add(fmt.Sprintf("enabled_features[%d]", i), "must be one of "+strings.Join(Features, ", "))
				continue
			}
			if !slices.Contains(p.EnabledFeatures, f) {
				p.EnabledFeatures = append(p.EnabledFeatures, f)
			}
		}
	}
	if err := fe.Err(); err != nil {
		return Config{}, err
	}
	if in.DefaultDispatcherID.ID != nil {
		if _, err := store.DispatcherByID(ctx, s.store.Pool, a.OrganizationID, *in.DefaultDispatcherID.ID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return Config{}, domain.InvalidField("default_dispatcher_id", "no such dispatcher in this organization")
			}
			return Config{}, err
		}
	}
	if _, err := store.EmbedConfigByOrganization(ctx, s.store.Pool, a.OrganizationID); errors.Is(err, store.ErrNotFound) && p.EnabledFeatures == nil {
		p.EnabledFeatures = DefaultFeatures
	}
	defaultSlug := "org-" + strings.ReplaceAll(a.OrganizationID.String(), "-", "")[:12]
	c, err := store.UpsertEmbedConfig(ctx, s.store.Pool, a.OrganizationID, uuid.New(), defaultSlug, randomToken(PublishableKeyPrefix, 16), p)
	if errors.Is(err, store.ErrConflict) {
		return Config{}, domain.Conflict("the slug is taken", domain.FieldError{Field: "slug", Message: "is taken"})
	}
	return c, err
}

func typeSlugs() []string {
	var out []string
	for _, t := range platforms.Types() {
		out = append(out, t.Slug)
	}
	return out
}

func checkBranding(fe *domain.FieldErrors, b Branding) map[string]any {
	out := map[string]any{"primary_color": nil, "logo_url": nil, "company_name": nil}
	if b.PrimaryColor != nil {
		if !colorRE.MatchString(*b.PrimaryColor) {
			fe.Add("branding.primary_color", "must be a hex color such as #1a73e8")
		}
		out["primary_color"] = *b.PrimaryColor
	}
	if b.LogoURL != nil {
		u, err := url.Parse(*b.LogoURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(*b.LogoURL) > 2048 {
			fe.Add("branding.logo_url", "must be an absolute http(s) URL of at most 2048 characters")
		}
		out["logo_url"] = *b.LogoURL
	}
	if b.CompanyName != nil {
		fe.MaxLen("branding.company_name", *b.CompanyName, 100)
		out["company_name"] = strings.TrimSpace(*b.CompanyName)
	}
	return out
}

// NormalizeOrigin is scheme://host[:port] in lower case, or "" when raw is
// not an origin.
func NormalizeOrigin(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

func checkOrigins(fe *domain.FieldErrors, in []string) []string {
	if len(in) > maxOrigins {
		fe.Add("allowed_origins", fmt.Sprintf("must hold at most %d origins", maxOrigins))
		return nil
	}
	out := make([]string, 0, len(in))
	for i, o := range in {
		n := NormalizeOrigin(o)
		if n == "" || len(o) > 255 {
			fe.Add(fmt.Sprintf("allowed_origins[%d]", i), "must be an origin such as https://app.example.com (scheme, host, optional port; no path)")
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func checkSettings(fe *domain.FieldErrors, m map[string]any) {
	if len(m) > maxSettingsKeys {
		fe.Add("settings", fmt.Sprintf("must hold at most %d keys", maxSettingsKeys))
	}
	if v, ok := m["maxBridgesPerUser"]; ok && v != nil {
		f, isNum := v.(float64)
		if !isNum || f != float64(int(f)) || f < 0 || f > MaxBridgesPerUserCap {
			fe.Add("settings.maxBridgesPerUser", fmt.Sprintf("must be an integer from 0 to %d", MaxBridgesPerUserCap))
		}
	}
}

// maxBridgesPerUser is the config's limit, 0 when none.
func maxBridgesPerUser(c Config) int {
	if f, ok := c.Settings["maxBridgesPerUser"].(float64); ok && f > 0 {
		return int(f)
	}
	return 0
}

// PublicBridgeType is a bridge type of the public config.
type PublicBridgeType struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Icon     *string `json:"icon"`
	Category string  `json:"category"`
}

// PublicConfig is GET /embed/config?slug=.
type PublicConfig struct {
	Slug               string             `json:"slug"`
	Branding           map[string]any     `json:"branding"`
	AllowedBridgeTypes []PublicBridgeType `json:"allowedBridgeTypes"`
}

// GetPublicConfig is the public config of an active slug; an unknown or
// inactive slug is not found. No credential is needed.
func (s *Service) GetPublicConfig(ctx context.Context, slug string) (PublicConfig, error) {
	pc, _, err := s.GetPublicConfigWithOrigins(ctx, slug)
	return pc, err
}

// GetPublicConfigWithOrigins is GetPublicConfig and the config's allowed
// origins (for the CORS answer).
func (s *Service) GetPublicConfigWithOrigins(ctx context.Context, slug string) (PublicConfig, []string, error) {
	slug = strings.ToLower(strings.TrimSpace(slug))
	if slug == "" {
		return PublicConfig{}, nil, domain.InvalidField("slug", "is required")
	}
	if !slugRE.MatchString(slug) {
		return PublicConfig{}, nil, domain.NotFound("embed config")
	}
	c, err := store.EmbedConfigBySlug(ctx, s.store.Pool, slug)
	if err != nil {
		return PublicConfig{}, nil, notFoundAs(err, "embed config")
	}
	if !c.IsActive {
		return PublicConfig{}, nil, domain.NotFound("embed config")
	}
	out := PublicConfig{Slug: c.Slug, Branding: c.Branding, AllowedBridgeTypes: []PublicBridgeType{}}
	for _, t := range allowedTypes(c, nil) {
		out.AllowedBridgeTypes = append(out.AllowedBridgeTypes, PublicBridgeType{ID: t.Slug, Name: t.Name, Icon: t.IconURL, Category: t.Category})
	}
	return out, c.AllowedOrigins, nil
}

// allowedTypes are the bridge types the config (empty: all) and the
// session (nil: all the config's) allow, in catalog order.
func allowedTypes(c Config, session []string) []platforms.BridgeType {
	var out []platforms.BridgeType
	for _, t := range platforms.Types() {
		if len(c.AllowedBridgeTypes) > 0 && !slices.Contains(c.AllowedBridgeTypes, t.Slug) {
			continue
		}
		if session != nil && !slices.Contains(session, t.Slug) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// WidgetConfig is the active config of a publishable key (the connect
// page); an unknown key or an inactive config is not found.
func (s *Service) WidgetConfig(ctx context.Context, publishableKey string) (Config, error) {
	if !strings.HasPrefix(publishableKey, PublishableKeyPrefix) || len(publishableKey) > 100 {
		return Config{}, domain.NotFound("embed config")
	}
	c, err := store.EmbedConfigByPublishableKey(ctx, s.store.Pool, publishableKey)
	if err == nil && !c.IsActive {
		return Config{}, domain.NotFound("embed config")
	}
	return c, notFoundAs(err, "embed config")
}

// PublishableKeyOfSlug is the publishable key of an active slug ("" when
// there is none): the dev demo page's.
func (s *Service) PublishableKeyOfSlug(ctx context.Context, slug string) string {
	c, err := store.EmbedConfigBySlug(ctx, s.store.Pool, slug)
	if err != nil || !c.IsActive {
		return ""
	}
	return c.PublishableKey
}
