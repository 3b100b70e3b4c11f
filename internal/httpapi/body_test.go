package httpapi_test

// Finding 9 of the outside attack: a JSON request body is one JSON value,
// in valid UTF-8, with no key twice; anything else is a 400 and writes
// nothing.

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/apitest"
)

// TestStrictJSONBodies sends bodies that a lax reader takes for
// valid: two values (the second with a forged requesterId), trailing junk,
// invalid UTF-8 (raw, in a key, or as a lone surrogate escape), a key
// twice (plainly, escaped, or nested). Each is a 400 problem+json with a
// stable code before any DynamoDB write, and the table is unchanged; the
// same bodies, made valid, are accepted.
func TestStrictJSONBodies(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Strict")
	org, tk := w.Org.Id, w.Ticket.Id
	tickets := "/v1/orgs/" + org + "/tickets"
	ticket := tickets + "/" + tk
	hc := &http.Client{}
	cases := []struct {
		name, method, path, body, code string
	}{
		{"two values, the second forged", http.MethodPost, tickets, `{"title":"a"}{"title":"b","requesterId":"evil"}`, "invalid_json"},
		{"two values with a newline", http.MethodPost, tickets, "{\"title\":\"a\"}\n{\"title\":\"b\"}", "invalid_json"},
		{"trailing junk", http.MethodPost, tickets, `{"title":"a"} junk`, "invalid_json"},
		{"trailing array", http.MethodPost, tickets, `{"title":"a"}[]`, "invalid_json"},
		{"trailing number", http.MethodPost, tickets, `{"title":"a"}1`, "invalid_json"},
		{"truncated", http.MethodPost, tickets, `{"title":"a"`, "invalid_json"},
		{"not JSON", http.MethodPost, tickets, `title=a`, "invalid_json"},
		{"invalid UTF-8 in a value", http.MethodPost, tickets, "{\"title\":\"a\xff\"}", "invalid_utf8"},
		{"invalid UTF-8 in a key", http.MethodPost, tickets, "{\"title\":\"a\",\"tags\xfe\":[]}", "invalid_utf8"},
		{"overlong UTF-8", http.MethodPost, tickets, "{\"title\":\"\xc0\xaf\"}", "invalid_utf8"},
		{"UTF-16 surrogate in UTF-8", http.MethodPost, tickets, "{\"title\":\"\xed\xa0\x80\"}", "invalid_utf8"},
		{"lone surrogate escape", http.MethodPost, tickets, `{"title":"a\ud800"}`, "invalid_utf8"},
		{"lone low surrogate escape", http.MethodPost, tickets, `{"title":"\udc00a"}`, "invalid_utf8"},
		{"duplicate key", http.MethodPost, tickets, `{"title":"a","title":"b"}`, "duplicate_key"},
		{"duplicate key, escaped", http.MethodPost, tickets, `{"title":"a","t\u0069tle":"b"}`, "duplicate_key"},
		{"duplicate array key", http.MethodPost, tickets, `{"title":"a","tags":["x"],"tags":["y"]}`, "duplicate_key"},
		{"duplicate key in a PATCH", http.MethodPatch, ticket, `{"status":"closed","status":"open"}`, "duplicate_key"},
		{"two values in a PATCH", http.MethodPatch, ticket, `{"title":"a"}{"status":"closed"}`, "invalid_json"},
		{"duplicate nested key", http.MethodPost, "/v1/orgs/" + org + "/invitations",
			`{"email":"dup@example.com","role":"member","teamIds":[],"x":{"a":1,"a":2}}`, "duplicate_key"},
		{"invalid UTF-8 in a PUT", http.MethodPut, "/v1/orgs/" + org + "/teams/" + w.Team.Id + "/members/" + w.Member.ID,
			"{\"role\":\"member\xff\"}", "invalid_utf8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := dump(scanAll(t, ts))
			ts.Rec.Reset()
			r := doReq(t, hc, c.method, ts.URL+c.path, w.Owner.Token, nil, c.body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", r.Status, truncate(r.Body))
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, problemJSON) {
				t.Errorf("content type %q", ct)
			}
			if got := problemCode(r.Body); got != c.code {
				t.Errorf("code %q, want %q: %s", got, c.code, truncate(r.Body))
			}
			// Every 400 lists its problems, a body that is not JSON at all
			// too: one error of the body as a whole (field "") or of the
			// key given twice.
			var p struct {
				Errors []struct{ In, Field, Code string }
			}
			if err := json.Unmarshal(r.Body, &p); err != nil || len(p.Errors) == 0 || p.Errors[0].Code != c.code || p.Errors[0].In != "body" {
				t.Errorf("errors: got %+v, want one of the body with code %q: %s", p.Errors, c.code, truncate(r.Body))
			}
			for _, op := range ts.Rec.Ops() {
				if op.Name != "GetItem" {
					t.Errorf("DynamoDB call %s for a refused body (calls: %s)", op, ts.Rec.Names())
				}
			}
			if after := dump(scanAll(t, ts)); after != before {
				t.Errorf("a refused body changed the table:\n%s", diff(before, after))
			}
		})
	}
	t.Run("valid bodies are accepted", func(t *testing.T) {
		for _, body := range []string{`{"title":"fine"}`, " \n\t{\"title\":\"fine \\u00e9 \\ud83d\\ude00\"}\r\n ", `{"title":"caf` + "\u00e9" + `"}`} {
			if r := doReq(t, hc, http.MethodPost, ts.URL+tickets, w.Owner.Token, nil, body); r.Status != http.StatusCreated {
				t.Errorf("%q: %d %s", body, r.Status, truncate(r.Body))
			}
		}
		if r := doReq(t, hc, http.MethodPatch, ts.URL+ticket, w.Owner.Token, nil, `{"title":"a","status":"open"}`); r.Status != http.StatusOK {
			t.Errorf("PATCH: %d %s", r.Status, truncate(r.Body))
		}
	})
}

// TestConnectionStatuses: the two statuses of the connection that every
// operation declares. Headers over cmd/api's 64 KiB are answered 431 by
// net/http before anything of tenantd runs (no DynamoDB call); a body that
// does not arrive within the read timeout is answered 408
// (request_timeout) by every operation that takes one, and nothing is
// written.
func TestConnectionStatuses(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	const readTimeout = 2 * time.Second
	ts := MustServer(t, withMaxHeaderBytes(64<<10), apitest.WithReadTimeout(readTimeout))
	w := MustWorld(t, ts, "Connections")
	ids := worldIDs(t, w)
	before := worldSnapshot(t, w)
	padding := strings.Repeat("p", 70<<10)
	t.Run("431", func(t *testing.T) {
		for _, op := range opsDocumenting(t, http.StatusRequestHeaderFieldsTooLarge) {
			spec(t, op.ID+"/headers over 64 KiB", func(t *testing.T) {
				t.Parallel()
				r, err := rawRequest(ts.URL, op.Method+" "+pathOf(op, ids)+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+w.Owner.Token+
					"\r\nX-Padding: "+padding+"\r\nConnection: close\r\n\r\n")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(r, "HTTP/1.1 431 ") {
					t.Errorf("status line %q, want 431", strings.SplitN(r, "\r\n", 2)[0])
				}
			})
		}
	})
	t.Run("408", func(t *testing.T) {
		// Every operation's request at once (each waits out the read
		// timeout, so one after another would take a minute); then one
		// subtest per operation judges its answer.
		ops := opsDocumenting(t, http.StatusRequestTimeout)
		answers, errs := make([]string, len(ops)), make([]error, len(ops))
		var wg sync.WaitGroup
		for i, op := range ops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Half of a 100-byte body, then nothing: the connection
				// stays open, so only the read timeout ends it.
				answers[i], errs[i] = rawRequest(ts.URL, op.Method+" "+pathOf(op, ids)+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+w.Owner.Token+
					"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"+`{"name":"`+strings.Repeat("s", 40))
			}()
		}
		wg.Wait()
		for i, op := range ops {
			spec(t, op.ID+"/a body that never arrives", func(t *testing.T) {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if r := answers[i]; !strings.HasPrefix(r, "HTTP/1.1 408 ") || !strings.Contains(r, `"code":"request_timeout"`) || !strings.Contains(r, problemJSON) {
					t.Errorf("answer %q, want a 408 request_timeout problem", truncate([]byte(r)))
				}
			})
		}
	})
	if after := worldSnapshot(t, w); after != before {
		t.Errorf("a refused request changed data:\nbefore %s\nafter  %s", before, after)
	}
}
