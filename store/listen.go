package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fos-dev/fos/internal/arrival"
)

// A Listener keeps one connection of a pool LISTENing on the channels its
// subscribers name (the in-process caches that a table's trigger keeps
// fresh: API keys, the order rules' facts), hands each notification to its
// subscriber, and runs the shared round trips (Fresh) by which a cache
// knows it has heard of every change committed before a request arrived:
//
//   - PostgreSQL sends a listening session the notifications committed
//     before a command ahead of that command's answer, so once a round trip
//     on the connection that began after the request arrived is answered,
//     every change committed before the request has reached its
//     subscriber. Concurrent requests share one such round trip (an empty
//     query); a request that already waited for one (its API key) does
//     not wait again for its order's rules;
//   - a subscriber is live only while its channel is listened to on a
//     connected connection and its trigger exists: a lost connection makes
//     every subscriber start over (Live(false)), and a cache then reads its
//     table until the connection is back (Live(true), after LISTEN).
//
// There is one Listener (and one connection) per pool (ListenerOf).
type Listener struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	started bool
	subs    []*Subscription
	live    bool         // connected
	lastOK  time.Time    // when the newest round trip that succeeded began
	rounds  uint64       // round trips run (tests)
	next    *listenRound // the round trip the next waiter waits for (not yet begun)
	running *listenRound // the round trip on the wire
	wake    chan struct{}
	pending bool // a subscription waits for its LISTEN
}

// Subscriber is told a channel's notifications, and when they may have
// been missed.
type Subscriber interface {
	// Notified is a notification's payload. It runs on the listener's
	// goroutine, before the round trip that read it is answered.
	Notified(payload string)
	// Live(false): notifications may be missed from now on (the connection
	// is lost); Live(true): the channel is listened to again (or for the
	// first time), and every later change is told. Either way what was
	// heard before may be stale.
	Live(live bool)
}

// Subscription is one subscriber of a Listener.
type Subscription struct {
	channel   string
	triggers  []string
	sub       Subscriber
	listening bool // LISTEN ran on the current connection and the trigger exists
	ready     chan struct{}
	readyOnce sync.Once
}

// Ready is closed once the first attempt to listen for the subscription is
// over (whether or not it is live).
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

func (s *Subscription) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// listenRound is one shared round trip of the listener connection.
type listenRound struct {
	began time.Time // when it was sent (set once, under the Listener's mu)
	done  chan struct{}
	ok    bool
}

const (
	// listenTimeout bounds one round trip of the listener connection;
	// past it the subscribers are not trusted until the connection is back.
	listenTimeout = 2 * time.Second
	// listenDrainEvery reads pending notifications while no request asks
	// (and retries a subscription whose trigger was missing).
	listenDrainEvery = 5 * time.Second
)

var listeners sync.Map // *pgxpool.Pool -> *Listener

// ListenerOf is the pool's Listener.
func ListenerOf(pool *pgxpool.Pool) *Listener {
	if l, ok := listeners.Load(pool); ok {
		return l.(*Listener)
	}
	l, _ := listeners.LoadOrStore(pool, &Listener{pool: pool, wake: make(chan struct{}, 1)})
	return l.(*Listener)
}

// Subscribe tells sub the notifications of channel, which the named
// triggers send (without every one of them, enabled, the subscription is
// not live: a change would go untold).
func (l *Listener) Subscribe(channel string, triggers []string, sub Subscriber) *Subscription {
	s := &Subscription{channel: channel, triggers: triggers, sub: sub, ready: make(chan struct{})}
	l.mu.Lock()
	l.subs = append(l.subs, s)
	l.pending = true
	if !l.started {
		l.started = true
		go l.run()
	}
	l.mu.Unlock()
	l.poke()
	return s
}

func (l *Listener) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Fresh waits until every change committed before the request arrived
// (internal/arrival; else before Fresh was called) has been told to the
// subscribers: it returns at once when a round trip that began since has
// been answered, else it waits for one that began since (the one on the
// wire, or the next). false: the connection failed (a subscriber is then
// no longer live).
func (l *Listener) Fresh(ctx context.Context) (bool, error) {
	since, ok := arrival.Of(ctx)
	if !ok {
		since = time.Now()
	}
	l.mu.Lock()
	if !l.live {
		l.mu.Unlock()
		return false, nil
	}
	if l.lastOK.After(since) {
		l.mu.Unlock()
		return true, nil
	}
	// The round trip on the wire serves when it was sent after the
	// request arrived; else the next one, which begins after this call.
	round := l.running
	if round == nil || !round.began.After(since) {
		if round = l.next; round == nil {
			round = &listenRound{done: make(chan struct{})}
			l.next = round
		}
		l.poke()
	}
	l.mu.Unlock()
	select {
	case <-round.done:
		return round.ok, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// run keeps the listener connection.
func (l *Listener) run() {
	backoff := 100 * time.Millisecond
	for {
		conn, err := l.connect()
		if err != nil {
			l.mu.Lock()
			subs := l.subs
			l.mu.Unlock()
			for _, s := range subs { // nobody waits for a connection that is not coming
				s.markReady()
			}
			time.Sleep(backoff)
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		l.mu.Lock()
		l.live = true
		l.pending = true // every subscription listens on the new connection
		l.mu.Unlock()
		l.serve(conn)
		l.down()
		ctx, cancel := context.WithTimeout(context.Background(), listenTimeout)
		_ = conn.Close(ctx)
		cancel()
	}
}

// down marks the connection lost: every subscriber starts over and the
// waiting round trip fails.
func (l *Listener) down() {
	l.mu.Lock()
	l.live = false
	l.lastOK = time.Time{}
	var lost []*Subscription
	for _, s := range l.subs {
		if s.listening {
			s.listening = false
			lost = append(lost, s)
		}
	}
	if l.next != nil {
		close(l.next.done)
		l.next = nil
	}
	l.mu.Unlock()
	for _, s := range lost {
		s.sub.Live(false)
	}
}

func (l *Listener) connect() (*pgx.Conn, error) {
	cfg := l.pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // its round trips are not the requests' statements
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		l.mu.Lock()
		subs := l.subs
		l.mu.Unlock()
		for _, s := range subs {
			if s.channel == n.Channel {
				s.sub.Notified(n.Payload)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.ConnectConfig(ctx, cfg)
}

// listenPending LISTENs for the subscriptions not yet listening on conn
// whose trigger exists, and makes them live.
func (l *Listener) listenPending(conn *pgx.Conn) error {
	l.mu.Lock()
	if !l.pending {
		l.mu.Unlock()
		return nil
	}
	l.pending = false
	var todo []*Subscription
	for _, s := range l.subs {
		if !s.listening {
			todo = append(todo, s)
		}
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), listenTimeout)
	defer cancel()
	for _, s := range todo {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
			return err
		}
		// Without the triggers changes go unannounced: the subscription
		// stays off (retried while idle, e.g. after a migration).
		var announced bool
		if err := conn.QueryRow(ctx, `SELECT count(DISTINCT tgname) = cardinality($1::text[]) FROM pg_trigger WHERE tgname = ANY($1) AND tgenabled <> 'D'`,
			s.triggers).Scan(&announced); err != nil {
			return err
		}
		if announced {
			l.mu.Lock()
			s.listening = true
			l.mu.Unlock()
			s.sub.Live(true)
		}
		s.markReady()
	}
	return nil
}

// serve runs a round trip whenever a request waits for one (and every few
// seconds, to read notifications while idle) until the connection fails.
func (l *Listener) serve(conn *pgx.Conn) {
	idle := time.NewTicker(listenDrainEvery)
	defer idle.Stop()
	for {
		if err := l.listenPending(conn); err != nil {
			return
		}
		l.mu.Lock()
		round := l.next
		l.next = nil
		if round == nil { // nobody waits: an idle drain
			round = &listenRound{done: make(chan struct{})}
		}
		round.began = time.Now()
		l.running = round
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), listenTimeout)
		// An empty query: the answer comes after every notification committed
		// before it was sent (OnNotification runs while it is read).
		err := conn.PgConn().Exec(ctx, "").Close()
		cancel()
		l.mu.Lock()
		l.rounds++
		l.running = nil
		if err == nil {
			l.lastOK = round.began
		}
		round.ok = err == nil
		close(round.done)
		l.mu.Unlock()
		if err != nil {
			return
		}
		select {
		case <-l.wake:
		case <-idle.C:
			l.mu.Lock()
			l.pending = l.pending || l.anyOff()
			l.mu.Unlock()
		}
	}
}

// anyOff: a subscription is not listening (its trigger was missing).
func (l *Listener) anyOff() bool {
	for _, s := range l.subs {
		if !s.listening {
			return true
		}
	}
	return false
}
