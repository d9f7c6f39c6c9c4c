-- +goose Up
-- API key changes that matter to authentication are announced on commit, so
-- that every instance can drop a cached key before its next request (see
-- api/apikey_cache.go). last_used_at changes announce nothing.
-- +goose StatementBegin
CREATE FUNCTION api_keys_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fos_api_key_changes', encode(OLD.key_hash, 'hex'));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER api_keys_notify_change
    AFTER UPDATE OF organization_id, name, key_hash, scopes, expires_at, revoked_at OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify_change();

-- +goose Down
DROP TRIGGER api_keys_notify_change ON api_keys;
DROP FUNCTION api_keys_notify_change();
