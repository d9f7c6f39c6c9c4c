package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/platforms"
)

// mountBridges registers the bridge and bridge type endpoints (spec Part 2).
// Routes are registered with full paths (no sub-router on /bridges) so that
// other files can add more /bridges/{id}/… routes to the same router.
func (s *Server) mountBridges(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))

	read.Get("/bridges", s.h(s.listBridges))
	write.Post("/bridges", s.h(s.createBridge))
	read.Get("/bridges/{id}", s.h(s.getBridge))
	write.Patch("/bridges/{id}", s.h(s.updateBridge))
	write.Delete("/bridges/{id}", s.h(s.deleteBridge))
	read.Get("/bridges/{id}/tasks", s.h(s.listBridgeTasks))
	s.mountBridgeWebhooks(r)

	read.Get("/bridge-types", s.h(s.listBridgeTypes))
	read.Get("/bridge-types/{id}", s.h(s.getBridgeType))
}

var bridgeTypeCategories = []string{platforms.CategoryEcommerce, platforms.CategoryShipping, platforms.CategoryMarketplace, platforms.CategoryERP}

// bridgeJSON is the Bridge resource (camelCase). Config is the full config
// with every credential value redacted.
type bridgeJSON struct {
	ID             uuid.UUID      `json:"id"`
	OrganizationID uuid.UUID      `json:"organizationId"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	Config         map[string]any `json:"config"`
	Status         string         `json:"status"`
	LastSyncAt     *time.Time     `json:"lastSyncAt"`
	LastError      *string        `json:"lastError"` // extension: why the bridge is in error
	CreatedAt      time.Time      `json:"createdAt"`
	UpdatedAt      time.Time      `json:"updatedAt"`
}

// toBridgeJSON renders a bridge: its config with every credential value
// redacted (bridgetasks.Service.ShownConfig).
func (s *Server) toBridgeJSON(r *http.Request, b bridgetasks.Bridge) bridgeJSON {
	return bridgeJSON{
		ID: b.ID, OrganizationID: b.OrganizationID, Type: b.Type, Name: b.Name, Config: s.BridgeTasks.ShownConfig(r.Context(), b),
		Status: b.Status, LastSyncAt: b.LastSyncAt, LastError: b.LastError, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt,
	}
}

func (s *Server) listBridges(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	typ, err := queryEnum(r, "type", bridgetasks.BridgeTypes()...)
	if err != nil {
		return err
	}
	status, err := queryEnum(r, "status", bridgetasks.BridgeStatuses...)
	if err != nil {
		return err
	}
	page, err := s.BridgeTasks.ListBridges(r.Context(), actorOf(r), bridgetasks.BridgeFilter{
		Type: typ, Status: status, Limit: p.Limit, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]bridgeJSON, 0, len(page.Items))
	for _, b := range page.Items {
		out = append(out, s.toBridgeJSON(r, b))
	}
	writeList(w, out, p, page.Total)
	return nil
}

// bridgeFromPath loads the organization's bridge named by {id}; an unknown,
// malformed or foreign id is 404.
func (s *Server) bridgeFromPath(r *http.Request) (bridgetasks.Bridge, error) {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return bridgetasks.Bridge{}, err
	}
	return s.BridgeTasks.Bridge(r.Context(), actorOf(r), id)
}

func (s *Server) getBridge(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toBridgeJSON(r, b))
	return nil
}

type createBridgeRequest struct {
	Type   *string        `json:"type"`
	Name   *string        `json:"name"`
	Config map[string]any `json:"config"`
}

// createBridge: 201 {data: bridge} (bridgetasks.Service.CreateBridge).
func (s *Server) createBridge(w http.ResponseWriter, r *http.Request) error {
	var req createBridgeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	b, err := s.BridgeTasks.CreateBridge(r.Context(), actorOf(r), bridgetasks.BridgeInput{Type: req.Type, Name: req.Name, Config: req.Config})
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, s.toBridgeJSON(r, b))
	return nil
}

type updateBridgeRequest struct {
	Name   *string        `json:"name"`
	Config map[string]any `json:"config"`
	Status *string        `json:"status"`
}

// updateBridge: 200 {data: bridge} (bridgetasks.Service.UpdateBridge).
func (s *Server) updateBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	var req updateBridgeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	b, err := s.BridgeTasks.UpdateBridge(r.Context(), actorOf(r), id, bridgetasks.BridgeChange{Name: req.Name, Config: req.Config, Status: req.Status})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toBridgeJSON(r, b))
	return nil
}

func (s *Server) deleteBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	if err := s.BridgeTasks.DeleteBridge(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

func (s *Server) listBridgeTasks(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	tasks := platforms.Tasks(b.Type)
	if tasks == nil {
		tasks = []platforms.TaskDefinition{}
	}
	writeData(w, http.StatusOK, tasks)
	return nil
}

func (s *Server) listBridgeTypes(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	category, err := queryEnum(r, "category", bridgeTypeCategories...)
	if err != nil {
		return err
	}
	var matched []platforms.BridgeType
	for _, t := range platforms.Types() {
		if category == "" || t.Category == category {
			matched = append(matched, t)
		}
	}
	total := len(matched)
	start := min(p.Offset(), total)
	end := min(start+p.Limit, total)
	writeList(w, matched[start:end], p, total)
	return nil
}

// getBridgeType answers one catalog entry by its id or, as a convenience,
// by its slug.
func (s *Server) getBridgeType(w http.ResponseWriter, r *http.Request) error {
	key := chi.URLParam(r, "id")
	t, ok := platforms.TypeByID(key)
	if !ok {
		t, ok = platforms.TypeBySlug(key)
	}
	if !ok {
		return errNotFound("bridge type")
	}
	writeData(w, http.StatusOK, t)
	return nil
}
