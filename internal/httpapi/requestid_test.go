package httpapi_test

// Finding 8 of the outside attack: the server's request id is its own; a
// client's X-Request-Id is recorded apart, and only when short and
// well-formed.

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestClientRequestID creates tickets with every kind of
// X-Request-Id and reads back the audit event each create wrote: its
// requestId is always the server's own (the X-Request-Id answered), a
// well-formed client id (1-64 of [A-Za-z0-9._:-]) is stored as
// clientRequestId, and anything else (60 KB, spaces, '#', non-ASCII, 65
// characters) is stored nowhere. The audit listing and the request log
// show the same.
func TestClientRequestID(t *testing.T) {
	var logs logBuffer
	ts := MustServer(t, withLog(&logs))
	owner := ts.Actor(t, "reqid")
	org := MustOrg(t, owner.C, "Request IDs").Id
	hc := &http.Client{}
	serverID := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	huge := strings.Repeat("r", 60<<10)
	cases := []struct {
		name, id string
		kept     bool
	}{
		{"60 KB", huge, false},
		{"65 characters", strings.Repeat("a", 65), false},
		{"space", "two words", false},
		{"hash", "a#USER#b", false},
		{"semicolon", "a;b", false},
		{"slash", "a/b", false},
		{"non-ASCII", "r\u00e9q", false},
		{"quote", `a"b`, false},
		{"empty", "", false},
		{"well-formed", "client-7.b:c_d", true},
		{"64 characters", strings.Repeat("Z", 64), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{"X-Request-Id": {c.id}}
			r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", owner.Token, h, `{"title":"`+c.name+`"}`)
			if r.Status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.Status, truncate(r.Body))
			}
			sid := r.Header.Get("X-Request-Id")
			if sid == c.id || !serverID.MatchString(sid) {
				t.Errorf("answered X-Request-Id %q: want the server's own id, not the client's", truncate([]byte(sid)))
			}
			var tk struct{ ID string }
			if err := json.Unmarshal(r.Body, &tk); err != nil {
				t.Fatal(err)
			}
			var ev dbItem
			for _, it := range itemsOf(t, ts, "AuditEvent", org) {
				if it.Str("targetId") == tk.ID {
					ev = it
				}
			}
			if ev == nil {
				t.Fatalf("no audit event for ticket %s", tk.ID)
			}
			if got := ev.Str("requestId"); got != sid {
				t.Errorf("audit event requestId %q, want the server's %q", truncate([]byte(got)), sid)
			}
			got, stored := ev["clientRequestId"]
			switch {
			case c.kept && ev.Str("clientRequestId") != c.id:
				t.Errorf("audit event clientRequestId %q, want %q", ev.Str("clientRequestId"), c.id)
			case !c.kept && stored:
				t.Errorf("a malformed client id was stored: clientRequestId %q", truncate([]byte(renderAV(got))))
			}
			size := 0
			for k, v := range ev {
				size += len(k) + len(renderAV(v))
			}
			if size > 2048 {
				t.Errorf("the audit event is %d bytes", size)
			}

			// The log line of the request carries the same.
			var line map[string]any
			for _, l := range logs.Lines(sid) {
				if l["msg"] == "request" {
					line = l
				}
			}
			if line == nil {
				t.Fatalf("no request log line with requestId %s", sid)
			}
			if cid, ok := line["clientRequestId"]; c.kept && cid != c.id || !c.kept && ok {
				t.Errorf("log line clientRequestId %v (present %v), want %q kept=%v", cid, ok, c.id, c.kept)
			}
		})
	}
	if n := len(logs.Lines(huge[:1024])); n > 0 {
		t.Errorf("the 60 KB id reached %d log line(s)", n)
	}

	t.Run("the audit listing", func(t *testing.T) {
		r := doReq(t, ts.HTTPClient(t, owner.Token), http.MethodGet, ts.URL+"/v1/orgs/"+org+"/audit-log?limit=100", "", nil, "")
		if r.Status != http.StatusOK {
			t.Fatalf("audit log: %d %s", r.Status, r.Body)
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(r.Body, &list); err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, ev := range list.Items {
			if cid, ok := ev["clientRequestId"].(string); ok {
				found[cid] = true
			}
			if rid, _ := ev["requestId"].(string); !serverID.MatchString(rid) {
				t.Errorf("listed requestId %q is not the server's", truncate([]byte(rid)))
			}
		}
		for _, c := range cases {
			if found[c.id] != c.kept {
				t.Errorf("%s: clientRequestId listed %v, want %v", c.name, found[c.id], c.kept)
			}
		}
	})
}
