package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func serveEnv(key, jwt string) func(string) string {
	return env(map[string]string{
		"DATABASE_URL": "postgres://fos@db:5432/fos", "TEMPORAL_ADDRESS": "temporal:7233",
		"FOS_ENCRYPTION_KEY": key, "FOS_JWT_SECRET": jwt,
	})
}

func TestServeAndWorkerRefusePlaceholderAndWeakSecrets(t *testing.T) {
	goodKey, goodJWT := b64(random(32)), b64(random(48))
	counting := make([]byte, 32)
	for i := range counting {
		counting[i] = byte(i)
	}
	twoBytes := make([]byte, 32)
	for i := range twoBytes {
		twoBytes[i] = byte(i % 2)
	}
	cases := []struct {
		name, key, jwt, want string
	}{
		{"compose's all-zero key", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", goodJWT, "FOS_ENCRYPTION_KEY: is a published placeholder"},
		{"all-equal key bytes", b64([]byte(strings.Repeat("\xff", 32))), goodJWT, "FOS_ENCRYPTION_KEY: is one byte repeated"},
		{"two-byte alphabet key", b64(twoBytes), goodJWT, "FOS_ENCRYPTION_KEY: has only 2 distinct bytes"},
		{"text as key", b64([]byte("my-very-own-secret-password-1234")), goodJWT, "FOS_ENCRYPTION_KEY: decodes to printable text"},
		{"counting key", b64(counting), goodJWT, "FOS_ENCRYPTION_KEY: is a counting sequence"},
		{"compose's jwt secret", goodKey, "change-me-insecure-placeholder-jwt-secret", "FOS_JWT_SECRET: is a published placeholder"},
		{"placeholder word", goodKey, "please-change-me-before-going-live-ok", "FOS_JWT_SECRET: is a published placeholder"},
		{"repeated character", goodKey, strings.Repeat("x", 40), "FOS_JWT_SECRET: is one character repeated"},
		{"short alphabet", goodKey, strings.Repeat("abab", 10), "FOS_JWT_SECRET: uses only 2 different characters"},
		{"counting secret", goodKey, "ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdef", "FOS_JWT_SECRET: is a counting sequence"},
		{"mostly one character", goodKey, strings.Repeat("a", 30) + "bcdefg", "FOS_JWT_SECRET"},
		{"same as the key", goodKey, goodKey, "FOS_JWT_SECRET: must differ from FOS_ENCRYPTION_KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []Mode{ModeServe, ModeWorker} {
				_, err := Load(mode, serveEnv(c.key, c.jwt))
				require.Error(t, err, mode)
				require.Contains(t, err.Error(), c.want, mode)
				require.Len(t, err.(Problems), 1, "one line: %v", err)
			}
			// fos dev does not judge what it is given (it generates its own).
			_, err := Load(ModeDev, serveEnv(c.key, c.jwt))
			require.NoError(t, err)
		})
	}
}

func TestRandomSecretsAreAccepted(t *testing.T) {
	for range 2000 {
		key := b64(random(32))
		for _, jwt := range []string{hex.EncodeToString(random(16)), b64(random(24)), b64(random(48))} {
			_, err := Load(ModeServe, serveEnv(key, jwt))
			require.NoError(t, err, "key %s jwt %s", key, jwt)
		}
	}
}

func TestCarrierURLs(t *testing.T) {
	base := map[string]string{
		"DATABASE_URL": "postgres://fos@db:5432/fos", "TEMPORAL_ADDRESS": "temporal:7233",
		"FOS_ENCRYPTION_KEY": b64(random(32)), "FOS_JWT_SECRET": b64(random(48)),
	}
	with := func(kv ...string) func(string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return env(m)
	}

	c, err := Load(ModeServe, with())
	require.NoError(t, err)
	require.Empty(t, c.CarrierURLs, "unset variables keep their defaults")
	require.False(t, c.AllowPrivateURLs)

	c, err = Load(ModeWorker, with("FOS_CARRIER_A_URL", "https://fedex-proxy.internal.example:8443/", "FOS_CARRIER_B_TEST_URL", "http://10.0.0.5", "FOS_CARRIER_C_URL", "https://mock.example.com/prefix"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"FOS_CARRIER_A_URL":      "https://fedex-proxy.internal.example:8443",
		"FOS_CARRIER_B_TEST_URL": "http://10.0.0.5",
		"FOS_CARRIER_C_URL":      "https://mock.example.com/prefix",
	}, c.CarrierURLs)

	for _, bad := range []string{"apis.fedex.com", "ftp://apis.fedex.com", "https://", "https://u:p@apis.fedex.com", "https://apis.fedex.com/?x=1", "/relative"} {
		for _, k := range CarrierURLVars {
			_, err := Load(ModeServe, with(k, bad))
			require.Error(t, err, "%s=%s", k, bad)
			require.Len(t, err.(Problems), 1)
			require.True(t, strings.HasPrefix(err.(Problems)[0], k+"="), "%v", err)
		}
	}

	// With FOS_SANDBOX=0 a carrier URL may not point at the sandbox.
	_, err = Load(ModeServe, with("FOS_SANDBOX_URL", "http://sandbox:8089", "FOS_CARRIER_B_URL", "http://sandbox:8089/carriers/carrier_b"))
	require.ErrorContains(t, err, "FOS_CARRIER_B_URL=\"http://sandbox:8089/carriers/carrier_b\" points at the sandbox")
	c, err = Load(ModeServe, with("FOS_SANDBOX", "1", "FOS_SANDBOX_URL", "http://sandbox:8089", "FOS_CARRIER_B_URL", "http://sandbox:8089/carriers/carrier_b"))
	require.NoError(t, err)
	require.True(t, c.Sandbox)
}

func TestPlatformURLs(t *testing.T) {
	base := map[string]string{
		"DATABASE_URL": "postgres://fos@db:5432/fos", "TEMPORAL_ADDRESS": "temporal:7233",
		"FOS_ENCRYPTION_KEY": b64(random(32)), "FOS_JWT_SECRET": b64(random(48)),
		"FOS_SANDBOX_URL": "http://sandbox:8089",
	}
	with := func(kv ...string) func(string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return env(m)
	}
	c, err := Load(ModeServe, with("FOS_STOREFRONT_A_URL", "https://shops.internal/", "FOS_MARKETPLACE_A_AUTH_URL", "https://lwa.internal"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"FOS_STOREFRONT_A_URL": "https://shops.internal", "FOS_MARKETPLACE_A_AUTH_URL": "https://lwa.internal"}, c.PlatformURLs)
	require.Empty(t, c.CarrierURLs)
	for _, k := range PlatformURLVars {
		_, err := Load(ModeServe, with(k, "shops.internal"))
		require.ErrorContains(t, err, k+"=")
		_, err = Load(ModeServe, with(k, "http://sandbox:8089/platforms/x"))
		require.ErrorContains(t, err, "points at the sandbox", "with FOS_SANDBOX=0 no platform URL may point at the sandbox")
	}
}

func TestAllowPrivateURLs(t *testing.T) {
	c, err := Load(ModeDev, env(nil))
	require.NoError(t, err)
	require.True(t, c.AllowPrivateURLs, "default under fos dev")
	c, err = Load(ModeDev, env(map[string]string{"FOS_ALLOW_PRIVATE_URLS": "0"}))
	require.NoError(t, err)
	require.False(t, c.AllowPrivateURLs)
	_, err = Load(ModeDev, env(map[string]string{"FOS_ALLOW_PRIVATE_URLS": "yes"}))
	require.ErrorContains(t, err, "FOS_ALLOW_PRIVATE_URLS=\"yes\": must be 1 or 0")
}
