package store

import (
	"context"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// orderRulesChannel is the NOTIFY channel on which migration 00152's
// triggers (orderRulesTriggers) announce, with the organization's id, every
// change of what CreateOrderProbeEvents' questions read.
const orderRulesChannel = "fos_order_rule_changes"

var orderRulesTriggers = []string{
	"split_rules_notify_order_rules", "dispatchers_notify_order_rules", "embed_configs_notify_order_rules",
	"agent_standing_orders_notify_order_rules", "bridges_notify_order_rules",
}

// orderProbeCacheMax bounds the cache (answers of all organizations); past
// it the cache starts over.
const orderProbeCacheMax = 10_000

// CreateOrderProbed is CreateOrderProbeEvents with its answers kept in
// memory per organization, bridge, trigger and event: once an
// organization's answers are known, a create is the plain insert
// (CreateOrder), which spares PostgreSQL the questions' reads of the rule
// tables. The answers are exactly as fresh as the questions' (every change
// committed before the request arrived counts; internal/arrival), on
// every process and replica:
//
//   - migration 00152's triggers NOTIFY orderRulesChannel with the
//     organization on every change that can alter an answer (a rule,
//     dispatcher or standing order created, deleted, (de)activated or
//     re-scoped; the embed default dispatcher or a bridge's end user set);
//     the pool's Listener evicts the organization's answers when it hears
//     one;
//   - a kept answer is used only after Listener.Fresh, a round trip on the
//     listening connection that began after the request arrived (the one
//     the API key's authentication already waited for, when it did), by
//     when every change committed before the request has been heard;
//   - an answer the statement gives is kept only if nothing was heard
//     while it ran and the listener is live; without the triggers, or while
//     the listening connection is down, every create asks the questions.
//
// A change committed while the request runs, after that round trip began,
// is seen by the next request (the questions in the insert see one
// committed before the statement's snapshot): the two were concurrent.
func CreateOrderProbed(ctx context.Context, pool *pgxpool.Pool, o Order, trigger, event string) (Order, OrderProbe, error) {
	c := orderProbeCacheFor(pool)
	key := orderProbeKey{trigger: trigger, event: event}
	if o.BridgeID != nil {
		key.bridge = *o.BridgeID
	}
	p, ok, err := c.get(ctx, o.OrganizationID, key)
	if err != nil {
		return Order{}, OrderProbe{}, err
	}
	if ok {
		created, err := CreateOrder(ctx, pool, o)
		if err != nil {
			return Order{}, OrderProbe{}, err
		}
		return created, p, nil
	}
	seq := c.mark()
	created, p, err := CreateOrderProbeEvents(ctx, pool, o, trigger, event)
	if err != nil {
		return Order{}, OrderProbe{}, err
	}
	c.put(seq, o.OrganizationID, key, p)
	return created, p, nil
}

type orderProbeKey struct {
	bridge         uuid.UUID // uuid.Nil: no bridge
	trigger, event string
}

// orderProbeCache keeps CreateOrderProbeEvents' answers of a pool.
type orderProbeCache struct {
	listener  *Listener
	subscribe sync.Once
	sub       *Subscription

	mu   sync.Mutex
	live bool
	seq  uint64
	n    int
	orgs map[uuid.UUID]map[orderProbeKey]OrderProbe
}

var orderProbeCaches sync.Map // *pgxpool.Pool -> *orderProbeCache

func orderProbeCacheFor(pool *pgxpool.Pool) *orderProbeCache {
	if c, ok := orderProbeCaches.Load(pool); ok {
		return c.(*orderProbeCache)
	}
	c, _ := orderProbeCaches.LoadOrStore(pool, &orderProbeCache{listener: ListenerOf(pool), orgs: map[uuid.UUID]map[orderProbeKey]OrderProbe{}})
	return c.(*orderProbeCache)
}

// get is the kept answer, once Fresh.
func (c *orderProbeCache) get(ctx context.Context, org uuid.UUID, key orderProbeKey) (OrderProbe, bool, error) {
	c.subscribe.Do(func() { c.sub = c.listener.Subscribe(orderRulesChannel, orderRulesTriggers, c) })
	// The first create waits for the listener (once per process).
	select {
	case <-c.sub.Ready():
	case <-ctx.Done():
		return OrderProbe{}, false, ctx.Err()
	}
	c.mu.Lock()
	_, hit := c.orgs[org][key]
	hit = hit && c.live
	c.mu.Unlock()
	if !hit {
		return OrderProbe{}, false, nil
	}
	fresh, err := c.listener.Fresh(ctx)
	if err != nil || !fresh {
		return OrderProbe{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, still := c.orgs[org][key]
	return p, still && c.live, nil
}

// mark is what put needs to know whether anything was heard meanwhile.
func (c *orderProbeCache) mark() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// put keeps an answer the statement gave, unless something was heard
// since mark.
func (c *orderProbeCache) put(seq uint64, org uuid.UUID, key orderProbeKey, p OrderProbe) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.seq != seq {
		return
	}
	if c.n >= orderProbeCacheMax {
		clear(c.orgs)
		c.n = 0
	}
	m := c.orgs[org]
	if m == nil {
		m = map[orderProbeKey]OrderProbe{}
		c.orgs[org] = m
	}
	if _, had := m[key]; !had {
		c.n++
	}
	m[key] = p
}

// Notified forgets an organization's answers (every answer when the
// payload is not an organization id).
func (c *orderProbeCache) Notified(payload string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if org, err := uuid.Parse(payload); err == nil {
		c.n -= len(c.orgs[org])
		delete(c.orgs, org)
		return
	}
	clear(c.orgs)
	c.n = 0
}

// Live: the listener is up or down; either way the cache starts over.
func (c *orderProbeCache) Live(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.seq++
	clear(c.orgs)
	c.n = 0
}
