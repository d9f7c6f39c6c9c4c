package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/embed"
)

// An organization's end users and their events (embed.Service).

// endUserJSON is the end user resource; bridge_count in lists, bridges in
// the detail.
type endUserJSON struct {
	ID             uuid.UUID      `json:"id"`
	OrganizationID uuid.UUID      `json:"organization_id"`
	ExternalID     string         `json:"external_id"`
	Name           *string        `json:"name"`
	Email          *string        `json:"email"`
	Metadata       map[string]any `json:"metadata"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

// endUserListJSON is an end user of the list.
type endUserListJSON struct {
	endUserJSON
	BridgeCount int `json:"bridge_count"`
}

// endUserDetailJSON is an end user with their bridges.
type endUserDetailJSON struct {
	endUserJSON
	Bridges []embed.Bridge `json:"bridges"`
}

func toEndUserJSON(u embed.EndUser) endUserJSON {
	return endUserJSON{ID: u.ID, OrganizationID: u.OrganizationID, ExternalID: u.ExternalID, Name: u.Name, Email: u.Email,
		Metadata: u.Metadata, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

func (s *Server) listEndUsers(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	list, total, err := s.Embed.ListEndUsers(r.Context(), actorOf(r), p.Limit, p.Offset())
	if err != nil {
		return err
	}
	out := make([]endUserListJSON, 0, len(list))
	for _, u := range list {
		out = append(out, endUserListJSON{toEndUserJSON(u.EndUser), u.BridgeCount})
	}
	writeList(w, out, p, total)
	return nil
}

func (s *Server) getEndUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "end user")
	if err != nil {
		return err
	}
	d, err := s.Embed.GetEndUser(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	j := endUserDetailJSON{toEndUserJSON(d.EndUser), make([]embed.Bridge, 0, len(d.Bridges))}
	for _, b := range d.Bridges {
		j.Bridges = append(j.Bridges, s.Embed.ToBridge(b, &d.ID, false))
	}
	writeData(w, http.StatusOK, j)
	return nil
}

func (s *Server) deleteEndUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "end user")
	if err != nil {
		return err
	}
	if err := s.Embed.DeleteEndUser(s.embedCtx(r), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// eventJSON is an event log entry.
type eventJSON struct {
	ID           uuid.UUID      `json:"id"`
	EndUserID    *uuid.UUID     `json:"end_user_id"`
	SessionID    *uuid.UUID     `json:"session_id"`
	EventType    string         `json:"event_type"`
	ResourceType *string        `json:"resource_type"`
	ResourceID   *string        `json:"resource_id"`
	Metadata     map[string]any `json:"metadata"`
	IPAddress    *string        `json:"ip_address"`
	CreatedAt    time.Time      `json:"created_at"`
}

func (s *Server) listEmbedEvents(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 50, 100)
	if err != nil {
		return err
	}
	typ, err := queryEnum(r, "event_type", embed.EventTypes...)
	if err != nil {
		return err
	}
	eu, err := queryUUID(r, "end_user_id")
	if err != nil {
		return err
	}
	from, err := queryTime(r, "from")
	if err != nil {
		return err
	}
	to, err := queryTime(r, "to")
	if err != nil {
		return err
	}
	list, total, err := s.Embed.ListEvents(r.Context(), actorOf(r), embed.EventFilter{
		EventType: typ, EndUserID: eu, From: from, To: to, Limit: p.Limit, Offset: p.Offset()})
	if err != nil {
		return err
	}
	out := make([]eventJSON, 0, len(list))
	for _, e := range list {
		out = append(out, eventJSON{ID: e.ID, EndUserID: e.EndUserID, SessionID: e.SessionID, EventType: e.EventType,
			ResourceType: e.ResourceType, ResourceID: e.ResourceID, Metadata: e.Metadata, IPAddress: e.IPAddress, CreatedAt: e.CreatedAt})
	}
	writeList(w, out, p, total)
	return nil
}
