package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/fos-dev/fos/internal/arrival"
)

// MaxBodyBytes bounds every request body (CONTRACT 4: 10 MiB).
const MaxBodyBytes = 10 << 20

type ctxKey int

const (
	reqInfoKey ctxKey = iota
	principalKey
)

// reqInfo travels with a request so the access log can name what later
// middleware learned (the organization).
type reqInfo struct {
	id    string
	orgID uuid.UUID
	// body is the JSON object validateRequest decoded, taken once by
	// decodeBody so it is not parsed twice.
	body *parsedBody
}

func requestIDFrom(ctx context.Context) string {
	if ri, ok := ctx.Value(reqInfoKey).(*reqInfo); ok {
		return ri.id
	}
	return ""
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validRequestID accepts a client's id when it is short printable ASCII.
func validRequestID(s string) bool { return printableASCII(s, 128) }

// printableASCII reports whether s is 1..max printable ASCII characters.
func printableASCII(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// statusRecorder captures the status and size for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// requestContext assigns the request id (echoing a valid client one), logs
// one structured line per request, recovers panics without leaking them and
// bounds the body. It is the outermost middleware but telemetry's (which
// starts the span whose trace id the line carries).
func (s *Server) requestContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		info := &reqInfo{id: id}
		w.Header().Set("X-Request-Id", id)
		rec := &statusRecorder{ResponseWriter: w}
		// The arrival is what the caches kept fresh by notifications
		// (API keys, order rules) must have heard up to.
		r = r.WithContext(arrival.With(context.WithValue(r.Context(), reqInfoKey, info), start))
		if r.Body != nil {
			r.Body = http.MaxBytesReader(rec, r.Body, MaxBodyBytes)
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "panic", "request_id", id, "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeJSON(rec, http.StatusInternalServerError, map[string]any{"error": &Error{Code: "internal", Message: "internal server error; quote request id " + id}})
				}
			}
			attrs := []slog.Attr{
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("path", logPath(r.URL.Path)),
				slog.Int("status", rec.status),
				slog.Int("bytes", rec.bytes),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.String("remote", r.RemoteAddr),
			}
			if info.orgID != uuid.Nil {
				attrs = append(attrs, slog.String("organization_id", info.orgID.String()))
			}
			if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
			}
			s.accessLog.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
		}()
		if field := badQueryParam(r); field != "" {
			s.respondError(rec, r, errValidation(FieldError{Field: field, Message: "must be valid UTF-8 without NUL characters"}))
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// badQueryParam names the first query parameter that is not valid UTF-8 or
// holds a NUL, which no handler could store or search for.
func badQueryParam(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	for k, vs := range r.URL.Query() {
		if !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
			return "query"
		}
		for _, v := range vs {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return k
			}
		}
	}
	return ""
}

// logPath is the path as logged: the invitation token, which travels in the
// path of the accept endpoint, is never written to a log.
func logPath(p string) string {
	const marker = "/members/invite/"
	i := strings.Index(p, marker)
	if i < 0 || !strings.HasSuffix(p, "/accept") {
		return p
	}
	return p[:i+len(marker)] + "[token]/accept"
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.respondError(w, r, &Error{Status: 404, Code: "not_found", Message: "no route for " + r.Method + " " + r.URL.Path})
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.respondError(w, r, &Error{Status: 405, Code: "method_not_allowed", Message: r.Method + " is not allowed on " + r.URL.Path})
}

// handlerFunc is a handler that returns its error; h adapts it so the error
// is written in the one shape.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) h(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The request body is checked against the document first (after
		// authentication, scopes and roles, which are middleware).
		r, err := s.validateRequest(r)
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			s.respondError(w, r, err)
		}
	}
}
