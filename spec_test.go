package tenantd_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tenantd/tenantd"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
)

const problemJSON = "application/problem+json"

func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(tenantd.OpenAPISpec)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is invalid: %v", err)
	}
	return doc
}

type namedOp struct {
	method, path string
	op           *openapi3.Operation
}

func allOps(doc *openapi3.T) []namedOp {
	var ops []namedOp
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, namedOp{method, path, op})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return ops[i].method < ops[j].method
	})
	return ops
}

func TestOpenAPISpecValid(t *testing.T) {
	loadSpec(t)
}

func TestOpenAPIOperationIDs(t *testing.T) {
	doc := loadSpec(t)
	want := []string{
		"getHealth", "getReady", "getOpenAPI", "getMe",
		"createInvitation", "listInvitations", "revokeInvitation", "acceptInvitation", "listAuditEvents",
		"createWebhook", "listWebhooks", "getWebhook", "updateWebhook", "deleteWebhook", "rotateWebhookSecret",
		"listWebhookDeliveries", "redeliverWebhook",
		"createOrg", "listOrgs", "getOrg", "updateOrg", "deleteOrg",
		"getOffboarding", "exportOrg",
		"createApiKey", "listApiKeys", "getApiKey", "revokeApiKey",
		"listOrgUsers", "addOrgUser", "getOrgUser", "updateOrgUser", "removeOrgUser",
		"listUserTeams", "listUserTickets", "listAssignedTickets",
		"listTeams", "createTeam", "getTeam", "updateTeam", "deleteTeam",
		"listTeamMembers", "getTeamMember", "putTeamMember", "removeTeamMember",
		"listTeamTickets",
		"listTickets", "createTicket", "getTicket", "updateTicket", "deleteTicket",
		"listComments", "createComment",
		"graphqlGet", "graphql",
	}
	var got []string
	for _, o := range allOps(doc) {
		if o.op.OperationID == "" {
			t.Errorf("%s %s: missing operationId", o.method, o.path)
			continue
		}
		if slices.Contains(got, o.op.OperationID) {
			t.Errorf("%s %s: duplicate operationId %q", o.method, o.path, o.op.OperationID)
		}
		got = append(got, o.op.OperationID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("operationIds:\n got  %v\n want %v", got, want)
	}
}

func TestOpenAPISecurity(t *testing.T) {
	doc := loadSpec(t)
	if _, ok := doc.Components.SecuritySchemes["bearerAuth"]; !ok {
		t.Fatal("components.securitySchemes.bearerAuth missing")
	}
	for _, o := range allOps(doc) {
		effective := doc.Security
		if o.op.Security != nil {
			effective = *o.op.Security
		}
		if !strings.HasPrefix(o.path, "/v1/") {
			if o.op.Security == nil || len(*o.op.Security) != 0 {
				t.Errorf("%s %s: must declare `security: []`", o.method, o.path)
			}
			continue
		}
		if len(effective) == 0 {
			t.Errorf("%s %s (%s): no security requirement", o.method, o.path, o.op.OperationID)
		}
		for _, req := range effective {
			if _, ok := req["bearerAuth"]; !ok {
				t.Errorf("%s %s (%s): security requirement without bearerAuth", o.method, o.path, o.op.OperationID)
			}
		}
	}
}

func isProblem(r *openapi3.ResponseRef) bool {
	return r != nil && r.Value != nil && r.Value.Content.Get(problemJSON) != nil
}

func TestOpenAPIErrorResponses(t *testing.T) {
	doc := loadSpec(t)
	conflictOps := []string{
		"addOrgUser", "updateOrgUser", "putTeamMember", "createTeam",
		"removeOrgUser", "createTicket", "updateTicket", "createOrg",
	}
	for _, o := range allOps(doc) {
		id := o.op.OperationID
		resp := o.op.Responses
		if !strings.HasPrefix(o.path, "/v1/") {
			// Operational endpoints: only the probes can be unavailable.
			if (id == "getHealth" || id == "getReady") && !isProblem(resp.Value("503")) {
				t.Errorf("%s: 503 problem response missing", id)
			}
			continue
		}
		for _, code := range []string{"429", "503"} {
			if !isProblem(resp.Value(code)) {
				t.Errorf("%s: missing %s problem response", id, code)
			}
		}

		has4xx := false
		for code, r := range resp.Map() {
			if strings.HasPrefix(code, "4") && isProblem(r) {
				has4xx = true
			}
			// 431 is net/http's own plain-text answer, sent before any
			// handler of tenantd runs: the one error that cannot be a
			// problem.
			if (strings.HasPrefix(code, "4") || strings.HasPrefix(code, "5")) && code != "431" && !isProblem(r) {
				t.Errorf("%s: %s response is not %s", id, code, problemJSON)
			}
		}
		if !has4xx {
			t.Errorf("%s: no 4xx problem response", id)
		}

		required := []string{"400", "401", "404", "500"}
		// GraphQL answers a well-formed request 200, its field errors (a
		// missing org, a refused role) inside.
		if id == "graphql" || id == "graphqlGet" {
			required = []string{"400", "401", "500"}
		}
		// Accepting an invitation needs no role: the token is the permission.
		mutating := o.method != http.MethodGet && id != "acceptInvitation" && id != "graphql"
		if mutating {
			required = append(required, "403")
		}
		if slices.Contains(conflictOps, id) {
			required = append(required, "409")
		}
		if o.op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "If-Match") != nil {
			required = append(required, "412")
		}
		// A body is read (and bounded) whether or not the operation takes
		// one: a client may send one anyway, too large or too slow.
		required = append(required, "408", "413")
		// Headers over the server's limit, answered by net/http itself.
		if resp.Value("431") == nil {
			t.Errorf("%s: missing 431 response", id)
		}
		for _, code := range required {
			if !isProblem(resp.Value(code)) {
				t.Errorf("%s: missing %s problem response", id, code)
			}
		}
		if r := resp.Value("401"); r != nil && r.Value.Headers["WWW-Authenticate"] == nil {
			t.Errorf("%s: 401 without WWW-Authenticate header", id)
		}

		// Invitations and API keys are immutable (no version, no ETag):
		// nothing to match.
		switch o.method {
		case http.MethodPatch, http.MethodPut, http.MethodDelete:
			if id == "revokeInvitation" || id == "revokeApiKey" {
				break
			}
			p := o.op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "If-Match")
			if p == nil || p.Required {
				t.Errorf("%s: must accept an optional If-Match header", id)
			}
		}
		if o.method == http.MethodDelete && resp.Value("204") == nil {
			t.Errorf("%s: DELETE must return 204", id)
		}
		if strings.HasPrefix(id, "list") {
			ok := resp.Value("200")
			if ok == nil || ok.Value.Headers["Link"] == nil {
				t.Errorf("%s: 200 must document the Link header", id)
			}
		}
	}
}

func TestOpenAPIRequestBodiesClosed(t *testing.T) {
	doc := loadSpec(t)
	for _, o := range allOps(doc) {
		if o.op.RequestBody == nil {
			continue
		}
		mt := o.op.RequestBody.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			t.Errorf("%s: request body has no application/json schema", o.op.OperationID)
			continue
		}
		ap := mt.Schema.Value.AdditionalProperties
		if ap.Has == nil || *ap.Has || ap.Schema != nil {
			t.Errorf("%s: request body schema must set additionalProperties: false", o.op.OperationID)
		}
	}
}

// TestGeneratedCodeUpToDate guards against forgetting `go generate` after
// editing openapi.yaml: the spec embedded in the generated server must equal
// openapi.yaml.
func TestGeneratedCodeUpToDate(t *testing.T) {
	doc := loadSpec(t)
	embedded, err := oapi.GetSpec()
	if err != nil {
		t.Fatalf("oapi.GetSpec: %v", err)
	}
	a, _ := json.Marshal(doc)
	b, _ := json.Marshal(embedded)
	if string(a) != string(b) {
		t.Fatal("internal/httpapi/oapi is stale: run `go generate ./internal/httpapi/oapi ./client`")
	}
}

// TestOpenAPIRequestValidation checks the request-validation behaviour the
// contract promises, using the same kin-openapi machinery as the server's
// request validator.
func TestOpenAPIRequestValidation(t *testing.T) {
	doc := loadSpec(t)
	doc.Servers = nil // route by path, as the server does (any host)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	const (
		org    = "01J9Z3V7Q8X2K4M6N8P0R2T4W6"
		ticket = "01J9Z3XD2E4F6G8H0J2K4M6N8P"
	)
	tickets := "/v1/orgs/" + org + "/tickets"
	tags21 := `["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u"]`
	cases := []struct {
		name, method, target, body string
		ok                         bool
	}{
		{"valid create ticket", "POST", tickets, `{"title":"x","priority":"high","tags":["a"]}`, true},
		{"unknown property", "POST", tickets, `{"title":"x","foo":1}`, false},
		{"read-only id", "POST", tickets, `{"title":"x","id":"` + ticket + `"}`, false},
		{"read-only requesterId", "POST", tickets, `{"title":"x","requesterId":"u1"}`, false},
		{"read-only version", "PATCH", tickets + "/" + ticket, `{"title":"x","version":3}`, false},
		{"empty title", "POST", tickets, `{"title":""}`, false},
		{"too many tags", "POST", tickets, `{"title":"x","tags":` + tags21 + `}`, false},
		{"bad priority", "POST", tickets, `{"title":"x","priority":"meh"}`, false},
		{"patch title only", "PATCH", tickets + "/" + ticket, `{"title":"y"}`, true},
		{"unassign with null", "PATCH", tickets + "/" + ticket, `{"assigneeId":null,"teamId":null}`, true},
		{"empty patch", "PATCH", tickets + "/" + ticket, `{}`, false},
		{"empty org user patch", "PATCH", "/v1/orgs/" + org + "/users/u1", `{}`, false},
		{"bad ulid", "GET", "/v1/orgs/not-a-ulid", "", false},
		{"lower-case ulid", "GET", "/v1/orgs/" + strings.ToLower(org), "", false},
		{"expand list", "GET", tickets + "?expand=requester,assignee&status=open&limit=100", "", true},
		{"bad expand", "GET", tickets + "?expand=requester,bogus", "", false},
		{"limit 0", "GET", tickets + "?limit=0", "", false},
		{"limit 101", "GET", tickets + "?limit=101", "", false},
		{"bad status", "GET", tickets + "?status=done", "", false},
		{"cursor too long", "GET", tickets + "?cursor=" + strings.Repeat("a", 2049), "", false},
		{"org include users", "GET", "/v1/orgs/" + org + "?include=users", "", true},
		{"add org user orgId", "POST", "/v1/orgs/" + org + "/users", `{"userId":"u1","email":"a@b.c","name":"A","role":"member","orgId":"` + org + `"}`, false},
		{"create team memberCount", "POST", "/v1/orgs/" + org + "/teams", `{"name":"t","memberCount":1}`, false},
		{"put member bad role", "PUT", "/v1/orgs/" + org + "/teams/" + ticket + "/members/u1", `{"role":"boss"}`, false},
		{"put member", "PUT", "/v1/orgs/" + org + "/teams/" + ticket + "/members/auth0|abc", `{"role":"admin"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var req *http.Request
			if tc.body != "" {
				req = httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
			} else {
				req = httptest.NewRequest(tc.method, tc.target, nil)
			}
			req.Header.Set("Authorization", "Bearer x")
			route, params, err := router.FindRoute(req)
			if err != nil {
				t.Fatalf("find route: %v", err)
			}
			// Like oapi-codegen/echo-middleware, validate decoded path params.
			for k, v := range params {
				if u, err := url.PathUnescape(v); err == nil {
					params[k] = u
				}
			}
			err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
				Request:    req,
				PathParams: params,
				Route:      route,
				Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			})
			if tc.ok && err != nil {
				t.Errorf("expected valid, got %v", err)
			}
			if tc.ok && tc.method == http.MethodPatch {
				// Schema defaults must never be injected into PATCH bodies
				// (that would silently overwrite stored values).
				got, _ := io.ReadAll(req.Body)
				if string(got) != tc.body {
					t.Errorf("PATCH body rewritten by validator: %s", got)
				}
			}
			if !tc.ok && err == nil {
				t.Error("expected a validation error")
			}
		})
	}
}
