package api

import (
	"embed"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/fos-dev/fos/domain"
	embeddomain "github.com/fos-dev/fos/embed"
)

// The connect widget (CONTRACT 12, extension): plain HTML/CSS/JS embedded
// in the binary, no build step. /embed/connect.js is the loader a host page
// includes; /embed/connect?key=&origin= is the page it frames, branded
// from the embed config, with a strict Content-Security-Policy whose
// frame-ancestors are the config's allowed origins.

//go:embed embedui
var embedUI embed.FS

var connectPage = template.Must(template.ParseFS(embedUI, "embedui/connect.html"))
var demoPage = template.Must(template.ParseFS(embedUI, "embedui/demo.html"))

func (s *Server) mountEmbedWidget(r chi.Router, demo bool) {
	r.Get("/embed/connect.js", staticUI("embedui/connect.js", "text/javascript; charset=utf-8"))
	r.Get("/embed/connect-app.js", staticUI("embedui/connect-app.js", "text/javascript; charset=utf-8"))
	r.Get("/embed/connect.css", staticUI("embedui/connect.css", "text/css; charset=utf-8"))
	r.Get("/embed/connect", s.connectPage)
	if demo {
		r.Get("/dev/embed-demo", s.embedDemo)
		r.Get("/dev/embed-demo.js", staticUI("embedui/demo.js", "text/javascript; charset=utf-8"))
	}
}

func staticUI(name, contentType string) http.HandlerFunc {
	raw, err := embedUI.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(raw)
	}
}

func widgetError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// connectPage serves the widget page for an active config named by its
// publishable key, to be framed by an allowed origin only.
func (s *Server) connectPage(w http.ResponseWriter, r *http.Request) {
	c, err := s.Embed.WidgetConfig(r.Context(), r.URL.Query().Get("key"))
	if errors.Is(err, domain.ErrNotFound) {
		widgetError(w, http.StatusNotFound, "unknown publishable key")
		return
	}
	if err != nil {
		s.respondError(w, r, err)
		return
	}
	origin := embeddomain.NormalizeOrigin(r.URL.Query().Get("origin"))
	if origin == "" || !embeddomain.OriginAllowed(c, origin) {
		widgetError(w, http.StatusForbidden, "this origin may not embed the connect widget")
		return
	}
	ancestors := "*"
	if len(c.AllowedOrigins) > 0 {
		ancestors = strings.Join(c.AllowedOrigins, " ")
	}
	str := func(k string) string { v, _ := c.Branding[k].(string); return v }
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src https: data:; "+
		"connect-src 'self'; frame-ancestors "+ancestors+"; base-uri 'none'; form-action 'none'")
	_ = connectPage.Execute(w, map[string]string{"Origin": origin, "Company": str("company_name"), "Color": str("primary_color"), "Logo": str("logo_url")})
}

// embedDemo is a host page for the widget under fos dev: the config of
// ?key=, else the one with slug "demo" (the seeded organization's).
func (s *Server) embedDemo(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		key = s.Embed.PublishableKeyOfSlug(r.Context(), "demo")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-src 'self'")
	_ = demoPage.Execute(w, map[string]string{"Key": key})
}
