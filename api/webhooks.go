package api

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
)

// Inbound platform webhooks (spec Part 2 "Inbound webhook", CONTRACT 6).
//
// POST /api/v1/webhooks/{bridgeId} holds no API key: the bridge's
// config.webhookSecret is the only credential. Accepted proofs, any one:
//
//   - the platform's own signature, base64(HMAC-SHA256(secret, raw body)) in
//     its X-…-Hmac-Sha256 header (storefront_a, and shipping_hub_a's header
//     name should it ever sign);
//   - X-Hook-Secret: <secret>;
//   - ?token=<WebhookToken(secret, bridgeId)>, the token the service puts
//     into the target URL it registers with a platform that can neither sign
//     nor send headers (shipping_hub_a).
//
// Every comparison is constant-time. The answer waits for one durable
// write, the webhook_events row (deduplicated on the dedupe key), and never
// for Temporal: the worker's relay starts the InboundWebhook workflow.

// MaxWebhookBody bounds an inbound webhook body; larger is 400.
const MaxWebhookBody = 1 << 20

// Webhook header names (CONTRACT 6; vendors/platforms/*/README.md).
const (
	HookSecretHeader     = "X-Hook-Secret"
	WebhookTopicHeader   = "X-Webhook-Topic"
	WebhookIDHeader      = "X-Webhook-Id"
	StorefrontATopic     = "X-Shopify-Topic"
	StorefrontBTopic     = "X-WC-Webhook-Topic"
	StorefrontAHMAC      = "X-Shopify-Hmac-Sha256"
	StorefrontAEventID   = "X-Shopify-Event-Id"
	StorefrontAWebhookID = "X-Shopify-Webhook-Id"
	ShippingHubAHMAC     = "X-ShipStation-Hmac-Sha256"
	webhookTokenParam    = bridgetasks.WebhookTokenParam
)

// platformHMACHeader is the signature header of each signing platform.
var platformHMACHeader = map[string]string{
	platforms.TypeStorefrontA:  StorefrontAHMAC,
	platforms.TypeShippingHubA: ShippingHubAHMAC,
}

// storedWebhookHeaders are the delivery headers kept with an event (the
// ones that identify it; never a signature or a secret).
var storedWebhookHeaders = []string{
	StorefrontATopic, StorefrontAEventID, StorefrontAWebhookID, "X-Shopify-Shop-Domain",
	"X-Shopify-Api-Version", "X-Shopify-Triggered-At", WebhookTopicHeader, WebhookIDHeader, "User-Agent",
}

// WebhookToken is the token query parameter of a bridge's registered
// webhook URL (bridgetasks.WebhookToken).
func WebhookToken(secret string, bridgeID uuid.UUID) string {
	return bridgetasks.WebhookToken(secret, bridgeID)
}

// SignWebhookBody is base64(HMAC-SHA256(secret, body)), the platform
// signature the endpoint accepts.
func SignWebhookBody(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// webhookURL is the bridge's inbound URL ({base_url}/api/v1/webhooks/<id>).
func (s *Server) webhookURL(bridgeID uuid.UUID) string { return s.BridgeTasks.WebhookURL(bridgeID) }

// webhookVerifier is what verifying a bridge's proofs takes. Opening the
// sealed credentials is the costly part of a delivery, so the opened
// secret is kept per bridge together with the sealed bytes it came from;
// every delivery reads the bridge row (one primary-key read) and reuses
// the secret only while those bytes are unchanged. A rotated secret, in
// any process, is therefore in force for the very next delivery, with no
// invalidation message to lose.
type webhookVerifier struct {
	orgID      uuid.UUID
	bridgeType string
	status     string
	secret     string
	token      string
	sealed     []byte
}

// webhookVerifierFor reads the bridge and opens its secret, unless the
// secret opened last time came from the same sealed credentials.
func (s *Server) webhookVerifierFor(r *http.Request, id uuid.UUID) (webhookVerifier, error) {
	cache := s.webhookVerifiers()
	if cache.isMissing(id) {
		return webhookVerifier{}, errNotFound("bridge")
	}
	b, err := s.BridgeTasks.InboundBridge(r.Context(), id)
	if errors.Is(err, domain.ErrNotFound) {
		cache.markMissing(id)
		return webhookVerifier{}, errNotFound("bridge")
	}
	if err != nil {
		return webhookVerifier{}, err
	}
	if v, ok := cache.get(id); ok && v.orgID == b.OrganizationID && bytes.Equal(v.sealed, b.Credentials) {
		v.status = b.Status
		return v, nil
	}
	v := webhookVerifier{orgID: b.OrganizationID, bridgeType: b.Type, status: b.Status, sealed: b.Credentials}
	if sec, err := s.BridgeTasks.WebhookSecret(b); err != nil {
		// Not the sender's fault, but no proof can be checked.
		s.log.WarnContext(r.Context(), "cannot open bridge credentials for an inbound webhook", append(logAttrs(r), "bridge_id", id.String(), "error", err.Error())...)
	} else if sec != "" {
		v.secret = sec
		v.token = WebhookToken(sec, id)
	}
	cache.put(id, v)
	return v, nil
}

// verify reports whether the request carries one valid proof, and
// whether that proof is the platform's signature of the body alone (then
// nothing else of the request is vouched for: its headers may be a
// replayer's).
func (v webhookVerifier) verify(r *http.Request, body []byte) (ok, bodyOnly bool) {
	if v.secret == "" {
		return false, false
	}
	if got := r.Header.Get(HookSecretHeader); got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.secret)) == 1 {
		return true, false
	}
	if got := r.URL.Query().Get(webhookTokenParam); got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.token)) == 1 {
		return true, false
	}
	if h := platformHMACHeader[v.bridgeType]; h != "" {
		if got := strings.TrimSpace(r.Header.Get(h)); got != "" {
			if sig, err := base64.StdEncoding.DecodeString(got); err == nil {
				keys := []string{v.secret}
				if v.bridgeType == platforms.TypeStorefrontA {
					keys = platforms.StorefrontAWebhookKeys(v.secret) // the app's client secret signs too
				}
				for _, key := range keys {
					m := hmac.New(sha256.New, []byte(key))
					m.Write(body)
					if hmac.Equal(sig, m.Sum(nil)) {
						return true, true
					}
				}
			}
		}
	}
	return false, false
}

// Inbound webhook rate limits, checked before any database work: per
// client IP (platforms deliver for many tenants from few addresses, so
// it is generous) and per bridge.
var (
	webhookIPRate     = config.Rate{Events: 6000, Per: time.Minute}
	webhookBridgeRate = config.Rate{Events: 1200, Per: time.Minute}
)

type webhookLimiters struct{ ip, bridge *limiterSet }

var hookLimiters sync.Map // *Server -> *webhookLimiters

func (s *Server) webhookLimit(r *http.Request, id uuid.UUID) error {
	v, ok := hookLimiters.Load(s)
	if !ok {
		v, _ = hookLimiters.LoadOrStore(s, &webhookLimiters{
			ip:     newLimiterSet("webhook deliveries from this address", webhookIPRate),
			bridge: newLimiterSet("webhook deliveries to this bridge", webhookBridgeRate),
		})
	}
	l := v.(*webhookLimiters)
	if err := l.ip.check(s.clientIP(r)); err != nil {
		return err
	}
	return l.bridge.check(id.String())
}

func errInvalidSignature() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "invalid_signature", Message: "the webhook carries no valid signature, X-Hook-Secret or token for this bridge"}
}

func errInvalidPayload(msg string) *Error { return errBadRequest("invalid_payload", msg) }

// mountInboundWebhooks registers POST /webhooks/{bridgeId}: no API key,
// authenticated by the bridge's secret alone (CONTRACT 6).
func (s *Server) mountInboundWebhooks(r chi.Router) {
	r.Post("/webhooks/{bridgeId}", s.h(s.receiveWebhook))
}

func (s *Server) receiveWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := uuid.Parse(chi.URLParam(r, "bridgeId"))
	if err != nil {
		return errNotFound("bridge")
	}
	if err := s.webhookLimit(r, id); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
	if err != nil {
		return errInvalidPayload("the request body could not be read")
	}
	if len(body) > MaxWebhookBody {
		return errInvalidPayload("the payload exceeds 1 MiB")
	}

	v, err := s.webhookVerifierFor(r, id)
	if err != nil {
		return err
	}
	if v.status != bridgetasks.StatusActive {
		return errNotFound("bridge")
	}
	ok, bodyOnly := v.verify(r, body)
	if !ok {
		return errInvalidSignature()
	}

	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return errInvalidPayload("the payload must be a JSON object")
	}
	var hints struct {
		Topic        any `json:"topic"`
		Scope        any `json:"scope"` // storefront_c
		ResourceType any `json:"resource_type"`
		ID           any `json:"id"`
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber() // platform ids exceed float64's exact integers
	_ = dec.Decode(&hints)

	if hints.Topic == nil {
		hints.Topic = hints.Scope
	}
	topic := webhookTopic(r, hints.Topic, hints.ResourceType)
	ev := bridgetasks.WebhookEvent{
		ID: uuid.New(), OrganizationID: v.orgID, BridgeID: id,
		Topic:     topic,
		DedupeKey: webhookDedupeKey(r, v.bridgeType, topic, hints.ID, body, bodyOnly),
		Payload:   trimmed,
		Headers:   webhookHeaders(r),
	}
	eventID, _, err := s.BridgeTasks.RecordWebhookEvent(r.Context(), ev)
	if errors.Is(err, domain.ErrNotFound) {
		// Paused, disconnected or deleted since it was cached.
		s.webhookVerifiers().drop(id)
		return errNotFound("bridge")
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"received": true, "event_id": eventID})
	return nil
}

// webhookTopic: the platform's topic header, else X-Webhook-Topic, else the
// payload's topic, else its resource_type (CONTRACT 6).
func webhookTopic(r *http.Request, topic, resourceType any) string {
	for _, t := range []string{r.Header.Get(StorefrontATopic), r.Header.Get(StorefrontBTopic), r.Header.Get(WebhookTopicHeader), scalarString(topic), scalarString(resourceType)} {
		if t = strings.TrimSpace(t); t != "" {
			return truncate(t, 200)
		}
	}
	return "unknown"
}

// webhookDedupeKey: the platform's event id (storefront_a's event-id
// header, the same across redeliveries), else X-Webhook-Id, else the
// payload's id, else a hash of the raw body (CONTRACT 6). Each kind is
// prefixed so that keys of different kinds never collide. When the proof
// was the platform's signature of the body alone (bodyOnly), the event-id
// headers are not signed: a captured delivery replayed with new ones must
// not be processed again, so the key is the hash of the verified body
// (and the topic: a platform may send the same body under two topics).
func webhookDedupeKey(r *http.Request, bridgeType, topic string, payloadID any, body []byte, bodyOnly bool) string {
	if bodyOnly {
		h := sha256.New()
		h.Write([]byte(topic + "\n"))
		h.Write(canonicalJSON(body))
		return "signed:" + hex.EncodeToString(h.Sum(nil))
	}
	sum := sha256.Sum256(body)
	if bridgeType == platforms.TypeStorefrontA {
		if v := strings.TrimSpace(r.Header.Get(StorefrontAEventID)); v != "" {
			return "event:" + truncate(v, 200)
		}
	}
	if v := strings.TrimSpace(r.Header.Get(WebhookIDHeader)); v != "" {
		return "webhook:" + truncate(v, 200)
	}
	if v := scalarString(payloadID); v != "" {
		return "id:" + truncate(v, 200)
	}
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonicalJSON is the body with its object keys sorted and no
// insignificant space (numbers as written), so that the same event keys
// the same whether its bytes came from the platform or back out of the
// stored jsonb payload; a body that is not JSON is itself.
func canonicalJSON(body []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return body
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

// scalarString renders a JSON string or number; anything else is "".
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case json.Number:
		return x.String()
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func webhookHeaders(r *http.Request) json.RawMessage {
	out := map[string]string{}
	for _, h := range storedWebhookHeaders {
		if v := r.Header.Get(h); v != "" {
			out[h] = truncate(v, 500)
		}
	}
	raw, _ := json.Marshal(out)
	return raw
}
