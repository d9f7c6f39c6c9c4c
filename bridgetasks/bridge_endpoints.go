package bridgetasks

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
)

// Credentials are bound to where their owner pointed them: the config
// fields below decide the host a bridge's credentials are sent to. When a
// request changes one of them, every stored credential must come again in
// the same request (a value, or null to drop it); otherwise the update is
// refused and nothing is sent anywhere. A caller allowed to edit a bridge
// but not to read its secrets cannot retarget them to its own host.
var endpointFields = map[string][]string{
	platforms.TypeStorefrontA:  {"shopDomain"},
	platforms.TypeStorefrontB:  {"storeUrl"},
	platforms.TypeStorefrontC:  {"storeHash"},
	platforms.TypeMarketplaceA: {"region", "marketplaceId", "endpoint"},
}

// isEndpointField reports whether key decides where bridgeType's
// credentials go: the listed fields, and any URL field.
func isEndpointField(bridgeType, key string) bool {
	if slices.Contains(endpointFields[bridgeType], key) {
		return true
	}
	if bt, ok := platforms.TypeBySlug(bridgeType); ok {
		for _, f := range bt.ConfigFields {
			if f.Key == key && f.Type == platforms.FieldTypeURL {
				return true
			}
		}
	}
	return false
}

// credentialsFollowEndpoint checks an update of a bridge's config: old is
// the stored full config (secrets included), update the keys sent
// (normalized, redacted placeholders dropped). When an endpoint field
// changes, each stored credential (a secret other than the inbound
// webhookSecret, which is never sent out) must be in update; the missing
// ones are named on v.
func credentialsFollowEndpoint(v *domain.FieldErrors, bridgeType string, old, update map[string]any) {
	var changed []string
	for k, val := range update {
		if isEndpointField(bridgeType, k) && !reflect.DeepEqual(old[k], val) && !hasField(*v, "config."+k) {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	var missing []string
	for k, val := range old {
		if k == platforms.ConfigWebhookSecret || !platforms.IsSecretEntry(bridgeType, k, val) {
			continue
		}
		if _, sent := update[k]; !sent {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	for _, k := range missing {
		v.Add("config."+k, fmt.Sprintf("must be entered again: config.%s changed, and stored credentials are never sent to a new host", changed[0]))
	}
}
