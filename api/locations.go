package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/store"
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

// locationMaxLen bounds every location text field (the specification
// gives none).
const locationMaxLen = 255

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

func toLocationJSON(l store.Location) locationJSON {
	return locationJSON{
		ID: l.ID, Name: l.Name, Street: l.Street, City: l.City, Province: l.Province, Zip: l.Zip, Country: l.Country,
		BridgeID: l.BridgeID, ExternalID: l.ExternalID, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt,
	}
}

// locationTextFields are the optional text fields of create and update.
var locationTextFields = []string{"street", "city", "province", "zip", "country"}

func (s *Server) listLocations(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridgeId")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := store.ListLocations(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, store.LocationFilter{
		BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toLocationJSON), p, total)
	return nil
}

func (s *Server) getLocation(w http.ResponseWriter, r *http.Request) error {
	return writeByID(s, w, r, "location", store.LocationByID, toLocationJSON)
}

func (s *Server) createLocation(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	l := store.Location{ID: uuid.New(), OrganizationID: mustPrincipal(r).OrganizationID}
	l.Name = deref(f.str("name", true, locationMaxLen))
	l.Street = f.str("street", false, locationMaxLen)
	l.City = f.str("city", false, locationMaxLen)
	l.Province = f.str("province", false, locationMaxLen)
	l.Zip = f.str("zip", false, locationMaxLen)
	l.Country = f.str("country", false, locationMaxLen)
	if err := v.err(); err != nil {
		return err
	}
	out, err := store.CreateLocation(r.Context(), s.store.Pool, l)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toLocationJSON(out))
	return nil
}

// updateLocation changes the fields sent: a field sent as null or "" is
// cleared (name cannot be).
func (s *Server) updateLocation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "location")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	var patch store.LocationPatch
	if _, sent := body["name"]; sent {
		patch.Name = f.str("name", true, locationMaxLen)
	}
	fields := map[string]*store.LocationField{
		"street": &patch.Street, "city": &patch.City, "province": &patch.Province, "zip": &patch.Zip, "country": &patch.Country,
	}
	for _, k := range locationTextFields {
		if _, sent := body[k]; sent {
			*fields[k] = store.LocationField{Set: true, Value: f.str(k, false, locationMaxLen)}
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	out, err := store.UpdateLocation(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id, patch)
	if err != nil {
		return notFoundAs(err, "location")
	}
	writeData(w, http.StatusOK, toLocationJSON(out))
	return nil
}

func (s *Server) deleteLocation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "location")
	if err != nil {
		return err
	}
	err = store.DeleteLocation(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "location")
	}
	writeSuccess(w)
	return nil
}
