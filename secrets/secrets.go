// Package secrets seals credentials at rest with AES-256-GCM and keys the
// service's digests of secrets (HMAC-SHA256 under a sub-key derived from
// the same key with HKDF).
//
// A sealed value is bound to the row that holds it: its associated data
// names the table (and column), the organization and the row id, so a
// ciphertext copied into another row, or another tenant's row, does not
// open. Format (version 1):
//
//	0x01 || nonce (12 bytes) || AES-GCM(plaintext, AD)
//
// Values sealed before version 1 (nonce || ciphertext, no associated data)
// no longer open with Open; the start-up step store.UpgradeSecrets re-seals
// them with OpenLegacy and Seal.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Box seals and opens values with one 32-byte key.
type Box struct {
	aead cipher.AEAD
	// digestKey keys Digest; derived from the key with HKDF.
	digestKey []byte
}

// ErrKey is returned for a key that is not base64 of 32 bytes.
var ErrKey = errors.New("FOS_ENCRYPTION_KEY must be base64 of exactly 32 bytes")

// ErrOpen: the value does not open with this key and associated data (a
// wrong FOS_ENCRYPTION_KEY, a value copied from another row, a value in
// the old format not yet re-sealed, or a damaged value).
var ErrOpen = errors.New("secrets: cannot decrypt (wrong FOS_ENCRYPTION_KEY, or a value that does not belong to this row)")

// version1 is the first byte of a value sealed with associated data.
const version1 = 0x01

// digestInfo is the HKDF info of the digest sub-key.
const digestInfo = "fos/v1 digest key"

// NewBox builds a box from the base64 of a 32-byte key.
func NewBox(keyB64 string) (*Box, error) {
	key, err := base64.StdEncoding.DecodeString(keyB64)
	if err != nil || len(key) != 32 {
		return nil, ErrKey
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	dk, err := hkdf.Key(sha256.New, key, nil, digestInfo, 32)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, digestKey: dk}, nil
}

// NewKey returns the base64 of 32 random bytes.
func NewKey() string {
	var k [32]byte
	_, _ = rand.Read(k[:])
	return base64.StdEncoding.EncodeToString(k[:])
}

// AD is the associated data of a sealed value: where it is stored.
type AD struct {
	// Table names the table and column, e.g. "carrier_accounts.credentials".
	Table string
	// Org and Row are the row's organization and id.
	Org, Row uuid.UUID
}

func (a AD) bytes() []byte {
	return []byte("fos/v1\x00" + a.Table + "\x00" + a.Org.String() + "\x00" + a.Row.String())
}

// Seal encrypts plaintext for the row ad names.
func (b *Box) Seal(plaintext []byte, ad AD) []byte {
	ns := b.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plaintext)+b.aead.Overhead())
	out[0] = version1
	_, _ = rand.Read(out[1:])
	return b.aead.Seal(out, out[1:1+ns], plaintext, ad.bytes())
}

// Open decrypts what Seal produced for the same row. A value sealed for
// another row, or in the old format, is ErrOpen.
func (b *Box) Open(sealed []byte, ad AD) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns || sealed[0] != version1 {
		return nil, ErrOpen
	}
	out, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], ad.bytes())
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}

// OpenLegacy decrypts a value sealed before version 1 (no associated
// data). Only the re-sealing step uses it.
func (b *Box) OpenLegacy(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOpen
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}

// SealJSON marshals v and seals it for ad. A nil or empty map seals to nil.
func (b *Box) SealJSON(v map[string]any, ad AD) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("secrets: marshal: %w", err)
	}
	return b.Seal(raw, ad), nil
}

// OpenJSON opens a value sealed by SealJSON for ad. nil opens to an empty map.
func (b *Box) OpenJSON(sealed []byte, ad AD) (map[string]any, error) {
	out := map[string]any{}
	if len(sealed) == 0 {
		return out, nil
	}
	raw, err := b.Open(sealed, ad)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("secrets: unmarshal: %w", err)
	}
	return out, nil
}

// Digest is HMAC-SHA256 of value under the box's digest key, separated by
// purpose: a stable lookup key for a secret (an account number) that, unlike
// a bare hash of a short number, cannot be brute-forced without the key.
func (b *Box) Digest(purpose, value string) []byte {
	m := hmac.New(sha256.New, b.digestKey)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return m.Sum(nil)
}
