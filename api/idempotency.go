package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"time"

	"github.com/fos-dev/fos/accounts"
)

// captureWriter keeps a copy of the response so it can be stored.
type captureWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.buf.Write(b)
	return c.ResponseWriter.Write(b)
}

// idempotency answers a POST carrying an Idempotency-Key with the stored
// response of the first request that used the key in the organization, for
// 24 hours; the same key with another request is 409 (CONTRACT 4). A first
// request that fails with a 5xx releases the key so it can be retried.
//
// While the first request runs, a repeat is 409 (in progress). Its claim is
// a lease (Deps.IdempotencyLease, default two minutes) that the request
// renews while its handler runs; when the process dies mid-request, nobody
// renews it and a repeat succeeds once the lease has run out.
//
// Keys are scoped to the caller (the user or the API key) as well as the
// organization (accounts.Service.ClaimIdempotencyKey): a stored response is
// only ever replayed to whoever received it first, so a replay can never
// get past the scope and role checks that run after this middleware.
func (s *Server) idempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !printableASCII(key, 255) {
			s.respondError(w, r, errValidation(FieldError{Field: "Idempotency-Key", Message: "must be 1-255 printable ASCII characters"}))
			return
		}
		actor := actorOf(r)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			s.respondError(w, r, decodeBody(&http.Request{Body: io.NopCloser(errReader{err})}, nil, false))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h := sha256.New()
		h.Write([]byte(r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + "\n"))
		h.Write(body)

		ctx := r.Context()
		claim, stored, err := s.Accounts.ClaimIdempotencyKey(ctx, actor, key, h.Sum(nil))
		switch {
		case err != nil:
			s.respondError(w, r, err)
			return
		case stored != nil:
			if stored.ContentType != "" {
				w.Header().Set("Content-Type", stored.ContentType)
			}
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(stored.StatusCode)
			_, _ = w.Write(stored.Body)
			return
		}

		cw := &captureWriter{ResponseWriter: w}
		completed := false
		stopRenewing := s.Accounts.KeepClaim(ctx, *claim)
		defer func() {
			stopRenewing()
			// Record the outcome even if the client has gone away.
			bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if !completed || cw.status >= 500 || cw.status == 0 || cw.status == http.StatusTooManyRequests {
				_ = s.Accounts.ReleaseIdempotencyKey(bg, *claim)
				return
			}
			if err := s.Accounts.CompleteIdempotencyKey(bg, *claim, accounts.IdempotentResponse{
				StatusCode: cw.status, ContentType: cw.Header().Get("Content-Type"), Body: cw.buf.Bytes(),
			}); err != nil {
				s.log.Warn("store idempotent response", "request_id", requestIDFrom(ctx), "error", err)
			}
		}()
		next.ServeHTTP(cw, r)
		completed = true
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
