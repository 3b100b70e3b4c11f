package httpapi_test

// The pages a person opens first (docs.go): GET /docs, its assets, and
// GraphiQL on a browser's GET /v1/graphql; what the browser test
// (e2e/) checks they render, this file checks they are: served by the
// service alone, from files of the repository, behind DOCS_UI.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/apitest"
)

// browserAccept is what Chromium sends with a navigation.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"

// docsDir is where the embedded files live in the repository.
const docsDir = "docs"

// repoFile reads a file of docsDir.
func repoFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDocs(t *testing.T) {
	ts := MustServer(t)
	hc := ts.HTTP
	get := func(t *testing.T, path, accept string, h http.Header) apiResp {
		t.Helper()
		if h == nil {
			h = http.Header{}
		}
		if accept != "" {
			h.Set("Accept", accept)
		}
		return doReq(t, hc, http.MethodGet, ts.URL+path, "", h, "")
	}
	// The headers every docs answer carries: nothing but this origin may
	// be loaded or called, and no other site may frame the pages.
	wantSafe := func(t *testing.T, what string, r apiResp) {
		t.Helper()
		csp := r.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, d)
			}
		}
		if strings.Contains(csp, "http") || strings.Contains(csp, "*") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q allows another origin or eval", what, csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("ETag") == "" {
			t.Errorf("%s: X-Content-Type-Options %q, ETag %q", what, r.Header.Get("X-Content-Type-Options"), r.Header.Get("ETag"))
		}
	}

	t.Run("GET /docs is the reference page, and every asset it names is served", func(t *testing.T) {
		r := get(t, "/docs", browserAccept, nil)
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET /docs: %d %s", r.Status, r.Header.Get("Content-Type"))
		}
		wantSafe(t, "/docs", r)
		if !bytes.Equal(r.Body, repoFile(t, "reference.html")) {
			t.Error("GET /docs is not docs/reference.html")
		}
		for _, ref := range pageRefs(t, r.Body) {
			// Relative to /docs: docs/assets/<name>.
			name, ok := strings.CutPrefix(ref, "docs/assets/")
			if !ok {
				t.Errorf("/docs names %q, not one of its assets", ref)
				continue
			}
			a := get(t, "/docs/assets/"+name, "", nil)
			if a.Status != http.StatusOK || !bytes.Equal(a.Body, repoFile(t, "assets/"+name)) {
				t.Errorf("asset %s: %d, %d bytes, want the repository's file", name, a.Status, len(a.Body))
			}
			wantSafe(t, name, a)
		}
		if js := get(t, "/docs/assets/reference.js", "", nil); !strings.HasPrefix(js.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("reference.js: Content-Type %q", js.Header.Get("Content-Type"))
		}
	})
	t.Run("an asset's ETag answers 304, HEAD answers the GET's head", func(t *testing.T) {
		first := get(t, "/docs/assets/swagger-ui.css", "", nil)
		again := get(t, "/docs/assets/swagger-ui.css", "", http.Header{"If-None-Match": {first.Header.Get("ETag")}})
		if again.Status != http.StatusNotModified || len(again.Body) != 0 {
			t.Errorf("If-None-Match of the asset's ETag: %d, %d bytes, want 304", again.Status, len(again.Body))
		}
		page := get(t, "/docs", "", nil)
		head := doReq(t, hc, http.MethodHead, ts.URL+"/docs", "", nil, "")
		if head.Status != http.StatusOK || len(head.Body) != 0 || head.Header.Get("Content-Length") != page.Header.Get("Content-Length") ||
			head.Header.Get("ETag") != page.Header.Get("ETag") {
			t.Errorf("HEAD /docs: %d, %d bytes, headers %v; want GET's %v", head.Status, len(head.Body), head.Header, page.Header)
		}
	})
	t.Run("what is not an asset is a 404 problem", func(t *testing.T) {
		for _, p := range []string{"/docs/assets/nope.js", "/docs/assets/..%2Freference.html", "/docs/", "/docs/reference.html", "/docs/assets/"} {
			if r := get(t, p, "", nil); r.Status != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), problemJSON) {
				t.Errorf("GET %s: %d %s, want a 404 problem", p, r.Status, r.Header.Get("Content-Type"))
			}
		}
		if r := doReq(t, hc, http.MethodPost, ts.URL+"/docs", "", nil, `{}`); r.Status != http.StatusMethodNotAllowed {
			t.Errorf("POST /docs: %d, want 405", r.Status)
		}
	})
	t.Run("a browser's GET /v1/graphql is GraphiQL, whose assets are the reference's", func(t *testing.T) {
		// The validating client: the contract documents the page.
		r := doReq(t, ts.HTTPClient(t, ""), http.MethodGet, ts.URL+"/v1/graphql", "", http.Header{"Accept": {browserAccept}}, "")
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !bytes.Equal(r.Body, repoFile(t, "graphiql.html")) {
			t.Fatalf("browser GET /v1/graphql: %d %s, want docs/graphiql.html", r.Status, r.Header.Get("Content-Type"))
		}
		wantSafe(t, "GraphiQL", r)
		if !slices.Contains(r.Header.Values("Vary"), "Accept") {
			t.Errorf("GraphiQL: Vary %q, want Accept", r.Header.Values("Vary"))
		}
		for _, ref := range pageRefs(t, r.Body) {
			name, ok := strings.CutPrefix(ref, "../docs/assets/") // relative to /v1/graphql
			if a := get(t, "/docs/assets/"+name, "", nil); !ok || a.Status != http.StatusOK {
				t.Errorf("GraphiQL names %q: %d", ref, a.Status)
			}
		}
		// A client of the API asks for JSON and gets the API: 401 without
		// a token, whatever else it accepts.
		for _, accept := range []string{"", "*/*", "application/json", "application/graphql-response+json, application/json, multipart/mixed",
			"text/html;q=0.5, application/json"} {
			if r := get(t, "/v1/graphql?query={me{userId}}", accept, nil); r.Status != http.StatusUnauthorized {
				t.Errorf("Accept %q: %d %s, want the API's 401", accept, r.Status, r.Header.Get("Content-Type"))
			}
		}
	})
	t.Run("DOCS_UI=false: no pages", func(t *testing.T) {
		off := MustServer(t, apitest.WithoutDocsUI())
		for _, p := range []string{"/docs", "/docs/assets/reference.js"} {
			if r := doReq(t, off.HTTP, http.MethodGet, off.URL+p, "", http.Header{"Accept": {browserAccept}}, ""); r.Status != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, r.Status)
			}
		}
		r := doReq(t, off.HTTP, http.MethodGet, off.URL+"/v1/graphql", "", http.Header{"Accept": {browserAccept}}, "")
		if r.Status != http.StatusUnauthorized || bytes.Contains(r.Body, []byte("<html")) {
			t.Errorf("browser GET /v1/graphql: %d %s, want the API's 401", r.Status, truncate(r.Body))
		}
	})
}

// pageRefs are the src and href attributes of an HTML page.
var pageRef = regexp.MustCompile(`(?:src|href)="([^"]*)"`)

func pageRefs(t *testing.T, page []byte) []string {
	t.Helper()
	var out []string
	for _, m := range pageRef.FindAllSubmatch(page, -1) {
		if string(m[1]) != "data:," { // an empty icon: no request for /favicon.ico
			out = append(out, string(m[1]))
		}
	}
	if len(out) == 0 {
		t.Fatal("the page names no asset")
	}
	return out
}

// TestDocsAssetsVendored: every vendored asset (docs/vendor.txt) is byte
// for byte the file of the npm package package-lock.json pins (as make
// test's npm ci installed it), and every other file of docs/assets is the
// project's own (named below): nothing is served that nobody can trace.
func TestDocsAssetsVendored(t *testing.T) {
	own := []string{"reference.js", "explorer.js", "explorer.css"}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	b, err := os.ReadFile("../../package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(docsDir, "vendor.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vendored := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		asset, src, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("vendor.txt: %q is not <asset> <node_modules file>", line)
		}
		vendored[asset] = true
		pkg, _, _ := strings.Cut(src, "/")
		pinned := lock.Packages["node_modules/"+pkg].Version
		var installed struct{ Version string }
		pj, err := os.ReadFile(filepath.Join("../../node_modules", pkg, "package.json"))
		if err == nil {
			err = json.Unmarshal(pj, &installed)
		}
		if err != nil || pinned == "" || installed.Version != pinned {
			t.Errorf("%s: package-lock.json pins %s %q, node_modules has %q (%v): run make tools", asset, pkg, pinned, installed.Version, err)
			continue
		}
		want, err := os.ReadFile(filepath.Join("../../node_modules", src))
		if err != nil {
			t.Errorf("%s: %v", asset, err)
			continue
		}
		if got := repoFile(t, "assets/"+asset); !bytes.Equal(got, want) {
			t.Errorf("assets/%s differs from %s@%s's %s: run make docs-assets", asset, pkg, pinned, src)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(docsDir, "assets"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !vendored[e.Name()] && !slices.Contains(own, e.Name()) {
			t.Errorf("assets/%s is neither vendored (vendor.txt) nor the project's own", e.Name())
		}
	}
	if len(vendored) == 0 {
		t.Fatal("vendor.txt names no asset")
	}
}
