// Package accounts holds the accounts domain: operators (users) signing up
// and in, organizations with their members and invitations, API keys and
// the authentication of a request's credential, and the Idempotency-Key
// records of an organization's callers. The API's handlers and middleware
// call the one Service; a command or job that acts on accounts calls it
// the same way.
//
// Who may manage an organization is the service's rule as well as the
// API's: members, invitations and API keys are managed by users with the
// roles the specification names (or the system itself); an API key, the
// agent, an operation or an embed session is refused.
package accounts

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/store"
)

// The domain's model: the store's rows, under the domain's names.
type (
	// User is an operator who signs in with e-mail and password.
	User = store.User
	// Organization is a tenant.
	Organization = store.Organization
	// OrganizationPatch changes an organization; nil fields stay.
	OrganizationPatch = store.OrganizationPatch
	// UserOrganization is one organization of a user, with the user's role.
	UserOrganization = store.UserOrganization
	// Membership is a user's role (and display name) in an organization.
	Membership = store.Membership
	// Member is a user as a member of one organization.
	Member = store.Member
	// Invitation is an invitation to join an organization.
	Invitation = store.Invitation
	// APIKey is a machine credential of one organization (only its hash
	// is kept).
	APIKey = store.APIKey
	// IdempotencyClaim is a request's hold on an Idempotency-Key.
	IdempotencyClaim = store.IdempotencyClaim
	// IdempotentResponse is the stored answer to a key's first request.
	IdempotentResponse = store.IdempotentResponse
)

// Roles a member can hold.
const (
	RoleOwner               = store.RoleOwner
	RoleAdmin               = store.RoleAdmin
	RoleManager             = store.RoleManager
	RoleOrganizationManager = store.RoleOrganizationManager
	RoleMember              = store.RoleMember
)

// InvitableRoles are the roles an invitation can grant; owner and admin
// are never handed out by e-mail.
var InvitableRoles = []string{RoleMember, RoleOrganizationManager, RoleManager}

// InvitationPending is the status of an invitation that can be accepted.
const InvitationPending = store.InvitationPending

// DefaultIdempotencyLease is how long an in-flight Idempotency-Key claim
// holds its key unrenewed.
const DefaultIdempotencyLease = store.DefaultIdempotencyLease

// Deps are the Service's dependencies.
type Deps struct {
	Store     *store.Store
	Logger    *slog.Logger
	Tokens    auth.Tokens
	Passwords auth.Passwords
	// Mailer sends invitations (nil: logged, not sent).
	Mailer email.Sender
	// BaseURL is the public base URL (the invitation's accept link).
	BaseURL string
	// IdempotencyLease is how long an in-flight claim holds its key
	// unrenewed (0: DefaultIdempotencyLease).
	IdempotencyLease time.Duration
	// InvitationLimit, when set, is asked before an organization invites
	// (its key is the organization id); its error is returned as is.
	InvitationLimit func(key string) error
}

// Service is the accounts domain.
type Service struct {
	store     *store.Store
	log       *slog.Logger
	tokens    auth.Tokens
	passwords auth.Passwords
	mailer    email.Sender
	baseURL   string
	lease     time.Duration
	inviteLim func(string) error
	keyUse    keyUseRecorder
}

// New builds the Service.
func New(d Deps) *Service {
	s := &Service{store: d.Store, log: d.Logger, tokens: d.Tokens, passwords: d.Passwords, mailer: d.Mailer,
		baseURL: d.BaseURL, lease: d.IdempotencyLease, inviteLim: d.InvitationLimit}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.mailer == nil {
		s.mailer = email.LogSender{Log: s.log}
	}
	if s.lease <= 0 {
		s.lease = DefaultIdempotencyLease
	}
	return s
}

// Role groups of the specification's "Who" columns.
var (
	adminOrOwner        = auth.AdminOrOwner
	adminOwnerOrManager = auth.AdminOwnerOrManager
)

// errOperatorsOnly refuses an actor that is not a signed-in user.
var errOperatorsOnly = domain.Forbidden("API keys cannot call this endpoint; use a user access token")

// requireOperator admits a user holding one of roles (any role when none
// are named) and the system; API keys, the agent, operations and embed
// sessions do not manage accounts.
func requireOperator(actor domain.Actor, roles ...string) error {
	switch actor.Kind {
	case domain.ActorSystem:
		return nil
	case domain.ActorUser:
		if len(roles) == 0 || slices.Contains(roles, actor.Role) {
			return nil
		}
		return domain.Forbidden("requires the role " + strings.Join(roles, ", ") + "; you are " + actor.Role)
	default:
		return errOperatorsOnly
	}
}

// notFoundAs names what was not found when err is the store's not-found.
func notFoundAs(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound(what)
	}
	return err
}

// userGone is the refusal of a token whose user was deleted.
var userGone = &domain.Error{Kind: domain.KindUnauthorized, Message: "the user of this token no longer exists"}

// userOf reads the user of a verified token.
func (s *Service) userOf(ctx context.Context, id uuid.UUID) (User, error) {
	u, err := store.UserByID(ctx, s.store.Pool, id)
	if errors.Is(err, store.ErrNotFound) {
		return User{}, userGone
	}
	return u, err
}
