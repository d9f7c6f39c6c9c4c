package platforms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The HTTP plumbing shared by the platform connectors that speak the
// vendors' own APIs (storefront_a.go, shipping_hub_a.go).

// Option tunes a platform connector.
type Option func(*connOptions)

type connOptions struct {
	pageSize int
}

// ListLimit sets how many records a list call asks for per page (capped
// at the platform's maximum).
func ListLimit(n int) Option {
	return func(o *connOptions) {
		if n > 0 {
			o.pageSize = n
		}
	}
}

func applyOptions(defaultPageSize, maxPageSize int, opts []Option) connOptions {
	o := connOptions{pageSize: defaultPageSize}
	for _, f := range opts {
		f(&o)
	}
	o.pageSize = min(o.pageSize, maxPageSize)
	return o
}

// timedClient returns a copy of c (nil: a new client) that has a timeout,
// DefaultHTTPTimeout unless c sets one.
func timedClient(c *http.Client) *http.Client {
	var hc http.Client
	if c != nil {
		hc = *c
	}
	if hc.Timeout == 0 {
		hc.Timeout = DefaultHTTPTimeout
	}
	return &hc
}

// wireCall is one request to a platform.
type wireCall struct {
	method string
	url    string
	header http.Header
	body   any // JSON-encoded when not nil
	// orderLookup makes a 404 an order-not-found error.
	orderLookup bool
	pace        pacing
}

// pacing is how a platform's answers say when it may be called again.
type pacing struct {
	pacer *pacer
	// key names the quota the call spends (the shop, the account).
	key string
	// retryAfter reads the wait a 429 asks for from the response headers.
	retryAfter func(http.Header) time.Duration
	// exhausted reads, from any answer, how long to hold off because the
	// quota is used up (0: it is not).
	exhausted func(http.Header) time.Duration
	// maxSleep is the longest wait slept inside a call (0: maxPaceSleep).
	maxSleep time.Duration
}

// maxPaceSleep is the longest a call sleeps for the platform's quota by
// default; a longer wait fails at once with a *RateLimitError naming it, so
// the caller (a Temporal activity) waits outside.
const maxPaceSleep = time.Second

// pacer remembers, per quota key, the time before which the platform asked
// not to be called. Safe for concurrent use; the zero value is ready.
type pacer struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// hold keeps key's calls back for d.
func (p *pacer) hold(key string, d time.Duration) {
	if p == nil || d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = map[string]time.Time{}
	}
	if t := time.Now().Add(d); t.After(p.until[key]) {
		p.until[key] = t
	}
}

// wait returns when key may be called: at once, after a sleep of at most
// maxSleep, or with a *RateLimitError when the wait is longer.
func (p *pacer) wait(ctx context.Context, key string, maxSleep time.Duration) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	until, ok := p.until[key]
	if ok && !time.Now().Before(until) {
		delete(p.until, key)
	}
	p.mu.Unlock()
	d := time.Until(until)
	if !ok || d <= 0 {
		return nil
	}
	if maxSleep <= 0 {
		maxSleep = maxPaceSleep
	}
	if d > maxSleep {
		return &RateLimitError{Err: &Error{Code: CodeRateLimited, Message: "the platform's rate limit is used up", Retryable: true}, RetryAfter: d}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return &Error{Code: CodeNetwork, Message: "platform call cancelled: " + ctx.Err().Error(), Retryable: true, cause: ctx.Err()}
	case <-t.C:
		return nil
	}
}

type wireResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends one call and classifies failures: no answer or a 5xx is a
// retryable *Error, 401/403 matches ErrUnauthorized, 404 ErrOrderNotFound
// when orderLookup, 429 a *RateLimitError carrying the platform's wait.
// Nothing of the request (credentials) goes into an error.
func (c wireCall) do(ctx context.Context, client *http.Client) (*wireResponse, error) {
	var body io.Reader
	if c.body != nil {
		raw, err := json.Marshal(c.body)
		if err != nil {
			return nil, &Error{Code: CodeInvalidRequest, Message: "cannot encode platform request", cause: err}
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return nil, &Error{Code: CodeInvalidConfig, Message: "cannot build platform request", cause: err}
	}
	if err := c.pace.pacer.wait(ctx, c.pace.key, c.pace.maxSleep); err != nil {
		return nil, err
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "fos-connector/1.0")
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &Error{Code: CodeNetwork, Message: "platform call cancelled: " + ctxErr.Error(), Retryable: true, cause: ctxErr}
		}
		// The URL may carry credentials (storefront_b's query-string
		// auth): only the cause goes into the message.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &Error{Code: CodeNetwork, Message: "platform unreachable: " + err.Error(), Retryable: true, cause: err}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, &Error{StatusCode: resp.StatusCode, Code: CodeNetwork, Message: "reading platform response: " + err.Error(), Retryable: true, cause: err}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		var wait time.Duration
		if c.pace.retryAfter != nil {
			wait = c.pace.retryAfter(resp.Header)
		}
		c.pace.pacer.hold(c.pace.key, wait)
		return nil, &RateLimitError{Err: statusError(resp.StatusCode, raw, c.orderLookup), RetryAfter: wait}
	}
	if c.pace.exhausted != nil {
		c.pace.pacer.hold(c.pace.key, c.pace.exhausted(resp.Header))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &wireResponse{status: resp.StatusCode, header: resp.Header, body: raw}, nil
	}
	return nil, statusError(resp.StatusCode, raw, c.orderLookup)
}

// decodeJSON decodes a response body into v, or fails with bad_response.
func decodeJSON(body []byte, v any, what string) error {
	if err := json.Unmarshal(body, v); err != nil {
		return badResponse(what+" is not valid JSON", err)
	}
	return nil
}

// rawObject decodes a JSON object keeping numbers exact (json.Number), so
// 64-bit platform ids survive in sourceData.
func rawObject(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, badResponse("payload is not a JSON object", err)
	}
	return m, nil
}

// secondsHeader reads a header holding a wait in seconds ("2", "2.0") or,
// for Retry-After, an HTTP date.
func secondsHeader(h http.Header, name string) time.Duration {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// isDigits reports whether s is a non-empty run of ASCII digits (the shape
// of the numeric platform ids that go into URL paths).
func isDigits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// invalidConfig is the non-retryable error of a bridge config a connector
// cannot use.
func invalidConfig(msg string) *Error {
	return &Error{Code: CodeInvalidConfig, Message: msg}
}

// invalidField is invalidConfig about one config key.
func invalidField(field, msg string) *Error {
	return &Error{Code: CodeInvalidConfig, Message: msg, Field: field}
}

// notFoundID is the error of an external id that cannot be a platform id.
func notFoundID(id string) *Error {
	return &Error{StatusCode: http.StatusNotFound, Code: CodeOrderNotFound, Message: "no order with id " + strconv.Quote(id)}
}

// pageCursor is the opaque cursor of a page-numbered list: the next page
// and the date filter of the first page, as a query string.
func pageCursor(page int, filter, value string) string {
	q := url.Values{"page": {strconv.Itoa(page)}}
	if value != "" {
		q.Set(filter, value)
	}
	return q.Encode()
}

func parsePageCursor(cursor, filter string) (int, string, error) {
	q, err := url.ParseQuery(cursor)
	page, perr := strconv.Atoi(q.Get("page"))
	if err != nil || perr != nil || page < 1 {
		return 0, "", &Error{Code: CodeInvalidRequest, Message: "malformed cursor"}
	}
	return page, q.Get(filter), nil
}

// ignoreNotFound drops a 404 (deleting what is already gone succeeds).
func ignoreNotFound(err error) error {
	var pe *Error
	if errors.As(err, &pe) && pe.Code == CodeNotFound {
		return nil
	}
	return err
}

// joinURL appends an escaped-as-needed path and a query to a base URL.
func joinURL(base, path string, q url.Values) string {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// DefaultHTTPTimeout bounds every platform call when the given client has
// no timeout of its own.
const DefaultHTTPTimeout = 20 * time.Second

// maxResponseBytes caps a platform response body.
const maxResponseBytes = 16 << 20

// configString is a config value as a trimmed string ("" when absent).
func configString(cfg map[string]any, key string) string {
	s, _ := cfg[key].(string)
	return strings.TrimSpace(s)
}

// statusError maps a platform's HTTP error answer to *Error.
func statusError(status int, body []byte, orderLookup bool) *Error {
	msg := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &Error{StatusCode: status, Message: msg}
	switch {
	case status == http.StatusNotFound && orderLookup:
		e.Code = CodeOrderNotFound
	case status == http.StatusNotFound:
		e.Code = CodeNotFound
	case status == http.StatusUnauthorized:
		e.Code = CodeUnauthorized
	case status == http.StatusForbidden:
		e.Code = CodeForbidden
	case status == http.StatusTooManyRequests:
		e.Code, e.Retryable = CodeRateLimited, true
	case status == http.StatusRequestTimeout:
		e.Code, e.Retryable = CodePlatformUnavailable, true
	case status == http.StatusServiceUnavailable || status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		e.Code, e.Retryable = CodePlatformUnavailable, true
	case status >= 500:
		e.Code, e.Retryable = CodePlatformError, true
	default:
		e.Code = CodePlatformError
	}
	return e
}

// errorMessage extracts a human message from the error bodies platforms
// use: {"errors": "..."}, {"errors": {"field": ["..."]}}, {"errors":
// [{"message": "..."}]}, [{"message": "..."}], {"message": "..."}.
func errorMessage(body []byte) string {
	var v any
	if err := json.Unmarshal(bytes.TrimSpace(body), &v); err != nil {
		s := strings.TrimSpace(string(body))
		if len(s) > 200 {
			s = s[:200]
		}
		return s
	}
	return messageOf(v)
}

func messageOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if m := messageOf(e); m != "" {
				parts = append(parts, m)
			}
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		for _, k := range []string{"errors", "message", "Message", "error_description", "error", "title"} {
			if e, ok := x[k]; ok {
				if m := messageOf(e); m != "" {
					return m
				}
			}
		}
		var parts []string
		for _, k := range sortedKeys(x) {
			if m := messageOf(x[k]); m != "" {
				parts = append(parts, k+": "+m)
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

func badResponse(msg string, cause error) *Error {
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{StatusCode: http.StatusOK, Code: CodeBadResponse, Message: msg, cause: cause}
}

// flexFloat decodes a money amount given as a JSON string or number.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("invalid amount %q", s)
	}
	*f = flexFloat(v)
	return nil
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// IdleConnsPerHost is how many idle connections a platform client keeps
// per host: more than a dispatch drainer's pushes in flight
// (activities.DispatchConcurrency), so a drain reuses its connections
// instead of opening one (over TLS: a handshake) for most pushes, as
// net/http's default of 2 would have it.
const IdleConnsPerHost = 32

// NewHTTPClient is the platform connectors' HTTP client: the default
// transport keeping IdleConnsPerHost idle connections per host, and the
// timeout given.
func NewHTTPClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = IdleConnsPerHost
	return &http.Client{Transport: tr, Timeout: timeout}
}
