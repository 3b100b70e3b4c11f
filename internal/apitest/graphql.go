package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"testing"
)

// GQLResponse is a GraphQL answer as a client reads it.
type GQLResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []GQLError      `json:"errors"`
	Status int             `json:"-"` // the HTTP status
	Header http.Header     `json:"-"`
	Raw    []byte          `json:"-"` // the whole body
}

// GQLError is one error of a GraphQL answer.
type GQLError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// Code is the error's extensions.code.
func (e GQLError) Code() string { c, _ := e.Extensions["code"].(string); return c }

// Codes lists the errors' codes, in order.
func (r GQLResponse) Codes() []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.Code())
	}
	return out
}

// GQLBody posts a raw GraphQL request body as token's user through the
// validating client (the answer must match openapi.yaml); header is
// name, value pairs to set.
func GQLBody(tb testing.TB, ts *Server, token string, body any, header ...string) GQLResponse {
	tb.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/graphql", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.HTTPClient(tb, token).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out := GQLResponse{Status: resp.StatusCode, Header: resp.Header}
	out.Raw, _ = io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(out.Raw, &out); err != nil {
			tb.Fatalf("decode %s: %v", out.Raw, err)
		}
	}
	return out
}

// GQLGet sends GET /v1/graphql with params as token's user through the
// validating client; header is name, value pairs to set.
func GQLGet(tb testing.TB, ts *Server, token string, params url.Values, header ...string) GQLResponse {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/graphql?"+params.Encode(), nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.HTTPClient(tb, token).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out := GQLResponse{Status: resp.StatusCode, Header: resp.Header}
	out.Raw, _ = io.ReadAll(resp.Body)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != ProblemJSON && resp.StatusCode != http.StatusNotModified {
		if err := json.Unmarshal(out.Raw, &out); err != nil {
			tb.Fatalf("decode %s: %v", out.Raw, err)
		}
	}
	return out
}

// GQL runs query with vars as token's user.
func GQL(tb testing.TB, ts *Server, token, query string, vars map[string]any) GQLResponse {
	tb.Helper()
	body := map[string]any{"query": query}
	if vars != nil {
		body["variables"] = vars
	}
	return GQLBody(tb, ts, token, body)
}

// MustData fails tb unless r is a 200 without errors, and decodes its data
// into v (when not nil).
func MustData(tb testing.TB, r GQLResponse, v any) {
	tb.Helper()
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		tb.Fatalf("status %d, errors %v: %s", r.Status, r.Codes(), r.Raw)
	}
	if v != nil {
		if err := json.Unmarshal(r.Data, v); err != nil {
			tb.Fatalf("decode data %s: %v", r.Data, err)
		}
	}
}
