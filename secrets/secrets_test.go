package secrets

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func testAD() AD {
	return AD{Table: "carrier_accounts.credentials", Org: uuid.New(), Row: uuid.New()}
}

func TestSealOpenRoundTrip(t *testing.T) {
	b, err := NewBox(NewKey())
	require.NoError(t, err)
	ad := testAD()
	sealed, err := b.SealJSON(map[string]any{"accessToken": "shpat_secret"}, ad)
	require.NoError(t, err)
	require.False(t, bytes.Contains(sealed, []byte("shpat_secret")), "plaintext must not appear in the sealed value")
	require.Equal(t, byte(version1), sealed[0])
	out, err := b.OpenJSON(sealed, ad)
	require.NoError(t, err)
	require.Equal(t, "shpat_secret", out["accessToken"])

	other, _ := NewBox(NewKey())
	_, err = other.OpenJSON(sealed, ad)
	require.ErrorIs(t, err, ErrOpen, "another key must not open the value")
}

// A ciphertext copied into another row (another tenant's, another table)
// does not open there.
func TestSealIsBoundToItsRow(t *testing.T) {
	b, _ := NewBox(NewKey())
	ad := testAD()
	sealed := b.Seal([]byte(`{"apiKey":"k"}`), ad)
	for name, other := range map[string]AD{
		"another organization": {Table: ad.Table, Org: uuid.New(), Row: ad.Row},
		"another row":          {Table: ad.Table, Org: ad.Org, Row: uuid.New()},
		"another table":        {Table: "bridges.credentials", Org: ad.Org, Row: ad.Row},
	} {
		_, err := b.Open(sealed, other)
		require.ErrorIs(t, err, ErrOpen, name)
	}
	_, err := b.Open(sealed, ad)
	require.NoError(t, err)
}

// legacySeal is the format before associated data: nonce || ciphertext.
func legacySeal(t *testing.T, b *Box, plaintext []byte) []byte {
	t.Helper()
	var aead cipher.AEAD = b.aead
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plaintext, nil)
}

func TestLegacyValuesOpenOnlyWithOpenLegacy(t *testing.T) {
	b, _ := NewBox(NewKey())
	old := legacySeal(t, b, []byte(`{"apiKey":"k"}`))
	_, err := b.Open(old, testAD())
	require.ErrorIs(t, err, ErrOpen, "an unbound value is refused by Open")
	raw, err := b.OpenLegacy(old)
	require.NoError(t, err)
	require.Equal(t, `{"apiKey":"k"}`, string(raw))
	_, err = b.OpenLegacy(b.Seal(raw, testAD()))
	require.Error(t, err, "a bound value does not open as legacy")
}

func TestNewBoxRejectsBadKeys(t *testing.T) {
	for _, k := range []string{"", "not-base64!", "c2hvcnQ="} {
		_, err := NewBox(k)
		require.ErrorIs(t, err, ErrKey, k)
	}
}

func TestSealUsesFreshNonce(t *testing.T) {
	b, _ := NewBox(NewKey())
	ad := testAD()
	require.NotEqual(t, b.Seal([]byte("x"), ad), b.Seal([]byte("x"), ad))
}

func TestDigestIsKeyedAndSeparated(t *testing.T) {
	key := NewKey()
	b, _ := NewBox(key)
	same, _ := NewBox(key)
	other, _ := NewBox(NewKey())
	d := b.Digest("carrier account number", "451134221")
	require.Len(t, d, 32)
	require.Equal(t, d, same.Digest("carrier account number", "451134221"), "stable for one key")
	require.NotEqual(t, d, other.Digest("carrier account number", "451134221"), "keyed")
	require.NotEqual(t, d, b.Digest("other purpose", "451134221"), "separated by purpose")
	raw, _ := base64.StdEncoding.DecodeString(key)
	require.False(t, bytes.Equal(b.digestKey, raw), "a derived sub-key, not the encryption key")
}
