package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServeRequiresItsSettingsOneLineEach(t *testing.T) {
	_, err := Load(ModeServe, env(nil))
	var p Problems
	require.True(t, errors.As(err, &p))
	require.Len(t, p, 4)
	require.Contains(t, p[0], "DATABASE_URL is required")
	require.Contains(t, err.Error(), "TEMPORAL_ADDRESS is required")
	require.Contains(t, err.Error(), "FOS_ENCRYPTION_KEY is required")
	require.Contains(t, err.Error(), "FOS_JWT_SECRET is required")
}

func TestDevDefaults(t *testing.T) {
	c, err := Load(ModeDev, env(nil))
	require.NoError(t, err)
	require.True(t, c.Sandbox)
	require.Equal(t, "127.0.0.1:8080", c.HTTPAddr)
	require.Equal(t, "http://127.0.0.1:8080", c.BaseURL)
	require.Equal(t, "default", c.TemporalNamespace)
	require.Equal(t, "fos", c.TaskQueue)
	require.Equal(t, "sandbox", c.LLMProvider)
}

func TestInvalidValues(t *testing.T) {
	_, err := Load(ModeDev, env(map[string]string{
		"FOS_ENCRYPTION_KEY": "short", "FOS_SANDBOX": "maybe", "TEMPORAL_ADDRESS": "nohostport",
		"DATABASE_URL": "mysql://x", "FOS_TOKEN_TTL": "-1h",
	}))
	require.Error(t, err)
	for _, want := range []string{"FOS_ENCRYPTION_KEY", "FOS_SANDBOX", "TEMPORAL_ADDRESS", "DATABASE_URL", "FOS_TOKEN_TTL"} {
		require.Contains(t, err.Error(), want)
	}
}
