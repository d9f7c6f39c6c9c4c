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
package platforms
