package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	creds, err := box.OpenJSON(a.Credentials, CarrierAccountCredentialsAD(a.OrganizationID, a.ID))
	if err != nil {
		return carriers.Account{}, err
	}
	return carriers.Account{ID: a.ID.String(), Carrier: a.Carrier, IsTest: a.IsTest, Credentials: creds}, nil
}

// CarrierAccountStatuses are the account statuses: the specification's
// three, then pending (a carrier_a registration awaiting verification).
var CarrierAccountStatuses = []string{CarrierAccountActive, CarrierAccountInactive, CarrierAccountError, CarrierAccountPending}

// CarrierAccountNumberDigest is the account_number_digest of a carrier
// account number: HMAC-SHA256 of the trimmed number under a key derived
// from the service's key (secrets.Box.Digest), so the 9-digit numbers
// cannot be recovered from the table by hashing every candidate. It finds
// the account a carrier_a registration updates without storing the number
// in clear.
func CarrierAccountNumberDigest(box *secrets.Box, number string) []byte {
	return box.Digest(accountNumberDigestPurpose, strings.TrimSpace(number))
}

const accountNumberDigestPurpose = "carrier account number"

// CarrierAccountFilter narrows ListCarrierAccounts; empty strings do not
// filter.
type CarrierAccountFilter struct {
	Carrier string
	Status  string
	Limit   int
	Offset  int
}

// ListCarrierAccounts returns one page of the organization's accounts,
// newest first, and the total number matching the filter.
func ListCarrierAccounts(ctx context.Context, db DBTX, orgID uuid.UUID, f CarrierAccountFilter) ([]CarrierAccount, int, error) {
	const where = ` FROM carrier_accounts
 WHERE organization_id = $1
   AND ($2 = '' OR carrier = $2)
   AND ($3 = '' OR status = $3)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, f.Carrier, f.Status).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+carrierAccountCols+where+`
 ORDER BY created_at DESC, id DESC
 LIMIT $4 OFFSET $5`, orgID, f.Carrier, f.Status, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[CarrierAccount])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// CreateCarrierAccount inserts an account as given (Credentials sealed by
// the caller). An empty Status means active, a nil Metadata {}. A second
// account with the same AccountNumberDigest of the same carrier in the
// organization is ErrConflict.
func CreateCarrierAccount(ctx context.Context, db DBTX, a CarrierAccount) (CarrierAccount, error) {
	if a.Status == "" {
		a.Status = CarrierAccountActive
	}
	if len(a.Metadata) == 0 {
		a.Metadata = json.RawMessage(`{}`)
	}
	rows, _ := db.Query(ctx, `
INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, account_number_digest,
                              supports_rating, supports_pickup, supports_labels, status, is_test, metadata, last_error)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING `+carrierAccountCols,
		a.ID, a.OrganizationID, a.Name, a.Carrier, a.Credentials, a.AccountNumberDigest,
		a.SupportsRating, a.SupportsPickup, a.SupportsLabels, a.Status, a.IsTest, a.Metadata, a.LastError)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// LockCarrierAccount is CarrierAccountByID with a row lock (SELECT … FOR
// UPDATE), for a read-modify-write of the credentials inside a transaction.
func LockCarrierAccount(ctx context.Context, db DBTX, orgID, id uuid.UUID) (CarrierAccount, error) {
	rows, _ := db.Query(ctx, `SELECT `+carrierAccountCols+` FROM carrier_accounts WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// CarrierAccountPatch holds the fields of an update; nil leaves a field as is.
type CarrierAccountPatch struct {
	Name   *string
	Status *string
	// Metadata replaces the stored object.
	Metadata json.RawMessage
	// Credentials replaces the sealed credentials; AccountNumberDigest is
	// set with them (nil keeps the stored digest).
	Credentials         []byte
	AccountNumberDigest []byte
}

// UpdateCarrierAccount applies a patch and bumps updated_at. A digest taken
// by another account of the organization is ErrConflict.
func UpdateCarrierAccount(ctx context.Context, db DBTX, orgID, id uuid.UUID, p CarrierAccountPatch) (CarrierAccount, error) {
	var md any
	if len(p.Metadata) > 0 {
		md = p.Metadata
	}
	rows, _ := db.Query(ctx, `
UPDATE carrier_accounts
   SET name = coalesce($3, name),
       status = coalesce($4, status),
       metadata = coalesce($5::jsonb, metadata),
       credentials = coalesce($6::bytea, credentials),
       account_number_digest = coalesce($7::bytea, account_number_digest),
       updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+carrierAccountCols, orgID, id, p.Name, p.Status, md, p.Credentials, p.AccountNumberDigest)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// DeleteCarrierAccount deletes an account permanently and returns it as it
// was. Its shipments stay (their carrier_account_id becomes NULL); a
// pending registration's sealed session goes with it.
func DeleteCarrierAccount(ctx context.Context, db DBTX, orgID, id uuid.UUID) (CarrierAccount, error) {
	rows, _ := db.Query(ctx, `DELETE FROM carrier_accounts WHERE organization_id = $1 AND id = $2 RETURNING `+carrierAccountCols, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// RecordCarrierAccountTest records a live credentials test: nil testErr
// makes the account active and clears last_error; otherwise the account
// becomes error with the message kept. A pending account (registration
// under way) is left alone: ErrConflict.
func RecordCarrierAccountTest(ctx context.Context, db DBTX, orgID, id uuid.UUID, testErr *string) (CarrierAccount, error) {
	rows, _ := db.Query(ctx, `
UPDATE carrier_accounts
   SET status = CASE WHEN $3::text IS NULL THEN 'active' ELSE 'error' END,
       last_error = $3::text,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status <> 'pending'
RETURNING `+carrierAccountCols, orgID, id, testErr)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	if errors.Is(mapErr(err), ErrNotFound) {
		if _, err := CarrierAccountByID(ctx, db, orgID, id); err == nil {
			return CarrierAccount{}, fmt.Errorf("%w: carrier account %s is pending registration", ErrConflict, id)
		}
	}
	return out, mapErr(err)
}

// ---- carrier_a registration ----

// RegistrationAccount is the account a carrier_a registration works on.
type RegistrationAccount struct {
	Account CarrierAccount
	// Created: the account was inserted by this call (no account of the
	// organization had the number).
	Created bool
}

// UpsertRegistrationAccount finds the organization's account of
// a.Carrier whose account_number_digest is a.AccountNumberDigest, renaming
// it when rename is set, or else inserts a (status pending). Concurrent
// calls for the same number end on the same row.
func UpsertRegistrationAccount(ctx context.Context, db DBTX, a CarrierAccount, rename bool) (RegistrationAccount, error) {
	if len(a.AccountNumberDigest) == 0 {
		return RegistrationAccount{}, errors.New("store: a registration account needs an account number digest")
	}
	var name *string
	if rename {
		name = &a.Name
	}
	a.Status = CarrierAccountPending
	for range 3 {
		rows, _ := db.Query(ctx, `
UPDATE carrier_accounts
   SET name = coalesce($4, name),
       updated_at = CASE WHEN $4::text IS NULL THEN updated_at ELSE now() END
 WHERE organization_id = $1 AND carrier = $2 AND account_number_digest = $3
RETURNING `+carrierAccountCols, a.OrganizationID, a.Carrier, a.AccountNumberDigest, name)
		existing, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
		if err == nil {
			return RegistrationAccount{Account: existing}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return RegistrationAccount{}, mapErr(err)
		}
		if len(a.Metadata) == 0 {
			a.Metadata = json.RawMessage(`{}`)
		}
		rows, _ = db.Query(ctx, `
INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, account_number_digest,
                              supports_rating, supports_pickup, supports_labels, status, is_test, metadata)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (organization_id, carrier, account_number_digest) WHERE account_number_digest IS NOT NULL DO NOTHING
RETURNING `+carrierAccountCols,
			a.ID, a.OrganizationID, a.Name, a.Carrier, a.Credentials, a.AccountNumberDigest,
			a.SupportsRating, a.SupportsPickup, a.SupportsLabels, a.Status, a.IsTest, a.Metadata)
		created, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
		if err == nil {
			return RegistrationAccount{Account: created, Created: true}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return RegistrationAccount{}, mapErr(err)
		}
		// Another request inserted the number meanwhile: update that row.
	}
	return RegistrationAccount{}, fmt.Errorf("%w: carrier account number is being registered concurrently", ErrConflict)
}

// SaveCarrierRegistration records that the carrier accepted a registration
// and awaits verification: the account becomes pending (is_test set,
// last_error cleared) and its sealed session is stored for the workflow
// run runID, replacing an earlier one. ErrNotFound when the account is gone.
func SaveCarrierRegistration(ctx context.Context, db DBTX, orgID, accountID uuid.UUID, runID string, sealedState []byte, isTest bool) error {
	tag, err := db.Exec(ctx, `
WITH acct AS (
    UPDATE carrier_accounts
       SET status = 'pending', is_test = $5, last_error = NULL, updated_at = now()
     WHERE organization_id = $1 AND id = $2
    RETURNING id, organization_id
)
INSERT INTO carrier_registrations (carrier_account_id, organization_id, workflow_run_id, state)
SELECT id, organization_id, $3, $4 FROM acct
ON CONFLICT (carrier_account_id) DO UPDATE
   SET workflow_run_id = excluded.workflow_run_id, state = excluded.state, updated_at = now()`,
		orgID, accountID, runID, sealedState, isTest)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// CarrierRegistrationState returns the sealed session of the account's
// registration owned by the workflow run runID; ErrNotFound when there is
// none (never registered, completed, expired, or owned by another run).
func CarrierRegistrationState(ctx context.Context, db DBTX, orgID, accountID uuid.UUID, runID string) ([]byte, error) {
	var state []byte
	err := db.QueryRow(ctx, `SELECT state FROM carrier_registrations
 WHERE organization_id = $1 AND carrier_account_id = $2 AND workflow_run_id = $3`, orgID, accountID, runID).Scan(&state)
	return state, mapErr(err)
}

// CompleteCarrierRegistration stores the credentials the carrier issued
// (sealed) and makes the account active with last_error cleared, dropping
// the pending session, in one statement. ErrNotFound when the account is gone.
func CompleteCarrierRegistration(ctx context.Context, db DBTX, orgID, accountID uuid.UUID, sealedCreds []byte, isTest bool) (CarrierAccount, error) {
	rows, _ := db.Query(ctx, `
WITH dropped AS (
    DELETE FROM carrier_registrations WHERE organization_id = $1 AND carrier_account_id = $2
)
UPDATE carrier_accounts
   SET credentials = $3, status = 'active', is_test = $4, last_error = NULL, updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+carrierAccountCols, orgID, accountID, sealedCreds, isTest)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[CarrierAccount])
	return out, mapErr(err)
}

// EndCarrierRegistration closes a registration that did not complete
// (expired, session lost): the session of run runID is dropped and a
// still-pending account becomes error with message as last_error. It
// reports whether the account changed; an account that is gone or no
// longer pending is left as it is.
func EndCarrierRegistration(ctx context.Context, db DBTX, orgID, accountID uuid.UUID, runID, message string) (bool, error) {
	tag, err := db.Exec(ctx, `
WITH dropped AS (
    DELETE FROM carrier_registrations
     WHERE organization_id = $1 AND carrier_account_id = $2 AND workflow_run_id = $3
)
UPDATE carrier_accounts
   SET status = 'error', last_error = $4, updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, accountID, runID, message)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeletePendingCarrierAccount deletes an account that is still pending (a
// registration the carrier refused before the account ever worked). It
// reports whether a row was deleted.
func DeletePendingCarrierAccount(ctx context.Context, db DBTX, orgID, accountID uuid.UUID) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM carrier_accounts WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, accountID)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}
