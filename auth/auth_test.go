package auth

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

func TestTokensRoundTripAndExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tok := Tokens{Secret: []byte("s3cret-s3cret-s3cret-s3cret-s3cret"), TTL: time.Hour, Now: func() time.Time { return now }}
	user := uuid.New()
	s, exp, err := tok.Issue(user)
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Hour), exp)

	got, err := tok.Verify(s)
	require.NoError(t, err)
	require.Equal(t, user, got)

	later := tok
	later.Now = func() time.Time { return now.Add(time.Hour + time.Second) }
	_, err = later.Verify(s)
	require.ErrorIs(t, err, ErrInvalidToken, "expired")

	other := tok
	other.Secret = []byte("another-secret-another-secret-xx")
	_, err = other.Verify(s)
	require.ErrorIs(t, err, ErrInvalidToken, "signed with another secret")

	parts := strings.Split(s, ".")
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + uuid.NewString() + `","iss":"fos","exp":9999999999}`))
	_, err = tok.Verify(strings.Join(parts, "."))
	require.ErrorIs(t, err, ErrInvalidToken, "tampered claims")
}

func TestTokensRefuseOtherAlgorithms(t *testing.T) {
	tok := Tokens{Secret: []byte("s3cret-s3cret-s3cret-s3cret-s3cret"), TTL: time.Hour}
	claims := jwt.RegisteredClaims{Issuer: "fos", Subject: uuid.NewString(), ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	_, err = tok.Verify(none)
	require.ErrorIs(t, err, ErrInvalidToken)
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, claims).SignedString(tok.Secret)
	require.NoError(t, err)
	_, err = tok.Verify(hs512)
	require.ErrorIs(t, err, ErrInvalidToken)
	noExp := jwt.RegisteredClaims{Issuer: "fos", Subject: uuid.NewString()}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, noExp).SignedString(tok.Secret)
	require.NoError(t, err)
	_, err = tok.Verify(s)
	require.ErrorIs(t, err, ErrInvalidToken, "a token without expiry")
}

func TestAPIKeys(t *testing.T) {
	key, prefix, hash := NewAPIKey()
	require.True(t, strings.HasPrefix(key, "fos_"))
	require.True(t, IsAPIKey(key))
	require.Greater(t, len(key), 40)
	require.Equal(t, key[:8]+"…", prefix)
	require.Equal(t, hash, HashAPIKey(key))
	key2, _, hash2 := NewAPIKey()
	require.NotEqual(t, key, key2)
	require.NotEqual(t, hash, hash2)
	require.False(t, IsAPIKey("eyJhbGciOi"))
}

func TestPasswords(t *testing.T) {
	p := Passwords{Cost: bcrypt.MinCost}
	h, err := p.Hash("correct horse battery staple")
	require.NoError(t, err)
	require.True(t, p.Check(h, "correct horse battery staple"))
	require.False(t, p.Check(h, "correct horse battery stapler"))
	long := strings.Repeat("x", 128)
	h, err = p.Hash(long)
	require.NoError(t, err)
	require.True(t, p.Check(h, long))
	require.False(t, p.Check(h, long[:127]+"y"), "characters past bcrypt's 72 bytes count")
	require.False(t, p.CheckUnknown("anything"))
}

func TestPrincipalChecks(t *testing.T) {
	key := &Principal{Kind: KindAPIKey, Scopes: []string{"orders:read"}, APIKeyID: uuid.New()}
	require.True(t, key.HasScope("orders:read"))
	require.False(t, key.HasScope("orders:write"))
	require.False(t, key.HasRole("owner"), "API keys hold no role")
	require.Equal(t, key.APIKeyID, key.ActorID())

	user := &Principal{Kind: KindUser, Role: "manager", UserID: uuid.New()}
	require.True(t, user.HasScope("anything:write"), "users are not scope-checked")
	require.True(t, user.HasRole(AdminOwnerOrManager...))
	require.False(t, user.HasRole(AdminOrOwner...))
	require.Equal(t, user.UserID, user.ActorID())

	for _, s := range Scopes {
		require.True(t, ValidScope(s))
	}
	require.False(t, ValidScope("orders:everything"))
}
