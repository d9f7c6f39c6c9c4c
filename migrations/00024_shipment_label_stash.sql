-- +goose Up
-- A bought label's documents, kept by the purchase activity the moment the
-- carrier answers, before the answer travels through Temporal: workflow
-- payloads stay small whatever the label's size (Temporal refuses payloads
-- over 2 MB), and a purchase whose activity result is lost (a worker that
-- died after the carrier answered) still finds the label it bought, to void
-- it; a purchase started again for the same shipment (a reset run) records
-- the stashed label instead of buying a second one. Recording the label
-- moves the documents to shipment_labels; voiding the label or deleting the
-- shipment deletes its stash; a shipment that ends as exception keeps it
-- (the trace of a label bought and not voided).
CREATE TABLE shipment_label_stash (
    shipment_id      uuid PRIMARY KEY REFERENCES shipments (id) ON DELETE CASCADE,
    organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    tracking_number  text NOT NULL,
    label            json NOT NULL, -- the label's facts (store.ShipmentLabelDoc without documents), kept as written
    document         bytea NOT NULL,
    piece_documents  bytea[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE shipment_label_stash;
