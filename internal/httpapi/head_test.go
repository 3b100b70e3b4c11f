package httpapi_test

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestHead: every GET operation of openapi.yaml answers HEAD as RFC 9110
// 9.3.2 says: the status and header fields GET sends (Content-Length,
// Content-Type, ETag, Cache-Control...), and no body; an unknown path stays
// a 404 and HEAD of a route without GET a 405.
func TestHead(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Heady")
	doc, _ := loadSpec(t)
	ids := worldIDs(t, w)
	varying := map[string]bool{"Date": true, "X-Request-Id": true}
	n := 0
	for _, op := range specOperations(doc) {
		if op.Method != http.MethodGet {
			continue
		}
		n++
		url := ts.URL + pathOf(op, ids)
		t.Run(op.ID, func(t *testing.T) {
			get := doReq(t, w.Owner.HTTP, http.MethodGet, url, w.Owner.Token, nil, "")
			head := doReq(t, w.Owner.HTTP, http.MethodHead, url, w.Owner.Token, nil, "")
			if head.Status != get.Status {
				t.Errorf("HEAD %s: %d, GET %d", url, head.Status, get.Status)
			}
			if len(head.Body) != 0 {
				t.Errorf("HEAD %s sent a body: %.200s", url, head.Body)
			}
			for _, k := range slices.Sorted(maps.Keys(get.Header)) {
				if !varying[k] && !slices.Equal(head.Header[k], get.Header[k]) {
					t.Errorf("HEAD %s: %s %q, GET %q", url, k, head.Header[k], get.Header[k])
				}
			}
			for k := range head.Header {
				if _, ok := get.Header[k]; !ok {
					t.Errorf("HEAD %s: %s %q that GET does not send", url, k, head.Header[k])
				}
			}
		})
	}
	if n < 10 {
		t.Fatalf("%d GET operations in the spec: the test found none to compare", n)
	}
	t.Run("404/unknown path", func(t *testing.T) {
		if r := doReq(t, w.Owner.HTTP, http.MethodHead, ts.URL+"/v1/nowhere", w.Owner.Token, nil, ""); r.Status != http.StatusNotFound {
			t.Errorf("HEAD /v1/nowhere: %d, want 404", r.Status)
		}
	})
	t.Run("Allow lists HEAD wherever it lists GET", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{http.MethodOptions, "/v1/me"},
			{http.MethodOptions, "/v1/orgs"},
			{http.MethodPut, "/v1/me"}, // a 405
		} {
			r := doReq(t, w.Owner.HTTP, c.method, ts.URL+c.path, w.Owner.Token, nil, "")
			allow := strings.Split(r.Header.Get("Allow"), ", ")
			if !slices.Contains(allow, http.MethodGet) || !slices.Contains(allow, http.MethodHead) {
				t.Errorf("%s %s: %d, Allow %q, want GET and HEAD in it", c.method, c.path, r.Status, r.Header.Get("Allow"))
			}
		}
		r := doReq(t, w.Owner.HTTP, http.MethodOptions, ts.URL+"/v1/invitations/tok/accept", w.Owner.Token, nil, "")
		if slices.Contains(strings.Split(r.Header.Get("Allow"), ", "), http.MethodHead) {
			t.Errorf("OPTIONS of a route without GET: Allow %q lists HEAD", r.Header.Get("Allow"))
		}
	})
	t.Run("405/route without GET", func(t *testing.T) {
		if r := doReq(t, w.Owner.HTTP, http.MethodHead, ts.URL+"/v1/invitations/tok/accept", w.Owner.Token, nil, ""); r.Status != http.StatusMethodNotAllowed {
			t.Errorf("HEAD /v1/invitations/tok/accept: %d, want 405", r.Status)
		}
	})
}
