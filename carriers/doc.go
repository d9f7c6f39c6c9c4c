// Package carriers holds one adapter per carrier code behind the Carrier
// interface: rating, labels, voids, tracking, pickups, shipment actions and
// credential checks, plus carrier_a's account registration (Registrar).
// Each adapter is real HTTP code speaking its carrier's wire format
// (vendors/carriers/*):
//
//	code       real API                      capabilities
//	carrier_a  FedEx REST                    rating, labels, pickups, tracking
//	carrier_b  UPS REST (OAuth)              rating, labels, tracking (no pickups)
//	carrier_c  single-key rate estimates     rating only
//
// # Getting an adapter
//
//	reg := carriers.NewRegistry(carriers.Config{
//		Sandbox:    cfg.Sandbox,    // FOS_SANDBOX=1
//		SandboxURL: cfg.SandboxURL, // where sandboxapi.NewHandler() is served
//		CarrierA:   carriers.CarrierAConfigFromEnv(os.Getenv),
//	})
//	c, err := reg.Get(account.Carrier) // carriers.Carrier
//	quotes, err := c.Rate(ctx, carriers.Account{ID: id, Carrier: code, IsTest: isTest, Credentials: decrypted}, req)
//	reg.Registrar("carrier_a")         // the registration flow
//
// # Base URLs
//
// Production and test (Account.IsTest) environments per carrier:
//
//	carrier_a  https://apis.fedex.com        https://apis-sandbox.fedex.com
//	carrier_b  https://onlinetools.ups.com   https://wwwcie.ups.com
//	carrier_c  https://api.shipengine.com    (same host; test keys are told apart by the key)
//
// With Config.Sandbox every adapter, both environments, defaults to
// Config.SandboxURL + "/carriers/<code>". Config.BaseURLs overrides either
// default; EndpointsFromEnv builds it from FOS_CARRIER_A_URL,
// FOS_CARRIER_A_TEST_URL, FOS_CARRIER_B_URL, FOS_CARRIER_B_TEST_URL and
// FOS_CARRIER_C_URL (CONTRACT 8b). In sandbox mode, since the two
// environments then share a URL, IsTest calls carry the header
// X-Sandbox-Environment: test (sent only in sandbox mode).
//
// # Credentials
//
// Account.Credentials (validated by ValidateCredentials, no network):
//
//	carrier_a  accountNumber (9 digits), childKey, childSecret
//	carrier_b  clientId, clientSecret, accountNumber
//	carrier_c  apiKey
//
// carrier_a also needs the service's own project key and secret (the
// integrator's credentials from the carrier's developer portal, not per
// account): Config.CarrierA, read by CarrierAConfigFromEnv from
// FOS_CARRIER_A_CLIENT_ID / FOS_CARRIER_A_CLIENT_SECRET (and
// FOS_CARRIER_A_TEST_CLIENT_ID / FOS_CARRIER_A_TEST_CLIENT_SECRET for the
// test environment, which has its own project keys: they never default to
// the production pair). In sandbox mode they default to SandboxClientID /
// SandboxClientSecret; outside it, a missing pair makes carrier_a calls of
// that environment fail with ErrNotConfigured. Account
// calls use a csp_credentials token (project pair + the account's child
// pair); registration calls, which precede the child pair, use a
// client_credentials token (project pair only).
//
// OAuth tokens (carrier_a: form POST /oauth/token; carrier_b: Basic auth +
// form POST /security/v1/oauth/token with the account number as
// x-merchant-id) are cached per credential set and environment until a
// tenth of their lifetime (at most a minute) before expires_in runs out;
// concurrent callers share one fetch; a 401 answer drops the token and the
// call is retried once with a fresh one. Config.Now makes expiry testable.
// carrier_c sends its apiKey in the api-key header on every call; its
// carrier ids (GET /v1/carriers, also the credentials test) are cached for
// an hour.
//
// # Errors
//
// Every failure is an *Error {Carrier, Code, Message, StatusCode,
// Retryable}. Code is the carrier's own code when it answered (FedEx
// {transactionId, errors[{code, message}]}, UPS {response: {errors[{code,
// message}]}}, carrier_c {request_id, errors[{error_code, message}]}), else
// one of the ErrCode* values. Retryable: network errors, timeouts, 429 and
// 5xx; 4xx are not. A 429 matches ErrRateLimited and carries RetryAfter:
// the Retry-After header (seconds or a date; carrier_b, carrier_c), else
// carrier_a's documented windows (the rest of a 10-second burst window, or
// until 12:00 AM GMT when the daily quota is spent). errors.Is singles out ErrNotSupported,
// ErrUnknownCarrier, ErrUnauthorized (401/403, refused tokens and keys),
// ErrInvalidRequest (400/422 and local validation), ErrNotFound,
// ErrNotConfigured and the registration cases ErrAccountNotFound,
// ErrAddressInvalid, ErrVerificationFailed (wrong PIN, unknown invoice) and
// ErrSessionExpired. Context cancellation is reported as an *Error
// wrapping the context error (errors.Is(err, context.Canceled) holds).
//
// # Delivery changes
//
// Neither FedEx nor UPS (nor carrier_c) publishes an API for delivery
// changes (hold, redirect, redeliver, delivery instructions): FedEx
// Delivery Manager and UPS My Choice are customer-facing products without
// a public REST endpoint (vendors/carriers lists every documented
// endpoint). So every built-in adapter reports Capabilities.Actions false
// and its SendAction fails with ErrNotSupported without calling anything,
// and the sandbox serves no such endpoint. The Carrier interface keeps
// SendAction (and ValidateAction) for an adapter that gets such an API;
// Registry.With plugs one in, and carrierstest.DeliveryChanges is the test
// double that stands in for it.
//
// # Other mapping notes
//
//   - Weights are sent in pounds and dimensions in inches (converted from
//     kg/cm).
//   - carrier_b has no PDF labels: for FormatPDF the adapter buys a GIF label
//     and wraps it into a 4x6 inch PDF; FormatZPL is passed through.
//   - carrier_a pickups default to carrierCode FDXG; FDXE pickups need the
//     returned Location to be cancelled. The carrier requires a contact name
//     and phone: PickupRequest.ContactName/ContactPhone, else the address's
//     name/phone, else placeholders.
//   - Tracking scans carry no coordinates: events and origin/destination
//     get coarse coordinates from a built-in gazetteer (larger US and a few
//     Canadian cities, else the US state's centroid).
//   - carrier_c estimates one package per call: a multi-package rate sums
//     the packages' estimates per service.
package carriers
