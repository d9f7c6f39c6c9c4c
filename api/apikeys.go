package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/accounts"
	"github.com/fos-dev/fos/auth"
)

// mountAPIKeys registers the API key endpoints (Admin or Owner users only;
// API keys cannot manage keys: 403).
func (s *Server) mountAPIKeys(r chi.Router) {
	// Flat routes (no sub-router), so an unknown method is 405 before any
	// authentication runs.
	admin := r.With(s.roles(auth.AdminOrOwner...))
	admin.Get("/api-keys", s.h(s.listAPIKeys))
	admin.Post("/api-keys", s.h(s.createAPIKey))
	admin.Delete("/api-keys/{id}", s.h(s.revokeAPIKey))
}

// apiKeyJSON is the API key list item.
type apiKeyJSON struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	KeyPrefix  string     `json:"key_prefix"`
	Scopes     []string   `json:"scopes"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	CreatedAt  time.Time  `json:"created_at"`
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.Accounts.APIKeys(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, 0, len(keys))
	for _, k := range keys {
		out = append(out, apiKeyJSON{ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, Scopes: k.Scopes, LastUsedAt: k.LastUsedAt, ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt})
	}
	writeData(w, http.StatusOK, out)
	return nil
}

type createAPIKeyRequest struct {
	Name      *string    `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var req createAPIKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if v.required("name", req.Name) {
		v.length("name", strings.TrimSpace(*req.Name), 1, 100)
	}
	if req.Scopes == nil {
		v.add("scopes", "is required")
	} else if len(req.Scopes) == 0 {
		v.add("scopes", "must name at least one scope")
	}
	scopes := make([]string, 0, len(req.Scopes))
	seen := map[string]bool{}
	for _, sc := range req.Scopes {
		if !auth.ValidScope(sc) {
			v.add("scopes", "unknown scope "+sc)
			continue
		}
		if !seen[sc] {
			seen[sc] = true
			scopes = append(scopes, sc)
		}
	}
	if req.ExpiresAt != nil && !req.ExpiresAt.After(time.Now()) {
		v.add("expires_at", "must be in the future")
	}
	if err := v.err(); err != nil {
		return err
	}
	k, err := s.Accounts.CreateAPIKey(r.Context(), actorOf(r), accounts.NewAPIKey{Name: *req.Name, Scopes: scopes, ExpiresAt: req.ExpiresAt})
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, map[string]any{
		"id": k.ID, "name": k.Name, "key": k.Secret, "scopes": k.Scopes, "expires_at": k.ExpiresAt, "created_at": k.CreatedAt,
	})
	return nil
}

func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "API key")
	if err != nil {
		return err
	}
	if err := s.Accounts.RevokeAPIKey(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
