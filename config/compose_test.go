package config

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The compose file ships no usable secret: each is required (${VAR:?…}),
// every placeholder it once carried is refused by serve/worker, the
// Temporal UI is reachable from this host only and read-only by default,
// the codec endpoint requires its bearer token, and .env.example leaves the
// secrets empty.
func TestComposeRequiresSecretsAndGuardsTheUI(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	compose := string(b)
	for _, v := range []string{"FOS_ENCRYPTION_KEY", "FOS_JWT_SECRET", "POSTGRES_PASSWORD"} {
		require.NotRegexp(t, regexp.MustCompile(`\$\{`+v+`:?-`), compose, "%s has a fallback value", v)
		require.Contains(t, compose, "${"+v+":?", "%s is not required", v)
	}
	require.Contains(t, compose, `"127.0.0.1:8233:8080"`, "the Temporal UI is published on loopback only")
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s*- "8233:`), compose)
	require.Contains(t, compose, "TEMPORAL_DISABLE_WRITE_ACTIONS: ${TEMPORAL_DISABLE_WRITE_ACTIONS:-true}")
	// The codec endpoint (decoded payloads) is published on loopback only,
	// the UI decodes through it, and a token can lock it.
	require.Contains(t, compose, "TEMPORAL_CODEC_ENDPOINT: http://127.0.0.1:8234/codec")
	require.Contains(t, compose, "FOS_CODEC_TOKEN: ${FOS_CODEC_TOKEN:-}")
	require.Contains(t, compose, `"127.0.0.1:8234:8234"`)
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s*- "8234:`), compose)

	for _, old := range []string{"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "change-me-insecure-placeholder-jwt-secret"} {
		require.True(t, placeholder(old), "%s must stay refused", old)
	}

	env, err := os.ReadFile("../.env.example")
	require.NoError(t, err)
	for _, line := range strings.Split(string(env), "\n") {
		for _, v := range []string{"FOS_ENCRYPTION_KEY=", "FOS_JWT_SECRET=", "POSTGRES_PASSWORD="} {
			if strings.HasPrefix(line, v) {
				require.Equal(t, v, line, ".env.example must not carry a value for %s", v)
			}
		}
	}
}
