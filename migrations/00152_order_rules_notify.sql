-- +goose Up
-- Every change of what decides whether an order rule (split rule, dispatcher,
-- the embed default dispatcher, an agent standing order) applies to a new
-- order NOTIFYs fos_order_rule_changes with the organization's id on
-- commit, so a process that keeps these facts in memory
-- (store.CreateOrderProbed) forgets them before its next order create
-- (store.Listener). Only the columns the facts read fire it: the rules'
-- counters (orders_split, orders_assigned, last_*_at) do not.
-- +goose StatementBegin
CREATE FUNCTION order_rules_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('fos_order_rule_changes', OLD.organization_id::text);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.organization_id IS DISTINCT FROM OLD.organization_id) THEN
        PERFORM pg_notify('fos_order_rule_changes', NEW.organization_id::text);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER split_rules_notify_order_rules
    AFTER INSERT OR DELETE OR UPDATE OF organization_id, bridge_id, is_active ON split_rules
    FOR EACH ROW EXECUTE FUNCTION order_rules_notify_change();
CREATE TRIGGER dispatchers_notify_order_rules
    AFTER INSERT OR DELETE OR UPDATE OF organization_id, source_bridge_ids, destination_bridge_id, trigger_on, is_active ON dispatchers
    FOR EACH ROW EXECUTE FUNCTION order_rules_notify_change();
CREATE TRIGGER embed_configs_notify_order_rules
    AFTER INSERT OR DELETE OR UPDATE OF organization_id, default_dispatcher_id ON embed_configs
    FOR EACH ROW EXECUTE FUNCTION order_rules_notify_change();
CREATE TRIGGER agent_standing_orders_notify_order_rules
    AFTER INSERT OR DELETE OR UPDATE OF organization_id, trigger_type, is_active ON agent_standing_orders
    FOR EACH ROW EXECUTE FUNCTION order_rules_notify_change();
-- A bridge's end user makes the embed default dispatcher apply to its
-- orders. (A bridge no order was created for yet has no facts to forget.)
CREATE TRIGGER bridges_notify_order_rules
    AFTER UPDATE OF organization_id, end_user_id ON bridges
    FOR EACH ROW EXECUTE FUNCTION order_rules_notify_change();

-- +goose Down
DROP TRIGGER bridges_notify_order_rules ON bridges;
DROP TRIGGER agent_standing_orders_notify_order_rules ON agent_standing_orders;
DROP TRIGGER embed_configs_notify_order_rules ON embed_configs;
DROP TRIGGER dispatchers_notify_order_rules ON dispatchers;
DROP TRIGGER split_rules_notify_order_rules ON split_rules;
DROP FUNCTION order_rules_notify_change();
