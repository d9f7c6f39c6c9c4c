package secrets

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSealOpenRoundTrip(t *testing.T) {
	b, err := NewBox(NewKey())
	require.NoError(t, err)
	sealed, err := b.SealJSON(map[string]any{"accessToken": "shpat_secret"})
	require.NoError(t, err)
	require.False(t, bytes.Contains(sealed, []byte("shpat_secret")), "plaintext must not appear in the sealed value")
	out, err := b.OpenJSON(sealed)
	require.NoError(t, err)
	require.Equal(t, "shpat_secret", out["accessToken"])

	other, _ := NewBox(NewKey())
	_, err = other.OpenJSON(sealed)
	require.Error(t, err, "another key must not open the value")
}

func TestNewBoxRejectsBadKeys(t *testing.T) {
	for _, k := range []string{"", "not-base64!", "c2hvcnQ="} {
		_, err := NewBox(k)
		require.ErrorIs(t, err, ErrKey, k)
	}
}

func TestSealUsesFreshNonce(t *testing.T) {
	b, _ := NewBox(NewKey())
	require.NotEqual(t, b.Seal([]byte("x")), b.Seal([]byte("x")))
}
