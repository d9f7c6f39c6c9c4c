// Package locations holds the locations domain: an organization's ship-from
// places (warehouses), created by hand or synced from a bridge. The API's
// handlers and the agent's tools call the one Service.
package locations

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Location is a ship-from place (store row).
type Location = store.Location

// MaxLen bounds every location text field (the specification gives none).
const MaxLen = 255

// Scopes of locations (Part 1).
const (
	ScopeRead  = "locations:read"
	ScopeWrite = "locations:write"
)

// Service is the locations domain's operations.
type Service struct{ store *store.Store }

// New builds the Service over the store.
func New(st *store.Store) *Service { return &Service{store: st} }

// Page is one page of locations and the number of all that match.
type Page struct {
	Items []Location
	Total int
}

// List lists the organization's locations (of one bridge when bridgeID is
// set). The actor needs locations:read.
func (s *Service) List(ctx context.Context, actor domain.Actor, bridgeID *uuid.UUID, limit, offset int) (Page, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Page{}, err
	}
	list, total, err := store.ListLocations(ctx, s.store.Pool, actor.OrganizationID, store.LocationFilter{BridgeID: bridgeID, Limit: limit, Offset: offset})
	return Page{Items: list, Total: total}, err
}

// Get is one location of the organization. The actor needs
// locations:read.
func (s *Service) Get(ctx context.Context, actor domain.Actor, id uuid.UUID) (Location, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Location{}, err
	}
	l, err := store.LocationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return l, notFound(err)
}

// Aliases are the other names an address field of a location is accepted
// under, so that the rates' Address (the service's canonical address:
// address1, provinceCode, zip, countryCode; shipping/address.go) and the
// names other sources use can be sent as they are. A field sent under its
// own name wins over its aliases; of several aliases, the first listed.
var Aliases = map[string][]string{
	"street":   {"address1", "street1", "address_1", "line1", "addressLine1", "address_line1"},
	"province": {"provinceCode", "province_code", "state", "stateCode", "state_code", "region"},
	"zip":      {"postalCode", "postal_code", "zipCode", "zip_code", "postcode"},
	"country":  {"countryCode", "country_code"},
}

// Input creates or changes a location. A nil field is not sent: on
// create Name is then missing, on update it stays. Every value is trimmed;
// "" clears an address field (a name cannot be cleared).
type Input struct {
	Name                                 *string
	Street, City, Province, Zip, Country *string
}

// fields are the input's address fields by name, in the API's order.
func (in *Input) fields() []struct {
	name  string
	value *string
} {
	return []struct {
		name  string
		value *string
	}{{"street", in.Street}, {"city", in.City}, {"province", in.Province}, {"zip", in.Zip}, {"country", in.Country}}
}

// Validate names the input's problems.
func (in Input) Validate(create bool) domain.FieldErrors {
	_, v := in.patch(create)
	return v
}

func (in Input) patch(create bool) (store.LocationPatch, domain.FieldErrors) {
	var v domain.FieldErrors
	var p store.LocationPatch
	if create || in.Name != nil {
		name := strings.TrimSpace(deref(in.Name))
		if name == "" {
			v.Add("name", "is required")
		} else if v.MaxLen("name", name, MaxLen); !v.Has("name") {
			p.Name = &name
		}
	}
	dst := []*store.LocationField{&p.Street, &p.City, &p.Province, &p.Zip, &p.Country}
	for i, f := range in.fields() {
		if !create && f.value == nil {
			continue
		}
		field := store.LocationField{Set: true}
		if text := strings.TrimSpace(deref(f.value)); text != "" {
			if v.MaxLen(f.name, text, MaxLen); !v.Has(f.name) {
				field.Value = &text
			}
		}
		*dst[i] = field
	}
	return p, v
}

// Create creates a location. The actor needs locations:write.
func (s *Service) Create(ctx context.Context, actor domain.Actor, in Input) (Location, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Location{}, err
	}
	p, v := in.patch(true)
	if err := v.Err(); err != nil {
		return Location{}, err
	}
	return store.CreateLocation(ctx, s.store.Pool, Location{ID: uuid.New(), OrganizationID: actor.OrganizationID, Name: *p.Name,
		Street: p.Street.Value, City: p.City.Value, Province: p.Province.Value, Zip: p.Zip.Value, Country: p.Country.Value})
}

// Update changes the fields sent. The actor needs locations:write.
func (s *Service) Update(ctx context.Context, actor domain.Actor, id uuid.UUID, in Input) (Location, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Location{}, err
	}
	p, v := in.patch(false)
	if err := v.Err(); err != nil {
		return Location{}, err
	}
	l, err := store.UpdateLocation(ctx, s.store.Pool, actor.OrganizationID, id, p)
	return l, notFound(err)
}

// Delete deletes a location. The actor needs locations:write.
func (s *Service) Delete(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	return notFound(store.DeleteLocation(ctx, s.store.Pool, actor.OrganizationID, id))
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound("location")
	}
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
