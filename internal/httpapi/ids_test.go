package httpapi_test

// Finding 13 of the outside attack: IDs made only of dots are dot segments
// to URL clients (curl, WHATWG URL, RFC 3986 5.2.4 remove them), so a user
// with such an ID could never be addressed. They are refused everywhere.

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/httpapi"
)

// TestDotIDs: a user ID of dots is a 400 in a body (new org
// user, ticket assignee) and in a path (plain or percent-encoded, sent
// raw so no client removes the segment), and a token whose sub is one is a
// 401; nothing is written and no DynamoDB call is made.
func TestDotIDs(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Dots")
	org, tk, team := w.Org.Id, w.Ticket.Id, w.Team.Id
	dots := []string{".", "..", "...", strings.Repeat(".", 128)}
	hc := &http.Client{}

	t.Run("in a body", func(t *testing.T) {
		for _, id := range dots {
			for _, c := range []struct{ what, method, path, body string }{
				{"addOrgUser", http.MethodPost, "/v1/orgs/" + org + "/users",
					jsonOf(map[string]any{"userId": id, "email": "dots@example.com", "name": "Dots", "role": "member"})},
				{"createTicket", http.MethodPost, "/v1/orgs/" + org + "/tickets", jsonOf(map[string]any{"title": "dots", "assigneeId": id})},
				{"updateTicket", http.MethodPatch, "/v1/orgs/" + org + "/tickets/" + tk, jsonOf(map[string]any{"assigneeId": id})},
			} {
				before := dump(scanAll(t, ts))
				ts.Rec.Reset()
				r := doReq(t, hc, c.method, ts.URL+c.path, w.Owner.Token, nil, c.body)
				if r.Status != http.StatusBadRequest {
					t.Errorf("%s with %q: status %d, want 400: %s", c.what, truncate([]byte(id)), r.Status, truncate(r.Body))
				}
				if n := ts.Rec.Count(); n != 0 {
					t.Errorf("%s with %q: DynamoDB calls %s, want none", c.what, truncate([]byte(id)), ts.Rec.Names())
				}
				if after := dump(scanAll(t, ts)); after != before {
					t.Errorf("%s with %q changed the table:\n%s", c.what, truncate([]byte(id)), diff(before, after))
				}
			}
		}
	})

	t.Run("in a path", func(t *testing.T) {
		segments := []string{"..", ".", "...", "..%2E", "%2E%2E", ".%2e", "%2e", "%2E%2E%2E"}
		for _, seg := range segments {
			for _, c := range []struct{ method, path, body string }{
				{http.MethodGet, "/v1/orgs/" + org + "/users/" + seg, ""},
				{http.MethodPatch, "/v1/orgs/" + org + "/users/" + seg, `{"role":"admin"}`},
				{http.MethodDelete, "/v1/orgs/" + org + "/users/" + seg, ""},
				{http.MethodGet, "/v1/orgs/" + org + "/users/" + seg + "/teams", ""},
				{http.MethodPut, "/v1/orgs/" + org + "/teams/" + team + "/members/" + seg, `{"role":"member"}`},
				{http.MethodGet, "/v1/orgs/" + org + "/teams/" + team + "/members/" + seg, ""},
			} {
				ts.Rec.Reset()
				raw := c.method + " " + c.path + " HTTP/1.1\r\nHost: tenantd\r\nAuthorization: Bearer " + w.Owner.Token + "\r\nConnection: close\r\n"
				if c.body != "" {
					raw += "Content-Type: application/json\r\nContent-Length: " + itoa(len(c.body)) + "\r\n"
				}
				raw += "\r\n" + c.body
				resp, err := rawRequest(ts.URL, raw)
				if err != nil {
					t.Fatal(err)
				}
				status, _, _ := strings.Cut(resp, "\r\n")
				if !strings.HasPrefix(status, "HTTP/1.1 400 ") {
					t.Errorf("%s %s: %q, want 400", c.method, c.path, status)
				}
				if n := ts.Rec.Count(); n != 0 {
					t.Errorf("%s %s: DynamoDB calls %s, want none", c.method, c.path, ts.Rec.Names())
				}
			}
		}
	})

	t.Run("as a token's sub", func(t *testing.T) {
		now := ts.Clock.Now()
		for _, id := range dots {
			tok, err := httpapi.MintHS256(testSecret, httpapi.Claims{Email: "dots@example.com", RegisteredClaims: jwt.RegisteredClaims{
				Subject: id, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
			if err != nil {
				t.Fatal(err)
			}
			ts.Rec.Reset()
			r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/me", tok, nil, "")
			want401(t, "sub "+truncate([]byte(id)), r, nil)
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("sub %q: DynamoDB calls %s", id, ts.Rec.Names())
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
