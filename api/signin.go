package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/accounts"
)

func (s *Server) mountSignin(r chi.Router) {
	r.Post("/auth/signup", s.h(s.signup))
	r.Post("/auth/login", s.h(s.login))
}

func (s *Server) mountUserRoutes(r chi.Router) {
	r.Get("/auth/me", s.h(s.me))
	r.Post("/organizations", s.h(s.createOrganization))
	s.mountInvitationAccept(r)
}

// userJSON is the user object of CONTRACT 2.
type userJSON struct {
	ID        uuid.UUID `json:"id"`
	Email     string    `json:"email"`
	FirstName string    `json:"first_name"`
	LastName  string    `json:"last_name"`
	CreatedAt time.Time `json:"created_at"`
}

func toUserJSON(u accounts.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, FirstName: u.FirstName, LastName: u.LastName, CreatedAt: u.CreatedAt}
}

// organizationJSON is the spec's Organization.
type organizationJSON struct {
	ID        uuid.UUID       `json:"id"`
	Name      string          `json:"name"`
	Slug      string          `json:"slug"`
	Plan      string          `json:"plan"`
	Settings  json.RawMessage `json:"settings"`
	CreatedAt time.Time       `json:"created_at"`
}

func toOrganizationJSON(o accounts.Organization) organizationJSON {
	return organizationJSON{ID: o.ID, Name: o.Name, Slug: o.Slug, Plan: o.Plan, Settings: o.Settings, CreatedAt: o.CreatedAt}
}

type signupRequest struct {
	Email            *string `json:"email"`
	Password         *string `json:"password"`
	FirstName        *string `json:"first_name"`
	LastName         *string `json:"last_name"`
	OrganizationName *string `json:"organization_name"`
}

func (s *Server) signup(w http.ResponseWriter, r *http.Request) error {
	if err := s.limits.signupIP.check(s.clientIP(r)); err != nil {
		return err
	}
	var req signupRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if v.required("email", req.Email) {
		v.email("email", strings.TrimSpace(*req.Email))
	}
	if req.Password == nil {
		v.add("password", "is required")
	} else if n := len([]rune(*req.Password)); n < 8 || n > 128 {
		v.add("password", "must be 8-128 characters")
	}
	if v.required("first_name", req.FirstName) {
		v.maxLen("first_name", *req.FirstName, 100)
	}
	if v.required("last_name", req.LastName) {
		v.maxLen("last_name", *req.LastName, 100)
	}
	if req.OrganizationName != nil {
		v.length("organization_name", strings.TrimSpace(*req.OrganizationName), 1, 100)
	}
	if err := v.err(); err != nil {
		return err
	}
	if err := s.limits.signupEmail.check(emailKey(*req.Email)); err != nil {
		return err
	}
	sess, err := s.Accounts.Signup(r.Context(), accounts.SignupInput{Email: *req.Email, Password: *req.Password,
		FirstName: *req.FirstName, LastName: *req.LastName, OrganizationName: req.OrganizationName})
	if err != nil {
		return err
	}
	var org *organizationJSON
	if sess.Organization != nil {
		oj := toOrganizationJSON(*sess.Organization)
		org = &oj
	}
	writeData(w, http.StatusCreated, map[string]any{
		"user": toUserJSON(sess.User), "organization": org, "access_token": sess.Token, "expires_at": sess.ExpiresAt,
	})
	return nil
}

type loginRequest struct {
	Email    *string `json:"email"`
	Password *string `json:"password"`
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if err := s.limits.loginIP.check(s.clientIP(r)); err != nil {
		return err
	}
	var req loginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	v.required("email", req.Email)
	if req.Password == nil || *req.Password == "" {
		v.add("password", "is required")
	}
	if err := v.err(); err != nil {
		return err
	}
	if err := s.limits.loginEmail.check(emailKey(*req.Email)); err != nil {
		return err
	}
	sess, err := s.Accounts.Login(r.Context(), *req.Email, *req.Password)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{
		"user": toUserJSON(sess.User), "access_token": sess.Token, "expires_at": sess.ExpiresAt, "organizations": nonNil(sess.Organizations),
	})
	return nil
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	user, orgs, err := s.Accounts.Me(r.Context(), principalFrom(r.Context()).UserID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"user": toUserJSON(user), "organizations": nonNil(orgs)})
	return nil
}

type createOrganizationRequest struct {
	Name *string `json:"name"`
}

func (s *Server) createOrganization(w http.ResponseWriter, r *http.Request) error {
	var req createOrganizationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if v.required("name", req.Name) {
		v.length("name", strings.TrimSpace(*req.Name), 1, 100)
	}
	if err := v.err(); err != nil {
		return err
	}
	org, err := s.Accounts.CreateOrganization(r.Context(), principalFrom(r.Context()).UserID, *req.Name)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toOrganizationJSON(org))
	return nil
}

// nonNil makes a nil slice encode as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
