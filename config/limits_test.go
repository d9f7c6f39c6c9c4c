package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimitsDefaultsAndOverrides(t *testing.T) {
	c, err := Load(ModeDev, env(nil))
	require.NoError(t, err)
	require.Equal(t, DefaultLimits(), c.Limits)
	require.Empty(t, c.Limits.TrustedProxies)

	c, err = Load(ModeDev, env(map[string]string{
		"FOS_LIMIT_LOGIN_IP": "5/1m", "FOS_LIMIT_API_KEY": "off", "FOS_LIMIT_WRONG_PINS": "3",
		"FOS_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1 ,2001:db8::/32",
	}))
	require.NoError(t, err)
	require.Equal(t, Rate{Events: 5, Per: time.Minute}, c.Limits.LoginPerIP)
	require.True(t, c.Limits.APIKey.Off)
	require.Equal(t, 3, c.Limits.WrongPINs)
	require.Equal(t, DefaultLimits().LoginPerEmail, c.Limits.LoginPerEmail)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("2001:db8::/32")}, c.Limits.TrustedProxies)
}

func TestLimitsInvalid(t *testing.T) {
	_, err := Load(ModeDev, env(map[string]string{
		"FOS_LIMIT_SIGNUP_IP": "lots", "FOS_LIMIT_INVITATIONS_ORG": "0/1h", "FOS_LIMIT_LOGIN_EMAIL": "5/soon",
		"FOS_LIMIT_WRONG_PINS": "-1", "FOS_TRUSTED_PROXIES": "proxy.local", "FOS_SMTP_INSECURE": "maybe",
	}))
	require.Error(t, err)
	for _, want := range []string{"FOS_LIMIT_SIGNUP_IP", "FOS_LIMIT_INVITATIONS_ORG", "FOS_LIMIT_LOGIN_EMAIL", "FOS_LIMIT_WRONG_PINS", "FOS_TRUSTED_PROXIES", "FOS_SMTP_INSECURE"} {
		require.Contains(t, err.Error(), want)
	}
}

func TestWithDefaultsKeepsSetValues(t *testing.T) {
	l := Limits{APIKey: Rate{Events: 1, Per: time.Second}}.WithDefaults()
	require.Equal(t, Rate{Events: 1, Per: time.Second}, l.APIKey)
	require.Equal(t, DefaultLimits().LoginPerIP, l.LoginPerIP)
	require.Equal(t, 5, l.WrongPINs)
}
