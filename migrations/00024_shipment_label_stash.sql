-- +goose Up
-- A bought label's documents, kept by the purchase activity the moment the
-- carrier answers, before the answer travels through Temporal: workflow
-- payloads stay small whatever the label's size (Temporal refuses payloads
-- over 2 MB), and a purchase whose activity result is lost (a worker that
-- died after the carrier answered) still finds the label it bought, to void
-- it. Recording the label moves the documents to shipment_labels; deleting
-- the shipment deletes its stash.
CREATE TABLE shipment_label_stash (
    shipment_id      uuid PRIMARY KEY REFERENCES shipments (id) ON DELETE CASCADE,
    organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    tracking_number  text NOT NULL,
    document         bytea NOT NULL,
    piece_documents  bytea[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE shipment_label_stash;
