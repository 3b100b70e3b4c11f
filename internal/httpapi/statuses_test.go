package httpapi_test

// Every response openapi.yaml documents is a subtest. A subtest that
// specifies one is started with spec and named "<status>/<operationId>",
// alone or within its full name ("TestTicket/412/updateTicket",
// "TestOrg/200/getOrg/include=users"); once the whole package has run,
// TestMain fails it unless every documented (operation, status) is such a
// subtest that ran and passed, or is in unexercised with the reason. spec
// and the names it reads are apitest's (Spec, NamedPairs); what this test
// binary must exercise is said here.

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/tenantd/tenantd"
	"github.com/tenantd/tenantd/internal/apitest"
)

// unexercised are the documented responses no subtest gets, each with
// why. An entry that a subtest does get after all, or that the spec no
// longer documents, fails the check too: the list says what is true.
var unexercised = map[string]string{
	// spec_test.go's convention puts 404 on every /v1 operation and 403 on
	// every mutating one; these name no resource that can be missing, or
	// are open to every caller.
	"404/getMe":     "names no resource: the caller's orgs are listed, none may be missing",
	"404/listOrgs":  "names no resource: the caller's orgs are listed, none may be missing",
	"404/createOrg": "names no resource: any authenticated caller creates an org",
	// Every org user may create tickets and comments (authz.Matrix: Min
	// Member), and a user removed after the decision is a 404: no role is
	// left below member to be refused.
	"403/createTicket":  "any org user may create a ticket (authz.Matrix; TestRoleMatrix: 201 for every role)",
	"403/createComment": "any org user may comment (authz.Matrix; TestRoleMatrix: 201 for every role)",
	// GraphQL answers what fails inside a request as errors of a 200; only
	// a panic (Echo's Recover) would be a 500.
	"500/graphql":    "an unexpected error is a GraphQL error in a 200 (graphql.go); only a panic would answer 500",
	"500/graphqlGet": "an unexpected error is a GraphQL error in a 200 (graphql.go); only a panic would answer 500",
	// Liveness depends on nothing.
	"503/getHealth": "liveness has no dependency to be unavailable (health.go); readiness is getReady's 503",
}

// checkDocumentedStatuses writes to w every documented response that no
// subtest exercised and unexercised does not explain, and every entry of
// unexercised that is wrong; it returns 1 if there is any.
func checkDocumentedStatuses(w io.Writer, verbose bool) int {
	doc, err := openapi3.NewLoader().LoadFromData(tenantd.OpenAPISpec)
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	documented := apitest.ResponsePairs(doc)
	missing, stale, covered := statusGaps(documented, apitest.Exercised, unexercised)
	for _, p := range missing {
		fmt.Fprintf(w, "FAIL: openapi.yaml documents %s, but no subtest named %s ran (add one with spec, or explain it in unexercised in statuses_test.go)\n", p, p)
	}
	for _, s := range stale {
		fmt.Fprintf(w, "FAIL: statuses_test.go: %s\n", s)
	}
	if verbose || len(missing)+len(stale) > 0 {
		fmt.Fprintf(w, "documented responses: %d; exercised by a subtest: %d; explained in unexercised: %d; missing: %d\n",
			len(documented), covered, len(unexercised), len(missing))
	}
	if len(missing)+len(stale) > 0 {
		return 1
	}
	return 0
}

// statusGaps compares the documented responses with those a subtest
// exercised (ran) and those explained: missing are documented, neither
// exercised nor explained; stale are explanations of a response exercised
// after all, or not documented; covered counts the exercised.
func statusGaps(documented map[string]bool, ran func(string) bool, explained map[string]string) (missing, stale []string, covered int) {
	for p := range documented {
		_, listed := explained[p]
		switch {
		case ran(p) && listed:
			stale = append(stale, p+": exercised, yet listed in unexercised")
		case ran(p):
			covered++
		case !listed:
			missing = append(missing, p)
		}
	}
	for p := range explained {
		if !documented[p] {
			stale = append(stale, p+": listed in unexercised, but openapi.yaml does not document it")
		}
	}
	sort.Slice(missing, func(i, j int) bool { return pairLess(missing[i], missing[j]) })
	slices.Sort(stale)
	return missing, stale, covered
}

// pairLess orders "<status>/<operationId>" by operation, then status.
func pairLess(a, b string) bool {
	as, aop, _ := strings.Cut(a, "/")
	bs, bop, _ := strings.Cut(b, "/")
	if aop != bop {
		return aop < bop
	}
	an, _ := strconv.Atoi(as)
	bn, _ := strconv.Atoi(bs)
	return an < bn
}

// TestSpecNames pins how a subtest's name names responses.
func TestSpecNames(t *testing.T) {
	for _, c := range []struct {
		name string
		want []string
	}{
		{"TestTicket/412/updateTicket", []string{"412/updateTicket"}},
		{"TestOrg/200/getOrg/include=users", []string{"200/getOrg"}},
		{"TestTicket/404/getTicket/another_org's_ticket#01", []string{"404/getTicket"}},
		{"TestTicket/404/getTicket#02", []string{"404/getTicket"}},
		{"TestRoleMatrix/403/deleteOrg/org_admin", []string{"403/deleteOrg"}},
		{"TestConditionalRequests/If-Match_lists", nil},
		{"TestOrg/200", nil},
		{"TestX/2000/getOrg", nil},
	} {
		if got := apitest.NamedPairs(c.name); !slices.Equal(got, c.want) {
			t.Errorf("NamedPairs(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestStatusGaps pins what the check at the end of the package reports.
func TestStatusGaps(t *testing.T) {
	documented := map[string]bool{"200/getOrg": true, "404/getOrg": true, "412/updateOrg": true, "500/graphql": true, "503/getHealth": true}
	ran := map[string]bool{"200/getOrg": true, "503/getHealth": true}
	explained := map[string]string{"500/graphql": "why", "503/getHealth": "why", "418/getOrg": "why"}
	missing, stale, covered := statusGaps(documented, func(p string) bool { return ran[p] }, explained)
	if want := []string{"404/getOrg", "412/updateOrg"}; !slices.Equal(missing, want) {
		t.Errorf("missing: got %q, want %q", missing, want)
	}
	if want := []string{"418/getOrg: listed in unexercised, but openapi.yaml does not document it",
		"503/getHealth: exercised, yet listed in unexercised"}; !slices.Equal(stale, want) {
		t.Errorf("stale: got %q, want %q", stale, want)
	}
	if covered != 1 {
		t.Errorf("covered: got %d, want 1", covered)
	}
}

// TestUnexercisedAreDocumented: every explained gap is a response
// openapi.yaml documents (whether a subtest gets it after all is known
// only once the whole package ran: TestMain checks that).
func TestUnexercisedAreDocumented(t *testing.T) {
	documented := apitest.DocumentedPairs(t)
	for p, why := range unexercised {
		if !documented[p] {
			t.Errorf("unexercised lists %s, which openapi.yaml does not document", p)
		}
		if strings.TrimSpace(why) == "" {
			t.Errorf("unexercised lists %s without a reason", p)
		}
	}
}
