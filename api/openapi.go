package api

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"sigs.k8s.io/yaml"
)

// openAPIYAML is the API's OpenAPI 3.1 document, kept beside the router;
// a test keeps it in step with the routes (openapi_test.go).
//
//go:embed openapi.yaml
var openAPIYAML []byte

var openAPI = sync.OnceValues(func() ([]byte, map[string]any) {
	raw, err := yaml.YAMLToJSON(openAPIYAML)
	if err != nil {
		panic("api/openapi.yaml: " + err.Error())
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic("api/openapi.yaml: " + err.Error())
	}
	return raw, doc
})

// openAPIJSON is the document as JSON (converted once).
func openAPIJSON() []byte { raw, _ := openAPI(); return raw }

// openAPIDoc is the decoded document; callers must not modify it.
func openAPIDoc() map[string]any { _, doc := openAPI(); return doc }

// mountOpenAPI serves the document and its reference page (public).
func (s *Server) mountOpenAPI(r chi.Router) {
	r.Get("/api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(openAPIJSON())
	})
	r.Get("/docs", s.serveDocs)
}
