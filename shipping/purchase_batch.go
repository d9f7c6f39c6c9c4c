package shipping

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
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
	mu       sync.Mutex
	accounts map[uuid.UUID]*batchAccount
	origins  map[uuid.UUID]*batchOrigin // by bridge (uuid.Nil: none)
}

type batchAccount struct {
	once    sync.Once
	acct    store.CarrierAccount
	err     error
	adapter carriers.Carrier
	creds   carriers.Account
	openErr error
}

type batchOrigin struct {
	once sync.Once
	addr Address
	err  error
}

// account is the carrier account of the organization named by a field, as
// activeAccount answers (read once per batch; an error is not kept).
func (b *PurchaseBatch) account(ctx context.Context, s *Service, orgID, id uuid.UUID, field string) (store.CarrierAccount, error) {
	if b == nil {
		return s.activeAccount(ctx, orgID, id, field)
	}
	e := b.accountEntry(ctx, s, orgID, id)
	if e.err != nil {
		b.forget(id)
		return e.acct, e.err
	}
	if e.acct.Status != store.CarrierAccountActive {
		return e.acct, accountNotActive(e.acct)
	}
	return e.acct, nil
}

func (b *PurchaseBatch) accountEntry(ctx context.Context, s *Service, orgID, id uuid.UUID) *batchAccount {
	b.mu.Lock()
	if b.accounts == nil {
		b.accounts = map[uuid.UUID]*batchAccount{}
	}
	e := b.accounts[id]
	if e == nil {
		e = &batchAccount{}
		b.accounts[id] = e
	}
	b.mu.Unlock()
	e.once.Do(func() {
		e.acct, e.err = s.activeAccountRow(ctx, orgID, id, "carrier_account_id")
		if e.err == nil {
			e.adapter, e.creds, e.openErr = s.adapterOf(e.acct, true)
		}
	})
	return e
}

func (b *PurchaseBatch) forget(id uuid.UUID) {
	b.mu.Lock()
	delete(b.accounts, id)
	b.mu.Unlock()
}

// adapter is accountAdapter (active) of an account the batch read.
func (b *PurchaseBatch) adapter(ctx context.Context, s *Service, orgID, id uuid.UUID) (carriers.Carrier, carriers.Account, error) {
	if b == nil {
		return s.accountAdapter(ctx, orgID, id, true)
	}
	e := b.accountEntry(ctx, s, orgID, id)
	if e.err != nil {
		b.forget(id)
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
	b.mu.Lock()
	if b.origins == nil {
		b.origins = map[uuid.UUID]*batchOrigin{}
	}
	e := b.origins[key]
	if e == nil {
		e = &batchOrigin{}
		b.origins[key] = e
	}
	b.mu.Unlock()
	e.once.Do(func() { e.addr, e.err = s.defaultShipFrom(ctx, orgID, bridgeID) })
	if e.err != nil {
		b.mu.Lock()
		delete(b.origins, key)
		b.mu.Unlock()
	}
	return e.addr, e.err
}
