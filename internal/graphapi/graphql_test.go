package graphapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/graphapi"
)

// TestMain runs GraphQL's behaviour tests against DynamoDB Local, each
// test on a server of its own (apitest.MustServer), as REST's tests in
// internal/httpapi run; they compare the two APIs where both serve the same
// data.
func TestMain(m *testing.M) { dynamotest.Main(m) }

var bg = context.Background()

// opCounts renders recorded DynamoDB calls as the GraphQL chart does: each
// distinct call with its count, sorted ("3×BatchGetItem,
// 1×BatchGetItem+consistent, 50×Query"). Calls of one level run
// concurrently, so their order is not part of the answer; their number is.
func opCounts(ops []dynamotest.Op) string {
	n := map[string]int{}
	for _, op := range ops {
		n[op.String()]++
	}
	names := make([]string, 0, len(n))
	for name := range n {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = fmt.Sprintf("%d×%s", n[name], name)
	}
	return strings.Join(out, ", ")
}

// dashboard is the ticket-queue query: a page of tickets with requester,
// assignee and team, and each ticket's first comments with their authors.
const dashboard = `query Dashboard($org: ID!, $first: Int!) {
  org(id: $org) {
    tickets(first: $first) {
      nodes {
        id title status priority
        requester { userId name }
        assignee { userId name }
        team { id name }
        comments(first: 3) { nodes { id body author { userId name } } }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}`

// levelsWorld is the data of the operations-per-level rows: 50 tickets
// whose requesters (5 users) and assignees (3 users) repeat, spread over 2
// teams; 10 of them with comments by a user who is neither.
type levelsWorld struct {
	*apitest.World
	Requesters, Assignees []apitest.Actor
	Commenter             apitest.Actor
	Teams                 []client.Team
	Tickets               []client.Ticket
	Other                 client.Org // another org the owner belongs to
}

func mustLevelsWorld(tb testing.TB, ts *apitest.Server) *levelsWorld {
	tb.Helper()
	w := &levelsWorld{World: apitest.MustWorld(tb, ts, "Levels")}
	org, oc := w.Org.Id, w.Owner.C
	for i := range 5 {
		a := ts.Actor(tb, fmt.Sprintf("requester%d", i))
		apitest.MustUser(tb, oc, org, a, client.RoleMember)
		w.Requesters = append(w.Requesters, a)
	}
	for i := range 3 {
		a := ts.Actor(tb, fmt.Sprintf("assignee%d", i))
		apitest.MustUser(tb, oc, org, a, client.RoleMember)
		w.Assignees = append(w.Assignees, a)
	}
	w.Commenter = ts.Actor(tb, "commenter")
	apitest.MustUser(tb, oc, org, w.Commenter, client.RoleMember)
	w.Teams = []client.Team{w.Team, apitest.MustTeam(tb, oc, org, "Levels Billing")}
	for i := range 50 {
		t := apitest.MustTicket(tb, w.Requesters[i%5].C, org, client.TicketCreate{Title: fmt.Sprintf("Levels ticket %02d", i),
			AssigneeId: &w.Assignees[i%3].ID, TeamId: &w.Teams[i%2].Id})
		w.Tickets = append(w.Tickets, t)
		if i%5 == 0 {
			apitest.MustComment(tb, w.Commenter.C, org, t.Id, fmt.Sprintf("first look at %02d", i))
			apitest.MustComment(tb, w.Commenter.C, org, t.Id, fmt.Sprintf("second look at %02d", i))
		}
	}
	w.Other = apitest.MustOrg(tb, oc, "Levels Elsewhere")
	return w
}

// levelRows are the rows of docs/data-model.md's GraphQL chart: a query,
// its variables, and the exact DynamoDB calls it costs. check, when set,
// asserts more of the answer or of the calls.
func levelRows(w *levelsWorld) []struct {
	name, query string
	vars        map[string]any
	ops         string
	check       func(t *testing.T, data json.RawMessage, ops []dynamotest.Op)
} {
	org := w.Org.Id
	commented := w.Tickets[45] // every fifth ticket has the commenter's two comments
	return []struct {
		name, query string
		vars        map[string]any
		ops         string
		check       func(t *testing.T, data json.RawMessage, ops []dynamotest.Op)
	}{
		{"the caller and their orgs", `{ me { userId orgs { nodes { orgId name role } } } }`, nil,
			"1×BatchGetItem, 1×Query(GSI1)", nil},
		{"an org by ID, nothing of its item", `query($org: ID!) { org(id: $org) { id } }`, map[string]any{"org": org},
			"1×BatchGetItem+consistent", nil},
		{"an org's own fields", `query($org: ID!) { org(id: $org) { id name version createdAt } }`, map[string]any{"org": org},
			"1×BatchGetItem+consistent", nil},
		{"the same org twice, authorized once", `query($org: ID!) { a: org(id: $org) { id } b: org(id: $org) { id } }`, map[string]any{"org": org},
			"1×BatchGetItem+consistent", nil},
		{"two orgs, one authorization read each", `query($a: ID!, $b: ID!) { a: org(id: $a) { id } b: org(id: $b) { id } }`,
			map[string]any{"a": org, "b": w.Other.Id}, "2×BatchGetItem+consistent", nil},
		{"the ticket queue dashboard (50 tickets)", dashboard, map[string]any{"org": org, "first": 50},
			"3×BatchGetItem, 1×BatchGetItem+consistent, 50×Query, 1×Query(GSI1)+desc",
			func(t *testing.T, data json.RawMessage, ops []dynamotest.Op) {
				// One BatchGetItem per level, each key once: the 8 distinct
				// requesters and assignees, the 2 teams, the 1 commenter.
				var keys []int
				for _, op := range ops {
					if op.Name == "BatchGetItem" && !op.Consistent {
						keys = append(keys, op.Items)
					}
				}
				slices.Sort(keys)
				if want := []int{1, 2, 8}; !slices.Equal(keys, want) {
					t.Errorf("keys per BatchGetItem: %v, want %v (users, teams, comment authors; none twice)", keys, want)
				}
				var d struct {
					Org struct {
						Tickets struct {
							Nodes []struct {
								Requester, Assignee *struct{ UserID string }
								Team                *struct{ ID string }
								Comments            struct {
									Nodes []struct{ Author *struct{ UserID string } }
								}
							}
						}
					}
				}
				if err := json.Unmarshal(data, &d); err != nil {
					t.Fatal(err)
				}
				nodes, comments := d.Org.Tickets.Nodes, 0
				for _, n := range nodes {
					if n.Requester == nil || n.Assignee == nil || n.Team == nil {
						t.Errorf("a ticket without its requester, assignee or team: %+v", n)
					}
					for _, c := range n.Comments.Nodes {
						comments++
						if c.Author == nil || c.Author.UserID != w.Commenter.ID {
							t.Errorf("comment author %+v, want %s", c.Author, w.Commenter.ID)
						}
					}
				}
				if len(nodes) != 50 || comments != 20 {
					t.Errorf("%d tickets and %d comments, want 50 and 20", len(nodes), comments)
				}
			}},
		{"a team with its members and their users", `query($org: ID!, $team: ID!) { org(id: $org) { team(id: $team) { name members { nodes { role user { name } } } } } }`,
			map[string]any{"org": org, "team": w.Team.Id}, "1×BatchGetItem, 1×BatchGetItem+consistent, 1×GetItem, 1×Query", nil},
		{"a ticket with its requester and its comments' authors", `query($org: ID!, $ticket: ID!) { org(id: $org) { ticket(id: $ticket) { title requester { name } comments { nodes { body author { name } } } } } }`,
			map[string]any{"org": org, "ticket": commented.Id}, "2×BatchGetItem, 1×BatchGetItem+consistent, 1×GetItem, 1×Query", nil},
		{"users with their teams' names (one Query per user, concurrently)", `query($org: ID!) { org(id: $org) { users(first: 10) { nodes { userId teams { nodes { role team { name } } } } } } }`,
			map[string]any{"org": org}, "1×BatchGetItem, 1×BatchGetItem+consistent, 1×Query, 10×Query(GSI1)", nil},
		{"a user's assigned tickets and their teams", `query($org: ID!, $user: ID!) { org(id: $org) { user(id: $user) { name assignedTickets(first: 20) { nodes { title team { name } } } } } }`,
			map[string]any{"org": org, "user": w.Assignees[0].ID}, "1×BatchGetItem, 1×BatchGetItem+consistent, 1×GetItem+consistent, 1×Query(GSI4)+desc", nil},
	}
}

// TestGraphQLOperationsPerLevel is the executable form of docs/data-model.md's
// GraphQL chart: each row runs its query and asserts the exact DynamoDB
// calls, one operation (or one round of concurrent Queries) per nesting
// level whatever the page, never one per item.
func TestGraphQLOperationsPerLevel(t *testing.T) {
	ts := apitest.MustServer(t)
	w := mustLevelsWorld(t, ts)
	rows := levelRows(w)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ts.Rec.Reset()
			r := apitest.GQL(t, ts, w.Owner.Token, row.query, row.vars)
			apitest.MustData(t, r, nil)
			ops := ts.Rec.Ops()
			if got := opCounts(ops); got != row.ops {
				t.Errorf("DynamoDB calls:\n got  %s\n want %s", got, row.ops)
			}
			if row.check != nil {
				row.check(t, r.Data, ops)
			}
		})
	}
	t.Run("the chart in docs/data-model.md is these rows", func(t *testing.T) {
		want := map[string]string{}
		for _, row := range rows {
			want[row.name] = row.ops
		}
		doc, err := os.ReadFile("../../docs/data-model.md")
		if err != nil {
			t.Fatal(err)
		}
		s := string(doc)
		start := strings.Index(s, "| GraphQL query (test row) |")
		if start < 0 {
			t.Fatal("docs/data-model.md has no GraphQL operations-per-level chart")
		}
		chart := s[start:]
		if end := strings.Index(chart, "\n\n"); end > 0 {
			chart = chart[:end]
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(chart, "\n")[2:] {
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) < 3 {
				t.Errorf("chart row %q: want 3 cells", line)
				continue
			}
			name, ops := cells[0], strings.Trim(cells[1], "`")
			seen[name] = true
			if w, ok := want[name]; !ok {
				t.Errorf("chart row %q is not a row of this test", name)
			} else if w != ops {
				t.Errorf("chart row %q says %s, the test measures %s", name, ops, w)
			}
		}
		for name := range want {
			if !seen[name] {
				t.Errorf("row %q is not in the chart", name)
			}
		}
	})
}

// TestGraphQLCrossTenant: every GraphQL field that takes an ID, given
// another tenant's, resolves to null with an error (org_not_found,
// user_not_found...), never data, and the mutations write nothing there.
// B's member asks, with A's real IDs.
func TestGraphQLCrossTenant(t *testing.T) {
	ts := apitest.MustServer(t)
	a := apitest.MustWorld(t, ts, "Aperture Sekrit")
	comment := apitest.MustComment(t, a.Member.C, a.Org.Id, a.Ticket.Id, "sekrit cake")
	b := apitest.MustWorld(t, ts, "Black Mesa")
	secrets := []string{a.Org.Name, a.Team.Name, a.Ticket.Title, comment.Body, a.Member.Email, a.Member.Name}
	aIDs := []string{a.Team.Id, a.Ticket.Id, comment.Id, a.Member.ID, a.Assignee.ID}
	bOrg := b.Org.Id
	rows := []struct {
		name, query string
		vars        map[string]any
		codes       []string // the errors' codes, in order
	}{
		{"org(id) of A", `query($o: ID!) { org(id: $o) { id name } }`, map[string]any{"o": a.Org.Id}, []string{"org_not_found"}},
		{"org(id) of A, as a listing", `query($o: ID!) { org(id: $o) { tickets { nodes { title } } } }`, map[string]any{"o": a.Org.Id}, []string{"org_not_found"}},
		{"user(id) of A in B", `query($o: ID!, $u: ID!) { org(id: $o) { user(id: $u) { name } } }`, map[string]any{"o": bOrg, "u": a.Member.ID}, []string{"user_not_found"}},
		{"team(id) of A in B", `query($o: ID!, $t: ID!) { org(id: $o) { team(id: $t) { name } } }`, map[string]any{"o": bOrg, "t": a.Team.Id}, []string{"team_not_found"}},
		{"ticket(id) of A in B", `query($o: ID!, $t: ID!) { org(id: $o) { ticket(id: $t) { title } } }`, map[string]any{"o": bOrg, "t": a.Ticket.Id}, []string{"ticket_not_found"}},
		{"tickets(teamId) of A in B", `query($o: ID!, $t: ID!) { org(id: $o) { tickets(teamId: $t) { nodes { title } } } }`, map[string]any{"o": bOrg, "t": a.Team.Id}, []string{"team_not_found"}},
		{"tickets(assigneeId) of A in B", `query($o: ID!, $u: ID!) { org(id: $o) { tickets(assigneeId: $u) { nodes { title } } } }`, map[string]any{"o": bOrg, "u": a.Assignee.ID}, nil},
		{"tickets(requesterId) of A in B", `query($o: ID!, $u: ID!) { org(id: $o) { tickets(requesterId: $u) { nodes { title } } } }`, map[string]any{"o": bOrg, "u": a.Requester.ID}, []string{"user_not_found"}},
		{"createTicket in A", `mutation($o: ID!) { createTicket(orgId: $o, input: {title: "intruder"}) { id } }`, map[string]any{"o": a.Org.Id}, []string{"org_not_found"}},
		{"createTicket in B on A's team and assignee", `mutation($o: ID!, $t: ID!, $u: ID!) { createTicket(orgId: $o, input: {title: "intruder", teamId: $t, assigneeId: $u}) { id } }`,
			map[string]any{"o": bOrg, "t": a.Team.Id, "u": a.Assignee.ID}, []string{"assignee_not_org_member"}},
		{"updateTicket of A's ticket in A", `mutation($o: ID!, $t: ID!) { updateTicket(orgId: $o, id: $t, input: {title: "pwned"}) { id } }`,
			map[string]any{"o": a.Org.Id, "t": a.Ticket.Id}, []string{"org_not_found"}},
		{"updateTicket of A's ticket in B", `mutation($o: ID!, $t: ID!) { updateTicket(orgId: $o, id: $t, input: {title: "pwned"}) { id } }`,
			map[string]any{"o": bOrg, "t": a.Ticket.Id}, []string{"ticket_not_found"}},
		{"addComment on A's ticket in B", `mutation($o: ID!, $t: ID!) { addComment(orgId: $o, ticketId: $t, body: "pwned") { id } }`,
			map[string]any{"o": bOrg, "t": a.Ticket.Id}, []string{"ticket_not_found"}},
		{"webhooks of A", `query($o: ID!) { org(id: $o) { webhooks { nodes { id url } } } }`, map[string]any{"o": a.Org.Id}, []string{"org_not_found"}},
		{"webhooks of B, as a member", `query($o: ID!) { org(id: $o) { webhooks { nodes { id url } } } }`, map[string]any{"o": bOrg}, []string{"forbidden"}},
		{"addComment on A's ticket in A", `mutation($o: ID!, $t: ID!) { addComment(orgId: $o, ticketId: $t, body: "pwned") { id } }`,
			map[string]any{"o": a.Org.Id, "t": a.Ticket.Id}, []string{"org_not_found"}},
	}
	before := snapshotOf(t, a)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := apitest.GQL(t, ts, b.Member.Token, row.query, row.vars)
			if r.Status != http.StatusOK || !slices.Equal(r.Codes(), row.codes) {
				t.Errorf("status %d, codes %v, want %v: %s", r.Status, r.Codes(), row.codes, r.Raw)
			}
			request, _ := json.Marshal(row.vars)
			if l := apitest.Leaks(r.Raw, secrets, aIDs, string(request)); len(l) > 0 {
				t.Errorf("the answer shows A's data %v: %s", l, r.Raw)
			}
			for _, e := range r.Errors {
				if e.Code() == "org_not_found" && e.Extensions["kind"] != "NOT_FOUND" {
					t.Errorf("kind %v, want NOT_FOUND", e.Extensions["kind"])
				}
			}
		})
	}
	t.Run("A is unchanged", func(t *testing.T) {
		if after := snapshotOf(t, a); after != before {
			t.Errorf("A changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// snapshotOf is what A's owner reads of A's ticket and its comments.
func snapshotOf(t *testing.T, w *apitest.World) string {
	t.Helper()
	r, err := w.Owner.C.GetTicketWithResponse(bg, w.Org.Id, w.Ticket.Id, &client.GetTicketParams{Include: apitest.Ptr(client.GetTicketParamsIncludeComments)})
	apitest.MustStatus(t, r, err, http.StatusOK)
	return string(r.Body)
}

// TestGraphQLRoleMatrix: the three mutations obey the REST API's role
// matrix, because they call the same services: for every role, the
// mutation succeeds exactly when the REST operation does, and is refused
// with the same code when it is not.
func TestGraphQLRoleMatrix(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "GraphQL roles")
	org := w.Org.Id
	// A fresh ticket like the world's (requester, assignee, team), per try.
	fresh := func(t *testing.T) string {
		return apitest.MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: ts.UniqueID("role ticket"), TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID}).Id
	}
	type outcome struct {
		ok   bool
		code string
	}
	rest := func(r apitest.StatusCoder, err error, created int) outcome {
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() == created {
			return outcome{ok: true}
		}
		return outcome{code: apitest.ProblemOf(t, apitest.BodyOf(r)).Code}
	}
	viaGraphQL := func(t *testing.T, token, query string, vars map[string]any) outcome {
		r := apitest.GQL(t, ts, token, query, vars)
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
		if len(r.Errors) == 0 {
			return outcome{ok: true}
		}
		return outcome{code: r.Errors[0].Code()}
	}
	mutations := []struct {
		name    string
		rest    func(t *testing.T, a apitest.Actor) outcome
		graphql func(t *testing.T, a apitest.Actor) outcome
	}{
		{"createTicket",
			func(t *testing.T, a apitest.Actor) outcome {
				r, err := a.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "by REST"})
				return rest(r, err, http.StatusCreated)
			},
			func(t *testing.T, a apitest.Actor) outcome {
				return viaGraphQL(t, a.Token, `mutation($o: ID!) { createTicket(orgId: $o, input: {title: "by GraphQL"}) { id } }`, map[string]any{"o": org})
			}},
		{"updateTicket",
			func(t *testing.T, a apitest.Actor) outcome {
				r, err := a.C.UpdateTicketWithResponse(bg, org, fresh(t), nil, client.TicketUpdate{Priority: apitest.Ptr(client.TicketPriorityHigh)})
				return rest(r, err, http.StatusOK)
			},
			func(t *testing.T, a apitest.Actor) outcome {
				return viaGraphQL(t, a.Token, `mutation($o: ID!, $t: ID!) { updateTicket(orgId: $o, id: $t, input: {priority: HIGH}) { id priority } }`,
					map[string]any{"o": org, "t": fresh(t)})
			}},
		{"addComment",
			func(t *testing.T, a apitest.Actor) outcome {
				r, err := a.C.CreateCommentWithResponse(bg, org, w.Ticket.Id, nil, client.CommentCreate{Body: "by REST"})
				return rest(r, err, http.StatusCreated)
			},
			func(t *testing.T, a apitest.Actor) outcome {
				return viaGraphQL(t, a.Token, `mutation($o: ID!, $t: ID!) { addComment(orgId: $o, ticketId: $t, body: "by GraphQL") { id } }`,
					map[string]any{"o": org, "t": w.Ticket.Id})
			}},
	}
	refused := 0
	for _, m := range mutations {
		for _, r := range apitest.Roles {
			t.Run(m.name+"/"+string(r), func(t *testing.T) {
				a := w.Actor(r)
				want, got := m.rest(t, a), m.graphql(t, a)
				if got != want {
					t.Errorf("GraphQL %+v, REST %+v", got, want)
				}
				if !want.ok {
					refused++
				}
			})
		}
	}
	if refused == 0 {
		t.Error("no role was refused anything: the matrix proves nothing")
	}
}

// TestGraphQLLimits: a document too deep, too complex, too long or with
// too many tokens is refused with a clear error before any DynamoDB call;
// arguments out of range are field errors naming the argument; a request
// reads at most 10 orgs; introspection is off unless enabled; persisted
// queries work as Apollo's clients expect.
func TestGraphQLLimits(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "Limits")
	org := w.Org.Id
	deep := "query($o: ID!) { org(id: $o) { teams { nodes { members { nodes { user { teams { nodes { team { members { nodes { role } } } } } } } } } } } }"
	refusals := []struct {
		name string
		body map[string]any
		code string
	}{
		{"too deep", map[string]any{"query": deep, "variables": map[string]any{"o": org}}, "DEPTH_LIMIT_EXCEEDED"},
		{"too complex", map[string]any{"query": "query($o: ID!) { org(id: $o) { tickets(first: 100) { nodes { title comments(first: 100) { nodes { body author { name } } } } } } }",
			"variables": map[string]any{"o": org}}, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"too many point reads", map[string]any{"query": "query($o: ID!) { org(id: $o) { " + aliases("t", 250, `ticket(id: "`+w.Ticket.Id+`") { id }`) + " } }",
			"variables": map[string]any{"o": org}}, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"too many tokens", map[string]any{"query": "{ me { " + strings.Repeat("a ", 5100) + "} }"}, "GRAPHQL_PARSE_FAILED"},
		{"not GraphQL", map[string]any{"query": "{ me { userId "}, "GRAPHQL_PARSE_FAILED"},
		{"no such field", map[string]any{"query": "{ me { password } }"}, "GRAPHQL_VALIDATION_FAILED"},
		{"introspection, off by default", map[string]any{"query": "{ __schema { types { name } } }"}, "INTROSPECTION_DISABLED"},
		{"an unknown persisted query", map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": strings.Repeat("ab", 32)}}},
			"PERSISTED_QUERY_NOT_FOUND"},
		// 1 KB that expands to 2^30 fields: refused before validation,
		// which (like the depth and complexity walks) would expand it in
		// full, for minutes (an outside attack ran one for 254 s).
		{"fragments that double 30 times", map[string]any{"query": "{ me { ...F30 } } " + doublingFragments(30, "userId")}, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"fragments that double 30 times, with aliases", map[string]any{"query": "{ me { ...F30 } } " + doublingFragments(30, "a: __typename b: __typename")}, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"no name suggested without introspection", map[string]any{"query": "{ me { userI } }"}, "GRAPHQL_VALIDATION_FAILED"},
	}
	for _, c := range refusals {
		t.Run("ErrRequest/"+c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r := apitest.GQLBody(t, ts, w.Member.Token, c.body)
			// No data entry: nothing executed. Introspection is refused by
			// its field, as it executes: the non-null __schema nulls data.
			noData := r.Data == nil || c.code == "INTROSPECTION_DISABLED" && string(r.Data) == "null"
			if r.Status != http.StatusOK || len(r.Errors) != 1 || r.Errors[0].Code() != c.code || !noData {
				t.Errorf("status %d, codes %v, data %s, want one %s and no data: %s", r.Status, r.Codes(), r.Data, c.code, apitest.Truncate(r.Raw))
			}
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("%d DynamoDB calls (%s) for a refused document", n, ts.Rec.Names())
			}
			if strings.Contains(string(r.Raw), "Did you mean") {
				t.Errorf("an error suggests schema names while introspection is off: %s", apitest.Truncate(r.Raw))
			}
		})
	}
	t.Run("OK/fragments reused but small", func(t *testing.T) {
		r := apitest.GQL(t, ts, w.Member.Token, "{ me { ...F8 } } "+doublingFragments(8, "userId"), nil)
		if len(r.Errors) != 0 || !strings.Contains(string(r.Data), `"userId"`) {
			t.Errorf("a 2^8-field expansion: %s", apitest.Truncate(r.Raw))
		}
	})
	t.Run("ErrTooLong/a 400 naming query", func(t *testing.T) {
		r := apitest.GQLBody(t, ts, w.Member.Token, map[string]any{"query": "{ me { userId } }" + strings.Repeat(" ", 16384)})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), `"field":"query"`) {
			t.Errorf("a 16 KiB query: %d %s", r.Status, apitest.Truncate(r.Raw))
		}
	})
	t.Run("ErrNoQuery/a 400", func(t *testing.T) {
		r := apitest.GQLBody(t, ts, w.Member.Token, map[string]any{"variables": map[string]any{}})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), `"field":"query"`) {
			t.Errorf("no query: %d %s", r.Status, apitest.Truncate(r.Raw))
		}
	})
	t.Run("ErrIdempotencyKeyHeader/a 400 pointing at the argument", func(t *testing.T) {
		r := apitest.GQLBody(t, ts, w.Member.Token, map[string]any{"query": "{ me { userId } }"}, "Idempotency-Key", "k1")
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), "idempotency_key_unsupported") {
			t.Errorf("Idempotency-Key header: %d %s", r.Status, apitest.Truncate(r.Raw))
		}
	})
	t.Run("ErrFirst/a field error naming the argument", func(t *testing.T) {
		r := apitest.GQL(t, ts, w.Member.Token, `query($o: ID!) { org(id: $o) { tickets(first: 101) { nodes { id } } } }`, map[string]any{"o": org})
		if got := r.Codes(); !slices.Equal(got, []string{"invalid_limit"}) {
			t.Fatalf("codes %v: %s", got, r.Raw)
		}
		fields, _ := r.Errors[0].Extensions["errors"].([]any)
		if len(fields) != 1 || fields[0].(map[string]any)["field"] != "first" || fields[0].(map[string]any)["in"] != "argument" {
			t.Errorf("extensions.errors %v, want first (argument)", fields)
		}
	})
	t.Run("ErrCursor/another listing's cursor", func(t *testing.T) {
		for range 2 {
			apitest.MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "paged"})
		}
		var d struct {
			Org struct {
				Tickets struct{ PageInfo struct{ EndCursor string } }
			}
		}
		apitest.MustData(t, apitest.GQL(t, ts, w.Member.Token, `query($o: ID!) { org(id: $o) { tickets(first: 1) { pageInfo { endCursor } } } }`, map[string]any{"o": org}), &d)
		r := apitest.GQL(t, ts, w.Member.Token, `query($o: ID!, $c: String!) { org(id: $o) { tickets(first: 1, status: OPEN, after: $c) { nodes { id } } } }`,
			map[string]any{"o": org, "c": d.Org.Tickets.PageInfo.EndCursor})
		if got := r.Codes(); !slices.Equal(got, []string{"invalid_cursor"}) {
			t.Errorf("a cursor of another filter: codes %v", got)
		}
	})
	t.Run("ErrTooManyOrgs/the 11th org", func(t *testing.T) {
		var q strings.Builder
		q.WriteString("{ ")
		for i := range 11 {
			fmt.Fprintf(&q, "o%d: org(id: %q) { id } ", i, fmt.Sprintf("01ARZ3NDEKTSV4RRFFQ69G5F%02d", i))
		}
		q.WriteString("}")
		ts.Rec.Reset()
		r := apitest.GQL(t, ts, w.Member.Token, q.String(), nil)
		n := map[string]int{}
		for _, c := range r.Codes() {
			n[c]++
		}
		if n["org_not_found"] != 10 || n["too_many_orgs"] != 1 || ts.Rec.Count() != 10 {
			t.Errorf("codes %v, %d DynamoDB calls: want 10 org_not_found, 1 too_many_orgs, 10 reads", n, ts.Rec.Count())
		}
	})
	t.Run("OK/a persisted query, sent then named by its hash", func(t *testing.T) {
		query := "{ me { userId } }"
		sum := sha256.Sum256([]byte(query))
		ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
		apitest.MustData(t, apitest.GQLBody(t, ts, w.Member.Token, map[string]any{"query": query, "extensions": ext}), nil)
		var d struct{ Me struct{ UserID string } }
		apitest.MustData(t, apitest.GQLBody(t, ts, w.Member.Token, map[string]any{"extensions": ext}), &d)
		if d.Me.UserID != w.Member.ID {
			t.Errorf("me.userId %q, want %q", d.Me.UserID, w.Member.ID)
		}
	})
	t.Run("OK/introspection when enabled", func(t *testing.T) {
		dev := apitest.MustServer(t, apitest.WithGraphQL(graphapi.Limits{Introspection: true}))
		a := dev.Actor(t, "dev")
		var d struct {
			Schema struct{ QueryType struct{ Name string } } `json:"__schema"`
		}
		apitest.MustData(t, apitest.GQL(t, dev, a.Token, `{ __schema { queryType { name } } }`, nil), &d)
		if d.Schema.QueryType.Name != "Query" {
			t.Errorf("__schema.queryType.name %q", d.Schema.QueryType.Name)
		}
	})
}

// aliases is n aliased copies of field: "p0: field p1: field ...".
func aliases(prefix string, n int, field string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d: %s ", prefix, i, field)
	}
	return b.String()
}

// TestGraphQLAgreesWithREST: for a seeded tenant, every REST read and the
// GraphQL field that serves the same data answer the same objects, field
// by field (GraphQL's names are the REST API's JSON names; a null and an
// absent field are the same).
func TestGraphQLAgreesWithREST(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "Agree")
	org := w.Org.Id
	apitest.MustComment(t, w.Member.C, org, w.Ticket.Id, "first")
	apitest.MustComment(t, w.Assignee.C, org, w.Ticket.Id, "second")
	apitest.MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "unassigned", Priority: apitest.Ptr(client.TicketPriorityUrgent), Tags: &[]string{"a", "b"}})
	apitest.MustInvitation(t, w.Owner.C, org, "agree-invitee@example.com", client.RoleAdmin, w.Team.Id)
	if r, err := w.Owner.C.CreateWebhookWithResponse(bg, org, nil, client.WebhookCreate{Url: "https://hooks.example.com/agree",
		Events: []string{"ticket.delete"}, Description: apitest.Ptr("agree")}); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create webhook: %v", err)
	}
	if r, err := w.Admin.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.TicketUpdate{Status: apitest.Ptr(client.TicketStatusOpen), Tags: &[]string{"x"}}); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("update: %v", err)
	}
	const (
		ticketFields = "id title description status priority requesterId assigneeId teamId tags commentCount version createdAt updatedAt"
		userFields   = "userId email name role joinedAt version"
	)
	vars := map[string]any{"o": org, "t": w.Ticket.Id, "team": w.Team.Id}
	rows := []struct {
		name, rest, query, items string // items: the JSON path of the list in the REST answer ("" for the object)
		nodes                    []string
	}{
		{"getOrg", "/v1/orgs/" + org, `query($o: ID!) { org(id: $o) { id name version createdAt updatedAt } }`, "", []string{"org"}},
		{"listOrgUsers", "/v1/orgs/" + org + "/users?limit=100", `query($o: ID!) { org(id: $o) { users(first: 100) { nodes { ` + userFields + ` } } } }`,
			"items", []string{"org", "users", "nodes"}},
		{"getOrgUser", "/v1/orgs/" + org + "/users/" + w.Assignee.ID, `query($o: ID!) { org(id: $o) { user(id: "` + w.Assignee.ID + `") { ` + userFields + ` } } }`,
			"", []string{"org", "user"}},
		{"listTeams", "/v1/orgs/" + org + "/teams", `query($o: ID!) { org(id: $o) { teams { nodes { id name description memberCount version createdAt updatedAt } } } }`,
			"items", []string{"org", "teams", "nodes"}},
		{"listTeamMembers", "/v1/orgs/" + org + "/teams/" + w.Team.Id + "/members", `query($o: ID!, $team: ID!) { org(id: $o) { team(id: $team) { members { nodes { teamId userId role joinedAt } } } } }`,
			"items", []string{"org", "team", "members", "nodes"}},
		{"listUserTeams", "/v1/orgs/" + org + "/users/" + w.TeamAdmin.ID + "/teams", `query($o: ID!) { org(id: $o) { user(id: "` + w.TeamAdmin.ID + `") { teams { nodes { teamId userId role joinedAt } } } } }`,
			"items", []string{"org", "user", "teams", "nodes"}},
		{"listTickets", "/v1/orgs/" + org + "/tickets?limit=100", `query($o: ID!) { org(id: $o) { tickets(first: 100) { nodes { ` + ticketFields + ` } } } }`,
			"items", []string{"org", "tickets", "nodes"}},
		{"listTeamTickets", "/v1/orgs/" + org + "/teams/" + w.Team.Id + "/tickets", `query($o: ID!, $team: ID!) { org(id: $o) { team(id: $team) { tickets { nodes { ` + ticketFields + ` } } } } }`,
			"items", []string{"org", "team", "tickets", "nodes"}},
		{"listAssignedTickets", "/v1/orgs/" + org + "/users/" + w.Assignee.ID + "/assigned-tickets", `query($o: ID!) { org(id: $o) { user(id: "` + w.Assignee.ID + `") { assignedTickets { nodes { ` + ticketFields + ` } } } } }`,
			"items", []string{"org", "user", "assignedTickets", "nodes"}},
		{"getTicket", "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id, `query($o: ID!, $t: ID!) { org(id: $o) { ticket(id: $t) { ` + ticketFields + ` } } }`,
			"", []string{"org", "ticket"}},
		{"listComments", "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id + "/comments", `query($o: ID!, $t: ID!) { org(id: $o) { ticket(id: $t) { comments { nodes { id ticketId authorId body createdAt } } } } }`,
			"items", []string{"org", "ticket", "comments", "nodes"}},
		{"listInvitations", "/v1/orgs/" + org + "/invitations", `query($o: ID!) { org(id: $o) { invitations { nodes { id email role teamIds invitedBy createdAt expiresAt } } } }`,
			"items", []string{"org", "invitations", "nodes"}},
		{"listAuditEvents", "/v1/orgs/" + org + "/audit-log?limit=100", `query($o: ID!) { org(id: $o) { auditLog(first: 100) { nodes { id action actorId targetType targetId at changes { field before after } requestId clientRequestId } } } }`,
			"items", []string{"org", "auditLog", "nodes"}},
		{"listWebhooks", "/v1/orgs/" + org + "/webhooks", `query($o: ID!) { org(id: $o) { webhooks { nodes { id url events description active failingSince version createdAt updatedAt } } } }`,
			"items", []string{"org", "webhooks", "nodes"}},
		{"getMe", "/v1/me", `{ me { userId orgs { nodes { orgId name role userName } } } }`, "", []string{"me"}},
	}
	for _, row := range rows {
		apitest.Spec(t, "200/graphql/"+row.name+" as REST answers it", func(t *testing.T) {
			rr := apitest.DoReq(t, ts.HTTP, http.MethodGet, ts.URL+row.rest, w.Owner.Token, nil, "")
			if rr.Status != http.StatusOK {
				t.Fatalf("REST %s: %d %s", row.rest, rr.Status, rr.Body)
			}
			var restDoc map[string]any
			apitest.DecodeJSON(t, rr.Body, &restDoc)
			g := apitest.GQL(t, ts, w.Owner.Token, row.query, vars)
			var gDoc any
			apitest.MustData(t, g, &gDoc)
			for _, k := range row.nodes {
				gDoc = gDoc.(map[string]any)[k]
			}
			var restVal any = restDoc
			if row.items != "" {
				restVal = restDoc[row.items]
			}
			if row.name == "getMe" { // REST's orgs is a list; GraphQL's a connection
				m := gDoc.(map[string]any)
				m["orgs"] = m["orgs"].(map[string]any)["nodes"]
			}
			// GraphQL spells REST's enum values in upper case.
			restVal, gDoc = dropNulls(restVal), restEnums(dropNulls(gDoc))
			if list, ok := restVal.([]any); ok && len(list) == 0 {
				t.Fatalf("REST %s lists nothing: the row compares nothing", row.rest)
			}
			if a, b := mustJSON(t, restVal), mustJSON(t, gDoc); a != b {
				t.Errorf("REST and GraphQL differ:\nREST    %s\nGraphQL %s", a, b)
			}
		})
	}
}

// dropNulls removes null fields (REST omits them, GraphQL writes null).
// restEnums lower-cases the enum fields (role, status, priority) of a
// GraphQL answer: REST's spelling of the same stored values.
func restEnums(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "role" || k == "status" || k == "priority") {
				v[k] = strings.ToLower(s)
			} else {
				v[k] = restEnums(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = restEnums(x)
		}
	}
	return v
}

func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x != nil {
				out[k] = dropNulls(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropNulls(x)
		}
		return out
	}
	return v
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestGraphQLUnavailable: with DynamoDB refusing connections, a GraphQL
// request that got nothing is a 503 with Retry-After, like REST's; one
// that got some data answers it, the failed fields null with their
// errors; none is a 500.
func TestGraphQLUnavailable(t *testing.T) {
	ts := apitest.MustServer(t, apitest.WithEndpoints(apitest.ClosedPort(t), ""))
	a := ts.Actor(t, "refused")
	org := apitest.RandULID()
	r := apitest.GQL(t, ts, a.Token, `query($o: ID!) { org(id: $o) { id } }`, map[string]any{"o": org})
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Raw), "db_unavailable") {
		t.Errorf("nothing answered: %d %s, want 503 db_unavailable", r.Status, r.Raw)
	}
	mixed := apitest.GQL(t, ts, a.Token, `query($o: ID!) { me { userId } org(id: $o) { id } }`, map[string]any{"o": org})
	var d struct{ Me struct{ UserID string } }
	if mixed.Status != http.StatusOK || !slices.Equal(mixed.Codes(), []string{"db_unavailable"}) || json.Unmarshal(mixed.Data, &d) != nil || d.Me.UserID != a.ID {
		t.Errorf("me answered, org not: %d %s", mixed.Status, mixed.Raw)
	}
	apitest.No500(t, ts)
}

// TestGraphQLCursorsAreREST's: a listing's cursor is the same in both APIs
// (same signature, same binding to the org and the listing), so a client
// may page with either.
func TestGraphQLCursorsAreRESTs(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "Cursors")
	org := w.Org.Id
	for i := range 4 { // 5 tickets with the world's: pages of 2, 2 and 1
		apitest.MustTicket(t, w.Member.C, org, client.TicketCreate{Title: fmt.Sprintf("page %d", i)})
	}
	rest, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: apitest.Ptr(2)})
	apitest.MustStatus(t, rest, err, http.StatusOK)
	var d struct {
		Org struct {
			Tickets struct {
				Nodes    []struct{ ID string }
				PageInfo struct{ EndCursor *string }
			}
		}
	}
	apitest.MustData(t, apitest.GQL(t, ts, w.Member.Token, `query($o: ID!, $c: String) { org(id: $o) { tickets(first: 2, after: $c) { nodes { id } pageInfo { endCursor } } } }`,
		map[string]any{"o": org, "c": *rest.JSON200.NextCursor}), &d)
	restNext, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: apitest.Ptr(2), Cursor: rest.JSON200.NextCursor})
	apitest.MustStatus(t, restNext, err, http.StatusOK)
	var got, want []string
	for _, n := range d.Org.Tickets.Nodes {
		got = append(got, n.ID)
	}
	for _, it := range restNext.JSON200.Items {
		want = append(want, it.Id)
	}
	if !slices.Equal(got, want) || len(want) != 2 {
		t.Errorf("GraphQL page after REST's cursor %v, REST's own next page %v", got, want)
	}
	if d.Org.Tickets.PageInfo.EndCursor == nil {
		t.Fatal("no endCursor after the second page of 5 tickets")
	}
	back, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: apitest.Ptr(2), Cursor: d.Org.Tickets.PageInfo.EndCursor})
	apitest.MustStatus(t, back, err, http.StatusOK)
	if len(back.JSON200.Items) != 1 || slices.Contains(append(got, want...), back.JSON200.Items[0].Id) {
		t.Errorf("REST after GraphQL's cursor: %v, want the fifth ticket", back.JSON200.Items)
	}
}

// TestGraphQLOverHTTP: the GraphQL over HTTP specification's MUSTs and
// SHOULDs for POST: null is absent, any extensions map is accepted, the
// answer is in the media type the client accepts, and a request that never
// executed has no data (400 in application/graphql-response+json, 200 in
// application/json).
func TestGraphQLOverHTTP(t *testing.T) {
	ts := apitest.MustServer(t)
	a := ts.Actor(t, "http")
	const gqlResponse = "application/graphql-response+json"
	for _, accept := range []string{"application/json", gqlResponse} {
		for _, body := range []map[string]any{
			{"query": "{ me { userId } }", "variables": nil},
			{"query": "{ me { userId } }", "operationName": nil},
			{"query": "{ me { userId } }", "extensions": nil},
			{"query": "{ me { userId } }", "extensions": map[string]any{"some": "value", "tracing": true}},
			{"query": "{ me { userId } }", "extensions": map[string]any{"persistedQuery": nil}},
			{"query": "query Me { me { userId } }", "operationName": "Me", "variables": map[string]any{}, "extensions": map[string]any{}},
		} {
			apitest.Spec(t, fmt.Sprintf("200/graphql/%s, %s", accept, mustJSON(t, body)), func(t *testing.T) {
				r := apitest.GQLBody(t, ts, a.Token, body, "Accept", accept)
				var d struct{ Me struct{ UserID string } }
				apitest.MustData(t, r, &d)
				if d.Me.UserID != a.ID || r.Header.Get("Content-Type") != accept {
					t.Errorf("%d %s %s, want %s's userId in %s", r.Status, r.Header.Get("Content-Type"), r.Raw, a.ID, accept)
				}
			})
		}
	}
	for accept, want := range map[string]string{"": "application/json", "*/*": "application/json", "application/json, " + gqlResponse + ";q=0.9": "application/json",
		gqlResponse + ", application/json;q=0.9": gqlResponse, "application/json, " + gqlResponse: gqlResponse, "text/html": "application/json"} {
		apitest.Spec(t, "200/graphql/Accept "+accept+" is answered in "+want, func(t *testing.T) {
			var r apitest.GQLResponse
			if accept == "" {
				r = apitest.GQLBody(t, ts, a.Token, map[string]any{"query": "{ me { userId } }"})
			} else {
				r = apitest.GQLBody(t, ts, a.Token, map[string]any{"query": "{ me { userId } }"}, "Accept", accept)
			}
			if r.Status != http.StatusOK || r.Header.Get("Content-Type") != want {
				t.Errorf("%d %s, want 200 %s", r.Status, r.Header.Get("Content-Type"), want)
			}
		})
	}
	for _, c := range []struct {
		name string
		body map[string]any
		code string
	}{
		{"a document that does not parse", map[string]any{"query": "{"}, "GRAPHQL_PARSE_FAILED"},
		{"a document that does not validate", map[string]any{"query": "{ noSuchField }"}, "GRAPHQL_VALIDATION_FAILED"},
		{"variables that do not fit", map[string]any{"query": "query($id: ID!) { org(id: $id) { id } }", "variables": map[string]any{"id": nil}}, "GRAPHQL_VALIDATION_FAILED"},
		{"a document over the depth limit", map[string]any{"query": "{ me { orgs { nodes { org { teams { nodes { members { nodes { user { teams { nodes { team { name } } } } } } } } } } } } }"}, "DEPTH_LIMIT_EXCEEDED"},
	} {
		apitest.Spec(t, "400/graphql/"+gqlResponse+", "+c.name+": no data", func(t *testing.T) {
			r := apitest.GQLBody(t, ts, a.Token, c.body, "Accept", gqlResponse)
			var got map[string]any
			if err := json.Unmarshal(r.Raw, &got); err != nil {
				t.Fatalf("%d %s: %v", r.Status, r.Raw, err)
			}
			_, hasData := got["data"]
			if r.Status != http.StatusBadRequest || r.Header.Get("Content-Type") != gqlResponse || hasData || !strings.Contains(string(r.Raw), `"code":"`+c.code+`"`) {
				t.Errorf("%d %s %s, want 400 in %s without data, code %s", r.Status, r.Header.Get("Content-Type"), r.Raw, gqlResponse, c.code)
			}
		})
		apitest.Spec(t, "200/graphql/application/json, "+c.name+": no data", func(t *testing.T) {
			r := apitest.GQLBody(t, ts, a.Token, c.body, "Accept", "application/json")
			var got map[string]any
			if err := json.Unmarshal(r.Raw, &got); err != nil {
				t.Fatalf("%d %s: %v", r.Status, r.Raw, err)
			}
			_, hasData := got["data"]
			if r.Status != http.StatusOK || hasData || !slices.Equal(r.Codes(), []string{c.code}) {
				t.Errorf("%d %s, want 200 without data, code %s", r.Status, r.Raw, c.code)
			}
		})
	}
	apitest.Spec(t, "400/graphql/a variables that is not an object", func(t *testing.T) {
		for _, v := range []any{"string", 0, false, []string{"array"}} {
			r := apitest.GQLBody(t, ts, a.Token, map[string]any{"query": "{ me { userId } }", "variables": v})
			if r.Status != http.StatusBadRequest {
				t.Errorf("variables %v: %d %s, want 400", v, r.Status, r.Raw)
			}
		}
	})
}

// TestGraphQLOverGET: GET runs queries from the URL as POST runs them
// (media types, limits, no DynamoDB call for a refused document),
// automatic persisted queries included, and refuses a mutation with 405
// and Allow: POST before anything runs.
func TestGraphQLOverGET(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "GET")
	org := w.Org.Id
	const gqlResponse = "application/graphql-response+json"
	for _, accept := range []string{"application/json", gqlResponse} {
		apitest.Spec(t, "200/graphqlGet/a query with variables, in "+accept, func(t *testing.T) {
			r := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {"query Q($o: ID!) { org(id: $o) { name } }"}, "operationName": {"Q"},
				"variables": {`{"o":"` + org + `"}`}, "extensions": {`{"some":"value"}`}}, "Accept", accept)
			var d struct{ Org struct{ Name string } }
			apitest.MustData(t, r, &d)
			if d.Org.Name != w.Org.Name || r.Header.Get("Content-Type") != accept || r.Header.Get("Vary") != "Accept" {
				t.Errorf("%s %q %s, want the org's name in %s, Vary: Accept", r.Header.Get("Content-Type"), r.Header.Get("Vary"), r.Raw, accept)
			}
		})
	}
	apitest.Spec(t, "200/graphqlGet/an automatic persisted query, by hash once known", func(t *testing.T) {
		q := "query PQ($o: ID!) { org(id: $o) { name } }"
		sum := sha256.Sum256([]byte(q))
		ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		vars := `{"o":"` + org + `"}`
		ts.Rec.Reset()
		unknown := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"extensions": {ext}, "variables": {vars}})
		if !slices.Equal(unknown.Codes(), []string{"PERSISTED_QUERY_NOT_FOUND"}) || unknown.Data != nil || ts.Rec.Count() != 0 {
			t.Errorf("an unknown hash: %d %s, %d DynamoDB calls", unknown.Status, unknown.Raw, ts.Rec.Count())
		}
		var d struct{ Org struct{ Name string } }
		apitest.MustData(t, apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {q}, "extensions": {ext}, "variables": {vars}}), &d)
		d.Org.Name = ""
		byHash := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"extensions": {ext}, "variables": {vars}})
		apitest.MustData(t, byHash, &d)
		if d.Org.Name != w.Org.Name {
			t.Errorf("by hash: %+v, want the org's name", d)
		}
		// A browser's cache keeps it: a strong ETag, revalidated each time.
		etag := byHash.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) || byHash.Header.Get("Cache-Control") != "private, no-cache" || unknown.Header.Get("ETag") != "" {
			t.Errorf("by hash: ETag %q, Cache-Control %q (unknown hash: ETag %q); want a strong tag, private, no-cache, and no tag on a request error",
				etag, byHash.Header.Get("Cache-Control"), unknown.Header.Get("ETag"))
		}
		again := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"extensions": {ext}, "variables": {vars}}, "If-None-Match", etag)
		if again.Status != http.StatusNotModified || len(again.Raw) != 0 || again.Header.Get("ETag") != etag || again.Header.Get("Cache-Control") != "private, no-cache" {
			t.Errorf("If-None-Match %s: %d %q ETag %q Cache-Control %q, want 304 with no body, the same tag and Cache-Control", etag, again.Status, again.Raw, again.Header.Get("ETag"), again.Header.Get("Cache-Control"))
		}
		r, err := w.Owner.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Renamed for the cache"})
		apitest.MustStatus(t, r, err, http.StatusOK)
		moved := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"extensions": {ext}, "variables": {vars}}, "If-None-Match", etag)
		if moved.Status != http.StatusOK || moved.Header.Get("ETag") == etag || !strings.Contains(string(moved.Raw), "Renamed for the cache") {
			t.Errorf("after a rename, If-None-Match %s: %d ETag %q %s, want 200 with the new name and another tag", etag, moved.Status, moved.Header.Get("ETag"), moved.Raw)
		}
	})
	apitest.Spec(t, "400/graphqlGet/"+gqlResponse+", a document over the depth limit: no data, no DynamoDB call", func(t *testing.T) {
		ts.Rec.Reset()
		r := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {"{ me { orgs { nodes { org { teams { nodes { members { nodes { user { teams { nodes { team { name } } } } } } } } } } } } }"}}, "Accept", gqlResponse)
		if r.Status != http.StatusBadRequest || !slices.Equal(r.Codes(), []string{"DEPTH_LIMIT_EXCEEDED"}) || r.Data != nil || ts.Rec.Count() != 0 {
			t.Errorf("%d %s, %d DynamoDB calls; want 400 DEPTH_LIMIT_EXCEEDED without data and none", r.Status, r.Raw, ts.Rec.Count())
		}
	})
	for name, params := range map[string]url.Values{
		"variables that are not a JSON object":  {"query": {"{ me { userId } }"}, "variables": {"[1]"}},
		"extensions that are not a JSON object": {"query": {"{ me { userId } }"}, "extensions": {"1"}},
		"a persisted query of another version":  {"extensions": {`{"persistedQuery":{"version":2,"sha256Hash":"` + strings.Repeat("a", 64) + `"}}`}},
		"no query":                              {"operationName": {"Q"}},
	} {
		apitest.Spec(t, "400/graphqlGet/"+name, func(t *testing.T) {
			if r := apitest.GQLGet(t, ts, w.Member.Token, params); r.Status != http.StatusBadRequest {
				t.Errorf("%d %s, want 400", r.Status, r.Raw)
			}
		})
	}
	apitest.Spec(t, "200/graphqlGet/a null persistedQuery is none", func(t *testing.T) {
		r := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {"{ me { userId } }"}, "extensions": {`{"persistedQuery":null}`}})
		var d struct{ Me struct{ UserID string } }
		apitest.MustData(t, r, &d)
		if d.Me.UserID == "" {
			t.Errorf("%s, want the caller's userId", r.Raw)
		}
	})
	for name, q := range map[string]string{
		"a mutation":                            `mutation($o: ID!) { createTicket(orgId: $o, input: {title: "over GET"}) { id } }`,
		"a mutation that does not validate":     `mutation { createTicket(orgId: 1) { noSuchField } }`,
		"a mutation whose variables do not fit": `mutation($o: ID!) { createTicket(orgId: $o, input: {title: "x"}) { id } }`,
	} {
		apitest.Spec(t, "405/graphqlGet/"+name+", refused before it runs", func(t *testing.T) {
			ts.Rec.Reset()
			vars := `{"o":"` + org + `"}`
			if strings.Contains(name, "variables") {
				vars = `{"o":null}`
			}
			r := apitest.GQLGet(t, ts, w.Member.Token, url.Values{"query": {q}, "variables": {vars}}, "Accept", gqlResponse)
			if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != http.MethodPost || ts.Rec.Count() != 0 {
				t.Errorf("%d Allow %q %s, %d DynamoDB calls; want 405, Allow: POST, none", r.Status, r.Header.Get("Allow"), r.Raw, ts.Rec.Count())
			}
		})
	}
}

// TestGraphQLRelayConnections: every connection is a Relay connection as
// GitHub's API has them: edges with a cursor each, that continues right
// after its node, nodes (the edges' nodes), pageInfo with the first and
// last edges' cursors, and totalCount where the store keeps the count.
func TestGraphQLRelayConnections(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "Relay")
	org := w.Org.Id
	type edge struct {
		Cursor string
		Node   struct{ Key string }
	}
	type conn struct {
		Edges    []edge
		Nodes    []struct{ Key string }
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
		TotalCount *int
	}
	// pageOf runs doc (a connection at path, its nodes' key aliased `key`)
	// after cursor c and checks the page's own invariants.
	pageOf := func(t *testing.T, doc string, path []string, first int, c *string) conn {
		t.Helper()
		var d any
		apitest.MustData(t, apitest.GQL(t, ts, w.Owner.Token, doc, map[string]any{"o": org, "t": w.Ticket.Id, "team": w.Team.Id, "n": first, "c": c}), &d)
		for _, k := range path {
			d = d.(map[string]any)[k]
		}
		var got conn
		if err := json.Unmarshal([]byte(mustJSON(t, d)), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Edges) != len(got.Nodes) || len(got.Edges) > first {
			t.Fatalf("%d edges, %d nodes (first %d)", len(got.Edges), len(got.Nodes), first)
		}
		for i, e := range got.Edges {
			if e.Cursor == "" || e.Node.Key != got.Nodes[i].Key {
				t.Errorf("edge %d: cursor %q, node %q; nodes[%d] %q", i, e.Cursor, e.Node.Key, i, got.Nodes[i].Key)
			}
		}
		pi := got.PageInfo
		if pi.HasPreviousPage {
			t.Error("hasPreviousPage is true when paging forward")
		}
		if n := len(got.Edges); n == 0 && (pi.StartCursor != nil || pi.EndCursor != nil || pi.HasNextPage) ||
			n > 0 && (pi.StartCursor == nil || *pi.StartCursor != got.Edges[0].Cursor || pi.EndCursor == nil || *pi.EndCursor != got.Edges[n-1].Cursor) {
			t.Errorf("pageInfo %+v does not hold the first and last edges' cursors of %d edges", pi, n)
		}
		return got
	}
	// walk pages through the whole listing by endCursor.
	walk := func(t *testing.T, doc string, path []string, first int) []string {
		var keys []string
		var c *string
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("the listing never ended")
			}
			p := pageOf(t, doc, path, first, c)
			for _, e := range p.Edges {
				keys = append(keys, e.Node.Key)
			}
			if !p.PageInfo.HasNextPage {
				if p.PageInfo.EndCursor != nil && len(pageOf(t, doc, path, first, p.PageInfo.EndCursor).Edges) != 0 {
					t.Error("the last page's endCursor has more after it")
				}
				return keys
			}
			c = p.PageInfo.EndCursor
		}
	}
	for _, l := range []struct {
		name, doc string
		path      []string
		rest      string // the REST listing, its items' key field
		key       string
	}{
		{"users", `query($o: ID!, $n: Int, $c: String) { org(id: $o) { users(first: $n, after: $c) { edges { cursor node { key: userId } } nodes { key: userId } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`,
			[]string{"org", "users"}, "/v1/orgs/" + org + "/users?limit=100", "userId"},
		{"auditLog", `query($o: ID!, $n: Int, $c: String) { org(id: $o) { auditLog(first: $n, after: $c) { edges { cursor node { key: id } } nodes { key: id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`,
			[]string{"org", "auditLog"}, "/v1/orgs/" + org + "/audit-log?limit=100", "id"},
		{"team members", `query($o: ID!, $team: ID!, $n: Int, $c: String) { org(id: $o) { team(id: $team) { members(first: $n, after: $c) { edges { cursor node { key: userId } } nodes { key: userId } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount } } } }`,
			[]string{"org", "team", "members"}, "/v1/orgs/" + org + "/teams/" + w.Team.Id + "/members", "userId"},
	} {
		rr := apitest.DoReq(t, ts.HTTP, http.MethodGet, ts.URL+l.rest, w.Owner.Token, nil, "")
		var rest struct{ Items []map[string]any }
		apitest.DecodeJSON(t, rr.Body, &rest)
		var want []string
		for _, it := range rest.Items {
			want = append(want, it[l.key].(string))
		}
		t.Run(l.name+"/OK, forward through edges to the end, as REST lists it", func(t *testing.T) {
			if got := walk(t, l.doc, l.path, 3); !slices.Equal(got, want) || len(want) < 4 {
				t.Errorf("paged through edges: %v\nREST lists: %v", got, want)
			}
		})
		t.Run(l.name+"/OK, every edge's cursor continues right after its node", func(t *testing.T) {
			all := pageOf(t, l.doc, l.path, 100, nil)
			for i, e := range all.Edges {
				rest := pageOf(t, l.doc, l.path, 100, &e.Cursor)
				var got []string
				for _, n := range rest.Nodes {
					got = append(got, n.Key)
				}
				if !slices.Equal(got, want[i+1:]) {
					t.Errorf("after edge %d (%s): %v, want %v", i, e.Node.Key, got, want[i+1:])
				}
			}
		})
	}
	t.Run("totalCount/OK, the team's member count", func(t *testing.T) {
		doc := `query($o: ID!, $team: ID!, $n: Int, $c: String) { org(id: $o) { team(id: $team) { memberCount members(first: $n, after: $c) { edges { cursor node { key: userId } } nodes { key: userId } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount } } } }`
		p := pageOf(t, doc, []string{"org", "team", "members"}, 1, nil)
		if p.TotalCount == nil || *p.TotalCount != 4 || !p.PageInfo.HasNextPage {
			t.Errorf("a team of 4, first 1: totalCount %v, hasNextPage %v", p.TotalCount, p.PageInfo.HasNextPage)
		}
	})
	t.Run("totalCount/OK, the ticket's comment count", func(t *testing.T) {
		for i := range 3 {
			apitest.MustData(t, apitest.GQL(t, ts, w.Owner.Token, `mutation($o: ID!, $t: ID!, $b: String!) { addComment(orgId: $o, ticketId: $t, body: $b) { id } }`,
				map[string]any{"o": org, "t": w.Ticket.Id, "b": fmt.Sprint("comment ", i)}), nil)
		}
		doc := `query($o: ID!, $t: ID!, $n: Int, $c: String) { org(id: $o) { ticket(id: $t) { comments(first: $n, after: $c) { edges { cursor node { key: id } } nodes { key: id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount } } } }`
		p := pageOf(t, doc, []string{"org", "ticket", "comments"}, 2, nil)
		if p.TotalCount == nil || *p.TotalCount != 3 {
			t.Errorf("3 comments: totalCount %v", p.TotalCount)
		}
		if got := walk(t, doc, []string{"org", "ticket", "comments"}, 2); len(got) != 3 {
			t.Errorf("paged through %d comments, want 3", len(got))
		}
	})
}

// TestGraphQLMutations: createTicket, updateTicket and addComment are the
// REST writes, with their rules, audit events and idempotency.
func TestGraphQLMutations(t *testing.T) {
	ts := apitest.MustServer(t)
	w := apitest.MustWorld(t, ts, "Mutations")
	org := w.Org.Id
	const create = `mutation($o: ID!, $in: CreateTicketInput!, $k: String) { createTicket(orgId: $o, input: $in, idempotencyKey: $k) { id title requesterId assigneeId teamId priority version } }`
	type ticketOut struct {
		ID, Title, RequesterID, Priority string
		AssigneeID, TeamID               *string
		Version                          int
	}
	createTicket := func(t *testing.T, in map[string]any, key any) (ticketOut, apitest.GQLResponse) {
		var d struct{ CreateTicket ticketOut }
		r := apitest.GQL(t, ts, w.Member.Token, create, map[string]any{"o": org, "in": in, "k": key})
		if len(r.Errors) == 0 {
			apitest.MustData(t, r, &d)
		}
		return d.CreateTicket, r
	}
	countTitled := func(t *testing.T, title string) int {
		n := 0
		for _, it := range apitest.ItemsOf(t, ts, "Ticket", org) {
			if it.Str("title") == title {
				n++
			}
		}
		return n
	}
	t.Run("addComment/ErrPartly, the committed one keeps its answer", func(t *testing.T) {
		r := apitest.GQL(t, ts, w.Member.Token, `mutation($o: ID!, $ok: ID!, $gone: ID!) { a: addComment(orgId: $o, ticketId: $ok, body: "kept") { id body } b: addComment(orgId: $o, ticketId: $gone, body: "lost") { id } }`,
			map[string]any{"o": org, "ok": w.Ticket.Id, "gone": apitest.RandULID()})
		var d struct {
			A *struct{ ID, Body string }
			B *struct{ ID string }
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Fatalf("data %s: %v", r.Data, err)
		}
		if d.A == nil || d.A.ID == "" || d.A.Body != "kept" || d.B != nil || !slices.Equal(r.Codes(), []string{"ticket_not_found"}) {
			t.Errorf("two mutations, the second failing: data %s, codes %v; want a's comment and b null", r.Data, r.Codes())
		}
	})
	t.Run("createTicket/ErrEnumCase, not the default priority", func(t *testing.T) {
		for _, p := range []string{"high", "Urgent"} { // REST's spelling, and a mixed case
			_, r := createTicket(t, map[string]any{"title": "wrong case " + p, "priority": p}, nil)
			if got := r.Codes(); !slices.Equal(got, []string{"invalid_enum"}) {
				t.Errorf("priority %q: codes %v, want invalid_enum: %s", p, got, apitest.Truncate(r.Raw))
			}
			if n := countTitled(t, "wrong case "+p); n != 0 {
				t.Errorf("priority %q: %d ticket(s) created", p, n)
			}
		}
	})
	t.Run("tickets/ErrEnumCase, not an unfiltered list", func(t *testing.T) {
		for _, q := range []struct{ doc, vars string }{
			{`query($o: ID!, $s: TicketStatus) { org(id: $o) { tickets(status: $s) { nodes { id } } } }`, "s"},
			{`query($o: ID!, $p: TicketPriority) { org(id: $o) { tickets(priority: $p) { nodes { id } } } }`, "p"},
			{`query($o: ID!, $t: ID!, $s: TicketStatus) { org(id: $o) { team(id: $t) { tickets(status: $s) { nodes { id } } } } }`, "s"},
		} {
			v := map[string]any{"o": org, "t": w.Team.Id, q.vars: "solved"}
			if q.vars == "p" {
				v["p"] = "high"
			}
			r := apitest.GQL(t, ts, w.Member.Token, q.doc, v)
			if got := r.Codes(); !slices.Equal(got, []string{"invalid_enum"}) {
				t.Errorf("%s: codes %v, want invalid_enum: %s", q.doc, got, apitest.Truncate(r.Raw))
			}
		}
	})
	t.Run("createTicket/OK, audited as REST's", func(t *testing.T) {
		tk, r := createTicket(t, map[string]any{"title": "by GraphQL", "assigneeId": w.Assignee.ID, "teamId": w.Team.Id, "priority": "HIGH"}, nil)
		if len(r.Errors) > 0 || tk.RequesterID != w.Member.ID || tk.Priority != "HIGH" || tk.Version != 1 || tk.AssigneeID == nil || *tk.AssigneeID != w.Assignee.ID {
			t.Fatalf("created %+v: %s", tk, r.Raw)
		}
		var found bool
		for _, ev := range apitest.AllEvents(t, w.Owner.C, org, 100, nil, nil) {
			found = found || (ev.Action == "ticket.create" && ev.TargetId == tk.ID && ev.ActorId == w.Member.ID)
		}
		if !found {
			t.Error("no ticket.create audit event for it")
		}
	})
	t.Run("createTicket/idempotencyKey: a retry meets the first ticket", func(t *testing.T) {
		in := map[string]any{"title": ts.UniqueID("once")}
		first, r1 := createTicket(t, in, "gql-key-1")
		again, r2 := createTicket(t, in, "gql-key-1")
		if len(r1.Errors)+len(r2.Errors) > 0 || first.ID == "" || again.ID != first.ID {
			t.Fatalf("first %+v, again %+v: %s %s", first, again, r1.Raw, r2.Raw)
		}
		if n := countTitled(t, in["title"].(string)); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
		_, reused := createTicket(t, map[string]any{"title": "something else"}, "gql-key-1")
		if got := reused.Codes(); !slices.Equal(got, []string{"idempotency_key_reused"}) {
			t.Errorf("the key with another input: codes %v", got)
		}
		_, bad := createTicket(t, in, "")
		if got := bad.Codes(); !slices.Equal(got, []string{"invalid_idempotency_key"}) {
			t.Errorf("an empty key: codes %v", got)
		}
	})
	t.Run("createTicket/ErrInvalid lists the input's fields", func(t *testing.T) {
		_, r := createTicket(t, map[string]any{"title": "x", "description": nil, "tags": nil}, nil)
		if got := r.Codes(); !slices.Equal(got, []string{"not_nullable"}) {
			t.Fatalf("codes %v: %s", got, r.Raw)
		}
		var fields []string
		for _, f := range r.Errors[0].Extensions["errors"].([]any) {
			m := f.(map[string]any)
			fields = append(fields, fmt.Sprint(m["in"], " ", m["field"]))
		}
		if want := []string{"input description", "input tags"}; !slices.Equal(fields, want) {
			t.Errorf("fields %v, want %v", fields, want)
		}
	})
	t.Run("updateTicket/expectedVersion", func(t *testing.T) {
		tk, _ := createTicket(t, map[string]any{"title": "versioned", "assigneeId": w.Assignee.ID}, nil)
		const update = `mutation($o: ID!, $t: ID!, $v: Int, $in: UpdateTicketInput!) { updateTicket(orgId: $o, id: $t, expectedVersion: $v, input: $in) { version status assigneeId } }`
		stale := apitest.GQL(t, ts, w.Member.Token, update, map[string]any{"o": org, "t": tk.ID, "v": 7, "in": map[string]any{"status": "OPEN"}})
		if got := stale.Codes(); !slices.Equal(got, []string{"version_mismatch"}) || stale.Errors[0].Extensions["kind"] != "PRECONDITION_FAILED" {
			t.Errorf("a stale version: codes %v, ext %v", got, stale.Errors)
		}
		var d struct {
			UpdateTicket struct {
				Version    int
				Status     string
				AssigneeID *string
			}
		}
		apitest.MustData(t, apitest.GQL(t, ts, w.Member.Token, update, map[string]any{"o": org, "t": tk.ID, "v": 1, "in": map[string]any{"status": "OPEN", "assigneeId": nil}}), &d)
		if d.UpdateTicket.Version != 2 || d.UpdateTicket.Status != "OPEN" || d.UpdateTicket.AssigneeID != nil {
			t.Errorf("updated to %+v, want version 2, open, unassigned", d.UpdateTicket)
		}
		nulled := apitest.GQL(t, ts, w.Member.Token, update, map[string]any{"o": org, "t": tk.ID, "in": map[string]any{"title": nil}})
		if got := nulled.Codes(); !slices.Equal(got, []string{"not_nullable"}) {
			t.Errorf("title null: codes %v", got)
		}
	})
	// The REST API's refusal of a list input, field by field: "in field code".
	restFields := func(t *testing.T, raw []byte) []string {
		var p struct {
			Code   string
			Errors []struct{ In, Field, Code string }
		}
		apitest.DecodeJSON(t, raw, &p)
		out := []string{p.Code}
		for _, f := range p.Errors {
			out = append(out, f.Field+" "+f.Code)
		}
		return out
	}
	gqlFields := func(r apitest.GQLResponse) []string {
		if len(r.Errors) != 1 || r.Data == nil || string(r.Data) == "" {
			return []string{fmt.Sprint(len(r.Errors), " errors: ", string(r.Raw))}
		}
		out := []string{r.Errors[0].Code()}
		fs, _ := r.Errors[0].Extensions["errors"].([]any)
		for _, f := range fs {
			m, _ := f.(map[string]any)
			out = append(out, fmt.Sprint(m["field"], " ", m["code"]))
		}
		return out
	}
	for name, tags := range map[string][]string{
		"25 identical tags": slices.Repeat([]string{"x"}, 25),
		"a tag twice":       {"a", "b", "a"},
		"21 tags":           strings.Split("a b c d e f g h i j k l m n o p q r s t u", " "),
		"an empty tag":      {"a", ""},
	} {
		t.Run("createTicket/ErrInvalid "+name+", as REST refuses them", func(t *testing.T) {
			rest, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "tagged " + name, Tags: &tags})
			if err != nil || rest.StatusCode() != http.StatusBadRequest {
				t.Fatalf("REST: %v %d, want 400", err, rest.StatusCode())
			}
			want := restFields(t, rest.Body)
			_, r := createTicket(t, map[string]any{"title": "tagged " + name, "tags": tags}, nil)
			if got := gqlFields(r); !slices.Equal(got, want) {
				t.Errorf("GraphQL %v, REST %v; want the same refusal: %s", got, want, r.Raw)
			}
			if n := countTitled(t, "tagged "+name); n != 0 {
				t.Errorf("%d tickets made, want none", n)
			}
		})
		t.Run("updateTicket/ErrInvalid "+name+", as REST refuses them", func(t *testing.T) {
			rest, err := w.Admin.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.TicketUpdate{Tags: &tags})
			if err != nil || rest.StatusCode() != http.StatusBadRequest {
				t.Fatalf("REST: %v %d, want 400", err, rest.StatusCode())
			}
			want := restFields(t, rest.Body)
			r := apitest.GQL(t, ts, w.Admin.Token, `mutation($o: ID!, $t: ID!, $in: UpdateTicketInput!) { updateTicket(orgId: $o, id: $t, input: $in) { tags } }`,
				map[string]any{"o": org, "t": w.Ticket.Id, "in": map[string]any{"tags": tags}})
			if got := gqlFields(r); !slices.Equal(got, want) {
				t.Errorf("GraphQL %v, REST %v; want the same refusal: %s", got, want, r.Raw)
			}
		})
	}
	t.Run("addComment/idempotencyKey: one comment, counted once", func(t *testing.T) {
		tk, _ := createTicket(t, map[string]any{"title": "commented"}, nil)
		const add = `mutation($o: ID!, $t: ID!, $k: String) { addComment(orgId: $o, ticketId: $t, body: "once", idempotencyKey: $k) { id authorId } }`
		var first, again struct{ AddComment struct{ ID, AuthorID string } }
		apitest.MustData(t, apitest.GQL(t, ts, w.Member.Token, add, map[string]any{"o": org, "t": tk.ID, "k": "comment-key"}), &first)
		apitest.MustData(t, apitest.GQL(t, ts, w.Member.Token, add, map[string]any{"o": org, "t": tk.ID, "k": "comment-key"}), &again)
		if first.AddComment.ID == "" || again.AddComment.ID != first.AddComment.ID || first.AddComment.AuthorID != w.Member.ID {
			t.Errorf("first %+v, again %+v", first, again)
		}
		g, err := w.Member.C.GetTicketWithResponse(bg, org, tk.ID, nil)
		apitest.MustStatus(t, g, err, http.StatusOK)
		if g.JSON200.CommentCount != 1 {
			t.Errorf("commentCount %d, want 1", g.JSON200.CommentCount)
		}
	})
	apitest.MustHealthy(t, ts)
}

// TestGraphQLAccounting: a GraphQL request's log line and DynamoDB
// metrics name its operation (type and root fields, from the schema: a
// bounded label) and count every call its resolvers made.
func TestGraphQLAccounting(t *testing.T) {
	var logs apitest.LogBuffer
	ts := apitest.MustServer(t, apitest.WithLog(&logs))
	w := apitest.MustWorld(t, ts, "Accounted")
	ts.Rec.Reset()
	apitest.MustData(t, apitest.GQL(t, ts, w.Member.Token, `query Mine($o: ID!) { me { userId } org(id: $o) { tickets { nodes { requester { name } } } } }`, map[string]any{"o": w.Org.Id}), nil)
	calls := ts.Rec.Count()
	var line map[string]any
	for _, l := range logs.Lines(`"route":"/v1/graphql`) {
		line = l
	}
	if line == nil || line["route"] != "/v1/graphql query:me+org" || line["dynamodbCalls"] != float64(calls) {
		t.Errorf("log line %v, want route \"/v1/graphql query:me+org\" and dynamodbCalls %d", line, calls)
	}
	mfs, err := ts.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "tenantd_request_dynamodb_calls" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == "route" && l.GetValue() == "/v1/graphql query:me+org")
			}
		}
	}
	if !found {
		t.Error("no tenantd_request_dynamodb_calls series for the operation")
	}
}

// doublingFragments is F0 { leaf } and Fi { ...Fi-1 ...Fi-1 } up to n: Fn
// expands to 2^n leaves.
func doublingFragments(n int, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fragment F0 on Me { %s }", leaf)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, " fragment F%d on Me { ...F%d ...F%d }", i, i-1, i-1)
	}
	return b.String()
}
