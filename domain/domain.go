// Package domain holds what every domain package of the service shares:
// who acts (Actor) and how an operation refuses (Error and its Kind).
//
// The domain packages (orders, shipping, carrier accounts, bridges,
// routing, operations, agent, embed, insights) hold the business
// operations. HTTP handlers, Temporal activities, the agent's tools and
// operation execution all call them; none of them calls the API over HTTP.
// A method takes the organization and the Actor explicitly, typed input,
// and returns a typed result or an *Error whose Kind the API maps to a
// status in one place (api.respondError) and activities map to retryable
// or not (Kind.Retryable).
package domain

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ActorKind says what kind of caller acts.
type ActorKind string

// The kinds of Actor.
const (
	ActorUser      ActorKind = "user"
	ActorAPIKey    ActorKind = "api_key"
	ActorAgent     ActorKind = "agent"
	ActorOperation ActorKind = "operation"
	ActorEmbed     ActorKind = "embed"
	ActorSystem    ActorKind = "system"
)

// Actor is who performs an operation, inside one organization. It is
// built by the caller (the API from its principal, an activity from its
// input, the agent from the conversation) and never from client input.
type Actor struct {
	Kind           ActorKind `json:"kind"`
	ID             uuid.UUID `json:"id"`
	OrganizationID uuid.UUID `json:"organizationId"`
	// Name is a display name for attribution (activities, history).
	Name string `json:"name,omitempty"`
	// Role is a user's role in the organization ("" for other kinds).
	Role string `json:"role,omitempty"`
	// Scopes bound an API key, an agent acting for a caller and an embed
	// session. Scoped reports whether they apply at all: users are gated by
	// roles, the system by nothing.
	Scopes []string `json:"scopes,omitempty"`
	Scoped bool     `json:"scoped,omitempty"`
	// OnBehalfOf is the user or API key an agent or operation acts for.
	OnBehalfOf *Actor `json:"onBehalfOf,omitempty"`
}

// System is the service itself acting in an organization (syncs,
// webhooks, the reconciler).
func System(org uuid.UUID) Actor {
	return Actor{Kind: ActorSystem, OrganizationID: org, Name: "system"}
}

// HasScope reports whether the actor may use scope: always for an actor
// that is not scoped.
func (a Actor) HasScope(scope string) bool {
	return !a.Scoped || slices.Contains(a.Scopes, scope)
}

// RequireScope is a Refused error naming the missing scope, or nil.
func (a Actor) RequireScope(scope string) error {
	if a.HasScope(scope) {
		return nil
	}
	return &Error{Kind: KindForbidden, Code: "insufficient_scope", Message: "missing scope " + scope,
		Fields: []FieldError{{Field: "scope", Message: scope}}}
}

// Attribution is the (type, id, name) recorded with what the actor did,
// e.g. an order activity's actor. An agent or operation is recorded as
// itself; its OnBehalfOf is in the history of the agent or operation.
func (a Actor) Attribution() (kind string, id *string, name *string) {
	kind = string(a.Kind)
	if a.ID != uuid.Nil {
		s := a.ID.String()
		id = &s
	}
	if a.Name != "" {
		n := a.Name
		name = &n
	}
	return kind, id, name
}

// Kind classifies a domain error. Each kind implies one HTTP status and
// whether an activity may retry.
type Kind int

// The kinds of Error.
const (
	// KindInvalid: the input is wrong (400). Fields name the offenders.
	KindInvalid Kind = iota + 1
	// KindNotFound: no such resource in the organization (404). A resource
	// of another organization is not found.
	KindNotFound
	// KindConflict: the resource's state refuses the change (409).
	KindConflict
	// KindGone: the resource existed and can no longer be used (410).
	KindGone
	// KindForbidden: the actor may not do this (403).
	KindForbidden
	// KindUnauthorized: the credential is not valid (401).
	KindUnauthorized
	// KindUpstream: a carrier or platform refused or failed (502).
	KindUpstream
	// KindUnavailable: a dependency of the service is down (503); worth
	// retrying later.
	KindUnavailable
	// KindRateLimited: too many requests (429).
	KindRateLimited
)

var kindNames = map[Kind]string{
	KindInvalid: "invalid", KindNotFound: "not found", KindConflict: "conflict",
	KindGone: "gone", KindForbidden: "forbidden", KindUnauthorized: "unauthorized",
	KindUpstream: "upstream", KindUnavailable: "unavailable", KindRateLimited: "rate limited",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Retryable reports whether an activity that got this kind may try again:
// only a dependency that was unavailable or a rate limit. An upstream
// refusal is not retried blindly (a purchase's outcome may be unknown).
func (k Kind) Retryable() bool { return k == KindUnavailable || k == KindRateLimited }

// FieldError names one offending field (a dot path: "line_items[0].sku").
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a domain refusal. Message is safe to show to the tenant.
type Error struct {
	Kind Kind
	// Code is the machine code of the answer ("validation_error",
	// "carrier_error", "invalid_state", …); empty takes the kind's default.
	Code    string
	Message string
	Fields  []FieldError
	// RetryAfterSeconds, when positive, tells a rate-limited caller when
	// to come back.
	RetryAfterSeconds int
	// Err is the cause, for logs and errors.Is; never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Kind.String() + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Kind.String() + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, domain.ErrNotFound) match any Error of that kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == "" && t.Kind == e.Kind
}

// Sentinels for errors.Is; match any Error of their kind.
var (
	ErrInvalid     = &Error{Kind: KindInvalid}
	ErrNotFound    = &Error{Kind: KindNotFound}
	ErrConflict    = &Error{Kind: KindConflict}
	ErrGone        = &Error{Kind: KindGone}
	ErrForbidden   = &Error{Kind: KindForbidden}
	ErrUpstream    = &Error{Kind: KindUpstream}
	ErrUnavailable = &Error{Kind: KindUnavailable}
)

// KindOf is the kind of err's domain error, or 0 when it has none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Invalid is a KindInvalid error naming the fields.
func Invalid(fields ...FieldError) *Error {
	msg := "the request is invalid"
	if len(fields) > 0 {
		parts := make([]string, 0, len(fields))
		for _, f := range fields {
			parts = append(parts, f.Field+" "+f.Message)
		}
		msg = strings.Join(parts, "; ")
	}
	return &Error{Kind: KindInvalid, Code: "validation_error", Message: msg, Fields: fields}
}

// InvalidField is Invalid with one field.
func InvalidField(field, message string) *Error {
	return Invalid(FieldError{Field: field, Message: message})
}

// InvalidCode is a KindInvalid error with a specific code (e.g.
// "invalid_javascript", "no_active_carrier_account", "invalid_state").
func InvalidCode(code, message string) *Error {
	return &Error{Kind: KindInvalid, Code: code, Message: message}
}

// NotFound says what was not found ("order", "carrier account").
func NotFound(what string) *Error {
	return &Error{Kind: KindNotFound, Message: what + " not found"}
}

// Conflict is a KindConflict error.
func Conflict(message string, fields ...FieldError) *Error {
	return &Error{Kind: KindConflict, Message: message, Fields: fields}
}

// Gone is a KindGone error.
func Gone(message string) *Error { return &Error{Kind: KindGone, Message: message} }

// Forbidden is a KindForbidden error.
func Forbidden(message string) *Error { return &Error{Kind: KindForbidden, Message: message} }

// Upstream is a KindUpstream error with its code ("carrier_error",
// "platform_error").
func Upstream(code, message string, cause error) *Error {
	return &Error{Kind: KindUpstream, Code: code, Message: message, Err: cause}
}

// Unavailable is a KindUnavailable error.
func Unavailable(message string, cause error) *Error {
	return &Error{Kind: KindUnavailable, Message: message, Err: cause}
}

// FieldErrors collects field errors so that one refusal names every
// problem of an input.
type FieldErrors []FieldError

// Add names one offending field.
func (f *FieldErrors) Add(field, message string) {
	*f = append(*f, FieldError{Field: field, Message: message})
}

// MaxLen adds an error when s is longer than hi characters.
func (f *FieldErrors) MaxLen(field, s string, hi int) {
	if utf8.RuneCountInString(s) > hi {
		f.Add(field, fmt.Sprintf("must be at most %d characters", hi))
	}
}

// Required names a missing or blank text (false), as the API does.
func (f *FieldErrors) Required(field string, s *string) bool {
	if s == nil || strings.TrimSpace(*s) == "" {
		f.Add(field, "is required")
		return false
	}
	return true
}

// OneOf names a value that is not one of allowed (false).
func (f *FieldErrors) OneOf(field, s string, allowed ...string) bool {
	if !slices.Contains(allowed, s) {
		f.Add(field, "must be one of "+strings.Join(allowed, ", "))
		return false
	}
	return true
}

// Length names a required text outside 1-hi characters, as the API's
// validator does ("is required" when empty).
func (f *FieldErrors) Length(field, s string, hi int) {
	switch n := utf8.RuneCountInString(s); {
	case n < 1:
		f.Add(field, "is required")
	case n > hi:
		f.Add(field, fmt.Sprintf("must be 1-%d characters", hi))
	}
}

// Has reports whether field, or a field under it (field.x, field[0]), is
// named already.
func (f FieldErrors) Has(field string) bool {
	for _, e := range f {
		if e.Field == field || strings.HasPrefix(e.Field, field+".") || strings.HasPrefix(e.Field, field+"[") {
			return true
		}
	}
	return false
}

// Err is Invalid naming the fields, or nil when there are none.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return Invalid(f...)
}

// WorkflowsUnavailable is the Unavailable error of a workflow start or
// update Temporal did not take: the workflow engine is down, or did not
// answer (then the run may exist, and whatever was written for it stays).
func WorkflowsUnavailable(cause error) *Error {
	return &Error{Kind: KindUnavailable, Code: "temporal_unavailable",
		Message: "the workflow service (Temporal) is unavailable; try again later", Err: cause}
}

// ErrRunMayExist marks a workflow start (or update) whose answer was lost:
// the run may exist, so whatever was written for it must stay (the
// reconciler settles a row whose run does not exist). Adapters wrap it
// into the Unavailable error they return.
var ErrRunMayExist = errors.New("the workflow run may exist: its start's outcome is unknown")

// The storage layer's refusals. store.ErrNotFound, store.ErrConflict and
// store.ErrInvalidInput are these values, so a layer above the store (the
// API's one error switch) recognises what a service passed through
// without importing the store. A service maps them to an *Error with a
// message naming its resource where it can; these are the fallback.
var (
	// ErrNoRecord: no row matched (including a row of another organization).
	ErrNoRecord = errors.New("not found")
	// ErrRecordConflict: a unique constraint refused the write.
	ErrRecordConflict = errors.New("conflict")
	// ErrRecordInvalid: PostgreSQL refused a value (e.g. a character it
	// cannot store); the request was bad, not the server.
	ErrRecordInvalid = errors.New("invalid input")
)
