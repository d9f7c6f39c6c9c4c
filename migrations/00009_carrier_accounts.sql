-- +goose Up
-- The pending part of a carrier_a registration (CarrierRegistration
-- workflow): the carrier's session (carriers.RegistrationState, whose
-- accountAuthToken is a bearer secret) sealed with the service key
-- (secrets.Box), so that it never enters Temporal workflow history. One row
-- per account while verification is pending; it is deleted when the
-- registration completes, fails or expires. workflow_run_id names the run
-- that owns the session, so a superseded run cannot use a newer one.
CREATE TABLE carrier_registrations (
    carrier_account_id uuid PRIMARY KEY REFERENCES carrier_accounts (id) ON DELETE CASCADE,
    organization_id    uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workflow_run_id    text NOT NULL,
    state              bytea NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE carrier_registrations;
