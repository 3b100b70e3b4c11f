//go:build unix

package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/testkit"
)

// TestExpectContinue: against the binary, a request that announces its
// body with Expect: 100-continue gets its final answer instead of 100
// Continue when the headers already decide it: 401 without a valid token,
// 404 for a path that names no route, 413 for a declared length over the
// limit, 415 for a media type the operation does not take. A request that
// may send its body gets 100 Continue, and its answer once the body is sent.
func TestExpectContinue(t *testing.T) {
	p := startAPI(t, testkit.APIBinary(t), newTable(t))
	token := mintToken(t, "expecting")
	head := func(path, token, contentType string, length int) string {
		s := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: tenantd\r\nExpect: 100-continue\r\nContent-Length: %d\r\n", path, length)
		if contentType != "" {
			s += "Content-Type: " + contentType + "\r\n"
		}
		if token != "" {
			s += "Authorization: Bearer " + token + "\r\n"
		}
		return s + "\r\n"
	}
	// first sends a request's head only and returns the first answer.
	first := func(t *testing.T, c *rawConn, raw string) *http.Response {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatalf("no answer to the head alone: %v", err)
		}
		return resp
	}
	for name, tc := range map[string]struct {
		head string
		want int
	}{
		"401/no token":                  {head("/v1/orgs", "", "application/json", 100), http.StatusUnauthorized},
		"401/a bad token":               {head("/v1/orgs", "x.y.z", "application/json", 100), http.StatusUnauthorized},
		"404/no route":                  {head("/v1/nowhere", token, "application/json", 100), http.StatusNotFound},
		"404/no route, no token":        {head("/nowhere", "", "application/json", 100), http.StatusNotFound},
		"413/declared 100 MB":           {head("/v1/orgs", token, "application/json", 100_000_000), http.StatusRequestEntityTooLarge},
		"413/declared 100 MB, no token": {head("/v1/orgs", "", "application/json", 100_000_000), http.StatusRequestEntityTooLarge},
		"415/text/plain":                {head("/v1/orgs", token, "text/plain", 100), http.StatusUnsupportedMediaType},
		"415/no media type":             {head("/v1/orgs", token, "", 100), http.StatusUnsupportedMediaType},
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, p.addr, false)
			resp := first(t, c, tc.head)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("first answer to the head: %d %s, want %d", resp.StatusCode, resp.Status, tc.want)
			}
		})
	}
	t.Run("100/a request that may send its body", func(t *testing.T) {
		c := dial(t, p.addr, false)
		body := `{"name":"Expectant"}`
		resp := first(t, c, head("/v1/orgs", token, "application/json", len(body)))
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("first answer: %d, want 100 Continue", resp.StatusCode)
		}
		if _, err := io.WriteString(c, body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || !strings.Contains(string(b), "Expectant") {
			t.Errorf("after the body: %d %s, want 201", resp.StatusCode, b)
		}
	})
}

// TestHeadProbes: the binary answers a load balancer's HEAD probes of
// /healthz and /readyz as their GETs, without content.
func TestHeadProbes(t *testing.T) {
	p := startAPI(t, testkit.APIBinary(t), newTable(t))
	for _, path := range []string{"/healthz", "/readyz"} {
		c := dial(t, p.addr, false)
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		// Then a GET on the same connection: a HEAD answered with content
		// would show as the GET's status line.
		if _, err := io.WriteString(c, "HEAD "+path+" HTTP/1.1\r\nHost: tenantd\r\n\r\nGET "+path+" HTTP/1.1\r\nHost: tenantd\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		head, err := http.ReadResponse(c.r, &http.Request{Method: http.MethodHead})
		if err != nil {
			t.Fatalf("HEAD %s: %v", path, err)
		}
		get, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatalf("GET %s after the HEAD: %v", path, err)
		}
		b, _ := io.ReadAll(get.Body)
		get.Body.Close()
		if head.StatusCode != http.StatusOK || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") ||
			head.Header.Get("Content-Length") != fmt.Sprint(len(b)) || get.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s: %d %q length %q; GET: %d %q %d bytes", path, head.StatusCode, head.Header.Get("Content-Type"),
				head.Header.Get("Content-Length"), get.StatusCode, get.Header.Get("Content-Type"), len(b))
		}
	}
}
