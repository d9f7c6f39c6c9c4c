package accounts

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// SignupInput is a new operator, already checked for shape (lengths, an
// e-mail, a password of 8-128 characters). Names and the e-mail are
// trimmed here.
type SignupInput struct {
	Email     string
	Password  string
	FirstName string
	LastName  string
	// OrganizationName, when set, creates an organization the user owns.
	OrganizationName *string
}

// Session is a signed-in operator: the user, an access token and when it
// expires.
type Session struct {
	User      User
	Token     string
	ExpiresAt time.Time
	// Organization is the one created at sign-up (nil: none).
	Organization *Organization
	// Organizations are the user's organizations (login).
	Organizations []UserOrganization
}

// errWrongCredentials answers a login whose e-mail or password is wrong,
// the same for both.
var errWrongCredentials = &domain.Error{Kind: domain.KindUnauthorized, Message: "wrong e-mail or password"}

// Signup creates a user (and, when named, an organization the user owns)
// and signs the user in. An e-mail already taken is a Conflict.
func (s *Service) Signup(ctx context.Context, in SignupInput) (Session, error) {
	hash, err := s.passwords.Hash(in.Password)
	if err != nil {
		return Session{}, err
	}
	var orgName *string
	if in.OrganizationName != nil {
		name := strings.TrimSpace(*in.OrganizationName)
		orgName = &name
	}
	user, org, err := store.Signup(ctx, s.store, store.User{
		ID: uuid.New(), Email: strings.TrimSpace(in.Email), PasswordHash: hash,
		FirstName: strings.TrimSpace(in.FirstName), LastName: strings.TrimSpace(in.LastName),
	}, orgName)
	if errors.Is(err, store.ErrConflict) {
		return Session{}, domain.Conflict("an account with this e-mail already exists")
	}
	if err != nil {
		return Session{}, err
	}
	token, exp, err := s.tokens.Issue(user.ID)
	if err != nil {
		return Session{}, err
	}
	return Session{User: user, Token: token, ExpiresAt: exp, Organization: org}, nil
}

// Login checks an e-mail and password and signs the user in. The answer
// to an unknown e-mail takes as long as to a wrong password.
func (s *Service) Login(ctx context.Context, emailAddr, password string) (Session, error) {
	user, err := store.UserByEmail(ctx, s.store.Pool, strings.TrimSpace(emailAddr))
	if errors.Is(err, store.ErrNotFound) {
		s.passwords.CheckUnknown(password)
		return Session{}, errWrongCredentials
	}
	if err != nil {
		return Session{}, err
	}
	if !s.passwords.Check(user.PasswordHash, password) {
		return Session{}, errWrongCredentials
	}
	orgs, err := store.OrganizationsOfUser(ctx, s.store.Pool, user.ID)
	if err != nil {
		return Session{}, err
	}
	token, exp, err := s.tokens.Issue(user.ID)
	if err != nil {
		return Session{}, err
	}
	return Session{User: user, Token: token, ExpiresAt: exp, Organizations: orgs}, nil
}

// VerifyToken is the user id of an access token; a token that is not
// valid is Unauthorized (its reason as the message).
func (s *Service) VerifyToken(token string) (uuid.UUID, error) {
	id, err := s.tokens.Verify(token)
	if err != nil {
		return uuid.Nil, &domain.Error{Kind: domain.KindUnauthorized, Message: err.Error(), Err: err}
	}
	return id, nil
}

// Me is the signed-in user and the user's organizations.
func (s *Service) Me(ctx context.Context, userID uuid.UUID) (User, []UserOrganization, error) {
	user, err := s.userOf(ctx, userID)
	if err != nil {
		return User{}, nil, err
	}
	orgs, err := store.OrganizationsOfUser(ctx, s.store.Pool, user.ID)
	if err != nil {
		return User{}, nil, err
	}
	return user, orgs, nil
}

// CreateOrganization creates an organization the user owns.
func (s *Service) CreateOrganization(ctx context.Context, userID uuid.UUID, name string) (Organization, error) {
	if _, err := s.userOf(ctx, userID); err != nil {
		return Organization{}, err
	}
	return store.CreateOrganization(ctx, s.store, strings.TrimSpace(name), userID)
}
