package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The README's walk-through with curl, replayed as written: each curl
// command of its first sh block is sent to the service (a bridge to the
// sandbox storefront, the import, orders, a resync, a carrier account and a
// label purchase), and each "# ->" answer under it is checked. In an
// answer a quoted CAPITALS word ("ORDER") is a value later commands use
// (bound at its first answer, equal at the next ones), "..." is anything,
// a string ending in "…" a prefix, {...} any object, and a leading status
// the status. A GET whose answer does not match yet is sent again for a
// while, as a reader does while a workflow runs.
func TestREADMEWalkthrough(t *testing.T) {
	s := start(t)
	steps := readmeWalkthrough(t, "../README.md")
	require.GreaterOrEqual(t, len(steps), 10, "the walk-through's curl commands")
	vars := map[string]string{}
	sawLabel := false
	for i, st := range steps {
		req := st.request(t, s.api.URL, vars)
		t.Logf("step %d: %s %s", i+1, req.method, req.url)
		if strings.HasSuffix(req.url, "/shipments") && req.method == http.MethodPost {
			sawLabel = true
		}
		deadline := time.Now().Add(45 * time.Second)
		for {
			status, ctype, body := req.send(t)
			err := st.check(status, ctype, body, vars)
			if err == nil {
				break
			}
			if req.method != http.MethodGet || time.Now().After(deadline) {
				t.Fatalf("step %d (%s %s): %v\nanswer %d: %s", i+1, req.method, req.url, err, status, trimBody(body))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.True(t, sawLabel, "the walk-through buys a label")
	for _, name := range []string{"ORG", "KEY", "BRIDGE", "EXECUTION", "ORDER", "MY_ORDER", "ACCOUNT", "SHIPMENT", "LABEL_URL"} {
		require.NotEmpty(t, vars[name], "the walk-through names %s", name)
	}
}

func trimBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// walkStep is one curl command and the answer the README shows for it.
type walkStep struct {
	args   []string
	expect string // after "# -> ", continuation lines joined
}

// readmeWalkthrough reads the first sh block under "## Walk-through with
// curl".
func readmeWalkthrough(t *testing.T, path string) []walkStep {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(raw)
	i := strings.Index(text, "## Walk-through with curl")
	require.GreaterOrEqual(t, i, 0, "README has a walk-through")
	text = text[i:]
	i = strings.Index(text, "```sh\n")
	require.GreaterOrEqual(t, i, 0)
	text = text[i+len("```sh\n"):]
	j := strings.Index(text, "\n```")
	require.GreaterOrEqual(t, j, 0)
	return parseWalkthrough(t, text[:j+1])
}

// parseWalkthrough splits a shell block into commands (words split as the
// shell does: quotes, backslash-newline) and their "# ->" answers.
func parseWalkthrough(t *testing.T, block string) []walkStep {
	var steps []walkStep
	lines := strings.Split(block, "\n")
	for n := 0; n < len(lines); n++ {
		line := lines[n]
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "# ->"):
			require.NotEmpty(t, steps, "an answer before any command: %q", line)
			exp := strings.TrimSpace(strings.TrimPrefix(trim, "# ->"))
			// Continuation lines: "#" and an indent.
			for n+1 < len(lines) && strings.HasPrefix(lines[n+1], "#  ") {
				n++
				exp += " " + strings.TrimSpace(strings.TrimPrefix(lines[n], "#"))
			}
			steps[len(steps)-1].expect = exp
		case trim == "" || strings.HasPrefix(trim, "#"):
		default:
			// A command, possibly over several lines (quotes, backslashes).
			cmd := line
			for !shellComplete(cmd) {
				n++
				require.Less(t, n, len(lines), "an unterminated command: %q", cmd)
				cmd += "\n" + lines[n]
			}
			words := shellWords(cmd)
			if len(words) == 0 || words[0] != "curl" {
				continue // an assignment (API=…, KEY=…): the test binds them itself
			}
			steps = append(steps, walkStep{args: words[1:]})
		}
	}
	return steps
}

// shellComplete reports whether cmd ends outside quotes and without a
// trailing backslash.
func shellComplete(cmd string) bool {
	var quote rune
	for i := 0; i < len(cmd); i++ {
		c := rune(cmd[i])
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			if i == len(cmd)-1 {
				return false
			}
			i++
		case c == '#' && (i == 0 || cmd[i-1] == ' '):
			return true
		}
	}
	return quote == 0
}

// shellWords splits a command into words: single quotes literal, double
// quotes and bare words keep $NAME for request to expand, backslash-newline
// joins lines, "#" starts a comment.
func shellWords(cmd string) []string {
	var words []string
	var cur strings.Builder
	in := false
	var quote rune
	for i := 0; i < len(cmd); i++ {
		c := rune(cmd[i])
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(cmd[i])
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(cmd) && cmd[i+1] == '\n':
			i++
		case c == '\\' && i+1 < len(cmd):
			i++
			cur.WriteByte(cmd[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '#' && !in:
			return words
		default:
			cur.WriteByte(cmd[i])
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// walkRequest is a curl command with its placeholders filled in.
type walkRequest struct {
	method, url string
	header      http.Header
	body        []byte
}

var placeholder = regexp.MustCompile(`\$?\b[A-Z][A-Z_]*[A-Z]\b`)

// request fills in $API (the service under test), $NAME and NAME for the
// values bound so far, and reads curl's options.
func (st walkStep) request(t *testing.T, base string, vars map[string]string) walkRequest {
	expand := func(s string) string {
		s = strings.ReplaceAll(s, "$API", base+"/api/v1")
		return placeholder.ReplaceAllStringFunc(s, func(w string) string {
			if v, ok := vars[strings.TrimPrefix(w, "$")]; ok {
				return v
			}
			require.False(t, strings.HasPrefix(w, "$"), "%s is not set at this step", w)
			return w
		})
	}
	r := walkRequest{header: http.Header{}}
	for i := 0; i < len(st.args); i++ {
		a := st.args[i]
		next := func() string {
			i++
			require.Less(t, i, len(st.args), "curl %s needs a value", a)
			return expand(st.args[i])
		}
		switch a {
		case "-s":
		case "-X":
			r.method = next()
		case "-H":
			k, v, ok := strings.Cut(next(), ":")
			require.True(t, ok)
			r.header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-d":
			r.body = []byte(next())
		case "-o", "-w":
			next() // where curl writes; the test reads the answer itself
		default:
			require.False(t, strings.HasPrefix(a, "-"), "curl option %s is not replayed", a)
			require.Empty(t, r.url, "one URL per command")
			r.url = expand(a)
		}
	}
	require.NotEmpty(t, r.url)
	// Links the service gives (label_url) name its base URL.
	r.url = strings.Replace(r.url, "http://fos.test", base, 1)
	if r.method == "" {
		r.method = http.MethodGet
		if r.body != nil {
			r.method = http.MethodPost
		}
	}
	if r.body != nil && r.header.Get("Content-Type") == "" {
		r.header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl -d sends
	}
	return r
}

func (r walkRequest) send(t *testing.T) (int, string, []byte) {
	req, err := http.NewRequest(r.method, r.url, bytes.NewReader(r.body))
	require.NoError(t, err)
	req.Header = r.header.Clone()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Content-Type"), body
}

var leadingStatus = regexp.MustCompile(`^([1-5][0-9][0-9])\b\s*`)

// check matches an answer against the README's: the status (2xx when none
// is shown), then a JSON answer's shape, or a content type. Values are
// bound into vars only when the whole answer matches.
func (st walkStep) check(status int, ctype string, body []byte, vars map[string]string) error {
	exp := st.expect
	want := 0
	if m := leadingStatus.FindStringSubmatch(exp); m != nil {
		fmt.Sscan(m[1], &want)
		exp = exp[len(m[0]):]
	}
	if want != 0 && status != want || want == 0 && (status < 200 || status > 299) {
		return fmt.Errorf("status %d, the README shows %s", status, map[bool]string{true: fmt.Sprint(want), false: "2xx"}[want != 0])
	}
	if exp == "" {
		return nil
	}
	if !strings.HasPrefix(exp, "{") && !strings.HasPrefix(exp, "[") {
		ct, _, _ := strings.Cut(exp, " ")
		if !strings.HasPrefix(ctype, ct) {
			return fmt.Errorf("content type %q, the README shows %q", ctype, ct)
		}
		return nil
	}
	var wantJSON any
	if err := json.NewDecoder(strings.NewReader(readmeJSON(exp))).Decode(&wantJSON); err != nil {
		return fmt.Errorf("the README's answer %q is not JSON: %v", exp, err)
	}
	var got any
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Errorf("the answer is not JSON: %v", err)
	}
	bound := map[string]string{}
	if err := matchJSON(wantJSON, got, "", vars, bound); err != nil {
		return err
	}
	for k, v := range bound {
		vars[k] = v
	}
	return nil
}

// readmeJSON turns the README's abbreviated JSON into JSON: an ellipsis
// outside strings ("{...}", ", ...") is dropped, with the comma before it.
func readmeJSON(s string) string {
	var out strings.Builder
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			out.WriteByte(c)
			if c == '\\' && i+1 < len(s) {
				i++
				out.WriteByte(s[i])
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out.WriteByte(c)
		case strings.HasPrefix(s[i:], "..."), strings.HasPrefix(s[i:], "…"):
			if strings.HasPrefix(s[i:], "...") {
				i += 2
			} else {
				i += len("…") - 1
			}
			// Drop the comma (and spaces) before it.
			str := strings.TrimRight(out.String(), " ")
			str = strings.TrimSuffix(str, ",")
			out.Reset()
			out.WriteString(str)
		default:
			out.WriteByte(c)
		}
	}
	return out.String()
}

var capitals = regexp.MustCompile(`^[A-Z][A-Z_]*[A-Z]$`)

// matchJSON matches got against the README's want: objects by the keys
// shown, arrays item by item from the first, placeholders bound.
func matchJSON(want, got any, path string, vars, bound map[string]string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s is missing", path, k)
			}
			if err := matchJSON(wv, gv, path+"."+k, vars, bound); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %v", path, got)
		}
		if len(g) < len(w) {
			return fmt.Errorf("%s: %d items, the README shows %d", path, len(g), len(w))
		}
		for i := range w {
			if err := matchJSON(w[i], g[i], fmt.Sprintf("%s[%d]", path, i), vars, bound); err != nil {
				return err
			}
		}
	case string:
		gs, ok := got.(string)
		switch {
		case !ok:
			return fmt.Errorf("%s: want a string, got %v", path, got)
		case capitals.MatchString(w):
			if v, ok := vars[w]; ok && v != gs {
				return fmt.Errorf("%s = %q, but %s is %q", path, gs, w, v)
			}
			if v, ok := bound[w]; ok && v != gs {
				return fmt.Errorf("%s = %q, but %s is %q", path, gs, w, v)
			}
			bound[w] = gs
		case w == "..." || w == "…":
		case strings.HasSuffix(w, "…"):
			if !strings.HasPrefix(gs, strings.TrimSuffix(w, "…")) {
				return fmt.Errorf("%s = %q, the README shows %q", path, gs, w)
			}
		default:
			// Values bound earlier are filled in ("order-resync/ORDER").
			w = placeholder.ReplaceAllStringFunc(w, func(p string) string {
				if v, ok := vars[p]; ok {
					return v
				}
				return p
			})
			if gs != w {
				return fmt.Errorf("%s = %q, the README shows %q", path, gs, w)
			}
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Errorf("%s = %v, the README shows %v", path, got, want)
		}
	}
	return nil
}
