package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/secrets"
)

// Carrier account statuses. "pending" is the state between carrier_a
// registration and a successful MFA verification.
const (
	CarrierAccountActive   = "active"
	CarrierAccountInactive = "inactive"
	CarrierAccountError    = "error"
	CarrierAccountPending  = "pending"
)

// CarrierAccount is an organization's account with a carrier. Credentials
// are sealed (secrets.Box.SealJSON); open them with AdapterAccount.
type CarrierAccount struct {
	ID                  uuid.UUID       `db:"id"`
	OrganizationID      uuid.UUID       `db:"organization_id"`
	Name                string          `db:"name"`
	Carrier             string          `db:"carrier"`
	Credentials         []byte          `db:"credentials"`
	AccountNumberDigest []byte          `db:"account_number_digest"`
	SupportsRating      bool            `db:"supports_rating"`
	SupportsPickup      bool            `db:"supports_pickup"`
	SupportsLabels      bool            `db:"supports_labels"`
	Status              string          `db:"status"`
	IsTest              bool            `db:"is_test"`
	Metadata            json.RawMessage `db:"metadata"`
	LastError           *string         `db:"last_error"`
	CreatedAt           time.Time       `db:"created_at"`
	UpdatedAt           time.Time       `db:"updated_at"`
}

const carrierAccountCols = `id, organization_id, name, carrier, credentials, account_number_digest,
supports_rating, supports_pickup, supports_labels, status, is_test, metadata, last_error, created_at, updated_at`

// CarrierAccountByID finds an account of the organization.
func CarrierAccountByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (CarrierAccount, error) {
	rows, _ := db.Query(ctx, `SELECT `+carrierAccountCols+` FROM carrier_accounts WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// ActiveCarrierAccounts lists the organization's active accounts, oldest
// first, optionally of one carrier ("" for all).
func ActiveCarrierAccounts(ctx context.Context, db DBTX, orgID uuid.UUID, carrier string) ([]CarrierAccount, error) {
	rows, _ := db.Query(ctx, `SELECT `+carrierAccountCols+` FROM carrier_accounts
 WHERE organization_id = $1 AND status = 'active' AND ($2 = '' OR carrier = $2)
 ORDER BY created_at, id`, orgID, carrier)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// AdapterAccount opens the account's credentials for a carrier adapter.
// The result holds secrets: never log it (its String method redacts).
func AdapterAccount(box *secrets.Box, a CarrierAccount) (carriers.Account, error) {
	creds, err := box.OpenJSON(a.Credentials)
	if err != nil {
		return carriers.Account{}, err
	}
	return carriers.Account{ID: a.ID.String(), Carrier: a.Carrier, IsTest: a.IsTest, Credentials: creds}, nil
}
