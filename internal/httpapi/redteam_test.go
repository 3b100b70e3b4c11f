package httpapi_test

// The findings of the outside attack of issue 10 that concern the data:
// parents deleted while children are written, secrets in idempotency
// records, role edges, listings under missing parents. Each test checks
// the table's invariants (store.CheckInvariants), not only the answers.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/store"
)

// mustHealthy fails tb with every invariant the server's table breaks.
func mustHealthy(tb testing.TB, ts *testServer) {
	tb.Helper()
	vs, err := store.CheckInvariants(context.Background(), ts.Raw, ts.Table, store.CheckOptions{Now: time.Now().Add(365 * 24 * time.Hour)})
	if err != nil {
		tb.Fatalf("check invariants: %v", err)
	}
	for i, v := range vs {
		if i == 20 {
			tb.Errorf("... and %d more violations", len(vs)-20)
			break
		}
		tb.Errorf("invariant: %s", v)
	}
}

// TestDeleteTeamRacingPutMember: 20 rounds of 6 PUTs of members racing one
// DELETE of their team. No edge may outlive its team, the users' team sets
// must equal their edges, and every user stays removable; the org's
// offboarding then leaves nothing.
func TestDeleteTeamRacingPutMember(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Team race")
	org := w.Org.Id
	hc := hRaceClient(t, 8)
	var users []actor
	for range 6 {
		u := ts.Actor(t, "racer")
		MustUser(t, w.Owner.C, org, u, "member")
		users = append(users, u)
	}
	var puts, deletes hStatusCounts
	for round := range 20 {
		team := MustTeam(t, w.Owner.C, org, fmt.Sprintf("Doomed %d", round))
		hParallel(7, func(i int) {
			if i == 6 {
				r := hDoE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/teams/"+team.Id, w.Owner.Token, nil, "")
				if r.Err != nil {
					t.Errorf("delete: %v", r.Err)
					return
				}
				deletes.add(r.Status)
				return
			}
			r := hDoE(hc, http.MethodPut, ts.URL+"/v1/orgs/"+org+"/teams/"+team.Id+"/members/"+users[i].ID, w.Owner.Token, nil, `{"role":"member"}`)
			if r.Err != nil {
				t.Errorf("put: %v", r.Err)
				return
			}
			puts.add(r.Status)
			if r.Status != http.StatusCreated && r.Status != http.StatusNotFound {
				t.Errorf("put: %d %s, want 201 or 404", r.Status, r.Body)
			}
		})
	}
	t.Logf("PUT member: %s; DELETE team: %s", &puts, &deletes)
	if deletes.get(http.StatusNoContent) != 20 {
		t.Errorf("DELETE team: %s, want 20 204", &deletes)
	}
	mustHealthy(t, ts)
	for _, u := range users {
		r, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, u.ID, nil)
		mustStatus(t, r, err, http.StatusNoContent)
	}
	mustHealthy(t, ts)
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, r, err, http.StatusNoContent)
	mustHealthy(t, ts)
	if n := len(hItems(t, ts, "Membership", org)); n != 0 {
		t.Errorf("%d memberships of the offboarded org left", n)
	}
}

// TestDeleteTicketRacingComments: comments posted while their ticket is
// deleted. An acknowledged comment is readable unless its ticket's DELETE
// was acknowledged; a deleted ticket's comments are 404, and none is left
// in the table.
func TestDeleteTicketRacingComments(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Comment race")
	org := w.Org.Id
	hc := hRaceClient(t, 8)
	type result struct {
		ticket   string
		deleted  bool
		comments []string
	}
	var mu sync.Mutex
	var results []result
	var posts hStatusCounts
	for round := range 20 {
		tk := MustTicket(t, w.Member.C, org, client.TicketCreate{Title: fmt.Sprintf("Doomed %d", round)})
		res := result{ticket: tk.Id}
		hParallel(7, func(i int) {
			if i == 3 {
				r := hDoE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/tickets/"+tk.Id, w.Owner.Token, nil, "")
				if r.Err != nil || (r.Status != http.StatusNoContent) {
					t.Errorf("delete: %v %d %s", r.Err, r.Status, r.Body)
					return
				}
				mu.Lock()
				res.deleted = true
				mu.Unlock()
				return
			}
			r := hDoE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets/"+tk.Id+"/comments", w.Member.Token, nil, `{"body":"racing"}`)
			if r.Err != nil {
				t.Errorf("comment: %v", r.Err)
				return
			}
			posts.add(r.Status)
			switch r.Status {
			case http.StatusCreated:
				var c client.Comment
				hDecode(t, r.Body, &c)
				mu.Lock()
				res.comments = append(res.comments, c.Id)
				mu.Unlock()
			case http.StatusNotFound:
			default:
				t.Errorf("comment: %d %s, want 201 or 404", r.Status, r.Body)
			}
		})
		results = append(results, res)
	}
	t.Logf("POST comment: %s", &posts)
	for _, res := range results {
		l, err := w.Member.C.ListCommentsWithResponse(bg, org, res.ticket, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.deleted {
			wantProblem(t, l, err, http.StatusNotFound, "ticket_not_found")
			continue
		}
		mustStatus(t, l, err, http.StatusOK)
		for _, id := range res.comments {
			if !strings.Contains(string(l.Body), id) {
				t.Errorf("acknowledged comment %s of live ticket %s is not listed", id, res.ticket)
			}
		}
	}
	mustHealthy(t, ts)
	if n := len(hItems(t, ts, "Comment", org)); n != 0 {
		t.Errorf("%d comments of deleted tickets left", n)
	}
}

// TestDeleteOrgRacingJoins: users added and invitations accepted while the
// org is deleted. Once the DELETE was answered, no join sent afterwards
// succeeds; when the offboarding is over nothing of the org is left (claims
// included).
func TestDeleteOrgRacingJoins(t *testing.T) {
	ts := MustServer(t)
	hc := hRaceClient(t, 16)
	for round := range 5 {
		w := MustWorld(t, ts, fmt.Sprintf("Joined while deleted %d", round))
		org := w.Org.Id
		var invitees []actor
		var tokens []string
		for i := range 6 {
			email := fmt.Sprintf("joiner-%d-%d@example.com", round, i)
			tokens = append(tokens, MustInvitation(t, w.Owner.C, org, email, client.RoleMember).Token)
			invitees = append(invitees, ts.Invitee(t, "joiner", email))
		}
		var answered time.Time
		var amu sync.Mutex
		hParallel(13, func(i int) {
			switch {
			case i == 12:
				time.Sleep(time.Duration(round) * 2 * time.Millisecond)
				r := hDoE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org, w.Owner.Token, nil, "")
				amu.Lock()
				answered = time.Now()
				amu.Unlock()
				if r.Err != nil || (r.Status != http.StatusNoContent && r.Status != http.StatusAccepted) {
					t.Errorf("delete org: %v %d %s", r.Err, r.Status, r.Body)
				}
			default:
				for j := range 3 {
					sent := time.Now()
					var r hRespE
					if i < 6 && j == 0 {
						r = hDoE(hc, http.MethodPost, ts.URL+"/v1/invitations/"+tokens[i]+"/accept", invitees[i].Token, nil, "")
					} else {
						uid := fmt.Sprintf("added.%d.%d.%d", round, i, j)
						r = hDoE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/users", w.Admin.Token, nil,
							hJSON(map[string]any{"userId": uid, "email": uid + "@example.com", "name": uid, "role": "member"}))
					}
					if r.Err != nil {
						t.Errorf("join: %v", r.Err)
						continue
					}
					amu.Lock()
					after := !answered.IsZero() && sent.After(answered)
					amu.Unlock()
					if after && r.Status < 300 {
						t.Errorf("a join sent after the DELETE was answered succeeded: %d %s", r.Status, r.Body)
					}
				}
			}
		})
		// Wait for the offboarding to be over.
		for deadline := time.Now().Add(20 * time.Second); ; {
			g, err := w.Owner.C.GetOffboardingWithResponse(bg, org)
			if err != nil {
				t.Fatal(err)
			}
			if g.StatusCode() == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("offboarding of %s still running", org)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, it := range hScan(t, ts) {
			if strings.Contains(it.hS("pk"), org) || it.hS("orgId") == org {
				t.Errorf("item of the offboarded org left: %s", hDump([]hItem{it}))
			}
		}
	}
	mustHealthy(t, ts)
}

// TestIdempotencyKeepsNoSecret: an invitation created with an
// Idempotency-Key is kept for replay without its one-time token in clear,
// and the replay is authorized like a new request: the caller demoted to
// member since gets 403, not the token.
func TestIdempotencyKeepsNoSecret(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Secret keeper")
	org := w.Org.Id
	admin := ts.Actor(t, "inviter")
	MustUser(t, w.Owner.C, org, admin, client.RoleAdmin)
	key := "invite-once-0123456789"
	h := http.Header{"Idempotency-Key": {key}}
	body := `{"email":"secret@example.com","role":"member"}`
	first := hDo(t, admin.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/invitations", admin.Token, h, body)
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	var inv client.InvitationCreated
	hDecode(t, first.Body, &inv)
	secret := inv.Token[strings.LastIndex(inv.Token, ".")+1:]
	for _, it := range hScan(t, ts) {
		if d := hDump([]hItem{it}); strings.Contains(d, secret) {
			t.Errorf("the token's secret is stored in clear: %s", truncate([]byte(d)))
		}
	}
	again := hDo(t, admin.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/invitations", admin.Token, h, body)
	if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("replay to the admin: %d replayed=%q", again.Status, again.Header.Get("Idempotent-Replayed"))
	}
	p, err := w.Owner.C.UpdateOrgUserWithResponse(bg, org, admin.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleMember)})
	mustStatus(t, p, err, http.StatusOK)
	demoted := hDo(t, admin.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/invitations", admin.Token, h, body)
	if demoted.Status != http.StatusForbidden || strings.Contains(string(demoted.Body), secret) {
		t.Errorf("replay to the demoted caller: %d %s, want 403 without the token", demoted.Status, demoted.Body)
	}
}

// TestTeamOwnerRules: a team admin who is only an org member manages the
// team's members but not its owners (making themself owner included); a
// team keeps an owner; only an owner edits an org owner.
func TestTeamOwnerRules(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Owned")
	org, team := w.Org.Id, w.Team.Id
	ta := w.TeamAdmin.C
	r, err := ta.PutTeamMemberWithResponse(bg, org, team, w.TeamAdmin.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
	wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	r, err = ta.PutTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
	wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	d, err := ta.RemoveTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil)
	wantProblem(t, d, err, http.StatusForbidden, "forbidden")
	// What a team admin may do: manage members.
	r, err = ta.PutTeamMemberWithResponse(bg, org, team, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
	mustStatus(t, r, err, http.StatusCreated)
	d, err = ta.RemoveTeamMemberWithResponse(bg, org, team, w.Member.ID, nil)
	mustStatus(t, d, err, http.StatusNoContent)
	// The world's team was created by the org owner (its owner) and has
	// the team owner as a second owner: one may go, not both.
	d, err = w.TeamOwner.C.RemoveTeamMemberWithResponse(bg, org, team, w.Owner.ID, nil)
	mustStatus(t, d, err, http.StatusNoContent)
	for _, c := range []*client.ClientWithResponses{w.TeamOwner.C, w.Owner.C, w.Admin.C} {
		d, err = c.RemoveTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil)
		wantProblem(t, d, err, http.StatusConflict, "last_team_owner")
		r, err = c.PutTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
		wantProblem(t, r, err, http.StatusConflict, "last_team_owner")
	}
	// Its owner may leave the org only once another member owns the team.
	rm, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, w.TeamOwner.ID, nil)
	wantProblem(t, rm, err, http.StatusConflict, "last_team_owner")
	r, err = w.TeamOwner.C.PutTeamMemberWithResponse(bg, org, team, w.TeamAdmin.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
	mustStatus(t, r, err, http.StatusOK)
	rm, err = w.Owner.C.RemoveOrgUserWithResponse(bg, org, w.TeamOwner.ID, nil)
	mustStatus(t, rm, err, http.StatusNoContent)
	// An org admin changes neither an owner's name nor their email.
	u, err := w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed by an admin")})
	wantProblem(t, u, err, http.StatusForbidden, "forbidden")
	u, err = w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Email: ptr("taken-over@example.com")})
	wantProblem(t, u, err, http.StatusForbidden, "forbidden")
	u, err = w.Owner.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed by themself")})
	mustStatus(t, u, err, http.StatusOK)
	mustHealthy(t, ts)
}

// TestListingsUnderMissingParent: a listing under a team, ticket or user
// that does not exist in the org is 404 like the resource itself (an
// existence read happens only when the page is empty).
func TestListingsUnderMissingParent(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Listed")
	org := w.Org.Id
	c := w.Member.C
	gone := MustTeam(t, w.Owner.C, org, "Gone")
	d, err := w.Owner.C.DeleteTeamWithResponse(bg, org, gone.Id, nil)
	mustStatus(t, d, err, http.StatusNoContent)
	tk := MustTicket(t, c, org, client.TicketCreate{Title: "Gone"})
	dt, err := w.Owner.C.DeleteTicketWithResponse(bg, org, tk.Id, nil)
	mustStatus(t, dt, err, http.StatusNoContent)
	const nobody = "not.a.member"
	cases := []struct {
		name string
		code string
		do   func() (statusCoder, error)
	}{
		{"members of a deleted team", "team_not_found", func() (statusCoder, error) { return c.ListTeamMembersWithResponse(bg, org, gone.Id, nil) }},
		{"tickets of a deleted team", "team_not_found", func() (statusCoder, error) { return c.ListTeamTicketsWithResponse(bg, org, gone.Id, nil) }},
		{"comments of a deleted ticket", "ticket_not_found", func() (statusCoder, error) { return c.ListCommentsWithResponse(bg, org, tk.Id, nil) }},
		{"teams of a non-member", "user_not_found", func() (statusCoder, error) { return c.ListUserTeamsWithResponse(bg, org, nobody, nil) }},
		{"tickets of a non-member", "user_not_found", func() (statusCoder, error) { return c.ListUserTicketsWithResponse(bg, org, nobody, nil) }},
		{"tickets of a non-member with the user", "user_not_found", func() (statusCoder, error) {
			return c.ListUserTicketsWithResponse(bg, org, nobody, &client.ListUserTicketsParams{Include: ptr(client.ListUserTicketsParamsIncludeUser)})
		}},
		{"tickets assigned to a non-member", "user_not_found", func() (statusCoder, error) { return c.ListAssignedTicketsWithResponse(bg, org, nobody, nil) }},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			r, err := cs.do()
			wantProblem(t, r, err, http.StatusNotFound, cs.code)
		})
	}
	// An existing parent with nothing under it is an empty 200.
	empty := MustTeam(t, w.Owner.C, org, "Empty queue")
	r, err := c.ListTeamTicketsWithResponse(bg, org, empty.Id, nil)
	mustStatus(t, r, err, http.StatusOK)
	a, err := c.ListAssignedTicketsWithResponse(bg, org, w.Member.ID, nil)
	mustStatus(t, a, err, http.StatusOK)
}

// hDecode unmarshals a JSON response body into v.
func hDecode(tb testing.TB, body []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("decode %s: %v", truncate(body), err)
	}
}
