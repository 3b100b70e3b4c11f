package httpapi_test

// The helpers only the REST tests use; those the GraphQL tests share are
// in internal/apitest (see main_test.go).

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
)

// memberCount is a team's memberCount, read as c's user.
func memberCount(tb testing.TB, c *client.ClientWithResponses, orgID, teamID string) int {
	tb.Helper()
	r, err := c.GetTeamWithResponse(bg, orgID, teamID, nil)
	mustStatus(tb, r, err, http.StatusOK)
	return r.JSON200.MemberCount
}

// worldSnapshot is what the world's owner reads of it: the org with its
// users, the team with its members, the teams, the tickets, the ticket
// with its comments, the owner's orgs and the invitations. A refused
// request leaves it as it was.
func worldSnapshot(t *testing.T, w *world) string {
	t.Helper()
	org, owner := w.Org.Id, w.Owner.C
	var b strings.Builder
	g, err := owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
	mustStatus(t, g, err, http.StatusOK)
	b.Write(g.Body)
	tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
	mustStatus(t, tm, err, http.StatusOK)
	b.Write(tm.Body)
	lt, err := owner.ListTeamsWithResponse(bg, org, nil)
	mustStatus(t, lt, err, http.StatusOK)
	b.Write(lt.Body)
	tk, err := owner.ListTicketsWithResponse(bg, org, nil)
	mustStatus(t, tk, err, http.StatusOK)
	b.Write(tk.Body)
	c, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
	mustStatus(t, c, err, http.StatusOK)
	b.Write(c.Body)
	o, err := owner.ListOrgsWithResponse(bg, nil)
	mustStatus(t, o, err, http.StatusOK)
	b.Write(o.Body)
	inv, err := owner.ListInvitationsWithResponse(bg, org, nil)
	mustStatus(t, inv, err, http.StatusOK)
	b.Write(inv.Body)
	return b.String()
}

// wantETag asserts the ETag names version: "<version>-<digest>".
func wantETag(tb testing.TB, h http.Header, version int64) {
	tb.Helper()
	if got := h.Get("ETag"); !regexp.MustCompile(fmt.Sprintf(`^"%d-[0-9a-f]{16}"$`, version)).MatchString(got) {
		tb.Errorf("ETag: got %q, want \"%d-<digest>\"", got, version)
	}
}

// etagOf is the ETag the API promises for a version.
func etagOf(version int64) string { return fmt.Sprintf("%q", fmt.Sprint(version)) }
