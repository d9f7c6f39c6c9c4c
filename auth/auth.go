// Package auth holds credentials: password hashing, user access tokens, API
// keys, scopes, roles and the principal a request acts as.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"
)

// Passwords hashes and checks passwords with bcrypt.
type Passwords struct {
	// Cost is the bcrypt cost; zero means bcrypt.DefaultCost. Tests lower it.
	Cost int
}

// Hash returns the bcrypt hash of password. bcrypt reads at most 72 bytes,
// so the password is first reduced to the base64 of its SHA-256 (44
// bytes): every character of a 128-character password counts.
func (p Passwords) Hash(password string) (string, error) {
	cost := p.Cost
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword(prehash(password), cost)
	return string(h), err
}

// Check reports whether password matches hash.
func (p Passwords) Check(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), prehash(password)) == nil
}

func prehash(password string) []byte {
	sum := sha256.Sum256([]byte(password))
	return []byte(base64.StdEncoding.EncodeToString(sum[:]))
}

// dummyHash lets a login for an unknown e-mail take as long as a wrong
// password, so timing does not reveal which e-mails exist.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("timing-equaliser"), bcrypt.DefaultCost)

// CheckUnknown spends the time of one Check and returns false.
func (p Passwords) CheckUnknown(password string) bool {
	_ = bcrypt.CompareHashAndPassword(dummyHash, prehash(password))
	return false
}

// Tokens issues and verifies user access tokens (HS256 JWTs).
type Tokens struct {
	Secret []byte
	TTL    time.Duration
	Now    func() time.Time // for tests; nil means time.Now
}

const issuer = "fos"

// ErrInvalidToken is returned for any token that does not verify.
var ErrInvalidToken = errors.New("invalid or expired access token")

func (t Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Issue returns a signed token for the user and its expiry.
func (t Tokens) Issue(userID uuid.UUID) (string, time.Time, error) {
	ttl := t.TTL
	if ttl == 0 {
		ttl = 12 * time.Hour
	}
	now := t.now()
	exp := now.Add(ttl).UTC().Truncate(time.Second)
	claims := jwt.RegisteredClaims{
		Issuer:    issuer,
		Subject:   userID.String(),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
		ID:        uuid.NewString(),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.Secret)
	return s, exp, err
}

// Verify checks a token and returns its user id.
func (t Tokens) Verify(token string) (uuid.UUID, error) {
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return t.Secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now))
	if err != nil {
		return uuid.Nil, ErrInvalidToken
	}
	id, err := uuid.Parse(claims.Subject)
	if err != nil {
		return uuid.Nil, ErrInvalidToken
	}
	return id, nil
}

// APIKeyPrefix starts every API key.
const APIKeyPrefix = "fos_"

// NewAPIKey returns a fresh key, its display prefix and its hash.
func NewAPIKey() (key, displayPrefix string, hash []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never happens on Linux
	}
	key = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return key, key[:8] + "…", HashAPIKey(key)
}

// HashAPIKey is the stored form of a key. Keys carry 256 random bits, so a
// fast hash is enough: there is nothing to brute-force.
func HashAPIKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// IsAPIKey tells an API key from a user access token.
func IsAPIKey(bearer string) bool { return strings.HasPrefix(bearer, APIKeyPrefix) }

// Scopes is the catalog of API key scopes.
var Scopes = []string{
	"orders:read", "orders:write",
	"shipments:read", "shipments:write",
	"bridges:read", "bridges:write",
	"operations:read", "operations:write", "operations:execute",
	"dispatchers:read", "dispatchers:write",
	"transformations:read", "transformations:write",
	"carrier-accounts:read", "carrier-accounts:write",
	"rates:read",
	"pickups:read", "pickups:write",
	"webhooks:manage",
	"agent:read", "agent:write", "agent:admin",
	"embed:manage",
	"insights:read", "insights:write",
	"locations:read", "locations:write",
	"rate-compare:read", "rate-compare:write",
}

// ValidScope reports whether s is in the catalog.
func ValidScope(s string) bool { return slices.Contains(Scopes, s) }

// Principal is who a request acts as, inside one organization.
type Principal struct {
	// Kind is "user" or "api_key".
	Kind           string
	UserID         uuid.UUID // users
	APIKeyID       uuid.UUID // API keys
	OrganizationID uuid.UUID
	Role           string   // users: their role in the organization
	Scopes         []string // API keys
	Name           string   // display name, for attribution
}

// Principal kinds.
const (
	KindUser   = "user"
	KindAPIKey = "api_key"
)

// IsAPIKey reports whether the principal is an API key.
func (p *Principal) IsAPIKey() bool { return p.Kind == KindAPIKey }

// HasScope reports whether an API key carries scope. Users are not
// scope-checked and always pass.
func (p *Principal) HasScope(scope string) bool {
	return p.Kind != KindAPIKey || slices.Contains(p.Scopes, scope)
}

// HasRole reports whether a user holds one of roles. API keys hold none.
func (p *Principal) HasRole(roles ...string) bool {
	return p.Kind == KindUser && slices.Contains(roles, p.Role)
}

// ActorID is the user or key id, for attribution.
func (p *Principal) ActorID() uuid.UUID {
	if p.Kind == KindAPIKey {
		return p.APIKeyID
	}
	return p.UserID
}

// Role groups used by the specification's "Who" columns.
var (
	AdminOrOwner        = []string{"owner", "admin"}
	AdminOwnerOrManager = []string{"owner", "admin", "manager", "organization_manager"}
)
