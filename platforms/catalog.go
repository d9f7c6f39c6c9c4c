package platforms

import (
	"strings"
	"time"

	"github.com/google/uuid"
)

// Bridge type slugs.
const (
	TypeStorefrontA  = "storefront_a"
	TypeShippingHubA = "shipping_hub_a"
	TypeStorefrontB  = "storefront_b"
	TypeStorefrontC  = "storefront_c"
	TypeMarketplaceA = "marketplace_a"
)

// Bridge type categories.
const (
	CategoryEcommerce   = "ecommerce"
	CategoryShipping    = "shipping"
	CategoryMarketplace = "marketplace"
	CategoryERP         = "erp"
)

// Task categories.
const (
	TaskCategorySync    = "sync"
	TaskCategoryPush    = "push"
	TaskCategoryWebhook = "webhook"
)

// Task names.
const (
	TaskGrabOrders      = "grab-orders"
	TaskGrabShipments   = "grab-shipments"
	TaskPushFulfillment = "push-fulfillment"
	TaskWarehouseSync   = "warehouse-sync"
	TaskProcessWebhook  = "process-webhook"
)

// Config field types (ConfigField.Type).
const (
	FieldTypeString      = "string"
	FieldTypeSecret      = "password"
	FieldTypeURL         = "url"
	FieldTypeStringArray = "string[]"
	FieldTypeObject      = "object"
)

// Recognised config keys shared by every bridge type.
const (
	ConfigEnabledWebhooks    = "enabledWebhooks"
	ConfigRegisteredWebhooks = "registeredWebhooks"
	ConfigWebhookSecret      = "webhookSecret"
)

// RedactedValue replaces every credential value in API responses.
const RedactedValue = "--------"

// catalogCreatedAt is the fixed creation time of every catalog entry.
func catalogCreatedAt() time.Time { return time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC) }

// BridgeType is one entry of the bridge type catalog (snake_case on the wire).
type BridgeType struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Slug         string        `json:"slug"`
	Description  string        `json:"description"`
	Category     string        `json:"category"`
	IconURL      *string       `json:"icon_url"`
	AuthMethods  []string      `json:"auth_methods"`
	ConfigFields []ConfigField `json:"config_fields"`
	Tasks        []string      `json:"tasks"`
	CreatedAt    time.Time     `json:"created_at"`
}

// ConfigField describes one key of a bridge's config. Secret fields are
// credentials: encrypted at rest and redacted as RedactedValue in responses.
type ConfigField struct {
	Key      string `json:"key"`
	Label    string `json:"label"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Secret   bool   `json:"secret"`
}

// TaskDefinition describes a task a bridge of a given type can run
// (snake_case on the wire).
type TaskDefinition struct {
	ID               string    `json:"id"`
	BridgeType       string    `json:"bridge_type"`
	Name             string    `json:"name"`
	DisplayName      string    `json:"display_name"`
	Description      string    `json:"description"`
	Category         string    `json:"category"`
	SupportsSchedule bool      `json:"supports_schedule"`
	CreatedAt        time.Time `json:"created_at"`
}

// FieldError is a validation problem with one config key; Field is a path
// such as "config.shopDomain".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// typeDef is the static definition from which catalog values are built.
type typeDef struct {
	id          string
	name        string
	slug        string
	description string
	category    string
	authMethods []string
	storeKey    string
	fields      []ConfigField
	tasks       []taskDef
}

type taskDef struct {
	id          string
	name        string
	displayName string
	description string
	category    string
	schedule    bool
}

func field(key, label, typ string, required bool) ConfigField {
	return ConfigField{Key: key, Label: label, Type: typ, Required: required, Secret: typ == FieldTypeSecret}
}

// commonFields are optional keys every bridge type recognises.
func commonFields() []ConfigField {
	return []ConfigField{
		field(ConfigWebhookSecret, "Webhook secret", FieldTypeSecret, false),
		field(ConfigEnabledWebhooks, "Enabled webhook topics", FieldTypeStringArray, false),
		field(ConfigRegisteredWebhooks, "Registered webhooks", FieldTypeObject, false),
	}
}

func grabOrders(id, what string) taskDef {
	return taskDef{id, TaskGrabOrders, "Grab orders", "Imports new and updated orders from " + what + ".", TaskCategorySync, true}
}

func pushFulfillment(id, what string) taskDef {
	return taskDef{id, TaskPushFulfillment, "Push fulfillment", "Sends shipments and tracking numbers back to " + what + ".", TaskCategoryPush, true}
}

func warehouseSync(id, what string) taskDef {
	return taskDef{id, TaskWarehouseSync, "Warehouse sync", "Synchronises warehouses and locations from " + what + ".", TaskCategorySync, true}
}

func processWebhook(id, what string) taskDef {
	return taskDef{id, TaskProcessWebhook, "Process webhook", "Processes an inbound webhook event from " + what + ".", TaskCategoryWebhook, false}
}

// definitions returns the static catalog; it builds fresh values on every
// call so callers can never change the catalog.
func definitions() []typeDef {
	return []typeDef{
		{
			id:          "fe312c68-6105-469c-b79b-1c9ff9bc409a",
			name:        "Storefront A",
			slug:        TypeStorefrontA,
			description: "Hosted storefront platform: imports orders, pushes fulfillments with tracking, syncs locations and receives order webhooks.",
			category:    CategoryEcommerce,
			authMethods: []string{"access_token", "oauth2"},
			storeKey:    "shopDomain",
			fields: append([]ConfigField{
				field("shopDomain", "Shop domain", FieldTypeString, true),
				field("accessToken", "Admin API access token", FieldTypeSecret, true),
				field("apiVersion", "API version", FieldTypeString, false),
				field("locationId", "Default fulfillment location id", FieldTypeString, false),
			}, commonFields()...),
			tasks: []taskDef{
				grabOrders("1734adbd-18f1-4c1b-859d-ad8d2cb4e748", "the storefront"),
				pushFulfillment("f8033010-e2bf-4a03-b22b-a2b56bb82194", "the storefront"),
				warehouseSync("0cffb079-c31d-4aeb-8d06-2cdabf413f24", "the storefront"),
				processWebhook("d2793508-3402-4823-952d-7b71a4b578b2", "the storefront"),
			},
		},
		{
			id:          "3f58d96a-c4b1-4eb9-a711-ef312cc3f692",
			name:        "Shipping Hub A",
			slug:        TypeShippingHubA,
			description: "Multi-channel shipping hub: imports orders and shipments, marks orders shipped, syncs warehouses and receives shipment webhooks.",
			category:    CategoryShipping,
			authMethods: []string{"api_key"},
			storeKey:    "apiKey",
			fields: append([]ConfigField{
				field("apiKey", "API key", FieldTypeSecret, true),
				field("apiSecret", "API secret", FieldTypeSecret, true),
				field("storeId", "Store id", FieldTypeString, false),
			}, commonFields()...),
			tasks: []taskDef{
				grabOrders("a47b0435-b247-4ac3-bafa-b56e1ee6048b", "the shipping hub"),
				{"49f6e53e-2dd0-44de-8a72-947fc3106c50", TaskGrabShipments, "Grab shipments", "Imports shipments and labels created in the shipping hub.", TaskCategorySync, true},
				pushFulfillment("165d908b-a437-4fb8-abde-48e95e37a3b9", "the shipping hub"),
				warehouseSync("518ec703-ad08-4f24-9469-b57782b7f0dc", "the shipping hub"),
				processWebhook("0f9d7043-24ec-4351-ad36-2e2ceec9009d", "the shipping hub"),
			},
		},
		{
			id:          "d19c02fb-be5e-4d04-9323-64e832440753",
			name:        "Storefront B",
			slug:        TypeStorefrontB,
			description: "Self-hosted storefront plugin: imports orders and marks them completed with tracking notes.",
			category:    CategoryEcommerce,
			authMethods: []string{"api_key"},
			storeKey:    "storeUrl",
			fields: append([]ConfigField{
				field("storeUrl", "Store URL", FieldTypeURL, true),
				field("consumerKey", "Consumer key", FieldTypeSecret, true),
				field("consumerSecret", "Consumer secret", FieldTypeSecret, true),
			}, commonFields()...),
			tasks: []taskDef{
				grabOrders("1eaeb35d-242f-4936-b563-1f3b13298ac1", "the storefront"),
				pushFulfillment("7db99b9f-8a9e-43b5-925d-bfb11db83f3c", "the storefront"),
			},
		},
		{
			id:          "b93891cc-785d-427b-8b24-0764d8845c0e",
			name:        "Storefront C",
			slug:        TypeStorefrontC,
			description: "Hosted storefront platform: imports orders, creates shipments with tracking and syncs inventory locations.",
			category:    CategoryEcommerce,
			authMethods: []string{"access_token", "oauth2"},
			storeKey:    "storeHash",
			fields: append([]ConfigField{
				field("storeHash", "Store hash", FieldTypeString, true),
				field("accessToken", "API access token", FieldTypeSecret, true),
				field("clientId", "Client id", FieldTypeString, false),
				field("clientSecret", "Client secret", FieldTypeSecret, false),
			}, commonFields()...),
			tasks: []taskDef{
				grabOrders("bb776113-0816-4ec9-9bf6-045841dadce1", "the storefront"),
				pushFulfillment("d40e6169-823c-4c53-bf08-8ec590997707", "the storefront"),
				warehouseSync("67fb03c2-3631-4913-91c2-ebe77cd2e3ca", "the storefront"),
			},
		},
		{
			id:          "cff93557-3390-47aa-aeca-db6614163138",
			name:        "Marketplace A",
			slug:        TypeMarketplaceA,
			description: "Online marketplace (merchant-fulfilled orders): imports orders, confirms shipments and syncs supply sources.",
			category:    CategoryMarketplace,
			authMethods: []string{"oauth2"},
			storeKey:    "sellerId",
			fields: append([]ConfigField{
				field("sellerId", "Seller id", FieldTypeString, true),
				field("refreshToken", "Refresh token", FieldTypeSecret, true),
				field("clientId", "Client id", FieldTypeString, true),
				field("clientSecret", "Client secret", FieldTypeSecret, true),
				field("marketplaceId", "Marketplace id", FieldTypeString, true),
				field("region", "Region (na, eu, fe)", FieldTypeString, false),
			}, commonFields()...),
			tasks: []taskDef{
				grabOrders("eb79e280-a2f5-4cc6-bd9e-8e19aacded0d", "the marketplace"),
				pushFulfillment("289ef696-6fa9-471b-9614-7fc768d76f67", "the marketplace"),
				warehouseSync("15cd725e-63ac-4243-90f4-6f04956eb5eb", "the marketplace"),
			},
		},
	}
}

func (d typeDef) bridgeType() BridgeType {
	tasks := make([]string, len(d.tasks))
	for i, t := range d.tasks {
		tasks[i] = t.name
	}
	return BridgeType{
		ID:           d.id,
		Name:         d.name,
		Slug:         d.slug,
		Description:  d.description,
		Category:     d.category,
		AuthMethods:  d.authMethods,
		ConfigFields: d.fields,
		Tasks:        tasks,
		CreatedAt:    catalogCreatedAt(),
	}
}

func lookup(slug string) (typeDef, bool) {
	for _, d := range definitions() {
		if d.slug == slug {
			return d, true
		}
	}
	return typeDef{}, false
}

// Types returns the five bridge types in a fixed order.
func Types() []BridgeType {
	defs := definitions()
	out := make([]BridgeType, len(defs))
	for i, d := range defs {
		out[i] = d.bridgeType()
	}
	return out
}

// TypeBySlug returns the bridge type whose slug (= type) is slug.
func TypeBySlug(slug string) (BridgeType, bool) {
	d, ok := lookup(slug)
	if !ok {
		return BridgeType{}, false
	}
	return d.bridgeType(), true
}

// TypeByID returns the bridge type with the given id (any UUID spelling).
func TypeByID(id string) (BridgeType, bool) {
	want, err := uuid.Parse(id)
	if err != nil {
		return BridgeType{}, false
	}
	for _, d := range definitions() {
		if uuid.MustParse(d.id) == want {
			return d.bridgeType(), true
		}
	}
	return BridgeType{}, false
}

// IsValidType reports whether bridgeType is one of the five catalog types.
func IsValidType(bridgeType string) bool {
	_, ok := lookup(bridgeType)
	return ok
}

// Tasks returns the task definitions of a bridge type (nil for an unknown type).
func Tasks(bridgeType string) []TaskDefinition {
	d, ok := lookup(bridgeType)
	if !ok {
		return nil
	}
	out := make([]TaskDefinition, len(d.tasks))
	for i, t := range d.tasks {
		out[i] = TaskDefinition{
			ID:               t.id,
			BridgeType:       d.slug,
			Name:             t.name,
			DisplayName:      t.displayName,
			Description:      t.description,
			Category:         t.category,
			SupportsSchedule: t.schedule,
			CreatedAt:        catalogCreatedAt(),
		}
	}
	return out
}

// TaskByName returns the named task definition of a bridge type.
func TaskByName(bridgeType, name string) (TaskDefinition, bool) {
	for _, t := range Tasks(bridgeType) {
		if t.Name == name {
			return t, true
		}
	}
	return TaskDefinition{}, false
}

// StoreKeyField names the config key that identifies the store (account) on
// the platform: shopDomain, apiKey, storeUrl, storeHash or sellerId.
func StoreKeyField(bridgeType string) string {
	d, ok := lookup(bridgeType)
	if !ok {
		return ""
	}
	return d.storeKey
}

// RequiredFields returns the camelCase keys of the required config fields.
func RequiredFields(bridgeType string) []string {
	d, ok := lookup(bridgeType)
	if !ok {
		return nil
	}
	var out []string
	for _, f := range d.fields {
		if f.Required {
			out = append(out, f.Key)
		}
	}
	return out
}

// genericSecretKeys are credential keys recognised for any bridge type.
func genericSecretKeys() []string {
	return []string{
		"accessToken", "apiKey", "apiSecret", "consumerKey", "consumerSecret",
		"refreshToken", "clientSecret", "webhookSecret", "password", "privateKey",
	}
}

// IsSecretField reports whether a config key (camelCase or snake_case) holds
// a credential for the bridge type. Besides the catalog's secret fields, any
// key named like a credential (containing "secret", "token", "password" or
// "apikey") is treated as secret, so unknown credentials are never shown.
func IsSecretField(bridgeType, key string) bool {
	k := canonicalKey(bridgeType, key)
	if d, ok := lookup(bridgeType); ok {
		for _, f := range d.fields {
			if f.Key == k {
				return f.Secret
			}
		}
	}
	for _, s := range genericSecretKeys() {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	l := strings.ToLower(k)
	for _, frag := range []string{"secret", "token", "password", "apikey", "privatekey"} {
		if strings.Contains(l, frag) {
			return true
		}
	}
	return false
}

// IsSecretEntry reports whether a top-level config entry is a credential:
// its key is a secret field, or its value is an object or array holding a
// secret-looking key at any depth (such an entry is encrypted and redacted
// whole, so nothing nested leaks).
func IsSecretEntry(bridgeType, key string, v any) bool {
	return IsSecretField(bridgeType, key) || nestsSecret(bridgeType, v)
}

func nestsSecret(bridgeType string, v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			if IsSecretField(bridgeType, k) || nestsSecret(bridgeType, sub) {
				return true
			}
		}
	case []any:
		for _, sub := range t {
			if nestsSecret(bridgeType, sub) {
				return true
			}
		}
	}
	return false
}

// RedactConfig returns a copy of cfg with every credential value replaced
// by RedactedValue (empty values are kept as they are).
func RedactConfig(bridgeType string, cfg map[string]any) map[string]any {
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if IsSecretEntry(bridgeType, k, v) && !isEmpty(v) {
			out[k] = RedactedValue
			continue
		}
		out[k] = v
	}
	return out
}

// SnakeToCamel converts a snake_case key to camelCase ("shop_domain" →
// "shopDomain"); a key without underscores is returned unchanged.
func SnakeToCamel(key string) string {
	if !strings.Contains(key, "_") {
		return key
	}
	parts := strings.Split(key, "_")
	var b strings.Builder
	first := true
	for _, p := range parts {
		if p == "" {
			continue
		}
		if first {
			b.WriteString(p)
			first = false
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]))
		b.WriteString(p[1:])
	}
	if b.Len() == 0 {
		return key
	}
	return b.String()
}

// canonicalKey converts key to camelCase and, when it matches a known field
// of the type ignoring case, to that field's spelling.
func canonicalKey(bridgeType, key string) string {
	k := SnakeToCamel(strings.TrimSpace(key))
	if d, ok := lookup(bridgeType); ok {
		for _, f := range d.fields {
			if strings.EqualFold(f.Key, k) {
				return f.Key
			}
		}
	}
	for _, f := range commonFields() {
		if strings.EqualFold(f.Key, k) {
			return f.Key
		}
	}
	return k
}

// NormalizeConfig converts the keys of a bridge config to camelCase
// (snake_case and case variants of known keys are accepted; unknown keys are
// kept, converted to camelCase), trims string values of known string fields
// and checks the JSON types of known fields. A key given both in camelCase
// and in another spelling keeps the camelCase value. The input is not
// modified. Required fields are not checked here; see MissingRequired.
func NormalizeConfig(bridgeType string, in map[string]any) (map[string]any, []FieldError) {
	out := make(map[string]any, len(in))
	exact := make(map[string]bool, len(in))
	var errs []FieldError
	fields := map[string]ConfigField{}
	if d, ok := lookup(bridgeType); ok {
		for _, f := range d.fields {
			fields[f.Key] = f
		}
	} else {
		for _, f := range commonFields() {
			fields[f.Key] = f
		}
	}
	for _, key := range sortedKeys(in) {
		v := in[key]
		k := canonicalKey(bridgeType, key)
		if k == "" {
			continue
		}
		isExact := k == key
		if _, seen := out[k]; seen && exact[k] && !isExact {
			continue
		}
		if f, known := fields[k]; known {
			nv, msg := checkFieldType(f, v)
			if msg != "" {
				errs = append(errs, FieldError{Field: "config." + k, Message: msg})
				continue
			}
			v = nv
		}
		out[k] = v
		exact[k] = isExact
	}
	return out, errs
}

func checkFieldType(f ConfigField, v any) (any, string) {
	if v == nil {
		return nil, ""
	}
	switch f.Type {
	case FieldTypeString, FieldTypeSecret, FieldTypeURL:
		s, ok := v.(string)
		if !ok {
			return nil, "must be a string"
		}
		return strings.TrimSpace(s), ""
	case FieldTypeStringArray:
		switch arr := v.(type) {
		case []string:
			return append([]string(nil), arr...), ""
		case []any:
			out := make([]string, 0, len(arr))
			for _, e := range arr {
				s, ok := e.(string)
				if !ok {
					return nil, "must be an array of strings"
				}
				out = append(out, s)
			}
			return out, ""
		default:
			return nil, "must be an array of strings"
		}
	case FieldTypeObject:
		if _, ok := v.(map[string]any); !ok {
			return nil, "must be an object"
		}
	}
	return v, ""
}

// MissingRequired names (camelCase) each required field of the bridge type
// that is absent, null or an empty string in cfg, in catalog order. cfg is
// expected to be normalised (camelCase keys).
func MissingRequired(bridgeType string, cfg map[string]any) []string {
	var missing []string
	for _, k := range RequiredFields(bridgeType) {
		if isEmpty(cfg[k]) {
			missing = append(missing, k)
		}
	}
	return missing
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	}
	return false
}
