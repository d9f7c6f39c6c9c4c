package carriers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultHTTPTimeout bounds every carrier call when Config.HTTPClient is
// nil or has no timeout of its own.
const DefaultHTTPTimeout = 30 * time.Second

// maxResponseBytes caps a carrier response body (labels included).
const maxResponseBytes = 32 << 20

// Sandbox-only request headers (sent only when Config.Sandbox is on).
const (
	// headerSandboxEnv: "test" for an IsTest account. In sandbox mode the
	// production and test base URLs are the same, so this header is how the
	// sandbox knows which environment a call is for.
	headerSandboxEnv = "X-Sandbox-Environment"
)

const userAgent = "fos-carriers/1.0"

// transport performs HTTP calls for one adapter.
type transport struct {
	carrier string
	client  *http.Client
	sandbox bool
}

type call struct {
	method string
	url    string
	header http.Header
	json   any        // encoded as the JSON body when non-nil
	form   url.Values // form body when non-nil
	// basic auth, when user != ""
	basicUser, basicPass string
	bearer               string
	isTest               bool
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) ok() bool { return r.status >= 200 && r.status < 300 }

func (t *transport) do(ctx context.Context, c call) (*response, error) {
	var body io.Reader
	contentType := ""
	switch {
	case c.json != nil:
		b, err := json.Marshal(c.json)
		if err != nil {
			return nil, &Error{Carrier: t.carrier, Code: ErrCodeInvalid, Message: "cannot encode request: " + err.Error(), kind: ErrInvalidRequest, cause: err}
		}
		body, contentType = bytes.NewReader(b), "application/json"
	case c.form != nil:
		body, contentType = strings.NewReader(c.form.Encode()), "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return nil, &Error{Carrier: t.carrier, Code: ErrCodeNotConfig, Message: "cannot build request: " + err.Error(), kind: ErrNotConfigured, cause: err}
	}
	for k, vs := range c.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if c.basicUser != "" {
		req.SetBasicAuth(c.basicUser, c.basicPass)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	if t.sandbox && c.isTest {
		req.Header.Set(headerSandboxEnv, "test")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, t.networkError(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		e := t.networkError(ctx, err)
		e.StatusCode = resp.StatusCode
		return nil, e
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// networkError is a failed call's *Error; its cause keeps the network
// error (with the context's error when the context ended), which NotSent
// reads to tell a call that never left from one whose outcome is unknown.
func (t *transport) networkError(ctx context.Context, err error) *Error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &Error{Carrier: t.carrier, Code: ErrCodeNetwork, Message: "call cancelled: " + ctxErr.Error(),
			Retryable: errors.Is(ctxErr, context.DeadlineExceeded), cause: errors.Join(ctxErr, err)}
	}
	return &Error{Carrier: t.carrier, Code: ErrCodeNetwork, Message: "carrier unreachable: " + err.Error(), Retryable: true, cause: err}
}

// decode unmarshals a 2xx body.
func (t *transport) decode(resp *response, out any) error {
	if err := json.Unmarshal(resp.body, out); err != nil {
		return badResponse(t.carrier, "response is not the expected JSON", err)
	}
	return nil
}

// fetchedToken is a token just issued and its lifetime.
type fetchedToken struct {
	token string
	ttl   time.Duration
}

type fetchFunc func(ctx context.Context) (fetchedToken, error)

// oauthToken reads an OAuth2 token response ({access_token, expires_in});
// a missing or non-positive lifetime counts as one hour.
func (t *transport) oauthToken(carrier string, resp *response) (fetchedToken, error) {
	var tok struct {
		AccessToken string    `json:"access_token"`
		ExpiresIn   flexFloat `json:"expires_in"`
	}
	if err := t.decode(resp, &tok); err != nil {
		return fetchedToken{}, err
	}
	if tok.AccessToken == "" {
		return fetchedToken{}, badResponse(carrier, "token response has no access_token", nil)
	}
	ttl := time.Duration(float64(tok.ExpiresIn) * float64(time.Second))
	if ttl <= 0 {
		ttl = time.Hour
	}
	return fetchedToken{token: tok.AccessToken, ttl: ttl}, nil
}

// tokenCache keeps OAuth access tokens per credential set until shortly
// before they expire. Concurrent callers of the same key share one fetch.
type tokenCache struct {
	carrier string
	now     func() time.Time

	mu      sync.Mutex
	entries map[string]*tokenEntry
}

type tokenEntry struct {
	lock    chan struct{} // 1-slot semaphore; held while fetching
	token   string
	expires time.Time
}

// maxTokenEntries bounds the cache; expired entries are swept past it.
const maxTokenEntries = 4096

func newTokenCache(carrier string, now func() time.Time) *tokenCache {
	return &tokenCache{carrier: carrier, now: now, entries: map[string]*tokenEntry{}}
}

// tokenKey digests the parts identifying a credential set, so secrets are
// not kept as map keys.
func tokenKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *tokenCache) entry(key string) *tokenEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		if len(c.entries) >= maxTokenEntries {
			now := c.now()
			for k, old := range c.entries {
				if len(old.lock) == 0 && !now.Before(old.expires) {
					delete(c.entries, k)
				}
			}
		}
		e = &tokenEntry{lock: make(chan struct{}, 1)}
		c.entries[key] = e
	}
	return e
}

// get returns a valid token for key, fetching one when none is cached or the
// cached one is about to expire.
func (c *tokenCache) get(ctx context.Context, key string, fetch fetchFunc) (string, error) {
	e := c.entry(key)
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return "", &Error{Carrier: c.carrier, Code: ErrCodeNetwork, Message: "call cancelled: " + ctx.Err().Error(),
			Retryable: errors.Is(ctx.Err(), context.DeadlineExceeded), cause: ctx.Err()}
	}
	defer func() { <-e.lock }()
	if e.token != "" && c.now().Before(e.expires) {
		return e.token, nil
	}
	ft, err := fetch(ctx)
	if err != nil {
		return "", err
	}
	// Refresh early: a tenth of the lifetime, at most a minute.
	skew := min(time.Minute, ft.ttl/10)
	e.token, e.expires = ft.token, c.now().Add(ft.ttl-skew)
	return e.token, nil
}

// invalidate forgets token under key (when the carrier refused it).
func (c *tokenCache) invalidate(key, token string) {
	e := c.entry(key)
	e.lock <- struct{}{}
	if e.token == token {
		e.token, e.expires = "", time.Time{}
	}
	<-e.lock
}

// withToken runs do with a cached token; on a 401 answer it drops the token
// and retries once with a fresh one.
func withToken(ctx context.Context, cache *tokenCache, key string, fetch fetchFunc, do func(token string) (*response, error)) (*response, error) {
	for attempt := 0; ; attempt++ {
		tok, err := cache.get(ctx, key, fetch)
		if err != nil {
			return nil, err
		}
		resp, err := do(tok)
		if err != nil {
			return nil, err
		}
		if resp.status == http.StatusUnauthorized && attempt == 0 {
			cache.invalidate(key, tok)
			continue
		}
		return resp, nil
	}
}
