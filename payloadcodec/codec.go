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
	"regexp"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
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
// encrypted payload too, since an error's text may quote what it failed on
// (a PIN, an address); clients and the UI through the codec endpoint read
// the original. The message left in clear is the original with what may
// be secret or personal masked (SafeMessage), not "Encoded failure": an
// operator without the codec still reads why a run failed.
func (c *Codec) FailureConverter() converter.FailureConverter {
	dc := c.DataConverter()
	return safeFailureConverter{
		inner: temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
			DataConverter:          dc,
			EncodeCommonAttributes: true,
		}),
		dc: dc,
	}
}

// safeFailureConverter is the default failure converter with encoded
// attributes whose clear message is SafeMessage of the original.
type safeFailureConverter struct {
	inner converter.FailureConverter
	dc    converter.DataConverter
}

func (f safeFailureConverter) ErrorToFailure(err error) *failurepb.Failure {
	out := f.inner.ErrorToFailure(err)
	for n := out; n != nil; n = n.GetCause() {
		if n.GetEncodedAttributes() == nil {
			continue
		}
		var ea struct {
			Message string `json:"message"`
		}
		if f.dc.FromPayload(n.GetEncodedAttributes(), &ea) == nil && ea.Message != "" {
			n.Message = SafeMessage(ea.Message)
		}
	}
	return out
}

func (f safeFailureConverter) FailureToError(failure *failurepb.Failure) error {
	return f.inner.FailureToError(failure)
}

var (
	uuidPattern    = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	emailPattern   = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	amountPattern  = regexp.MustCompile(`\b\d+[.,]\d+\b`)
	numberPattern  = regexp.MustCompile(`\+?\d[\d \-]{3,}\d`)
	secretPattern  = regexp.MustCompile(`(?i)\b(pin|password|passwd|secret|token|api[_ -]?key|authorization|bearer)(\s*[:=]?\s*)("[^"]*"|'[^']*'|\S+)`)
	addressPattern = regexp.MustCompile(`(?i)\b(address|name|street|phone|email)(\s*[:=]\s*)("[^"]*"|'[^']*'|[^;)\n]+)`)
	streetPattern  = regexp.MustCompile(`(?i)\b\d+\s+(?:[a-z][\w.'-]*\s+){0,4}(?:st|street|ave|avenue|rd|road|blvd|boulevard|pkwy|parkway|dr|drive|ln|lane|way|ct|court|pl|place|hwy|highway|strasse|straße)\b\.?`)
)

// SafeMessage is an error message fit for a failure's clear text (the
// Temporal UI without the codec): e-mail addresses, amounts, numbers of
// five digits or more (PINs, invoice and phone numbers), street addresses
// and the values after secret or personal words (pin, password, token,
// address, name…) are masked. Ids and the other words of the message stay.
// It is a best effort (a bare person's or city's name is not recognised):
// the full message is only in the encrypted attributes.
func SafeMessage(msg string) string {
	// Ids (UUIDs) stay as they are: an operator looks them up.
	ids := uuidPattern.FindAllString(msg, -1)
	msg = uuidPattern.ReplaceAllString(msg, "\x00")
	msg = redact(msg)
	for _, id := range ids {
		msg = strings.Replace(msg, "\x00", id, 1)
	}
	return msg
}

func redact(msg string) string {
	msg = secretPattern.ReplaceAllString(msg, "${1}${2}[redacted]")
	msg = addressPattern.ReplaceAllString(msg, "${1}${2}[redacted]")
	msg = streetPattern.ReplaceAllString(msg, "[address]")
	msg = emailPattern.ReplaceAllString(msg, "[email]")
	msg = amountPattern.ReplaceAllString(msg, "[amount]")
	msg = numberPattern.ReplaceAllStringFunc(msg, func(m string) string {
		digits := 0
		for _, r := range m {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if digits < 5 {
			return m
		}
		return "[number]"
	})
	return msg
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
