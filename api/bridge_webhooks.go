package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/bridgetasks"
)

// Bridge webhooks (spec Part 2, Bridges: GET/POST/DELETE
// /bridges/:id/webhooks[/:topic]): which platform topics deliver events to
// the service's inbound endpoint (bridgetasks.Service.EnableWebhooks,
// DisableWebhook).

func (s *Server) mountBridgeWebhooks(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))
	read.Get("/bridges/{id}/webhooks", s.h(s.getBridgeWebhooks))
	write.Post("/bridges/{id}/webhooks", s.h(s.enableBridgeWebhooks))
	// The topic is URL-encoded (orders%2Fcreate); a raw slash works too.
	write.Delete("/bridges/{id}/webhooks/*", s.h(s.disableBridgeWebhook))
}

func unsupportedWebhooks(w http.ResponseWriter, b bridgetasks.Bridge) {
	writeData(w, http.StatusOK, map[string]any{
		"supported": false,
		"message":   fmt.Sprintf("bridge type %s does not support webhooks", b.Type),
	})
}

func (s *Server) getBridgeWebhooks(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	topics, ok := bridgetasks.WebhookTopics[b.Type]
	if !ok {
		unsupportedWebhooks(w, b)
		return nil
	}
	st := bridgetasks.WebhookStateOf(b.Config)
	writeData(w, http.StatusOK, map[string]any{
		"supported": true, "bridgeId": b.ID, "bridgeType": b.Type,
		"availableTopics": topics, "enabledTopics": st.Enabled,
		"registeredWebhooks": st.Registered, "webhookUrl": s.webhookURL(b.ID),
	})
	return nil
}

type enableWebhooksRequest struct {
	Topics *[]string `json:"topics"`
}

func (s *Server) enableBridgeWebhooks(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	var req enableWebhooksRequest
	if err := decodeJSON(r, &req); err != nil {
		return s.bridgeErrFirst(r, id, err)
	}
	out, err := s.BridgeTasks.EnableWebhooks(r.Context(), actorOf(r), id, req.Topics)
	if err != nil {
		return err
	}
	if !out.Supported {
		unsupportedWebhooks(w, out.Bridge)
		return nil
	}
	resp := map[string]any{"enabled": out.Enabled, "registered": out.Registered, "webhookUrl": s.webhookURL(id)}
	if len(out.Failures) > 0 {
		resp["errors"] = out.Failures
	}
	writeData(w, http.StatusOK, resp)
	return nil
}

func (s *Server) disableBridgeWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	topic, err := url.PathUnescape(chi.URLParam(r, "*"))
	if err != nil {
		return s.bridgeErrFirst(r, id, errValidation(FieldError{Field: "topic", Message: "is not URL-encoded correctly"}))
	}
	out, err := s.BridgeTasks.DisableWebhook(r.Context(), actorOf(r), id, topic)
	if err != nil {
		return err
	}
	if !out.Supported {
		unsupportedWebhooks(w, out.Bridge)
		return nil
	}
	writeData(w, http.StatusOK, map[string]any{"disabled": topic, "enabled": out.Enabled})
	return nil
}

// bridgeErrFirst is the answer to a request on bridge id whose body or
// path is refused with err: the service reads the bridge only for a
// request it takes, so a bridge that is not the organization's is read
// here, and is 404 before err.
func (s *Server) bridgeErrFirst(r *http.Request, id uuid.UUID, err error) error {
	if _, berr := s.BridgeTasks.Bridge(r.Context(), actorOf(r), id); berr != nil {
		return berr
	}
	return err
}
