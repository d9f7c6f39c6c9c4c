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
// NewSandboxConnector talks to the built-in sandbox platforms (package
// sandboxapi) and is used for every bridge type while FOS_SANDBOX=1. With
// FOS_SANDBOX=0, NewProductionRegistry holds each type's real connector, or
// one that fails non-retryably with ErrNotAvailable while the type has none:
// nothing then talks to the sandbox.
//
// NewStorefrontA, NewShippingHubA and NewStorefrontC speak the platforms'
// own APIs (vendors/platforms/<type>): the REST Admin API, the hub's V1 API
// and the V2/V3 Management API. Each takes the base URL that CONTRACT 8b's
// FOS_STOREFRONT_A_URL, FOS_SHIPPING_HUB_A_URL and FOS_STOREFRONT_C_URL set
// (APIURLsFromEnv; under FOS_SANDBOX=1 the sandbox stores of the same APIs
// at <sandbox>/platforms/<type>), and implements, besides Connector, the
// optional FulfillmentPusher, LocationLister, WebhookRegistrar and (the hub)
// ShipmentLister. A 429 fails with a *RateLimitError carrying the wait the
// platform asked for (errors.Is(err, ErrRateLimited), RetryAfter(err)); the
// platforms' rate-limit headers pace later calls of the same shop or
// account.
package platforms
