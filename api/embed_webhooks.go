package api

import (
	"net/http"

	"github.com/fos-dev/fos/embed"
)

// An end user's outbound webhooks and their deliveries (embed.Service).

func (s *Server) createEndUserWebhook(w http.ResponseWriter, r *http.Request) error {
	var in embed.WebhookInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	hook, err := s.Embed.CreateWebhook(s.embedCtx(r), embedActorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, hook)
	return nil
}

func (s *Server) listEndUserWebhooks(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Embed.ListWebhooks(r.Context(), embedActorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, list)
	return nil
}

func (s *Server) listWebhookEventTypes(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Embed.ListWebhookEventTypes(r.Context(), embedActorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, list)
	return nil
}

func (s *Server) updateEndUserWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	var in embed.WebhookPatch
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	hook, err := s.Embed.UpdateWebhook(s.embedCtx(r), embedActorOf(r), id, in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, hook)
	return nil
}

func (s *Server) deleteEndUserWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	if err := s.Embed.DeleteWebhook(s.embedCtx(r), embedActorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

func (s *Server) testEndUserWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	res, err := s.Embed.TestWebhook(r.Context(), embedActorOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	list, err := s.Embed.ListDeliveries(r.Context(), embedActorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, list)
	return nil
}

func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	did, err := pathID(r, "deliveryId", "delivery")
	if err != nil {
		return err
	}
	d, err := s.Embed.Redeliver(r.Context(), embedActorOf(r), id, did)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, d)
	return nil
}
