package api

import (
	"bytes"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
)

// docOp is one operation on the reference page.
type docOp struct {
	Method, Path, ID, Summary, Scope string
	Params                           []string
	Statuses                         []string
}

// docTag is a group of operations on the reference page.
type docTag struct {
	Name string
	Ops  []docOp
}

var docsTmpl = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} reference</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;padding:0 1rem;color:#222}
h2{border-bottom:1px solid #ddd;margin-top:2rem}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #eee;vertical-align:top}
code{font:13px ui-monospace,monospace}.m{font-weight:600;text-transform:uppercase}.s{color:#555}
</style></head><body>
<h1>{{.Title}} reference</h1>
<p>Rendered from <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI {{.Version}}). {{len .Ops}} operations.</p>
<pre>{{.Description}}</pre>
<nav>{{range .Tags}}<a href="#tag-{{.Name}}">{{.Name}}</a> {{end}}</nav>
{{range .Tags}}<h2 id="tag-{{.Name}}">{{.Name}}</h2>
<table><tr><th>method</th><th>path</th><th>summary</th><th>x-scope</th><th>parameters</th><th>responses</th></tr>
{{range .Ops}}<tr id="{{.ID}}"><td class="m">{{.Method}}</td><td><code>{{.Path}}</code></td><td>{{.Summary}}<br><span class="s">{{.ID}}</span></td><td><code>{{.Scope}}</code></td><td>{{range .Params}}<code>{{.}}</code> {{end}}</td><td>{{range .Statuses}}{{.}} {{end}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))

// docsPage is the reference page, rendered once from the document.
var docsPage = sync.OnceValue(func() []byte {
	doc := openAPIDoc()
	info, _ := doc["info"].(map[string]any)
	title, _ := info["title"].(string)
	desc, _ := info["description"].(string)
	version, _ := doc["openapi"].(string)
	params, _ := doc["components"].(map[string]any)["parameters"].(map[string]any)
	byTag := map[string][]docOp{}
	var all []docOp
	for p, item := range doc["paths"].(map[string]any) {
		for m, raw := range item.(map[string]any) {
			o, ok := raw.(map[string]any)
			if !ok || m == "parameters" {
				continue
			}
			op := docOp{Method: m, Path: p}
			op.ID, _ = o["operationId"].(string)
			op.Summary, _ = o["summary"].(string)
			op.Scope, _ = o["x-scope"].(string)
			ps, _ := o["parameters"].([]any)
			for _, pr := range ps {
				pm, _ := pr.(map[string]any)
				if ref, _ := pm["$ref"].(string); ref != "" {
					pm, _ = params[ref[strings.LastIndex(ref, "/")+1:]].(map[string]any)
				}
				name, _ := pm["name"].(string)
				in, _ := pm["in"].(string)
				op.Params = append(op.Params, name+" ("+in+")")
			}
			rs, _ := o["responses"].(map[string]any)
			for code := range rs {
				op.Statuses = append(op.Statuses, code)
			}
			slices.Sort(op.Statuses)
			tag := "other"
			if ts, _ := o["tags"].([]any); len(ts) > 0 {
				tag, _ = ts[0].(string)
			}
			byTag[tag] = append(byTag[tag], op)
			all = append(all, op)
		}
	}
	var tags []docTag
	for name, ops := range byTag {
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return ops[i].Method < ops[j].Method
		})
		tags = append(tags, docTag{Name: name, Ops: ops})
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i].Name < tags[j].Name })
	var b bytes.Buffer
	if err := docsTmpl.Execute(&b, map[string]any{"Title": title, "Version": version, "Description": desc, "Tags": tags, "Ops": all}); err != nil {
		panic("api/docs.go: " + err.Error())
	}
	return b.Bytes()
})

// serveDocs answers GET /docs: a server-rendered reference page (no
// scripts).
func (s *Server) serveDocs(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(docsPage())
}
