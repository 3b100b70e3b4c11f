package httpapi_test

// HTTP semantics: entity tags of representations, If-None-Match (304),
// If-Match after RFC 9110 (lists, *, weak tags never match), 405 with
// Allow, 404 for unknown paths with or without a token, and no-store on
// every write's answer.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
)

func TestConditionalRequests(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Conditional")
	url := ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets/" + w.Ticket.Id
	get := func(t *testing.T, inm string) apiResp {
		t.Helper()
		var h http.Header
		if inm != "" {
			h = http.Header{"If-None-Match": {inm}}
		}
		return doReq(t, validating(t, ts.HTTP), http.MethodGet, url, w.Owner.Token, h, "") // 304s too are held to the contract
	}
	first := get(t, "")
	e1 := first.Header.Get("ETag")
	spec(t, "304/getTicket/If-None-Match names the representation", func(t *testing.T) {
		for _, inm := range []string{e1, "W/" + e1, `"0-0", ` + e1, "*"} {
			r := get(t, inm)
			if r.Status != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("ETag") != e1 {
				t.Errorf("If-None-Match %s: %d (%d bytes, ETag %q), want 304, no body, ETag %s", inm, r.Status, len(r.Body), r.Header.Get("ETag"), e1)
			}
		}
		if r := get(t, `"1-0000000000000000"`); r.Status != http.StatusOK {
			t.Errorf("If-None-Match of another representation: %d, want 200", r.Status)
		}
	})
	MustComment(t, w.Member.C, w.Org.Id, w.Ticket.Id, "a comment moves the representation")
	second := get(t, "")
	e2 := second.Header.Get("ETag")
	t.Run("200/a comment changes the ETag", func(t *testing.T) {
		if e2 == e1 || !strings.HasPrefix(e2, `"1-`) {
			t.Errorf("ETag after a comment: %s (before %s), want another tag of the same version 1", e2, e1)
		}
		if r := get(t, e1); r.Status != http.StatusOK {
			t.Errorf("If-None-Match of the tag before the comment: %d, want 200", r.Status)
		}
	})
	t.Run("200/a comment never refuses an edit", func(t *testing.T) {
		// If-Match with the tag read before someone commented: the version
		// it names is still current.
		r := doReq(t, ts.HTTP, http.MethodPatch, url, w.Owner.Token, http.Header{"If-Match": {e1}}, `{"priority":"high"}`)
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("ETag"), `"2-`) {
			t.Errorf("PATCH with If-Match %s after a comment: %d %s, want 200 and version 2", e1, r.Status, r.Body)
		}
	})
	t.Run("If-Match lists", func(t *testing.T) {
		cur := get(t, "").Header.Get("ETag") // version 2
		for _, c := range []struct {
			ifMatch string
			want    int
		}{
			{`"7-0000000000000000", ` + cur, http.StatusOK}, // one of the list is current
			{"*", http.StatusOK},
			{"W/" + cur, http.StatusPreconditionFailed}, // weak tags never match
			{`"abc"`, http.StatusPreconditionFailed},
			{`"1-0000000000000000"`, http.StatusPreconditionFailed}, // a past version
		} {
			r := doReq(t, ts.HTTP, http.MethodPatch, url, w.Owner.Token, http.Header{"If-Match": {c.ifMatch}}, `{"title":"retitled"}`)
			if r.Status != c.want {
				t.Errorf("If-Match %s: %d %s, want %d", c.ifMatch, r.Status, r.Body, c.want)
			}
		}
	})
	t.Run("405 carries Allow", func(t *testing.T) {
		r := doReq(t, ts.HTTP, http.MethodPut, url, w.Owner.Token, nil, `{}`)
		if r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("PUT ticket: %d, want 405", r.Status)
		}
		allow := r.Header.Get("Allow")
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			if !strings.Contains(allow, m) {
				t.Errorf("Allow %q lacks %s", allow, m)
			}
		}
	})
	t.Run("404 for an unknown path, with or without a token", func(t *testing.T) {
		for _, tok := range []string{"", w.Owner.Token, "not-a-token"} {
			if r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/no-such-thing", tok, nil, ""); r.Status != http.StatusNotFound {
				t.Errorf("unknown path with token %q: %d, want 404", tok, r.Status)
			}
		}
	})
}

// TestNotModified, generated from the spec: every operation that documents
// 304 answers it to an If-None-Match naming the representation it would
// send: no body, the same ETag.
func TestNotModified(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Not modified")
	ids := worldIDs(t, w)
	for _, op := range opsDocumenting(t, http.StatusNotModified) {
		spec(t, "304/"+op.ID+"/If-None-Match of the current ETag", func(t *testing.T) {
			first := doOp(t, w.Owner.HTTP, ts.URL, op, ids, nil, nil)
			etag := first.Header.Get("ETag")
			if first.Status != http.StatusOK || etag == "" {
				t.Fatalf("%s %s: %d, ETag %q, want 200 with an ETag", op.Method, op.Path, first.Status, etag)
			}
			r := doOp(t, w.Owner.HTTP, ts.URL, op, ids, nil, http.Header{"If-None-Match": {etag}})
			if r.Status != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("ETag") != etag {
				t.Errorf("If-None-Match %s: %d (%d bytes, ETag %q), want 304, no body, ETag %s", etag, r.Status, len(r.Body), r.Header.Get("ETag"), etag)
			}
		})
	}
}

// TestIfNoneMatchOnWrites: If-None-Match on a write is a 400 naming the
// header, never a precondition silently skipped (the PUT upsert would
// otherwise overwrite what "create only" meant to keep).
func TestIfNoneMatchOnWrites(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Create-only")
	url := ts.URL + "/v1/orgs/" + w.Org.Id + "/teams/" + w.Team.Id + "/members/" + w.TeamMember.ID
	r := doReq(t, ts.HTTP, http.MethodPut, url, w.Owner.Token, http.Header{"If-None-Match": {"*"}}, `{"role":"admin"}`)
	if got, want := problemErrors(t, r), []string{"header If-None-Match unsupported_precondition"}; !slices.Equal(got, want) {
		t.Errorf("PUT with If-None-Match: *: %d errors %q, want %q", r.Status, got, want)
	}
	m, err := w.Owner.C.GetTeamMemberWithResponse(bg, w.Org.Id, w.Team.Id, w.TeamMember.ID, nil)
	mustStatus(t, m, err, http.StatusOK)
	if m.JSON200.Role != client.RoleMember {
		t.Errorf("the refused PUT changed the role to %s", m.JSON200.Role)
	}
}

// TestNoStore: no cache may keep an answer that shows a secret: a minted
// API key, a webhook's secret (created, rotated, and a create's replay),
// an invitation's token (and its replay), or any other write's answer, a
// refusal included. A GET's answer keeps its own cache rules.
func TestNoStore(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "No store")
	base := ts.URL + "/v1/orgs/" + w.Org.Id
	hookKey, inviteKey := http.Header{"Idempotency-Key": {"no-store-hook"}}, http.Header{"Idempotency-Key": {"no-store-invite"}}
	hook := `{"url":"https://hooks.example.com/no-store","events":["*"]}`
	invite := `{"email":"cached@example.com","role":"member"}`
	var hookID string
	for _, c := range []struct {
		name, method, path, token string
		header                    http.Header
		body                      string
		status                    int
	}{
		{"201/createApiKey", http.MethodPost, "/api-keys", w.Owner.Token, nil, `{"name":"bot","role":"member"}`, http.StatusCreated},
		{"201/createWebhook", http.MethodPost, "/webhooks", w.Owner.Token, hookKey, hook, http.StatusCreated},
		{"201/createWebhook/replayed", http.MethodPost, "/webhooks", w.Owner.Token, hookKey, hook, http.StatusCreated},
		{"200/rotateWebhookSecret", http.MethodPost, "/webhooks/{hook}/rotate-secret", w.Owner.Token, nil, "", http.StatusOK},
		{"201/createInvitation", http.MethodPost, "/invitations", w.Owner.Token, inviteKey, invite, http.StatusCreated},
		{"201/createInvitation/replayed", http.MethodPost, "/invitations", w.Owner.Token, inviteKey, invite, http.StatusCreated},
		{"403/createApiKey/a member", http.MethodPost, "/api-keys", w.Member.Token, nil, `{"name":"mine","role":"member"}`, http.StatusForbidden},
		{"200/getTicket/a GET is not marked", http.MethodGet, "/tickets/" + w.Ticket.Id, w.Member.Token, nil, "", http.StatusOK},
	} {
		spec(t, c.name, func(t *testing.T) {
			r := doReq(t, ts.HTTP, c.method, base+strings.Replace(c.path, "{hook}", hookID, 1), c.token, c.header, c.body)
			if r.Status != c.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, c.status)
			}
			if hookID == "" && strings.HasSuffix(c.path, "/webhooks") {
				var created struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(r.Body, &created)
				hookID = created.ID
			}
			want := "no-store"
			if c.method == http.MethodGet {
				want = ""
			}
			if got := r.Header.Get("Cache-Control"); got != want {
				t.Errorf("Cache-Control %q, want %q", got, want)
			}
		})
	}
}
