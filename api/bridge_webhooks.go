package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Bridge webhooks (spec Part 2, Bridges: GET/POST/DELETE
// /bridges/:id/webhooks[/:topic]): which platform topics deliver events to
// the service's inbound endpoint. Enabling registers each new topic on the
// platform through the bridge type's connector; disabling removes the
// registration. The platform calls run in the request (registration spends
// nothing), each under webhookCallTimeout, with no transaction held across
// them.

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

// webhookCallTimeout bounds each platform call of the endpoints.
const webhookCallTimeout = 15 * time.Second

func (s *Server) mountBridgeWebhooks(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))
	read.Get("/bridges/{id}/webhooks", s.h(s.getBridgeWebhooks))
	write.Post("/bridges/{id}/webhooks", s.h(s.enableBridgeWebhooks))
	// The topic is URL-encoded (orders%2Fcreate); a raw slash works too.
	write.Delete("/bridges/{id}/webhooks/*", s.h(s.disableBridgeWebhook))
}

func unsupportedWebhooks(w http.ResponseWriter, b store.Bridge) {
	writeData(w, http.StatusOK, map[string]any{
		"supported": false,
		"message":   fmt.Sprintf("bridge type %s does not support webhooks", b.Type),
	})
}

// bridgeWebhookState is the webhook part of a bridge's config.
type bridgeWebhookState struct {
	enabled    []string
	registered map[string]any // topic -> registration id (a number)
}

func webhookStateOf(cfg map[string]any) bridgeWebhookState {
	st := bridgeWebhookState{enabled: []string{}, registered: map[string]any{}}
	switch v := cfg[platforms.ConfigEnabledWebhooks].(type) {
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && !slices.Contains(st.enabled, s) {
				st.enabled = append(st.enabled, s)
			}
		}
	case []string:
		st.enabled = append(st.enabled, v...)
	}
	if m, ok := cfg[platforms.ConfigRegisteredWebhooks].(map[string]any); ok {
		for k, v := range m {
			st.registered[k] = v
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

func (s *Server) getBridgeWebhooks(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	topics, ok := WebhookTopics[b.Type]
	if !ok {
		unsupportedWebhooks(w, b)
		return nil
	}
	st := webhookStateOf(b.Config)
	writeData(w, http.StatusOK, map[string]any{
		"supported": true, "bridgeId": b.ID, "bridgeType": b.Type,
		"availableTopics": topics, "enabledTopics": st.enabled,
		"registeredWebhooks": st.registered, "webhookUrl": s.webhookURL(b.ID),
	})
	return nil
}

// registrar returns the bridge type's webhook-registering connector.
func (s *Server) registrar(bridgeType string) (platforms.WebhookRegistrar, error) {
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
func (s *Server) registrationAddress(b store.Bridge, secret string) string {
	u := s.webhookURL(b.ID)
	if b.Type == platforms.TypeShippingHubA {
		u += "?" + webhookTokenParam + "=" + url.QueryEscape(WebhookToken(secret, b.ID))
	}
	return u
}

// ensureWebhookSecret gives the bridge a webhookSecret when it has none
// (sealed with its other credentials) and returns the platform view of the
// bridge with its full config.
func (s *Server) ensureWebhookSecret(ctx context.Context, b store.Bridge) (store.Bridge, platforms.Bridge, error) {
	var out store.Bridge
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := store.LockBridge(ctx, tx, b.OrganizationID, b.ID)
		if err != nil {
			return notFoundAs(err, "bridge")
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
		return store.Bridge{}, platforms.Bridge{}, err
	}
	s.webhookVerifiers().drop(b.ID)
	pb, err := store.PlatformBridge(s.secrets, out)
	return out, pb, err
}

type enableWebhooksRequest struct {
	Topics *[]string `json:"topics"`
}

type webhookTopicError struct {
	Topic string `json:"topic"`
	Error string `json:"error"`
}

func (s *Server) enableBridgeWebhooks(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	var req enableWebhooksRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	available, ok := WebhookTopics[b.Type]
	if !ok {
		unsupportedWebhooks(w, b)
		return nil
	}
	var v validator
	var topics []string
	switch {
	case req.Topics == nil:
		v.add("topics", "is required")
	case len(*req.Topics) == 0:
		v.add("topics", "must name at least one topic")
	default:
		for i, t := range *req.Topics {
			if !slices.ContainsFunc(available, func(a WebhookTopic) bool { return a.Topic == t }) {
				v.add(fmt.Sprintf("topics[%d]", i), fmt.Sprintf("is not a webhook topic of %s", b.Type))
			} else if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	if err := s.checkWebhookSigning(b); err != nil {
		return err
	}

	b, pb, err := s.ensureWebhookSecret(r.Context(), b)
	if err != nil {
		return err
	}
	secret, _ := pb.Config[platforms.ConfigWebhookSecret].(string)
	address := s.registrationAddress(b, secret)
	st := webhookStateOf(b.Config)

	var pending []string
	for _, t := range topics {
		if _, done := st.registered[t]; !done {
			pending = append(pending, t)
		}
	}
	added := map[string]any{}
	var registered []string
	var failures []webhookTopicError
	if len(pending) > 0 {
		reg, err := s.registrar(b.Type)
		if err != nil {
			for _, t := range pending {
				failures = append(failures, webhookTopicError{t, activities.TenantMessage(err)})
			}
		} else {
			// A registration the platform already has for this address
			// (an earlier request whose answer was lost) is adopted.
			existing := map[string]string{}
			lctx, cancel := context.WithTimeout(r.Context(), webhookCallTimeout)
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
				cctx, cancel := context.WithTimeout(r.Context(), webhookCallTimeout)
				h, err := reg.RegisterWebhook(cctx, pb, t, address)
				cancel()
				if err != nil {
					failures = append(failures, webhookTopicError{t, activities.TenantMessage(err)})
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
		return &Error{Status: http.StatusBadGateway, Code: "platform_error", Message: "no topic could be registered on the platform: " + strings.Join(msgs, "; ")}
	}

	// Record what succeeded, merged into the config as it is now.
	var out store.Bridge
	err = s.store.InTx(r.Context(), func(tx pgx.Tx) error {
		cur, err := store.LockBridge(r.Context(), tx, b.OrganizationID, b.ID)
		if err != nil {
			return notFoundAs(err, "bridge")
		}
		st := webhookStateOf(cur.Config)
		for t, id := range added {
			st.registered[t] = id
		}
		for _, t := range topics {
			if _, ok := st.registered[t]; ok && !slices.Contains(st.enabled, t) {
				st.enabled = append(st.enabled, t)
			}
		}
		out, err = store.MergeBridgeConfig(r.Context(), tx, cur.OrganizationID, cur.ID, map[string]any{
			platforms.ConfigEnabledWebhooks: st.enabled, platforms.ConfigRegisteredWebhooks: st.registered,
		})
		return err
	})
	if err != nil {
		return err
	}
	if registered == nil {
		registered = []string{}
	}
	resp := map[string]any{
		"enabled": webhookStateOf(out.Config).enabled, "registered": registered, "webhookUrl": s.webhookURL(b.ID),
	}
	if len(failures) > 0 {
		resp["errors"] = failures
	}
	writeData(w, http.StatusOK, resp)
	return nil
}

func (s *Server) disableBridgeWebhook(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	topic, err := url.PathUnescape(chi.URLParam(r, "*"))
	if err != nil {
		return errValidation(FieldError{Field: "topic", Message: "is not URL-encoded correctly"})
	}
	available, ok := WebhookTopics[b.Type]
	if !ok {
		unsupportedWebhooks(w, b)
		return nil
	}
	if !slices.ContainsFunc(available, func(a WebhookTopic) bool { return a.Topic == topic }) {
		return errValidation(FieldError{Field: "topic", Message: fmt.Sprintf("is not a webhook topic of %s", b.Type)})
	}
	st := webhookStateOf(b.Config)
	id, registered := st.registered[topic]
	if !registered && !slices.Contains(st.enabled, topic) {
		return errNotFound("webhook topic " + topic)
	}
	if registered {
		reg, err := s.registrar(b.Type)
		if err == nil {
			var pb platforms.Bridge
			if pb, err = store.PlatformBridge(s.secrets, b); err == nil {
				ctx, cancel := context.WithTimeout(r.Context(), webhookCallTimeout)
				err = reg.DeleteWebhook(ctx, pb, registrationID(id))
				cancel()
			}
		}
		if err != nil {
			return &Error{Status: http.StatusBadGateway, Code: "platform_error", Message: "the platform did not remove the webhook: " + activities.TenantMessage(err)}
		}
	}
	var out store.Bridge
	err = s.store.InTx(r.Context(), func(tx pgx.Tx) error {
		cur, err := store.LockBridge(r.Context(), tx, b.OrganizationID, b.ID)
		if err != nil {
			return notFoundAs(err, "bridge")
		}
		st := webhookStateOf(cur.Config)
		delete(st.registered, topic)
		st.enabled = slices.DeleteFunc(st.enabled, func(t string) bool { return t == topic })
		out, err = store.MergeBridgeConfig(r.Context(), tx, cur.OrganizationID, cur.ID, map[string]any{
			platforms.ConfigEnabledWebhooks: st.enabled, platforms.ConfigRegisteredWebhooks: st.registered,
		})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("bridge")
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"disabled": topic, "enabled": webhookStateOf(out.Config).enabled})
	return nil
}

// checkWebhookSigning refuses, with a 400 naming what to set, to enable
// storefront_a topics the service could never verify or receive
// (platforms.CheckStorefrontAWebhooks; plain http only when private URLs
// are allowed: fos dev).
func (s *Server) checkWebhookSigning(b store.Bridge) error {
	if b.Type != platforms.TypeStorefrontA {
		return nil
	}
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		return err
	}
	sec, _ := full[platforms.ConfigWebhookSecret].(string)
	if pe := platforms.CheckStorefrontAWebhooks(sec, s.webhookURL(b.ID), s.allowPrivateURLs); pe != nil {
		field := "config"
		if pe.Field != "" {
			field = "config." + pe.Field
		}
		return &Error{Status: http.StatusBadRequest, Code: "validation_error", Message: pe.Message,
			Details: []FieldError{{Field: field, Message: pe.Message}}}
	}
	return nil
}
