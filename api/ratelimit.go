package api

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/fos-dev/fos/config"
)

// limiterSet is one token bucket (golang.org/x/time/rate) per key, e.g. per
// client IP. Memory stays bounded: a bucket that has refilled completely
// is indistinguishable from a new one, so it is dropped on the next sweep;
// and the set never holds more than maxKeys buckets.
type limiterSet struct {
	what  string // named in the 429 message
	limit rate.Limit
	burst int
	off   bool

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
	maxKeys   int
}

// limiterSetMaxKeys caps the keys of one set. A flood of distinct keys
// beyond it (after a sweep) starts the set afresh rather than growing.
const limiterSetMaxKeys = 100_000

func newLimiterSet(what string, r config.Rate) *limiterSet {
	ls := &limiterSet{what: what, off: r.Off, buckets: map[string]*rate.Limiter{}, maxKeys: limiterSetMaxKeys}
	if !r.Off {
		ls.limit = rate.Limit(float64(r.Events) / r.Per.Seconds())
		ls.burst = r.Events
	}
	return ls
}

// refill is how long an emptied bucket takes to become full again: the
// sweep interval.
func (ls *limiterSet) refill() time.Duration {
	return time.Duration(float64(ls.burst) / float64(ls.limit) * float64(time.Second))
}

// allow spends one event of key at now. When the bucket is empty it spends
// nothing and says how long until an event is allowed.
func (ls *limiterSet) allow(key string, now time.Time) (bool, time.Duration) {
	if ls == nil || ls.off {
		return true, 0
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.sweep(now)
	lim, ok := ls.buckets[key]
	if !ok {
		if len(ls.buckets) >= ls.maxKeys {
			ls.buckets = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(ls.limit, ls.burst)
		ls.buckets[key] = lim
	}
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return false, ls.refill()
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweep drops the buckets that are full again (idle keys), at most once per
// refill interval (and at least once a minute).
func (ls *limiterSet) sweep(now time.Time) {
	every := min(ls.refill(), time.Minute)
	if now.Sub(ls.lastSweep) < every {
		return
	}
	ls.lastSweep = now
	for k, lim := range ls.buckets {
		if lim.TokensAt(now) >= float64(ls.burst) {
			delete(ls.buckets, k)
		}
	}
}

// size is the number of buckets held (tests).
func (ls *limiterSet) size() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.buckets)
}

// blocked answers 429 rate_limited when key has spent its allowance,
// without spending any (a limit on failures, checked before the work
// that may fail).
func (ls *limiterSet) blocked(key string) error {
	if ls == nil || ls.off {
		return nil
	}
	now := time.Now()
	ls.mu.Lock()
	lim, ok := ls.buckets[key]
	var tokens float64
	if ok {
		tokens = lim.TokensAt(now)
	}
	ls.mu.Unlock()
	if !ok || tokens >= 1 {
		return nil
	}
	wait := time.Duration((1 - tokens) / float64(ls.limit) * float64(time.Second))
	return errRateLimited("too many "+ls.what+"; retry later", wait)
}

// check answers 429 rate_limited, with the wait in Retry-After, when key
// has spent its allowance.
func (ls *limiterSet) check(key string) error {
	ok, wait := ls.allow(key, time.Now())
	if ok {
		return nil
	}
	return errRateLimited("too many "+ls.what+"; retry later", wait)
}

// limiters holds one limiterSet per limit of config.Limits.
type limiters struct {
	loginIP, loginEmail   *limiterSet
	signupIP, signupEmail *limiterSet
	invitationsOrg        *limiterSet
	carrierPINAccount     *limiterSet
	apiKey                *limiterSet
	wrongPINs             int
	trusted               []netip.Prefix
}

func newLimiters(l config.Limits) *limiters {
	l = l.WithDefaults()
	return &limiters{
		loginIP:           newLimiterSet("sign-in attempts from this address", l.LoginPerIP),
		loginEmail:        newLimiterSet("sign-in attempts for this e-mail", l.LoginPerEmail),
		signupIP:          newLimiterSet("sign-ups from this address", l.SignupPerIP),
		signupEmail:       newLimiterSet("sign-ups for this e-mail", l.SignupPerEmail),
		invitationsOrg:    newLimiterSet("invitations from this organization", l.InvitationsPerOrg),
		carrierPINAccount: newLimiterSet("PIN requests for this carrier account", l.CarrierPINPerAccount),
		apiKey:            newLimiterSet("requests with this API key", l.APIKey),
		wrongPINs:         l.WrongPINs,
		trusted:           l.TrustedProxies,
	}
}

// emailKey is the limiter key of an e-mail address (as the store compares
// them: case-insensitively).
func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// apiKeyBudget spends one request of the caller's API key. It runs after
// requireOrg (authentication stays one lookup) and lets user tokens pass.
func (s *Server) apiKeyBudget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := principalFrom(r.Context()); p != nil && p.IsAPIKey() {
			if err := s.limits.apiKey.check(p.APIKeyID.String()); err != nil {
				s.respondError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// clientIP is the address a request came from: the connection's peer,
// unless that peer is a trusted proxy (FOS_TRUSTED_PROXIES). Then
// X-Forwarded-For is read from the right, skipping trusted proxies, and the
// first address no trusted proxy vouches for is the client. Entries left of
// it were written by the client and are never believed.
func (s *Server) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !s.limits.isTrusted(peer) {
		return peer.String()
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				// Garbage from the client side: stop at the last good hop.
				return client.String()
			}
			client = a.Unmap()
			if !s.limits.isTrusted(client) {
				return client.String()
			}
		}
	}
	return client.String()
}

func (l *limiters) isTrusted(a netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// retryAfterSeconds is the Retry-After value of a wait: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
