package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/locations"
)

// mountLocations registers the location endpoints (spec Part 1, Locations);
// POST /locations/sync/{bridgeId} runs the bridge's warehouse-sync task
// (api/task_executions.go).
func (s *Server) mountLocations(r chi.Router) {
	read := r.With(s.scope("locations:read"))
	write := r.With(s.scope("locations:write"))
	read.Get("/locations", s.h(s.listLocations))
	write.Post("/locations", s.h(s.createLocation))
	read.Get("/locations/{id}", s.h(s.getLocation))
	write.Patch("/locations/{id}", s.h(s.updateLocation))
	write.Delete("/locations/{id}", s.h(s.deleteLocation))
	write.Post("/locations/sync/{bridgeId}", s.h(s.syncLocations))
}

// locationJSON is the Location resource (camelCase); every field present.
type locationJSON struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Street     *string    `json:"street"`
	City       *string    `json:"city"`
	Province   *string    `json:"province"`
	Zip        *string    `json:"zip"`
	Country    *string    `json:"country"`
	BridgeID   *uuid.UUID `json:"bridgeId"`
	ExternalID *string    `json:"externalId"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
}

func toLocationJSON(l locations.Location) locationJSON {
	return locationJSON{
		ID: l.ID, Name: l.Name, Street: l.Street, City: l.City, Province: l.Province, Zip: l.Zip, Country: l.Country,
		BridgeID: l.BridgeID, ExternalID: l.ExternalID, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt,
	}
}

func (s *Server) listLocations(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridgeId")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	page, err := s.Locations.List(r.Context(), actorOf(r), bridgeID, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toLocationJSON), p, page.Total)
	return nil
}

func (s *Server) getLocation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "location")
	if err != nil {
		return err
	}
	l, err := s.Locations.Get(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toLocationJSON(l))
	return nil
}

var locationBodyFields = []string{"name", "street", "city", "province", "zip", "country"}

// decodeLocation reads a create (every field) or update (the fields sent:
// null or "" clears one, name cannot be) body; the domain checks values.
// The rates' Address names are accepted too (locations.Aliases).
func decodeLocation(r *http.Request, create bool) (locations.Input, error) {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return locations.Input{}, err
	}
	for field, aliases := range locations.Aliases {
		if _, sent := body[field]; sent {
			continue
		}
		for _, a := range aliases {
			if val, ok := body[a]; ok {
				body[field] = val
				break
			}
		}
	}
	v := &validator{}
	f := bodyFields{v: v, m: body}
	var in locations.Input
	for _, fd := range []struct {
		key string
		dst **string
	}{{"name", &in.Name}, {"street", &in.Street}, {"city", &in.City}, {"province", &in.Province}, {"zip", &in.Zip}, {"country", &in.Country}} {
		if _, sent := body[fd.key]; sent || create {
			*fd.dst = f.rawText(fd.key)
		}
	}
	if v.ok() {
		return in, nil
	}
	return in, validation(v, in.Validate(create), locationBodyFields...)
}

func (s *Server) createLocation(w http.ResponseWriter, r *http.Request) error {
	in, err := decodeLocation(r, true)
	if err != nil {
		return err
	}
	l, err := s.Locations.Create(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toLocationJSON(l))
	return nil
}

// updateLocation changes the fields sent: a field sent as null or "" is
// cleared (name cannot be).
func (s *Server) updateLocation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "location")
	if err != nil {
		return err
	}
	in, err := decodeLocation(r, false)
	if err != nil {
		return err
	}
	l, err := s.Locations.Update(r.Context(), actorOf(r), id, in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toLocationJSON(l))
	return nil
}

func (s *Server) deleteLocation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "location")
	if err != nil {
		return err
	}
	if err := s.Locations.Delete(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
