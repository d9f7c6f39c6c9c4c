package shipping

import (
	"context"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/internal/oncemap"
	"github.com/fos-dev/fos/store"
)

// PurchaseBatch is what the label purchases of one batch (an operation's
// batch activity, PurchaseLabelInput.Batch) share: each carrier account,
// with its adapter and opened credentials, and each ship-from origin is
// read once per batch instead of once per label. It sees a change of an
// account or a location made while the batch runs at the next batch (a
// batch lasts seconds). The zero value is ready; it is safe for concurrent
// use.
type PurchaseBatch struct {
	// accounts and origins (by bridge, uuid.Nil: none) are read once per
	// batch; a failed read is not kept.
	accounts oncemap.Map[uuid.UUID, batchAccount]
	origins  oncemap.Map[uuid.UUID, Address]
}

// batchAccount is an account the batch read, with its adapter opened (or
// why it could not be).
type batchAccount struct {
	acct    store.CarrierAccount
	adapter carriers.Carrier
	creds   carriers.Account
	openErr error
}

// account is the carrier account of the organization named by a field, as
// activeAccount answers (read once per batch; an error is not kept).
func (b *PurchaseBatch) account(ctx context.Context, s *Service, orgID, id uuid.UUID, field string) (store.CarrierAccount, error) {
	if b == nil {
		return s.activeAccount(ctx, orgID, id, field)
	}
	e, err := b.accountEntry(ctx, s, orgID, id)
	if err != nil {
		return e.acct, err
	}
	if e.acct.Status != store.CarrierAccountActive {
		return e.acct, accountNotActive(e.acct)
	}
	return e.acct, nil
}

func (b *PurchaseBatch) accountEntry(ctx context.Context, s *Service, orgID, id uuid.UUID) (batchAccount, error) {
	return b.accounts.Get(id, func() (batchAccount, error) {
		e := batchAccount{}
		var err error
		if e.acct, err = s.activeAccountRow(ctx, orgID, id, "carrier_account_id"); err != nil {
			return e, err
		}
		e.adapter, e.creds, e.openErr = s.adapterOf(e.acct, true)
		return e, nil
	})
}

// adapter is accountAdapter (active) of an account the batch read.
func (b *PurchaseBatch) adapter(ctx context.Context, s *Service, orgID, id uuid.UUID) (carriers.Carrier, carriers.Account, error) {
	if b == nil {
		return s.accountAdapter(ctx, orgID, id, true)
	}
	e, err := b.accountEntry(ctx, s, orgID, id)
	if err != nil {
		return s.accountAdapter(ctx, orgID, id, true)
	}
	if e.openErr != nil {
		return nil, carriers.Account{}, e.openErr
	}
	return e.adapter, e.creds, nil
}

// origin is defaultShipFrom of the bridge (read once per batch; an error
// is not kept).
func (b *PurchaseBatch) origin(ctx context.Context, s *Service, orgID uuid.UUID, bridgeID *uuid.UUID) (Address, error) {
	if b == nil {
		return s.defaultShipFrom(ctx, orgID, bridgeID)
	}
	key := uuid.Nil
	if bridgeID != nil {
		key = *bridgeID
	}
	return b.origins.Get(key, func() (Address, error) { return s.defaultShipFrom(ctx, orgID, bridgeID) })
}
