// Package platforms holds what the service knows about the external
// platforms a bridge connects to: the static bridge type catalog (types,
// config fields, credentials, task definitions, config normalisation) and
// the connectors that read orders from a platform and map them onto the
// service's normalized Order.
//
// Every connector call fails with an *Error: errors.Is(err,
// ErrOrderNotFound) and errors.Is(err, ErrUnauthorized) single out the
// non-retryable cases callers act on; Error.Retryable (or IsRetryable) tells
// whether a retry may help (network errors, 429, 5xx).
//
// Every bridge type has one connector that speaks its platform's own API
// (vendors/platforms/<type>): NewStorefrontA (REST Admin API),
// NewShippingHubA (the hub's V1 API), NewStorefrontB (REST v3 under the
// bridge's storeUrl), NewStorefrontC (V2/V3 Management API) and
// NewMarketplaceA (selling-partner API with the refresh-token exchange).
// NewAPIRegistry holds all five, pointed by APIURLs: CONTRACT 8b's
// FOS_STOREFRONT_A_URL, FOS_SHIPPING_HUB_A_URL, FOS_STOREFRONT_C_URL,
// FOS_MARKETPLACE_A_URL and FOS_MARKETPLACE_A_AUTH_URL (APIURLsFromEnv).
// Under FOS_SANDBOX=1 each defaults to the built-in sandbox's store of the
// same API at <sandbox>/platforms/<type> (SandboxURLs), so every sandbox
// run exercises the production code; with FOS_SANDBOX=0 to the platforms'
// real hosts, and nothing talks to the sandbox. Besides Connector they
// implement the optional FulfillmentPusher, LocationLister (not
// storefront_b), WebhookRegistrar (not marketplace_a) and (the hub)
// ShipmentLister; Registry.CheckConfig applies their own config rules. A
// 429 fails with a *RateLimitError carrying the wait the platform asked
// for (errors.Is(err, ErrRateLimited), RetryAfter(err)); the platforms'
// rate-limit headers pace later calls of the same shop or account.
package platforms
