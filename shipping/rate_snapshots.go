package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Rate snapshots: a quote kept as it was, for later use (spec Part 1).
// Snapshots are immutable: there is no update or delete (the table refuses
// both).

// RateSnapshot is a snapshot as stored.
type RateSnapshot = store.RateSnapshot

// Bounds of a snapshot.
const (
	MaxRatePrice   = 999_999_999_999.99
	MaxRateTransit = 365
)

// RateSnapshotInput is a quote to keep.
type RateSnapshotInput struct {
	CarrierAccountID      uuid.UUID
	Carrier               string
	ServiceType           string
	ServiceName           string
	TotalPrice            *float64
	Currency              string
	ShipFrom, ShipTo      *RateAddress
	Packages              []RatePackage
	Breakdown             json.RawMessage // an array or an object
	TransitDays           *float64        // an integer 0-365
	TransitDaysGuaranteed bool
	EstimatedDelivery     *time.Time
	DeliveryByTime        *string
	// ExpiresAt nil: quoted + store.RateSnapshotTTL; else in the future.
	ExpiresAt   *time.Time
	RawResponse json.RawMessage
}

// Validate names every problem of the snapshot, in the order of its
// fields.
func (in *RateSnapshotInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	if in.CarrierAccountID == uuid.Nil {
		v.Add("carrierAccountId", "is required")
	}
	switch {
	case in.Carrier == "":
		v.Add("carrier", "is required")
	case !containsStatus(carriers.Codes(), in.Carrier):
		v.Add("carrier", "must be one of "+strings.Join(carriers.Codes(), ", "))
	}
	for _, f := range []struct {
		name, val string
		max       int
	}{{"serviceType", in.ServiceType, MaxRateServiceLen}, {"serviceName", in.ServiceName, MaxRateFieldLen}} {
		if strings.TrimSpace(f.val) == "" {
			v.Add(f.name, "is required")
		} else {
			v.MaxLen(f.name, f.val, f.max)
		}
	}
	switch p := in.TotalPrice; {
	case p == nil:
		v.Add("totalPrice", "is required")
	case *p < 0 || *p > MaxRatePrice || math.IsNaN(*p):
		v.Add("totalPrice", fmt.Sprintf("must be between %.10g and %.10g", 0.0, MaxRatePrice))
	}
	switch c := in.Currency; {
	case c == "":
		v.Add("currency", "is required")
	case len([]rune(c)) > 3:
		v.Add("currency", "must be at most 3 characters")
	case len(c) != 3 || !isLetters(c) || strings.ToUpper(c) != c:
		v.Add("currency", "must be an ISO 4217 code (3 uppercase letters)")
	}
	for _, a := range []struct {
		name string
		addr *RateAddress
	}{{"shipFrom", in.ShipFrom}, {"shipTo", in.ShipTo}} {
		if a.addr == nil {
			v.Add(a.name, "is required")
		} else {
			a.addr.Check(&v, a.name)
		}
	}
	CheckPackages(&v, "packages", in.Packages)
	if len(in.Breakdown) > 0 {
		if b := strings.TrimSpace(string(in.Breakdown)); !strings.HasPrefix(b, "[") && !strings.HasPrefix(b, "{") {
			v.Add("breakdown", "must be an array or an object")
		}
	}
	if d := in.TransitDays; d != nil {
		switch {
		case *d != math.Trunc(*d):
			v.Add("transitDays", "must be an integer")
		case *d < 0 || *d > MaxRateTransit:
			v.Add("transitDays", fmt.Sprintf("must be between %.10g and %.10g", 0.0, float64(MaxRateTransit)))
		}
	}
	if in.DeliveryByTime != nil {
		v.MaxLen("deliveryByTime", *in.DeliveryByTime, 50)
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(time.Now()) {
		v.Add("expiresAt", "must be in the future")
	}
	return v
}

// CreateRateSnapshot keeps a quote. The account must be the
// organization's and of the carrier named. The actor needs rates:read
// (the scope of every rate endpoint).
func (s *Service) CreateRateSnapshot(ctx context.Context, actor domain.Actor, in RateSnapshotInput) (RateSnapshot, error) {
	if err := actor.RequireScope("rates:read"); err != nil {
		return RateSnapshot{}, err
	}
	if err := in.Validate().Err(); err != nil {
		return RateSnapshot{}, err
	}
	orgID := actor.OrganizationID
	notOurs := domain.InvalidField("carrierAccountId", "must be a carrier account of this organization")
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, in.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return RateSnapshot{}, notOurs
	}
	if err != nil {
		return RateSnapshot{}, err
	}
	if acct.Carrier != in.Carrier {
		return RateSnapshot{}, domain.InvalidField("carrier", "does not match the carrier account, which is "+acct.Carrier)
	}
	snap := store.RateSnapshot{
		ID: uuid.New(), OrganizationID: orgID, CarrierAccountID: acct.ID, Carrier: acct.Carrier,
		ServiceType: in.ServiceType, ServiceName: in.ServiceName, TotalPrice: *in.TotalPrice, Currency: in.Currency,
		ShipFrom: jsonOf(in.ShipFrom), ShipTo: jsonOf(in.ShipTo), Packages: jsonOf(in.Packages), Breakdown: in.Breakdown,
		TransitDaysGuaranteed: in.TransitDaysGuaranteed, EstimatedDelivery: in.EstimatedDelivery, DeliveryByTime: in.DeliveryByTime,
		RawResponse: in.RawResponse,
	}
	if in.TransitDays != nil {
		d := int(*in.TransitDays)
		snap.TransitDays = &d
	}
	if in.ExpiresAt != nil {
		snap.ExpiresAt = *in.ExpiresAt
	}
	out, err := store.CreateRateSnapshot(ctx, s.store.Pool, snap)
	if errors.Is(err, store.ErrNotFound) { // the account was deleted meanwhile
		return RateSnapshot{}, notOurs
	}
	if store.IsConstraint(err, "rate_snapshots_check") {
		// expiresAt passed between the check above and the database's now().
		return RateSnapshot{}, domain.InvalidField("expiresAt", "must be in the future")
	}
	return out, err
}

// GetRateSnapshot is one snapshot of the organization. The actor needs
// rates:read.
func (s *Service) GetRateSnapshot(ctx context.Context, actor domain.Actor, id uuid.UUID) (RateSnapshot, error) {
	if err := actor.RequireScope("rates:read"); err != nil {
		return RateSnapshot{}, err
	}
	snap, err := store.RateSnapshotByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return snap, domain.NotFound("rate snapshot")
	}
	return snap, err
}
