package payloadcodec

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"
)

func newKey(t *testing.T) Key {
	t.Helper()
	raw := make([]byte, KeySize)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	k, err := NewKey(raw)
	require.NoError(t, err)
	return k
}

type secretInput struct {
	PIN     string
	Address string
}

func TestRoundTripHidesTheValues(t *testing.T) {
	c := New(newKey(t))
	dc := c.DataConverter()
	in := secretInput{PIN: "482913", Address: "12 Baker Street"}
	p, err := dc.ToPayload(in)
	require.NoError(t, err)
	require.Equal(t, Encoding, string(p.GetMetadata()[converter.MetadataEncoding]))
	require.Equal(t, c.KeyID(), string(p.GetMetadata()[MetadataKeyID]))
	raw, err := protojson.Marshal(p)
	require.NoError(t, err)
	for _, clear := range []string{"482913", "Baker", "json/plain"} {
		require.NotContains(t, string(raw), clear)
		require.NotContains(t, string(raw), base64.StdEncoding.EncodeToString([]byte(clear)))
	}
	var out secretInput
	require.NoError(t, dc.FromPayload(p, &out))
	require.Equal(t, in, out)

	// Two encodings of one value differ (fresh nonce).
	p2, err := dc.ToPayload(in)
	require.NoError(t, err)
	require.NotEqual(t, p.GetData(), p2.GetData())
}

func TestRotation(t *testing.T) {
	oldKey, newK := newKey(t), newKey(t)
	require.NotEqual(t, oldKey.ID, newK.ID)
	before, err := New(oldKey).DataConverter().ToPayload("invoice 4711")
	require.NoError(t, err)

	// After rotation: new payloads use the new key, old ones still open.
	rotated := New(newK, oldKey)
	var s string
	require.NoError(t, rotated.DataConverter().FromPayload(before, &s))
	require.Equal(t, "invoice 4711", s)
	after, err := rotated.DataConverter().ToPayload("x")
	require.NoError(t, err)
	require.Equal(t, newK.ID, string(after.GetMetadata()[MetadataKeyID]))

	// Without the old key: a clear error naming the variable.
	err = New(newK).DataConverter().FromPayload(before, &s)
	require.ErrorContains(t, err, "FOS_PAYLOAD_OLD_KEYS")
}

func TestDecodeRejectsTamperingAndPassesClearPayloads(t *testing.T) {
	c := New(newKey(t))
	enc, err := c.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"x"`)}})
	require.NoError(t, err)
	enc[0].Data[len(enc[0].Data)-1] ^= 1
	_, err = c.Decode(enc)
	require.ErrorContains(t, err, "does not authenticate")

	// A history written before encryption was on still decodes.
	clear, err := converter.GetDefaultDataConverter().ToPayload("old")
	require.NoError(t, err)
	dec, err := c.Decode([]*commonpb.Payload{clear})
	require.NoError(t, err)
	require.Equal(t, clear, dec[0])
}

func TestKeys(t *testing.T) {
	_, err := ParseKey("c2hvcnQ=")
	require.Error(t, err)
	raw := bytes.Repeat([]byte{7}, KeySize)
	a, err := ParseKey(base64.StdEncoding.EncodeToString(raw))
	require.NoError(t, err)
	b, err := NewKey(raw)
	require.NoError(t, err)
	require.Equal(t, a.ID, b.ID, "the id is a function of the key")
	d1, err := DeriveKey(raw)
	require.NoError(t, err)
	d2, err := DeriveKey(raw)
	require.NoError(t, err)
	require.Equal(t, d1.ID, d2.ID)
	require.NotEqual(t, a.ID, d1.ID, "the derived key is not the secret itself")
}

func TestHTTPHandler(t *testing.T) {
	c := New(newKey(t))
	h := NewHTTPHandler(c, HandlerOptions{AllowedOrigins: []string{"http://ui.test"}, Token: "s3cret"})
	srv := httptest.NewServer(http.StripPrefix("/codec", h))
	defer srv.Close()

	clear, err := converter.GetDefaultDataConverter().ToPayload(secretInput{PIN: "482913"})
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{clear}})
	require.NoError(t, err)

	post := func(path, token, origin string, body []byte) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", "default")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		return resp
	}
	read := func(resp *http.Response) []*commonpb.Payload {
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
		var out commonpb.Payloads
		require.NoError(t, protojson.Unmarshal(raw, &out), string(raw))
		return out.GetPayloads()
	}

	// Encode, then decode: the original payload back.
	resp := post("/codec/encode", "s3cret", "http://ui.test", body)
	require.Equal(t, "http://ui.test", resp.Header.Get("Access-Control-Allow-Origin"))
	enc := read(resp)
	require.Len(t, enc, 1)
	require.Equal(t, Encoding, string(enc[0].GetMetadata()["encoding"]))
	encBody, err := json.Marshal(map[string]any{"payloads": enc})
	require.NoError(t, err)
	dec := read(post("/codec/decode", "s3cret", "", encBody))
	require.Len(t, dec, 1)
	var got secretInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(dec[0], &got))
	require.Equal(t, "482913", got.PIN)

	// No token, a wrong token: 401 and nothing decoded.
	for _, tok := range []string{"", "wrong"} {
		resp := post("/codec/decode", tok, "", encBody)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.NotContains(t, string(raw), "482913")
	}

	// Preflight from the UI's origin; another origin gets no CORS grant.
	req, err := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://ui.test")
	req.Header.Set("Access-Control-Request-Method", "POST")
	pre, err := srv.Client().Do(req)
	require.NoError(t, err)
	pre.Body.Close()
	require.Equal(t, http.StatusNoContent, pre.StatusCode)
	require.Equal(t, "http://ui.test", pre.Header.Get("Access-Control-Allow-Origin"))
	require.True(t, strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-Namespace"))
	resp = post("/codec/decode", "s3cret", "http://evil.test", encBody)
	resp.Body.Close()
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestFailuresAreEncoded(t *testing.T) {
	c := New(newKey(t))
	fc := c.FailureConverter()
	f := fc.ErrorToFailure(temporal.NewApplicationError("PIN 482913 rejected for 12 Baker Street", "Rejected"))
	raw, err := protojson.Marshal(f)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "482913")
	require.Equal(t, "PIN [redacted] rejected for [address]", f.GetMessage())
	back := fc.FailureToError(f)
	require.ErrorContains(t, back, "PIN 482913 rejected")
}

// BenchmarkCodecRoundTrip is the cost the codec adds to one typical
// activity input (a shipment with two addresses and line items, ~1.5 KB
// of JSON): encode on the sender, decode on the receiver.
func BenchmarkCodecRoundTrip(b *testing.B) {
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw)
	k, _ := NewKey(raw)
	c := New(k)
	type addr struct{ Name, Street, City, Zip, Country string }
	in := map[string]any{
		"shipmentId": "9f1c2d3e-0000-4000-8000-000000000001", "from": addr{"Warehouse", "10 Main St", "Memphis", "38103", "US"},
		"to": addr{"Chloe Chen", "1 Pike St", "Seattle", "98101", "US"}, "items": make([]map[string]any, 8),
	}
	for i := range 8 {
		in["items"].([]map[string]any)[i] = map[string]any{"sku": "MUG-1", "name": "A large ceramic mug", "quantity": 2, "weight": 0.4}
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(in)
	require.NoError(b, err)
	b.SetBytes(int64(len(p.GetData())))
	b.ReportAllocs()
	for b.Loop() {
		enc, err := c.Encode([]*commonpb.Payload{p})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// The clear message of an encoded failure keeps the words and ids of the
// error and masks what may be secret or personal.
func TestSafeMessage(t *testing.T) {
	for in, want := range map[string]string{
		"order 999 not found": "order 999 not found",
		"carrier account contact: George, 20 FED EX PKWY, COLLIERVILLE":             "carrier account contact: George, [address], COLLIERVILLE",
		"bridge 3f2a1b2c-1234-5678-9abc-def012345678 refused: 401 Unauthorized":     "bridge 3f2a1b2c-1234-5678-9abc-def012345678 refused: 401 Unauthorized",
		"carrier_a refused the PIN 123456":                                          "carrier_a refused the PIN [redacted]",
		"invoice 293235673 of 2323.2 does not match":                                "invoice [number] of [amount] does not match",
		"no account for buyer lost@example.com":                                     "no account for buyer [email]",
		`address: 1 Pike St, Seattle; status 422`:                                   "address: [redacted]; status 422",
		"grab-orders: storefront_a answered 429 Too Many Requests (retry after 2s)": "grab-orders: storefront_a answered 429 Too Many Requests (retry after 2s)",
	} {
		require.Equal(t, want, SafeMessage(in), in)
	}
}

// Failures keep their original message for clients with the codec and
// show the masked one in clear (not "Encoded failure").
func TestFailureConverterClearMessage(t *testing.T) {
	fc := New(newKey(t)).FailureConverter()
	f := fc.ErrorToFailure(temporal.NewApplicationError("carrier_a refused the PIN 123456 for order 42", "Refused"))
	require.Equal(t, "carrier_a refused the PIN [redacted] for order 42", f.GetMessage())
	require.NotNil(t, f.GetEncodedAttributes())
	require.NotContains(t, string(f.GetEncodedAttributes().GetData()), "123456")
	err := fc.FailureToError(f)
	require.Contains(t, err.Error(), "carrier_a refused the PIN 123456 for order 42")
}
