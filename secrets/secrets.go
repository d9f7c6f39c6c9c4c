// Package secrets seals credentials at rest with AES-256-GCM.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Box seals and opens values with one 32-byte key.
type Box struct {
	aead cipher.AEAD
}

// ErrKey is returned for a key that is not base64 of 32 bytes.
var ErrKey = errors.New("FOS_ENCRYPTION_KEY must be base64 of exactly 32 bytes")

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
	return &Box{aead: aead}, nil
}

// NewKey returns the base64 of 32 random bytes.
func NewKey() string {
	var k [32]byte
	_, _ = rand.Read(k[:])
	return base64.StdEncoding.EncodeToString(k[:])
}

// Seal encrypts plaintext; the nonce is prepended to the result.
func (b *Box) Seal(plaintext []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	_, _ = rand.Read(nonce)
	return b.aead.Seal(nonce, nonce, plaintext, nil)
}

// Open decrypts what Seal produced.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("secrets: sealed value too short")
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, errors.New("secrets: cannot decrypt (wrong FOS_ENCRYPTION_KEY?)")
	}
	return out, nil
}

// SealJSON marshals v and seals it. A nil or empty map seals to nil.
func (b *Box) SealJSON(v map[string]any) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("secrets: marshal: %w", err)
	}
	return b.Seal(raw), nil
}

// OpenJSON opens a value sealed by SealJSON. nil opens to an empty map.
func (b *Box) OpenJSON(sealed []byte) (map[string]any, error) {
	out := map[string]any{}
	if len(sealed) == 0 {
		return out, nil
	}
	raw, err := b.Open(sealed)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("secrets: unmarshal: %w", err)
	}
	return out, nil
}
