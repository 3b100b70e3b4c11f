package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// gqlResponse is a GraphQL answer as a client reads it.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
	status int
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// gql posts a GraphQL request as token's user through the validating
// client, and decodes the answer.
func gql(tb testing.TB, ts *testServer, token, query string, vars map[string]any) gqlResponse {
	tb.Helper()
	body := map[string]any{"query": query}
	if vars != nil {
		body["variables"] = vars
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/graphql", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.HTTPClient(tb, token).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out gqlResponse
	out.status = resp.StatusCode
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			tb.Fatalf("decode %s: %v", raw, err)
		}
	}
	return out
}

func TestGraphQLSmoke(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Acme")
	r := gql(t, ts, w.Member.Token, `query($org: ID!) { me { userId orgs { nodes { orgId name role } } }
	  org(id: $org) { id name tickets(first: 10) { nodes { id title requester { userId name } assignee { userId } team { id name } comments(first: 3) { nodes { id author { userId } } } } pageInfo { hasNextPage endCursor } } } }`,
		map[string]any{"org": w.Org.Id})
	t.Logf("status %d data %s errors %+v", r.status, r.Data, r.Errors)
	t.Logf("ops %v", ts.Rec.Ops())
}
