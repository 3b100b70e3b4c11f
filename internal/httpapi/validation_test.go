package httpapi_test

// The request validation contract: every problem of a request is listed,
// one FieldError each (in, field, code, message), under a short detail and
// no schema dump; nothing unknown is silently ignored, query parameters
// included; a body of another media type is a 415 that says which.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/httpapi/oapi"
)

// problemErrors decodes a 400's errors as "in field code" strings.
func problemErrors(t *testing.T, r apiResp) []string {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", r.Status, r.Body)
	}
	var p oapi.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Detail, "\n") || strings.Contains(p.Detail, "Schema") || len(p.Detail) > 400 {
		t.Errorf("detail is not short: %q", p.Detail)
	}
	if p.Errors == nil {
		t.Fatalf("no errors[]: %s", r.Body)
	}
	var got []string
	for _, f := range *p.Errors {
		if f.Message == "" || strings.Contains(f.Message, "\n") {
			t.Errorf("error %+v: message empty or a dump", f)
		}
		if f.In == oapi.FieldErrorInBody && f.Field != "" && (f.Pointer == nil || *f.Pointer != "/"+f.Field) {
			t.Errorf("error %+v: pointer is not /%s", f, f.Field)
		}
		got = append(got, fmt.Sprintf("%s %s %s", f.In, f.Field, f.Code))
	}
	slices.Sort(got)
	return got
}

func TestValidationListsEveryProblem(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Validated")
	tickets := ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets"
	long := strings.Repeat("x", 201)
	bodies := []struct {
		name, body string
		want       []string
	}{
		{"1 problem", `{}`, []string{"body title required"}},
		{"2 problems", `{"title":"","priority":"whenever"}`, []string{"body priority invalid_value", "body title too_short"}},
		{"5 problems", `{"title":"` + long + `","priority":"whenever","teamId":"not-a-ulid","tags":"x","colour":"red"}`,
			[]string{"body colour unknown_field", "body priority invalid_value", "body tags invalid_type", "body teamId invalid_format", "body title too_long"}},
	}
	for _, c := range bodies {
		t.Run("body/"+c.name, func(t *testing.T) {
			got := problemErrors(t, doReq(t, ts.HTTP, http.MethodPost, tickets, w.Member.Token, nil, c.body))
			if !slices.Equal(got, c.want) {
				t.Errorf("errors:\ngot  %q\nwant %q", got, c.want)
			}
		})
	}
	queries := []struct {
		name, query string
		want        []string
	}{
		{"1 problem", "limit=500", []string{"query limit too_large"}},
		{"2 problems", "limit=0&status=bogus", []string{"query limit too_small", "query status invalid_value"}},
		{"5 problems", "limit=x&status=bogus&order=up&q=x&sort=asc",
			[]string{"query limit invalid_value", "query order invalid_value", "query q unknown_parameter",
				"query sort unknown_parameter", "query status invalid_value"}},
	}
	for _, c := range queries {
		t.Run("query/"+c.name, func(t *testing.T) {
			got := problemErrors(t, doReq(t, ts.HTTP, http.MethodGet, tickets+"?"+c.query, w.Member.Token, nil, ""))
			if !slices.Equal(got, c.want) {
				t.Errorf("errors:\ngot  %q\nwant %q", got, c.want)
			}
		})
	}
	t.Run("body and query at once", func(t *testing.T) {
		got := problemErrors(t, doReq(t, ts.HTTP, http.MethodPost, tickets+"?x=1", w.Member.Token, nil, `{"title":1}`))
		if want := []string{"body title invalid_type", "query x unknown_parameter"}; !slices.Equal(got, want) {
			t.Errorf("errors:\ngot  %q\nwant %q", got, want)
		}
	})
}

// TestUnknownQueryParameters, generated from the spec: every operation
// refuses a query parameter it does not document, with a 400 that names
// it (unknown body fields were already refused; unknown parameters were
// silently ignored, and the results unfiltered).
func TestUnknownQueryParameters(t *testing.T) {
	ts := MustServer(t)
	a := ts.Actor(t, "asker")
	doc, _ := loadSpec(t)
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, op := range specOperations(doc) {
		spec(t, "400/"+op.ID+"/an unknown query parameter", func(t *testing.T) {
			path := param.ReplaceAllStringFunc(op.Path, func(p string) string {
				switch p {
				case "{userId}":
					return "u1"
				case "{token}":
					return "x"
				}
				return "01ARZ3NDEKTSV4RRFFQ69G5FAV"
			})
			r := doReq(t, ts.HTTP, op.Method, ts.URL+path+"?priority=high&zz_unknown=1", a.Token, nil, "")
			got := problemErrors(t, r)
			for _, want := range []string{"query zz_unknown unknown_parameter"} {
				if !slices.Contains(got, want) {
					t.Errorf("%s %s?zz_unknown=1: errors %q, want %q among them", op.Method, op.Path, got, want)
				}
			}
		})
	}
}

// TestRepeatedQueryParameters: a single-valued parameter given twice is a
// 400 that names it; so is expand, a comma-separated list (expand=a,b).
func TestRepeatedQueryParameters(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Repeated")
	r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets?limit=1&limit=2&status=new&status=open", w.Member.Token, nil, "")
	got := problemErrors(t, r)
	if want := []string{"query limit repeated_parameter", "query status repeated_parameter"}; !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
	twice := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets?expand=requester&expand=assignee", w.Member.Token, nil, "")
	if got, want := problemErrors(t, twice), []string{"query expand repeated_parameter"}; !slices.Equal(got, want) {
		t.Errorf("expand twice: errors %q, want %q", got, want)
	}
	ok := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets?expand=requester,assignee", w.Member.Token, nil, "")
	if ok.Status != http.StatusOK {
		t.Errorf("expand=requester,assignee: %d %s", ok.Status, ok.Body)
	}
}

// TestUnsupportedMediaType, generated from the spec: every operation that
// documents 415 answers it to a body of another media type, and says which
// one it takes (Accept-Post on a POST, Accept-Patch on a PATCH), and to a
// JSON body in another charset or with a Content-Encoding (with
// Accept-Encoding: identity), before any DynamoDB call.
func TestUnsupportedMediaType(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Typed")
	ids := worldIDs(t, w)
	for _, op := range opsDocumenting(t, http.StatusUnsupportedMediaType) {
		spec(t, "415/"+op.ID+"/text/plain", func(t *testing.T) {
			ts.Rec.Reset()
			r := doOp(t, w.Owner.HTTP, ts.URL, op, ids, bodyOfOp(op, ids), http.Header{"Content-Type": {"text/plain"}})
			if r.Status != http.StatusUnsupportedMediaType || problemCode(r.Body) != "unsupported_media_type" {
				t.Errorf("%s %s as text/plain: %d %s, want 415 unsupported_media_type", op.Method, op.Path, r.Status, r.Body)
			}
			header := map[string]string{http.MethodPost: "Accept-Post", http.MethodPatch: "Accept-Patch"}[op.Method]
			if got := r.Header.Get(header); header != "" && got != "application/json" {
				t.Errorf("%s %s: %s %q, want application/json", op.Method, op.Path, header, got)
			}
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
		// A charset other than UTF-8, and a content coding on any of the
		// header's lines (Accept-Encoding: identity says so).
		for name, h := range map[string]http.Header{
			"charset latin1":                      {"Content-Type": {"application/json; charset=latin1"}},
			"Content-Encoding gzip":               {"Content-Encoding": {"gzip"}},
			"Content-Encoding identity then gzip": {"Content-Encoding": {"identity", "gzip"}},
		} {
			spec(t, "415/"+op.ID+"/"+name, func(t *testing.T) {
				ts.Rec.Reset()
				r := doOp(t, w.Owner.HTTP, ts.URL, op, ids, bodyOfOp(op, ids), h)
				if r.Status != http.StatusUnsupportedMediaType || problemCode(r.Body) != "unsupported_media_type" {
					t.Errorf("%s %s with %v: %d %s, want 415 unsupported_media_type", op.Method, op.Path, h, r.Status, r.Body)
				}
				if got := r.Header.Get("Accept-Encoding"); h.Get("Content-Encoding") != "" && got != "identity" {
					t.Errorf("%s %s with %v: Accept-Encoding %q, want identity", op.Method, op.Path, h, got)
				}
				if got := ts.Rec.Count(); got != 0 {
					t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
				}
			})
		}
	}
}

// TestBodylessRequestsIgnoreContentType: a request without a body, or
// with an empty chunked one, is answered whatever its Content-Type says,
// charset included: a 415 is for a body, and no GET declares one (an
// outside attack got 415 for a GET of /healthz with "application/json;
// charset=latin1").
func TestBodylessRequestsIgnoreContentType(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Bodyless")
	ids := worldIDs(t, w)
	doc, _ := loadSpec(t)
	for _, op := range specOperations(doc) {
		if op.Method != http.MethodGet {
			continue
		}
		t.Run(op.ID, func(t *testing.T) {
			r := doOp(t, w.Owner.HTTP, ts.URL, op, ids, nil, http.Header{"Content-Type": {"application/json; charset=latin1"}})
			if r.Status == http.StatusUnsupportedMediaType {
				t.Errorf("%s %s without a body: %d %s", op.Method, op.Path, r.Status, r.Body)
			}
			// An empty chunked body: a GET takes none, so its charset is not checked.
			raw, err := rawRequest(ts.URL, op.Method+" "+pathOf(op, ids)+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+w.Owner.Token+
				"\r\nContent-Type: application/json; charset=latin1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n")
			if err != nil {
				t.Fatal(err)
			}
			if status, _, _ := strings.Cut(raw, "\r\n"); strings.Contains(status, " 415 ") {
				t.Errorf("%s %s with an empty chunked body: %s", op.Method, op.Path, status)
			}
		})
	}
}

// TestMalformedRequestParts: a query string that does not parse, and an
// If-Match that is not RFC 9110's grammar, are 400s with errors[], never
// read as whatever part of them parses.
func TestMalformedRequestParts(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Malformed")
	ticket := ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets/" + w.Ticket.Id
	for _, c := range []struct{ name, url string }{
		{"400/getMe/malformed query", ts.URL + "/v1/me?limit=%zz"},
		{"400/listOrgs/malformed query", ts.URL + "/v1/orgs?%"},
		{"400/listTickets/malformed query, beside a good parameter", ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets?limit=5&q=%g0"},
		{"400/getTicket/malformed query", ticket + "?x=%zz"},
	} {
		spec(t, c.name, func(t *testing.T) {
			got := problemErrors(t, doReq(t, ts.HTTP, http.MethodGet, c.url, w.Owner.Token, nil, ""))
			if !slices.Contains(got, "query  malformed_query") {
				t.Errorf("errors %q lack the malformed query", got)
			}
		})
	}
	for _, m := range []string{`"1-`, `1`, `"1"x`, `W/1`, `"1", 2`} {
		spec(t, "400/updateTicket/If-Match "+m, func(t *testing.T) {
			r := doReq(t, ts.HTTP, http.MethodPatch, ticket, w.Owner.Token, http.Header{"If-Match": {m}}, `{"title":"retitled"}`)
			if got, want := problemErrors(t, r), []string{"header If-Match malformed_if_match"}; !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
		})
	}
	spec(t, "400/deleteTicket/If-Match without its closing quote", func(t *testing.T) {
		r := doReq(t, ts.HTTP, http.MethodDelete, ticket, w.Owner.Token, http.Header{"If-Match": {`"1-`}}, "")
		if got, want := problemErrors(t, r), []string{"header If-Match malformed_if_match"}; !slices.Equal(got, want) {
			t.Errorf("errors %q, want %q", got, want)
		}
	})
	t.Run("well-formed If-Match lists still parse", func(t *testing.T) {
		for _, m := range []string{`*`, `"9-0"`, ` W/"1-0" , "9-0" `} {
			r := doReq(t, ts.HTTP, http.MethodPatch, ticket, w.Owner.Token, http.Header{"If-Match": {m}}, `{"title":"retitled"}`)
			if r.Status == http.StatusBadRequest {
				t.Errorf("If-Match %s: 400 %s", m, r.Body)
			}
		}
	})
}
