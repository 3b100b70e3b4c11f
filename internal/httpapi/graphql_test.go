package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/tenantd/tenantd/internal/apitest"
)

// TestGraphqlGet: GET /v1/graphql runs a query from the URL and refuses a
// mutation, before it runs (the whole of GraphQL over HTTP is
// internal/graphapi's TestGraphQLOverHTTP and TestGraphQLOverGET).
func TestGraphqlGet(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "GraphQL GET")
	vars := `{"o":"` + w.Org.Id + `"}`
	spec(t, "200/graphqlGet/a query", func(t *testing.T) {
		r := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {"query($o: ID!) { org(id: $o) { name } }"}, "variables": {vars}})
		var d struct{ Org struct{ Name string } }
		apitest.MustData(t, r, &d)
		if d.Org.Name != w.Org.Name {
			t.Errorf("%s, want the org's name", r.Raw)
		}
	})
	spec(t, "405/graphqlGet/a mutation", func(t *testing.T) {
		ts.Rec.Reset()
		r := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {`mutation($o: ID!) { createTicket(orgId: $o, input: {title: "over GET"}) { id } }`}, "variables": {vars}})
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != http.MethodPost || problemCode(r.Raw) != "method_not_allowed" || ts.Rec.Count() != 0 {
			t.Errorf("%d Allow %q %s, %d DynamoDB calls; want 405 method_not_allowed, Allow: POST, none", r.Status, r.Header.Get("Allow"), r.Raw, ts.Rec.Count())
		}
	})
}
