// Package payloadcodec encrypts every Temporal payload (workflow and
// activity inputs and results, signals, updates, queries, memos, failures'
// details) with AES-256-GCM, so a history read in the Temporal UI or
// exported as JSON holds no PIN, invoice fact, name, address or credential
// in clear. It plugs into the SDK as a converter.PayloadCodec
// (DataConverter), and serves Temporal's remote codec protocol
// (NewHTTPHandler) so the Temporal UI of authorized operators shows runs
// decoded.
//
// Keys rotate: an encrypted payload names its key by id in its metadata;
// a codec encrypts with its current key and decrypts with the current key
// or any old key it was given. Payloads that are not encrypted (histories
// written before the codec was turned on) pass through unchanged.
package payloadcodec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload.
const (
	// Encoding is the payload's "encoding" metadata value.
	Encoding = "binary/encrypted"
	// MetadataKeyID names the key a payload is encrypted with.
	MetadataKeyID = "encryption-key-id"
)

// KeySize is the size of an AES-256 key.
const KeySize = 32

// Key is one AES-256 key and its id (derived from the key, so the same key
// always has the same id and no id needs configuring).
type Key struct {
	ID   string
	aead cipher.AEAD
}

// NewKey wraps 32 raw key bytes.
func NewKey(raw []byte) (Key, error) {
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("payload key must be %d bytes, got %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, err
	}
	sum := sha256.Sum256(append([]byte("fos payload key id\x00"), raw...))
	return Key{ID: hex.EncodeToString(sum[:6]), aead: aead}, nil
}

// ParseKey decodes a base64 key of 32 bytes (standard or URL alphabet,
// padded or not).
func ParseKey(b64 string) (Key, error) {
	b64 = strings.TrimSpace(b64)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(b64); err == nil {
			return NewKey(raw)
		}
	}
	return Key{}, errors.New("payload key must be base64 of 32 bytes")
}

// DeriveKey derives the payload key from another secret (the service's
// FOS_ENCRYPTION_KEY) with HKDF-SHA256, so a deployment that sets no
// payload key of its own still encrypts its histories with a key no one
// else has, distinct from the key of the credentials at rest.
func DeriveKey(secret []byte) (Key, error) {
	raw, err := hkdf.Key(sha256.New, secret, nil, "fos temporal payload codec v1", KeySize)
	if err != nil {
		return Key{}, err
	}
	return NewKey(raw)
}

// Codec is the AES-256-GCM payload codec.
type Codec struct {
	current Key
	keys    map[string]Key
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec that encrypts with current and decrypts payloads
// encrypted with current or any of old.
func New(current Key, old ...Key) *Codec {
	c := &Codec{current: current, keys: map[string]Key{current.ID: current}}
	for _, k := range old {
		if _, ok := c.keys[k.ID]; !ok {
			c.keys[k.ID] = k
		}
	}
	return c
}

// KeyID is the id of the key new payloads are encrypted with.
func (c *Codec) KeyID() string { return c.current.ID }

// DataConverter is the SDK's default data converter with c applied to
// every payload: the one data converter every client of the service uses.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter encodes failures' messages and stack traces into an
// encrypted payload too (the history shows "Encoded failure"; clients and
// the UI through the codec endpoint read the original), since an error's
// text may quote what it failed on (a PIN, an address).
func (c *Codec) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          c.DataConverter(),
		EncodeCommonAttributes: true,
	})
}

// Encode implements converter.PayloadCodec: each payload, metadata
// included, becomes one encrypted payload.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("payload codec: marshal payload: %w", err)
		}
		nonce := make([]byte, c.current.aead.NonceSize(), c.current.aead.NonceSize()+len(plain)+c.current.aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("payload codec: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetadataKeyID:              []byte(c.current.ID),
			},
			// The key id is authenticated too: a payload moved under
			// another id does not open.
			Data: c.current.aead.Seal(nonce, nonce, plain, []byte(c.current.ID)),
		}
	}
	return out, nil
}

// Decode implements converter.PayloadCodec. Payloads that are not
// encrypted pass through unchanged; an encrypted payload whose key the
// codec does not have, or that does not authenticate, is an error.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		k, ok := c.keys[id]
		if !ok {
			return nil, fmt.Errorf("payload codec: payload encrypted with unknown key %q (add it to FOS_PAYLOAD_OLD_KEYS)", id)
		}
		data := p.GetData()
		ns := k.aead.NonceSize()
		if len(data) < ns+k.aead.Overhead() {
			return nil, errors.New("payload codec: encrypted payload too short")
		}
		plain, err := k.aead.Open(nil, data[:ns], data[ns:], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("payload codec: payload with key %q does not authenticate", id)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("payload codec: unmarshal payload: %w", err)
		}
		out[i] = &dec
	}
	return out, nil
}
