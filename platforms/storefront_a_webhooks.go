package platforms

import (
	"os"
	"strings"
)

// storefront_a signs every webhook delivery with the app's client secret
// (base64 HMAC-SHA256 of the raw body, X-Shopify-Hmac-Sha256); webhooks
// created in the shop's admin are signed with the signing key shown there.
// A bridge can only verify its deliveries with one of those: its
// webhookSecret set to it, or the service's app client secret
// (FOS_STOREFRONT_A_CLIENT_SECRET) when the bridge's token belongs to the
// service's app. The platform delivers to https:// addresses only.

// EnvStorefrontAClientSecret is the service's storefront_a app client
// secret (also used by the embed OAuth flow).
const EnvStorefrontAClientSecret = "FOS_STOREFRONT_A_CLIENT_SECRET"

// StorefrontAClientSecret returns the app client secret ("" when unset).
func StorefrontAClientSecret() string {
	return strings.TrimSpace(os.Getenv(EnvStorefrontAClientSecret))
}

// StorefrontAWebhookKeys are the keys a storefront_a delivery may be
// signed with: the bridge's webhookSecret and the app client secret (each
// when set).
func StorefrontAWebhookKeys(bridgeSecret string) []string {
	var keys []string
	if s := strings.TrimSpace(bridgeSecret); s != "" {
		keys = append(keys, s)
	}
	if s := StorefrontAClientSecret(); s != "" {
		keys = append(keys, s)
	}
	return keys
}

// CheckStorefrontAWebhooks tells why storefront_a topics cannot be
// enabled on a bridge: no key to verify the platform's signatures with
// (the bridge has no webhookSecret and FOS_STOREFRONT_A_CLIENT_SECRET is
// unset), or an address the platform does not deliver to (not https://,
// unless plain http is allowed: fos dev). nil when they can.
func CheckStorefrontAWebhooks(bridgeSecret, address string, allowHTTP bool) *Error {
	if len(StorefrontAWebhookKeys(bridgeSecret)) == 0 {
		return &Error{Code: CodeInvalidConfig, Field: ConfigWebhookSecret, Message: "storefront_a signs its webhooks with the app's client secret: " +
			"set the bridge's webhookSecret to it (or to the signing key of webhooks made in the shop admin), or set " + EnvStorefrontAClientSecret}
	}
	if !allowHTTP && !strings.HasPrefix(strings.ToLower(address), "https://") {
		return &Error{Code: CodeInvalidConfig, Message: "storefront_a delivers webhooks to https:// addresses only; the service's address is " +
			address + " (set FOS_BASE_URL to its https:// URL)"}
	}
	return nil
}
