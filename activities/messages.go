package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
)

// InternalFailureMessage replaces a failure text that would show a tenant
// the service's internals (domain.InternalFailureMessage).
const InternalFailureMessage = domain.InternalFailureMessage

// TenantMessage is what a tenant may read of a failure, in an API body or
// a stored field (lastError, an order activity's description, an item's
// error): a carrier's or platform's own business message (an "invalid
// postal code" refusal) is kept; network errors, timeouts, undecodable
// answers and any other Go error become a stable sentence. Every place
// that shows a failure to a tenant goes through it (or TenantText for a
// message already flattened to text); log the error itself beside it.
func TenantMessage(err error) string {
	if err == nil {
		return ""
	}
	var pe *platforms.Error
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, new(*carriers.Error)):
		return CarrierErrorMessage(err)
	case errors.As(err, &pe):
		return platformMessage(pe)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timeoutErr):
		return "the call did not complete in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	case errors.As(err, &appErr):
		// Activities build their messages for people; check them anyway.
		return TenantText(appErr.Message())
	}
	return InternalFailureMessage
}

// platformMessage is a platform error as a tenant may read it.
func platformMessage(pe *platforms.Error) string {
	switch pe.Code {
	case platforms.CodeNetwork:
		return "the platform could not be reached"
	case platforms.CodeBadResponse:
		return "the platform's answer could not be read"
	}
	msg := TenantText(pe.Message)
	if msg == InternalFailureMessage || pe.Code == "" {
		return msg
	}
	return msg + " (" + pe.Code + ")"
}

// TenantText is TenantMessage for a message already flattened to text
// (domain.TenantText).
func TenantText(msg string) string { return domain.TenantText(msg) }
