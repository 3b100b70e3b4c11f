package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/httpapi"
)

// orgScoped is the path prefix of every tenant-owned resource.
const orgScoped = "/v1/orgs/{orgId}"

// tourOrder puts reads first, then creates and updates, then deletes
// (deepest resources first, the org last), so that running every
// operation once in that order succeeds.
func tourOrder(ops []specOp) []specOp {
	rank := map[string]int{http.MethodGet: 0, http.MethodPost: 1, http.MethodPut: 2, http.MethodPatch: 3, http.MethodDelete: 4}
	out := slices.Clone(ops)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Method] != rank[b.Method] {
			return rank[a.Method] < rank[b.Method]
		}
		if a.Method == http.MethodDelete {
			return strings.Count(a.Path, "/") > strings.Count(b.Path, "/")
		}
		return false
	})
	return out
}

// opIDs are the IDs a request is built from.
type opIDs struct {
	OrgID, TeamID, TicketID, UserID string
	InvitationID, Token             string
	WebhookID, DeliveryID           string
	KeyID                           string
}

func idsOf(w *world) opIDs {
	return opIDs{OrgID: w.Org.Id, TeamID: w.Team.Id, TicketID: w.Ticket.Id, UserID: w.TeamMember.ID}
}

func noBody(opIDs) string { return "" }

func body(s string) func(opIDs) string { return func(opIDs) string { return s } }

// requests holds a request builder for EVERY operation of openapi.yaml: the
// JSON body of a valid request ("" for none); the path comes from the spec
// with the IDs filled in. A new operation without a row here fails
// TestCrossTenant and TestNoScan.
var requests = map[string]func(ids opIDs) string{
	"getHealth":  noBody,
	"getReady":   noBody,
	"getOpenAPI": noBody,
	"getMe":      noBody,
	"listOrgs":   noBody,
	"createOrg":  body(`{"name":"Org made by a request builder"}`),

	"getOrg":    noBody,
	"updateOrg": body(`{"name":"Renamed by a request builder"}`),
	"deleteOrg": noBody,

	"getOffboarding": noBody,
	"exportOrg":      noBody,

	"listOrgUsers":        noBody,
	"addOrgUser":          body(`{"userId":"built.user","email":"built.user@example.com","name":"Built User","role":"member"}`),
	"getOrgUser":          noBody,
	"updateOrgUser":       body(`{"name":"Renamed by a request builder"}`),
	"removeOrgUser":       noBody,
	"listUserTeams":       noBody,
	"listUserTickets":     noBody,
	"listAssignedTickets": noBody,

	"listTeams":        noBody,
	"createTeam":       body(`{"name":"Team made by a request builder","description":"built"}`),
	"getTeam":          noBody,
	"updateTeam":       body(`{"description":"changed by a request builder"}`),
	"deleteTeam":       noBody,
	"listTeamMembers":  noBody,
	"getTeamMember":    noBody,
	"putTeamMember":    body(`{"role":"member"}`),
	"removeTeamMember": noBody,
	"listTeamTickets":  noBody,

	"listTickets": noBody,
	"createTicket": func(ids opIDs) string {
		return fmt.Sprintf(`{"title":"Ticket made by a request builder","teamId":%q,"assigneeId":%q}`, ids.TeamID, ids.UserID)
	},
	"getTicket":     noBody,
	"updateTicket":  body(`{"priority":"high","tags":["built"]}`),
	"deleteTicket":  noBody,
	"listComments":  noBody,
	"createComment": body(`{"body":"comment made by a request builder"}`),

	"listInvitations": noBody,
	"createInvitation": func(ids opIDs) string {
		return fmt.Sprintf(`{"email":"built.invitee@example.com","role":"member","teamIds":[%q],"expiresInDays":3}`, ids.TeamID)
	},
	"revokeInvitation": noBody,
	"acceptInvitation": noBody,
	"listAuditEvents":  noBody,

	"createApiKey":          body(`{"name":"built by a request builder","role":"member"}`),
	"listApiKeys":           noBody,
	"getApiKey":             noBody,
	"revokeApiKey":          noBody,
	"createWebhook":         body(`{"url":"https://hooks.example.com/built","events":["ticket.create"],"description":"built"}`),
	"listWebhooks":          noBody,
	"getWebhook":            noBody,
	"updateWebhook":         body(`{"description":"changed by a request builder"}`),
	"deleteWebhook":         noBody,
	"rotateWebhookSecret":   noBody,
	"listWebhookDeliveries": noBody,
	"redeliverWebhook":      noBody,

	// Outside any org's path: the org is an argument
	// (internal/graphapi/graphql_test.go has GraphQL's own cross-tenant
	// matrix).
	"graphql": func(ids opIDs) string {
		return fmt.Sprintf(`{"query":"query($org: ID!) { me { userId } org(id: $org) { name tickets { nodes { title } } } }","variables":{"org":%q}}`, ids.OrgID)
	},
	"graphqlGet": noBody, // its query is in the URL (pathOf)
}

// graphqlGetQuery is the document GET /v1/graphql sends (pathOf): every
// field of it reads the org.
const graphqlGetQuery = "query($org: ID!) { org(id: $org) { name tickets { nodes { title } } } }"

// pathOf fills the spec path's parameters with ids.
func pathOf(op specOp, ids opIDs) string {
	if op.ID == "graphqlGet" {
		return op.Path + "?" + url.Values{"query": {graphqlGetQuery}, "variables": {fmt.Sprintf(`{"org":%q}`, ids.OrgID)}}.Encode()
	}
	return strings.NewReplacer("{orgId}", ids.OrgID, "{teamId}", ids.TeamID, "{ticketId}", ids.TicketID, "{userId}", ids.UserID,
		"{invitationId}", ids.InvitationID, "{token}", ids.Token, "{webhookId}", ids.WebhookID, "{deliveryId}", ids.DeliveryID,
		"{keyId}", ids.KeyID).Replace(op.Path)
}

// do sends op with ids and body through hc and returns the response and
// its body.
func do(t *testing.T, hc *http.Client, base string, op specOp, ids opIDs, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), tbKey{}, t), op.Method, base+pathOf(op, ids), rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", op.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestCrossTenant runs every operation of openapi.yaml as a user who
// belongs only to org B, with org A's real IDs: every org-scoped operation
// is a 404 that reads nothing but the caller's (missing) membership and
// shows nothing of A, and A is unchanged. The operations outside any org
// never show A's data to B.
func TestCrossTenant(t *testing.T) {
	ts := MustServer(t)
	a := MustWorld(t, ts, "Aperture Sekrit Labs")
	comment := MustComment(t, a.Member.C, a.Org.Id, a.Ticket.Id, "the cake is a lie (sekrit)")
	inv := MustInvitation(t, a.Owner.C, a.Org.Id, "sekrit-invitee@example.com", client.RoleAdmin, a.Team.Id)
	hook, delivery := mustWebhook(t, ts, a, "https://sekrit.example.com/hook")
	key := mustAPIKey(t, a, client.ApiKeyCreateRoleAdmin)
	bee := ts.Actor(t, "bee")
	bOrg := MustOrg(t, bee.C, "Black Mesa")
	bTeam := MustTeam(t, bee.C, bOrg.Id, "Black Mesa Science")
	MustTicket(t, bee.C, bOrg.Id, client.TicketCreate{Title: "Resonance cascade"})

	secrets := []string{a.Org.Name, a.Team.Name, a.Ticket.Title, comment.Body, inv.Email, inv.Token, hook.Url, hook.Secret, key.Name, key.Secret}
	aIDs := []string{a.Org.Id, a.Team.Id, a.Ticket.Id, comment.Id, inv.Id, hook.Id, delivery, key.Id}
	for _, u := range []actor{a.Owner, a.Admin, a.Member, a.TeamOwner, a.TeamAdmin, a.TeamMember, a.Requester, a.Assignee} {
		secrets = append(secrets, u.Email, u.Name)
		aIDs = append(aIDs, u.ID)
	}
	snapshotA := func(t *testing.T) string {
		t.Helper()
		c := a.Owner.C
		var parts []string
		add := func(r statusCoder, err error) {
			mustStatus(t, r, err, http.StatusOK)
			parts = append(parts, string(r.GetBody()))
		}
		add(c.GetOrgWithResponse(bg, a.Org.Id, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)}))
		add(c.GetTeamWithResponse(bg, a.Org.Id, a.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)}))
		add(c.GetTicketWithResponse(bg, a.Org.Id, a.Ticket.Id, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)}))
		add(c.ListTeamsWithResponse(bg, a.Org.Id, nil))
		add(c.ListTicketsWithResponse(bg, a.Org.Id, nil))
		add(c.ListUserTeamsWithResponse(bg, a.Org.Id, a.TeamMember.ID, nil))
		add(c.ListInvitationsWithResponse(bg, a.Org.Id, nil))
		add(c.ListWebhooksWithResponse(bg, a.Org.Id, nil))
		add(c.ListApiKeysWithResponse(bg, a.Org.Id, nil))
		add(c.ListWebhookDeliveriesWithResponse(bg, a.Org.Id, hook.Id, nil))
		add(c.ListAuditEventsWithResponse(bg, a.Org.Id, &client.ListAuditEventsParams{Limit: ptr(100)}))
		return strings.Join(parts, "\n")
	}
	before := snapshotA(t)

	doc, _ := loadSpec(t)
	ops := specOperations(doc)
	for _, op := range ops {
		if _, ok := requests[op.ID]; !ok {
			t.Errorf("operation %s (%s %s) has no request builder in matrix_test.go: add a row to `requests`", op.ID, op.Method, op.Path)
		}
	}
	known := map[string]bool{}
	for _, op := range ops {
		known[op.ID] = true
	}
	for id := range requests {
		if !known[id] {
			t.Errorf("request builder %s names no operation of openapi.yaml", id)
		}
	}

	// A's org with A's IDs: 404, the authorization read finds no
	// membership, no data.
	aIDsForReq := idsOf(a)
	aIDsForReq.InvitationID = inv.Id
	aIDsForReq.WebhookID, aIDsForReq.DeliveryID, aIDsForReq.KeyID = hook.Id, delivery, key.Id
	for _, op := range ops {
		build, ok := requests[op.ID]
		if !ok || !strings.HasPrefix(op.Path, orgScoped) {
			continue
		}
		spec(t, "404/"+op.ID+"/A's org as B's member", func(t *testing.T) {
			reqBody := build(aIDsForReq)
			ts.Rec.Reset()
			resp, b := do(t, bee.HTTP, ts.URL, op, aIDsForReq, reqBody)
			if got, want := resp.StatusCode, http.StatusNotFound; got != want {
				t.Errorf("%s %s as an outsider: status %d, want %d: %s", op.Method, pathOf(op, aIDsForReq), got, want, b)
			}
			// The decision is made before anything else: an outsider costs
			// the one authorization read on every route (a route's target
			// is in it), and nothing of the target reaches them.
			if got, want := ts.Rec.Names(), "BatchGetItem+consistent"; got != want {
				t.Errorf("DynamoDB calls: got %q, want only the authorization read %q", got, want)
			}
			if l := leaks(b, secrets, aIDs, pathOf(op, aIDsForReq)+reqBody); len(l) > 0 {
				t.Errorf("the response shows A's data %v: %s", l, b)
			}
		})
	}

	// B's own org with A's IDs inside it: nothing of A is found, listed or
	// touched.
	mixed := opIDs{OrgID: bOrg.Id, TeamID: a.Team.Id, TicketID: a.Ticket.Id, UserID: a.Member.ID, InvitationID: inv.Id,
		WebhookID: hook.Id, DeliveryID: delivery, KeyID: key.Id}
	idParam := regexp.MustCompile(`\{(teamId|ticketId|userId|invitationId|webhookId|deliveryId|keyId)\}`)
	for _, op := range tourOrder(ops) {
		build, ok := requests[op.ID]
		if !ok || !strings.HasPrefix(op.Path, orgScoped) || (!idParam.MatchString(op.Path) && op.ID != "createTicket") {
			continue
		}
		t.Run("B's org with A's IDs/"+op.ID, func(t *testing.T) {
			reqBody := build(mixed)
			resp, b := do(t, bee.HTTP, ts.URL, op, mixed, reqBody)
			switch resp.StatusCode {
			case http.StatusNotFound, http.StatusConflict:
			case http.StatusOK:
				var list struct {
					Items *[]json.RawMessage `json:"items"`
				}
				if op.Method != http.MethodGet || json.Unmarshal(b, &list) != nil || list.Items == nil {
					t.Errorf("%s %s: 200 for a resource of another org: %s", op.Method, pathOf(op, mixed), b)
				} else if len(*list.Items) != 0 {
					t.Errorf("%s %s lists %d items of another org: %s", op.Method, pathOf(op, mixed), len(*list.Items), b)
				}
			default:
				t.Errorf("%s %s: status %d, want 404, 409 or an empty list: %s", op.Method, pathOf(op, mixed), resp.StatusCode, b)
			}
			if l := leaks(b, secrets, aIDs, pathOf(op, mixed)+reqBody); len(l) > 0 {
				t.Errorf("the response shows A's data %v: %s", l, b)
			}
		})
	}
	_ = bTeam

	// Outside any org: B sees only B. B's invitation token names A's org
	// and A's real invitation, but B does not know its secret.
	forged := a.Org.Id + "." + inv.Id + "." + strings.Repeat("x", 43)
	bIDs := opIDs{OrgID: bOrg.Id, TeamID: bTeam.Id, Token: forged}
	for _, op := range ops {
		build, ok := requests[op.ID]
		if !ok || strings.HasPrefix(op.Path, orgScoped) {
			continue
		}
		t.Run("outside orgs/"+op.ID, func(t *testing.T) {
			reqBody := build(bIDs)
			resp, b := do(t, bee.HTTP, ts.URL, op, bIDs, reqBody)
			want := resp.StatusCode < 300
			if op.ID == "acceptInvitation" {
				want = resp.StatusCode == http.StatusNotFound
			}
			if !want {
				t.Errorf("%s %s: status %d: %s", op.Method, op.Path, resp.StatusCode, b)
			}
			request := ""
			if op.ID == "acceptInvitation" {
				request = forged
			}
			if l := leaks(b, secrets, aIDs, request); len(l) > 0 {
				t.Errorf("%s %s shows A's data to B %v: %s", op.Method, op.Path, l, truncate(b))
			}
		})
	}

	t.Run("A is unchanged", func(t *testing.T) {
		if after := snapshotA(t); after != before {
			t.Errorf("A changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// echoParam turns Echo's :name path parameters into the spec's {name}.
var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// TestRoutesMatchSpec: every route the server has is an operation of the
// spec, and every operation of the spec is routed.
func TestRoutesMatchSpec(t *testing.T) {
	ts := MustServer(t)
	doc, _ := loadSpec(t)
	routed := map[string]bool{}
	for _, r := range ts.Echo.Routes() {
		if strings.HasPrefix(r.Method, "echo_") || r.Path == "" || strings.HasSuffix(r.Path, "*") {
			continue // Echo's own not-found and any-method routes
		}
		if r.Path == httpapi.DocsRoute || r.Path == httpapi.DocsAssetsRoute {
			continue // pages for people, deliberately outside the contract (its info says so: docs_test.go)
		}
		routed[r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	inSpec := map[string]bool{}
	for _, op := range specOperations(doc) {
		k := op.Method + " " + op.Path
		inSpec[k] = true
		if !routed[k] {
			t.Errorf("%s (%s) is in openapi.yaml but not routed", k, op.ID)
		}
	}
	for k := range routed {
		if !inSpec[k] {
			t.Errorf("route %s is not an operation of openapi.yaml", k)
		}
	}
	if len(inSpec) == 0 || len(routed) == 0 {
		t.Fatalf("nothing compared: %d spec operations, %d routes", len(inSpec), len(routed))
	}
}

// TestStrangerBadCursor: a cursor that does not decode is refused after
// the authorization decision: a stranger gets the same 404 with it as
// without, a member the 400.
func TestStrangerBadCursor(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Cursor")
	stranger := ts.Actor(t, "stranger")
	hc := &http.Client{}
	for _, path := range []string{"/users", "/teams", "/tickets", "/teams/" + w.Team.Id + "/members", "/tickets/" + w.Ticket.Id + "/comments"} {
		url := ts.URL + "/v1/orgs/" + w.Org.Id + path + "?cursor=bm90LWEtY3Vyc29y"
		if r := doReq(t, hc, http.MethodGet, url, stranger.Token, nil, ""); r.Status != http.StatusNotFound || problemCode(r.Body) != "org_not_found" {
			t.Errorf("%s as a stranger with a bad cursor: %d %s, want 404 org_not_found", path, r.Status, truncate(r.Body))
		}
		if r := doReq(t, hc, http.MethodGet, url, w.Member.Token, nil, ""); r.Status != http.StatusBadRequest {
			t.Errorf("%s as a member with a bad cursor: %d %s, want 400", path, r.Status, truncate(r.Body))
		}
	}
}

// TestStrangerPreconditions: an update's preconditions are judged after
// the decision: a stranger sending If-None-Match (refused on writes) or a
// malformed If-Match gets the same 404 as any stranger, and costs the
// authorization read alone; a member gets the precondition's answer.
func TestStrangerPreconditions(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Preconditions")
	stranger := ts.Actor(t, "stranger")
	hc := &http.Client{}
	url := ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets/" + w.Ticket.Id
	for _, tc := range []struct {
		name   string
		header http.Header
		member int // the member's status
	}{
		{"If-None-Match", http.Header{"If-None-Match": {"*"}}, http.StatusBadRequest},
		{"a malformed If-Match", http.Header{"If-Match": {"not a tag"}}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts.Rec.Reset()
			r := doReq(t, hc, http.MethodPatch, url, stranger.Token, tc.header, `{"title":"Renamed"}`)
			if r.Status != http.StatusNotFound || problemCode(r.Body) != "org_not_found" {
				t.Errorf("as a stranger: %d %s, want 404 org_not_found", r.Status, truncate(r.Body))
			}
			if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
				t.Errorf("as a stranger: DynamoDB calls %q, want the authorization read alone", got)
			}
			if r := doReq(t, hc, http.MethodPatch, url, w.Requester.Token, tc.header, `{"title":"Renamed"}`); r.Status != tc.member {
				t.Errorf("as the requester: %d %s, want %d", r.Status, truncate(r.Body), tc.member)
			}
		})
	}
}
