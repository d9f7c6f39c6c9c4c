package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/domain"
)

func principalFrom(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(principalKey).(*auth.Principal)
	return p
}

// mustPrincipal returns the request's principal; only called behind
// requireOrg, which guarantees one.
func mustPrincipal(r *http.Request) *auth.Principal { return principalFrom(r.Context()) }

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// requireUser admits user access tokens only (no organization needed).
func (s *Server) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		switch {
		case tok == "":
			s.respondError(w, r, errUnauthorized("missing bearer token"))
			return
		case auth.IsAPIKey(tok):
			s.respondError(w, r, errForbidden("this endpoint needs a user access token, not an API key"))
			return
		}
		userID, err := s.Accounts.VerifyToken(tok)
		if err != nil {
			s.respondError(w, r, err)
			return
		}
		p := &auth.Principal{Kind: auth.KindUser, UserID: userID}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	})
}

// requireOrg authenticates an API key (one indexed lookup) or a user token
// plus X-Organization-Id (one indexed membership lookup), and fixes the
// organization every later query is scoped to.
func (s *Server) requireOrg(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticateOrg(r)
		if err != nil {
			s.respondError(w, r, err)
			return
		}
		if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
			ri.orgID = p.OrganizationID
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	})
}

func (s *Server) authenticateOrg(r *http.Request) (*auth.Principal, error) {
	tok := bearer(r)
	if tok == "" {
		return nil, errUnauthorized("missing bearer token")
	}
	ctx := r.Context()
	if auth.IsAPIKey(tok) {
		k, err := s.Accounts.AuthenticateAPIKey(ctx, tok)
		if err != nil {
			return nil, err
		}
		return &auth.Principal{Kind: auth.KindAPIKey, APIKeyID: k.ID, OrganizationID: k.OrganizationID, Scopes: k.Scopes, Name: k.Name}, nil
	}
	userID, err := s.Accounts.VerifyToken(tok)
	if err != nil {
		return nil, err
	}
	orgHeader := strings.TrimSpace(r.Header.Get("X-Organization-Id"))
	if orgHeader == "" {
		return nil, errBadRequest("organization_required", "send the X-Organization-Id header naming one of your organizations")
	}
	orgID, err := uuid.Parse(orgHeader)
	if err != nil {
		return nil, errForbidden("you are not a member of that organization")
	}
	m, err := s.Accounts.MembershipOf(ctx, orgID, userID)
	if err != nil {
		return nil, err
	}
	return &auth.Principal{Kind: auth.KindUser, UserID: userID, OrganizationID: orgID, Role: m.Role, Name: m.Name}, nil
}

// scope gates an endpoint on an API key scope (users pass; CONTRACT 3).
func (s *Server) scope(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p := principalFrom(r.Context()); p != nil && !p.HasScope(scope) {
				s.respondError(w, r, &Error{Status: 403, Code: "insufficient_scope",
					Message: "this API key lacks the " + scope + " scope",
					Details: []FieldError{{Field: "scope", Message: scope}}})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// roles gates an endpoint on a user role; API keys are refused.
func (s *Server) roles(roles ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := principalFrom(r.Context())
			switch {
			case p == nil:
				s.respondError(w, r, errUnauthorized("missing bearer token"))
			case p.IsAPIKey():
				s.respondError(w, r, errForbidden("API keys cannot call this endpoint; use a user access token"))
			case !p.HasRole(roles...):
				s.respondError(w, r, errForbidden("requires the role "+strings.Join(roles, ", ")+"; you are "+p.Role))
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// userOnly refuses API keys (API keys cannot manage keys or members).
func (s *Server) userOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := principalFrom(r.Context()); p != nil && p.IsAPIKey() {
			s.respondError(w, r, errForbidden("API keys cannot call this endpoint; use a user access token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// actorOf is the domain actor of a request behind requireOrg: who calls the
// domain services.
func actorOf(r *http.Request) domain.Actor {
	p := mustPrincipal(r)
	a := domain.Actor{OrganizationID: p.OrganizationID, Name: p.Name, Role: p.Role}
	if p.IsAPIKey() {
		a.Kind, a.ID, a.Scopes, a.Scoped = domain.ActorAPIKey, p.APIKeyID, p.Scopes, true
	} else {
		a.Kind, a.ID = domain.ActorUser, p.UserID
	}
	return a
}
