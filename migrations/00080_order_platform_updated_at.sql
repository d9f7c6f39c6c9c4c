-- +goose Up
-- The platform's updated_at of the copy an order was last written from:
-- a platform write older than it (an earlier fetch that commits later)
-- leaves the order as it is.
ALTER TABLE orders ADD COLUMN platform_updated_at timestamptz;

-- +goose Down
ALTER TABLE orders DROP COLUMN platform_updated_at;
