package bridgetasks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Bridge webhooks (spec Part 2, Bridges: GET/POST/DELETE
// /bridges/:id/webhooks[/:topic]): which platform topics deliver events to
// the service's inbound endpoint. Enabling registers each new topic on the
// platform through the bridge type's connector; disabling removes the
// registration. The platform calls run in the caller's request
// (registration spends nothing), each under WebhookCallTimeout, with no
// transaction held across them.

// WebhookTopic is a topic a bridge type can deliver.
type WebhookTopic struct {
	Topic       string `json:"topic"`
	Description string `json:"description"`
}

// WebhookTopics are the topics of the supporting bridge types (spec Part 2,
// "Webhook topics by bridge type").
var WebhookTopics = map[string][]WebhookTopic{
	platforms.TypeStorefrontA: {
		{"orders/create", "order created"},
		{"orders/updated", "order updated"},
		{"orders/fulfilled", "order fulfilled"},
	},
	platforms.TypeShippingHubA: {
		{"SHIP_NOTIFY", "shipment created in the platform"},
		{"ORDER_NOTIFY", "order created or updated in the platform"},
		{"ITEM_SHIP_NOTIFY", "per item when a shipment is created"},
	},
}

// WebhookCallTimeout bounds each platform call.
const WebhookCallTimeout = 15 * time.Second

// WebhookTokenParam is the query parameter of the token in a registered
// URL (shipping_hub_a, which can neither sign nor send headers).
const WebhookTokenParam = "token"

// WebhookToken is the token query parameter of a bridge's registered
// webhook URL: derived from its secret, so the secret itself never appears
// in a URL, and rotating the secret rotates the token.
func WebhookToken(secret string, bridgeID uuid.UUID) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("fos-webhook-token:" + bridgeID.String()))
	return hex.EncodeToString(m.Sum(nil))
}

// WebhookURL is the bridge's inbound URL ({base_url}/api/v1/webhooks/<id>).
func (s *Service) WebhookURL(bridgeID uuid.UUID) string {
	return strings.TrimRight(s.baseURL, "/") + "/api/v1/webhooks/" + bridgeID.String()
}

// WebhookState is the webhook part of a bridge's config.
type WebhookState struct {
	Enabled    []string
	Registered map[string]any // topic -> registration id (a number)
}

// WebhookStateOf reads the webhook part of a bridge's config.
func WebhookStateOf(cfg map[string]any) WebhookState {
	st := WebhookState{Enabled: []string{}, Registered: map[string]any{}}
	switch v := cfg[platforms.ConfigEnabledWebhooks].(type) {
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && !slices.Contains(st.Enabled, s) {
				st.Enabled = append(st.Enabled, s)
			}
		}
	case []string:
		st.Enabled = append(st.Enabled, v...)
	}
	if m, ok := cfg[platforms.ConfigRegisteredWebhooks].(map[string]any); ok {
		for k, v := range m {
			st.Registered[k] = v
		}
	}
	return st
}

// registrationID renders a stored registration id for the platform.
func registrationID(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// registrationNumber keeps a platform's registration id as a number when it
// is one (spec: topic to registration id (number)).
func registrationNumber(id string) any {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return n
	}
	return id
}

// registrar is the bridge type's webhook-registering connector.
func (s *Service) registrar(bridgeType string) (platforms.WebhookRegistrar, error) {
	if s.platforms == nil {
		return nil, &platforms.Error{Code: platforms.CodeUnsupportedType, Message: "no platform connector is configured"}
	}
	c, err := s.platforms.Get(bridgeType)
	if err != nil {
		return nil, err
	}
	reg, ok := c.(platforms.WebhookRegistrar)
	if !ok {
		return nil, &platforms.Error{Code: platforms.CodeUnsupportedType, Message: "the connector cannot register webhooks"}
	}
	return reg, nil
}

// registrationAddress is the target URL registered for a bridge: the
// inbound URL, with the token for a platform that can neither sign nor send
// headers (shipping_hub_a, CONTRACT 6).
func (s *Service) registrationAddress(b Bridge, secret string) string {
	u := s.WebhookURL(b.ID)
	if b.Type == platforms.TypeShippingHubA {
		u += "?" + WebhookTokenParam + "=" + url.QueryEscape(WebhookToken(secret, b.ID))
	}
	return u
}

// ensureWebhookSecret gives the bridge a webhookSecret when it has none
// (sealed with its other credentials) and returns the platform view of the
// bridge with its full config.
func (s *Service) ensureWebhookSecret(ctx context.Context, b Bridge) (Bridge, platforms.Bridge, error) {
	var out Bridge
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := store.LockBridge(ctx, tx, b.OrganizationID, b.ID)
		if err != nil {
			return notFound(err, "bridge")
		}
		full, err := store.BridgeFullConfig(s.secrets, cur)
		if err != nil {
			return err
		}
		if sec, _ := full[platforms.ConfigWebhookSecret].(string); sec != "" {
			out = cur
			return nil
		}
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		full[platforms.ConfigWebhookSecret] = hex.EncodeToString(raw)
		cfg, creds, err := store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(cur.OrganizationID, cur.ID), cur.Type, full)
		if err != nil {
			return err
		}
		out, err = store.UpdateBridge(ctx, tx, cur.OrganizationID, cur.ID, store.BridgePatch{Config: cfg, Credentials: creds})
		return err
	})
	if err != nil {
		return Bridge{}, platforms.Bridge{}, err
	}
	pb, err := store.PlatformBridge(s.secrets, out)
	return out, pb, err
}

// WebhookTopicError is a topic the platform did not register, and why.
type WebhookTopicError struct {
	Topic string `json:"topic"`
	Error string `json:"error"`
}

// WebhooksEnabled is what EnableWebhooks did: the bridge's enabled topics,
// the ones registered now and the failures. Supported is false for a
// bridge type without webhooks (nothing else is set).
type WebhooksEnabled struct {
	Supported  bool
	Bridge     Bridge
	Enabled    []string
	Registered []string
	Failures   []WebhookTopicError
}

// EnableWebhooks registers topics on the bridge's platform (a registration
// the platform already has for the service's address is adopted) and
// enables them. Topics nil is missing; a topic of another type is named
// topics[i]. A storefront_a bridge needs what verifying its deliveries
// takes (CheckStorefrontAWebhooks). When no pending topic could be
// registered, the refusal is an upstream platform_error naming each; else
// the failures come with the result. The actor needs bridges:write.
func (s *Service) EnableWebhooks(ctx context.Context, actor domain.Actor, bridgeID uuid.UUID, topicsIn *[]string) (WebhooksEnabled, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return WebhooksEnabled{}, err
	}
	b, err := s.bridge(ctx, actor, bridgeID)
	if err != nil {
		return WebhooksEnabled{}, err
	}
	available, ok := WebhookTopics[b.Type]
	if !ok {
		return WebhooksEnabled{Bridge: b}, nil
	}
	var v domain.FieldErrors
	var topics []string
	switch {
	case topicsIn == nil:
		v.Add("topics", "is required")
	case len(*topicsIn) == 0:
		v.Add("topics", "must name at least one topic")
	default:
		for i, t := range *topicsIn {
			if !slices.ContainsFunc(available, func(a WebhookTopic) bool { return a.Topic == t }) {
				v.Add(fmt.Sprintf("topics[%d]", i), fmt.Sprintf("is not a webhook topic of %s", b.Type))
			} else if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	if err := v.Err(); err != nil {
		return WebhooksEnabled{}, err
	}
	if err := s.checkWebhookSigning(b); err != nil {
		return WebhooksEnabled{}, err
	}

	b, pb, err := s.ensureWebhookSecret(ctx, b)
	if err != nil {
		return WebhooksEnabled{}, err
	}
	secret, _ := pb.Config[platforms.ConfigWebhookSecret].(string)
	address := s.registrationAddress(b, secret)
	st := WebhookStateOf(b.Config)

	var pending []string
	for _, t := range topics {
		if _, done := st.Registered[t]; !done {
			pending = append(pending, t)
		}
	}
	added := map[string]any{}
	registered := []string{}
	var failures []WebhookTopicError
	if len(pending) > 0 {
		reg, err := s.registrar(b.Type)
		if err != nil {
			for _, t := range pending {
				failures = append(failures, WebhookTopicError{t, s.explain(err)})
			}
		} else {
			// A registration the platform already has for this address
			// (an earlier request whose answer was lost) is adopted.
			existing := map[string]string{}
			lctx, cancel := context.WithTimeout(ctx, WebhookCallTimeout)
			if list, err := reg.ListWebhooks(lctx, pb); err == nil {
				for _, h := range list {
					if h.Address == address {
						existing[h.Topic] = h.ID
					}
				}
			}
			cancel()
			for _, t := range pending {
				if id, ok := existing[t]; ok && id != "" {
					added[t] = registrationNumber(id)
					registered = append(registered, t)
					continue
				}
				cctx, cancel := context.WithTimeout(ctx, WebhookCallTimeout)
				h, err := reg.RegisterWebhook(cctx, pb, t, address)
				cancel()
				if err != nil {
					failures = append(failures, WebhookTopicError{t, s.explain(err)})
					continue
				}
				added[t] = registrationNumber(h.ID)
				registered = append(registered, t)
			}
		}
	}
	if len(pending) > 0 && len(registered) == 0 {
		msgs := make([]string, len(failures))
		for i, f := range failures {
			msgs[i] = f.Topic + ": " + f.Error
		}
		return WebhooksEnabled{}, domain.Upstream("platform_error", "no topic could be registered on the platform: "+strings.Join(msgs, "; "), nil)
	}

	// Record what succeeded, merged into the config as it is now.
	out, err := s.mergeWebhookState(ctx, b, func(st *WebhookState) {
		for t, id := range added {
			st.Registered[t] = id
		}
		for _, t := range topics {
			if _, ok := st.Registered[t]; ok && !slices.Contains(st.Enabled, t) {
				st.Enabled = append(st.Enabled, t)
			}
		}
	})
	if err != nil {
		return WebhooksEnabled{}, err
	}
	return WebhooksEnabled{Supported: true, Bridge: out, Enabled: WebhookStateOf(out.Config).Enabled, Registered: registered, Failures: failures}, nil
}

// mergeWebhookState changes the bridge's webhook state as it is now,
// under its row lock.
func (s *Service) mergeWebhookState(ctx context.Context, b Bridge, change func(*WebhookState)) (Bridge, error) {
	var out Bridge
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := store.LockBridge(ctx, tx, b.OrganizationID, b.ID)
		if err != nil {
			return notFound(err, "bridge")
		}
		st := WebhookStateOf(cur.Config)
		change(&st)
		out, err = store.MergeBridgeConfig(ctx, tx, cur.OrganizationID, cur.ID, map[string]any{
			platforms.ConfigEnabledWebhooks: st.Enabled, platforms.ConfigRegisteredWebhooks: st.Registered,
		})
		return err
	})
	return out, notFound(err, "bridge")
}

// WebhookDisabled is what DisableWebhook did; Supported is false for a
// bridge type without webhooks (nothing else is set).
type WebhookDisabled struct {
	Supported bool
	Bridge    Bridge
	Enabled   []string
}

// DisableWebhook removes a topic's registration from the platform, then
// from the bridge. A topic neither registered nor enabled is not found;
// the platform refusing is an upstream platform_error. The actor needs
// bridges:write.
func (s *Service) DisableWebhook(ctx context.Context, actor domain.Actor, bridgeID uuid.UUID, topic string) (WebhookDisabled, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return WebhookDisabled{}, err
	}
	b, err := s.bridge(ctx, actor, bridgeID)
	if err != nil {
		return WebhookDisabled{}, err
	}
	available, ok := WebhookTopics[b.Type]
	if !ok {
		return WebhookDisabled{Bridge: b}, nil
	}
	if !slices.ContainsFunc(available, func(a WebhookTopic) bool { return a.Topic == topic }) {
		return WebhookDisabled{}, domain.InvalidField("topic", fmt.Sprintf("is not a webhook topic of %s", b.Type))
	}
	st := WebhookStateOf(b.Config)
	id, registered := st.Registered[topic]
	if !registered && !slices.Contains(st.Enabled, topic) {
		return WebhookDisabled{}, domain.NotFound("webhook topic " + topic)
	}
	if registered {
		reg, err := s.registrar(b.Type)
		if err == nil {
			var pb platforms.Bridge
			if pb, err = store.PlatformBridge(s.secrets, b); err == nil {
				cctx, cancel := context.WithTimeout(ctx, WebhookCallTimeout)
				err = reg.DeleteWebhook(cctx, pb, registrationID(id))
				cancel()
			}
		}
		if err != nil {
			return WebhookDisabled{}, domain.Upstream("platform_error", "the platform did not remove the webhook: "+s.explain(err), err)
		}
	}
	out, err := s.mergeWebhookState(ctx, b, func(st *WebhookState) {
		delete(st.Registered, topic)
		st.Enabled = slices.DeleteFunc(st.Enabled, func(t string) bool { return t == topic })
	})
	if err != nil {
		return WebhookDisabled{}, err
	}
	return WebhookDisabled{Supported: true, Bridge: out, Enabled: WebhookStateOf(out.Config).Enabled}, nil
}

// checkWebhookSigning refuses, naming what to set, to enable storefront_a
// topics the service could never verify or receive
// (platforms.CheckStorefrontAWebhooks; plain http only when private URLs
// are allowed: fos dev).
func (s *Service) checkWebhookSigning(b Bridge) error {
	if b.Type != platforms.TypeStorefrontA {
		return nil
	}
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		return err
	}
	sec, _ := full[platforms.ConfigWebhookSecret].(string)
	if pe := platforms.CheckStorefrontAWebhooks(sec, s.WebhookURL(b.ID), s.allowPrivateURLs); pe != nil {
		field := "config"
		if pe.Field != "" {
			field = "config." + pe.Field
		}
		return &domain.Error{Kind: domain.KindInvalid, Code: "validation_error", Message: pe.Message,
			Fields: []domain.FieldError{{Field: field, Message: pe.Message}}}
	}
	return nil
}

// explain is a platform failure as a tenant may read it.
func (s *Service) explain(err error) string {
	if s.tenantMessage != nil {
		return s.tenantMessage(err)
	}
	return domain.InternalFailureMessage
}
