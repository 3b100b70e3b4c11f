package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/store"
)

// TestInvitation is the behaviour of invitations.
func TestInvitation(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org, owner := w.Org.Id, w.Owner.C
		spec(t, "listInvitations", func(t *testing.T) {
			inv := MustInvitation(t, owner, org, "listed@example.com", client.RoleAdmin, w.Team.Id)
			r, err := w.Admin.C.ListInvitationsWithResponse(bg, org, nil)
			mustStatus(t, r, err, http.StatusOK)
			if got := len(r.JSON200.Items); got != 1 {
				t.Fatalf("items: got %d, want 1", got)
			}
			it := r.JSON200.Items[0]
			if it.Id != inv.Id || it.Email != "listed@example.com" || it.Role != client.RoleAdmin || !slices.Equal(it.TeamIds, []string{w.Team.Id}) || it.InvitedBy != w.Owner.ID {
				t.Errorf("invitation: got %+v", it)
			}
			if bytes.Contains(r.Body, []byte(inv.Token)) || bytes.Contains(r.Body, []byte(`"token"`)) {
				t.Errorf("the listing shows the one-time token: %s", r.Body)
			}
			rv, err := owner.RevokeInvitationWithResponse(bg, org, inv.Id)
			mustStatus(t, rv, err, http.StatusNoContent)
		})
	})
	t.Run("201", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Initech")
		org := w.Org.Id
		spec(t, "createInvitation/then acceptInvitation", func(t *testing.T) {
			before := memberCount(t, w.Admin.C, org, w.Team.Id)
			r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "newbie@example.com", Role: client.RoleAdmin,
				TeamIds: &[]string{w.Team.Id}, ExpiresInDays: ptr(3)})
			mustStatus(t, r, err, http.StatusCreated)
			inv := r.JSON201
			if inv.Email != "newbie@example.com" || inv.Role != client.RoleAdmin || !slices.Equal(inv.TeamIds, []string{w.Team.Id}) ||
				inv.InvitedBy != w.Admin.ID || len(inv.Token) < 20 || !inv.ExpiresAt.Equal(inv.CreatedAt.Add(3*24*time.Hour)) {
				t.Errorf("invitation: got %+v", inv)
			}
			newbie := ts.Invitee(t, "newbie", "newbie@example.com")
			a, err := newbie.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, a, err, http.StatusCreated)
			if got := a.JSON201; got.OrgId != org || got.User.UserId != newbie.ID || got.User.Email != "newbie@example.com" ||
				got.User.Role != client.RoleAdmin || !slices.Equal(got.TeamIds, []string{w.Team.Id}) {
				t.Errorf("accepted: got %+v", got)
			}
			m, err := newbie.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, newbie.ID, nil)
			mustStatus(t, m, err, http.StatusOK)
			if m.JSON200.Role != client.RoleMember {
				t.Errorf("team role: got %q, want member", m.JSON200.Role)
			}
			tm, err := newbie.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, tm, err, http.StatusOK)
			if got, want := tm.JSON200.MemberCount, before+1; got != want { // the newbie joined it
				t.Errorf("memberCount: got %d, want %d", got, want)
			}
			again, err := ts.Invitee(t, "late", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			wantProblem(t, again, err, http.StatusNotFound, "")
		})

		spec(t, "acceptInvitation/a team deleted meanwhile", func(t *testing.T) {
			gone := MustTeam(t, w.Owner.C, org, "Short-lived team")
			inv := MustInvitation(t, w.Owner.C, org, "two-teams@example.com", client.RoleMember, w.Team.Id, gone.Id)
			d, err := w.Owner.C.DeleteTeamWithResponse(bg, org, gone.Id, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			a, err := ts.Invitee(t, "two-teams", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, a, err, http.StatusCreated)
			if got, want := a.JSON201.TeamIds, []string{w.Team.Id}; !slices.Equal(got, want) {
				t.Errorf("teams joined: got %v, want %v", got, want)
			}
		})

		spec(t, "acceptInvitation/as owner", func(t *testing.T) {
			boss := ts.Actor(t, "boss")
			o := MustOrg(t, boss.C, "Two owners")
			inv := MustInvitation(t, boss.C, o.Id, "co-owner@example.com", client.RoleOwner)
			co := ts.Invitee(t, "co-owner", "co-owner@example.com")
			a, err := co.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, a, err, http.StatusCreated)
			// Two owners now: either may step down, but not both.
			r, err := co.C.UpdateOrgUserWithResponse(bg, o.Id, boss.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
			mustStatus(t, r, err, http.StatusOK)
			r, err = co.C.UpdateOrgUserWithResponse(bg, o.Id, co.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
			wantProblem(t, r, err, http.StatusConflict, "last_owner")
		})
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		spec(t, "revokeInvitation", func(t *testing.T) {
			inv := MustInvitation(t, w.Admin.C, org, "revoked@example.com", client.RoleMember)
			r, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
			mustStatus(t, r, err, http.StatusNoContent)
			a, err := ts.Invitee(t, "too-late", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			wantProblem(t, a, err, http.StatusNotFound, "")
			l, err := w.Admin.C.ListInvitationsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 0 {
				t.Errorf("invitations after revoke: %+v", l.JSON200.Items)
			}
		})
	})
	t.Run("400", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Globex")
		org, owner := w.Org.Id, w.Owner.C
		// Unknown and read-only properties are refused, and nothing changes.
		wantRefusedBodies(t, w, []refusedBody{
			{"createInvitation/body with orgId", func(b io.Reader) (statusCoder, error) {
				return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"email":"x@example.com","role":"member","orgId":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
			{"createInvitation/body with token", func(b io.Reader) (statusCoder, error) {
				return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"email":"x@example.com","role":"member","token":"chosen-by-the-client-0123456789"}`},
			{"createInvitation/body with expiresInDays=31", func(b io.Reader) (statusCoder, error) {
				return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"email":"x@example.com","role":"member","expiresInDays":31}`},
		})
		// Invalid IDs never reach DynamoDB.
		wantRefused(t, ts, []refusedRequest{
			{"revokeInvitation/invitationId a lowercase ULID", func() (statusCoder, error) {
				return owner.RevokeInvitationWithResponse(bg, org, strings.ToLower(w.Team.Id))
			}},
			{"revokeInvitation/invitationId a#b", func() (statusCoder, error) { return owner.RevokeInvitationWithResponse(bg, org, "a#b") }},
			{"acceptInvitation/token too short", func() (statusCoder, error) { return owner.AcceptInvitationWithResponse(bg, "short", nil) }},
			{"acceptInvitation/token with #", func() (statusCoder, error) {
				return owner.AcceptInvitationWithResponse(bg, org+"."+org+"#"+strings.Repeat("x", 43), nil)
			}},
			{"createInvitation/teamId a#b", func() (statusCoder, error) {
				return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "x@example.com", Role: client.RoleMember, TeamIds: &[]string{"a#b"}})
			}},
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		org := w.Org.Id
		wantForbidden(t, []forbiddenCase{
			{"createInvitation/member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "friend@example.com", Role: client.RoleMember})
			}, func(t *testing.T) {
				l, err := w.Owner.C.ListInvitationsWithResponse(bg, org, nil)
				mustStatus(t, l, err, http.StatusOK)
				if len(l.JSON200.Items) != 0 {
					t.Errorf("invitations: %+v", l.JSON200.Items)
				}
			}},
			{"createInvitation/admin invites an owner", func(t *testing.T) (statusCoder, error) {
				return w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner})
			}, nil},
			{"listInvitations/member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.ListInvitationsWithResponse(bg, org, nil)
			}, nil},
			{"revokeInvitation/team owner", func(t *testing.T) (statusCoder, error) {
				inv := MustInvitation(t, w.Owner.C, org, "kept@example.com", client.RoleMember)
				return w.TeamOwner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
			}, func(t *testing.T) {
				l, err := w.Owner.C.ListInvitationsWithResponse(bg, org, nil)
				mustStatus(t, l, err, http.StatusOK)
				if len(l.JSON200.Items) != 1 {
					t.Errorf("invitations: %+v", l.JSON200.Items)
				}
			}},
		})
		// The token is the permission, for its email only.
		spec(t, "acceptInvitation/another email's invitation", func(t *testing.T) {
			inv := MustInvitation(t, w.Owner.C, org, "addressee@example.com", client.RoleMember)
			r, err := ts.Actor(t, "interloper").C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			wantProblem(t, r, err, http.StatusForbidden, "invitation_email_mismatch")
			a, err := ts.Invitee(t, "addressee", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, a, err, http.StatusCreated)
		})
	})
	t.Run("404", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Wonka")
		org := w.Org.Id
		unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
		stranger := ts.Actor(t, "stranger")
		wantNotFound(t, []notFoundCase{
			{"revokeInvitation/unknown invitation", "", func() (statusCoder, error) { return w.Owner.C.RevokeInvitationWithResponse(bg, org, unknown) }},
			{"acceptInvitation/unknown token", "", func() (statusCoder, error) {
				return stranger.C.AcceptInvitationWithResponse(bg, org+"."+unknown+"."+strings.Repeat("x", 43), nil)
			}},
			{"acceptInvitation/a token with a wrong secret", "", func() (statusCoder, error) {
				inv := MustInvitation(t, w.Owner.C, org, "guessed@example.com", client.RoleMember)
				parts := strings.Split(inv.Token, ".")
				return stranger.C.AcceptInvitationWithResponse(bg, parts[0]+"."+parts[1]+"."+flipLast(parts[2]), nil)
			}},
			{"acceptInvitation/twice", "", func() (statusCoder, error) {
				inv := MustInvitation(t, w.Owner.C, org, "twice@example.com", client.RoleMember)
				r, err := ts.Invitee(t, "first", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
				mustStatus(t, r, err, http.StatusCreated)
				return ts.Invitee(t, "second", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			}},
			{"acceptInvitation/a replaced invitation", "", func() (statusCoder, error) {
				old := MustInvitation(t, w.Owner.C, org, "replaced@example.com", client.RoleMember)
				MustInvitation(t, w.Owner.C, org, "replaced@example.com", client.RoleAdmin)
				return stranger.C.AcceptInvitationWithResponse(bg, old.Token, nil)
			}},
			{"acceptInvitation/an invitation to a deleted org", "", func() (statusCoder, error) {
				o := MustOrg(t, stranger.C, "Vanishing")
				inv := MustInvitation(t, stranger.C, o.Id, "vanishing@example.com", client.RoleMember)
				d, err := stranger.C.DeleteOrgWithResponse(bg, o.Id, nil)
				mustStatus(t, d, err, http.StatusNoContent)
				return ts.Invitee(t, "latecomer", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			}},
		})
		// Last: it moves the server's clock past every token's expiry.
		spec(t, "acceptInvitation/an expired invitation", func(t *testing.T) {
			inv := MustInvitation(t, w.Owner.C, org, "expired@example.com", client.RoleMember)
			ts.Clock.Advance(8 * 24 * time.Hour)
			late := ts.Invitee(t, "late", inv.Email) // a token minted after the jump
			r, err := late.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			wantProblem(t, r, err, http.StatusNotFound, "")
		})
	})
	t.Run("409", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Stark")
		org, owner := w.Org.Id, w.Owner.C
		wantConflicts(t, []conflictCase{
			{"createInvitation/for a user's email", "email_taken", func(t *testing.T) (statusCoder, error) {
				return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: w.Member.Email, Role: client.RoleMember})
			}},
			{"createInvitation/to an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
				return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "teamless@example.com", Role: client.RoleMember,
					TeamIds: &[]string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
			}},
			{"acceptInvitation/while already a user", "user_exists", func(t *testing.T) (statusCoder, error) {
				// A user of the org whose org email is not their token's: the
				// invitation to their token's email is theirs, but they are in.
				joined := ts.Invitee(t, "joined", "already@example.com")
				inOrg := joined
				inOrg.Email = "already-in-org@example.com"
				MustUser(t, owner, org, inOrg, client.RoleMember)
				inv := MustInvitation(t, owner, org, "already@example.com", client.RoleMember)
				return joined.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			}},
			{"acceptInvitation/an email taken meanwhile", "email_taken", func(t *testing.T) (statusCoder, error) {
				inv := MustInvitation(t, owner, org, "contested@example.com", client.RoleMember)
				first := ts.Actor(t, "first")
				first.Email = "contested@example.com"
				MustUser(t, owner, org, first, client.RoleMember)
				return ts.Invitee(t, "second", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			}},
		})
	})
}

// openInvitation opens the table of ts with a client of its own (extra middleware
// optional).
func openInvitation(t *testing.T, ts *testServer, apiOptions ...func(*middleware.Stack) error) *tableDB {
	t.Helper()
	if ts.Table == "" {
		t.Fatal("the harness does not name the server's table")
	}
	raw := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint(), APIOptions: apiOptions})
	db := store.Open(raw, ts.Table)
	return &tableDB{raw: raw, name: ts.Table, Orgs: &store.Orgs{DB: db}, Tickets: &store.Tickets{DB: db}}
}

// pendingInvitations lists the org's pending invitations (all pages) as admin c.
func pendingInvitations(t *testing.T, c *client.ClientWithResponses, orgID string) []client.Invitation {
	t.Helper()
	var out []client.Invitation
	var cursor *string
	for range 100 {
		r, err := c.ListInvitationsWithResponse(bg, orgID, &client.ListInvitationsParams{Limit: ptr(100), Cursor: cursor})
		mustStatus(t, r, err, http.StatusOK)
		if strings.Contains(string(r.Body), `"token"`) {
			t.Errorf("the listing shows tokens: %s", r.Body)
		}
		out = append(out, r.JSON200.Items...)
		if cursor = r.JSON200.NextCursor; cursor == nil {
			return out
		}
	}
	t.Fatal("the invitation listing never ends")
	return nil
}

func invitationIDs(invs []client.Invitation) []string {
	out := make([]string, len(invs))
	for i, inv := range invs {
		out[i] = inv.Id
	}
	return out
}

// invitationItems counts the org's Invitation and InvitationEmail items.
func invitationItems(t *testing.T, d *tableDB, orgID string) (n int, items []string) {
	t.Helper()
	for _, s := range d.scan(t) {
		it := rawItem(t, s)
		if typ, _ := it["type"].(string); (typ == "Invitation" || typ == "InvitationEmail") && it["orgId"] == orgID {
			n++
			items = append(items, s)
		}
	}
	return n, items
}

func TestInvitationLifecycle(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Invite")
	d := openInvitation(t, ts)
	org := w.Org.Id

	t.Run("create returns the token once; admins list pending ones oldest first", func(t *testing.T) {
		before := ts.Clock.Now()
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "first@example.com", Role: client.RoleMember})
		mustStatus(t, r, err, http.StatusCreated)
		inv := *r.JSON201
		if inv.Token == "" || inv.InvitedBy != w.Admin.ID || inv.Email != "first@example.com" || inv.Role != client.RoleMember || len(inv.TeamIds) != 0 {
			t.Errorf("invitation: %+v", inv)
		}
		if inv.CreatedAt.Before(before.Truncate(time.Second)) || inv.ExpiresAt.Sub(inv.CreatedAt) != 7*24*time.Hour {
			t.Errorf("createdAt %s expiresAt %s: want the default of 7 days from now (%s)", inv.CreatedAt, inv.ExpiresAt, before)
		}
		second := MustInvitation(t, w.Owner.C, org, "second@example.com", client.RoleAdmin, w.Team.Id)
		got := pendingInvitations(t, w.Admin.C, org)
		if want := []string{inv.Id, second.Id}; !slices.Equal(invitationIDs(got), want) {
			t.Fatalf("pending (oldest first): got %v, want %v", invitationIDs(got), want)
		}
		if g := got[1]; g.Email != second.Email || g.Role != client.RoleAdmin || !slices.Equal(g.TeamIds, []string{w.Team.Id}) ||
			g.InvitedBy != w.Owner.ID || !g.CreatedAt.Equal(second.CreatedAt) {
			t.Errorf("listed invitation: got %+v, want %+v", g, second)
		}
		if g := got[1]; !g.ExpiresAt.Equal(second.ExpiresAt) {
			t.Errorf("expiresAt: createInvitation answered %s, listInvitations %s", second.ExpiresAt.Format(time.RFC3339Nano), g.ExpiresAt.Format(time.RFC3339Nano))
		}
		// Only a hash is stored: the token's secret is nowhere in the table.
		secret := inv.Token[strings.LastIndex(inv.Token, ".")+1:]
		for _, it := range d.scan(t) {
			if strings.Contains(it, secret) {
				t.Errorf("the table stores the token's secret: %s", it)
			}
		}
		for _, inv := range []client.InvitationCreated{inv, second} {
			rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
			mustStatus(t, rv, err, http.StatusNoContent)
		}
	})
	t.Run("member may not list, create or revoke", func(t *testing.T) {
		inv := MustInvitation(t, w.Admin.C, org, "kept@example.com", client.RoleMember)
		l, err := w.Member.C.ListInvitationsWithResponse(bg, org, nil)
		wantProblem(t, l, err, http.StatusForbidden, "")
		c, err := w.Member.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "friend@example.com", Role: client.RoleMember})
		wantProblem(t, c, err, http.StatusForbidden, "")
		rv, err := w.TeamOwner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		wantProblem(t, rv, err, http.StatusForbidden, "")
		if got := invitationIDs(pendingInvitations(t, w.Admin.C, org)); !slices.Equal(got, []string{inv.Id}) {
			t.Errorf("pending: got %v, want only %s", got, inv.Id)
		}
		rv, err = w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("expiresInDays is 1..30", func(t *testing.T) {
		r, err := w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "long@example.com", Role: client.RoleMember, ExpiresInDays: ptr(31)})
		wantProblem(t, r, err, http.StatusBadRequest, "")
		r, err = w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "long@example.com", Role: client.RoleMember, ExpiresInDays: ptr(0)})
		wantProblem(t, r, err, http.StatusBadRequest, "")
		if got := pendingInvitations(t, w.Admin.C, org); len(got) != 0 {
			t.Errorf("a refused invitation is pending: %+v", got)
		}
		r, err = w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "long@example.com", Role: client.RoleMember, ExpiresInDays: ptr(30)})
		mustStatus(t, r, err, http.StatusCreated)
		if got := r.JSON201.ExpiresAt.Sub(r.JSON201.CreatedAt); got != 30*24*time.Hour {
			t.Errorf("expiresInDays=30: lifetime %v", got)
		}
		rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, r.JSON201.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("a new invitation for the same email replaces the pending one, and says so", func(t *testing.T) {
		old := MustInvitation(t, w.Admin.C, org, "Replaced@Example.com", client.RoleMember)
		repl := MustInvitation(t, w.Admin.C, org, "replaced@example.com", client.RoleAdmin, w.Team.Id)
		// Never silently: the answer names the invitation whose token
		// stopped working (a create retried without a key meets this).
		if old.ReplacedInvitationId != nil {
			t.Errorf("the first invitation replaced %q, want none", *old.ReplacedInvitationId)
		}
		if got := repl.ReplacedInvitationId; got == nil || *got != old.Id {
			t.Errorf("replacedInvitationId: got %v, want %s", got, old.Id)
		}
		if got := invitationIDs(pendingInvitations(t, w.Admin.C, org)); !slices.Equal(got, []string{repl.Id}) {
			t.Errorf("pending: got %v, want only the replacement %s", got, repl.Id)
		}
		joiner := ts.Invitee(t, "replaced", "replaced@example.com")
		a, err := joiner.C.AcceptInvitationWithResponse(bg, old.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		rv, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, old.Id)
		wantProblem(t, rv, err, http.StatusNotFound, "")
		a, err = joiner.C.AcceptInvitationWithResponse(bg, repl.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		if a.JSON201.User.Role != client.RoleAdmin || a.JSON201.User.Email != "replaced@example.com" {
			t.Errorf("joined as %+v, want the replacement's role and email", a.JSON201.User)
		}
	})
	t.Run("accept joins the org and the teams with the invitation's role and email, once", func(t *testing.T) {
		second := MustTeam(t, w.Owner.C, org, "Second line")
		g, err := w.Owner.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		count := g.JSON200.MemberCount
		inv := MustInvitation(t, w.Admin.C, org, "newbie@example.com", client.RoleAdmin, w.Team.Id, second.Id)
		// The token's email claim differs from the invitation's in case
		// only: the user gets the invitation's email.
		newbie := ts.Invitee(t, "newbie", "NewBie@Example.COM")
		a, err := newbie.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		u := a.JSON201.User
		if a.JSON201.OrgId != org || u.UserId != newbie.ID || u.Email != "newbie@example.com" || u.Role != client.RoleAdmin || u.Name != newbie.Name {
			t.Errorf("accepted: %+v", a.JSON201)
		}
		if got, want := slices.Sorted(slices.Values(a.JSON201.TeamIds)), slices.Sorted(slices.Values([]string{w.Team.Id, second.Id})); !slices.Equal(got, want) {
			t.Errorf("teams joined: got %v, want %v", got, want)
		}
		ou, err := w.Member.C.GetOrgUserWithResponse(bg, org, newbie.ID, nil)
		mustStatus(t, ou, err, http.StatusOK)
		if ou.JSON200.Email != "newbie@example.com" || ou.JSON200.Role != client.RoleAdmin {
			t.Errorf("org user: %+v", ou.JSON200)
		}
		g, err = w.Owner.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		if got, want := g.JSON200.MemberCount, count+1; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		for _, team := range []string{w.Team.Id, second.Id} {
			m, err := w.Member.C.GetTeamMemberWithResponse(bg, org, team, newbie.ID, nil)
			mustStatus(t, m, err, http.StatusOK)
			if m.JSON200.Role != client.RoleMember {
				t.Errorf("team %s role: %s, want member", team, m.JSON200.Role)
			}
		}
		me, err := newbie.C.GetMeWithResponse(bg, nil)
		mustStatus(t, me, err, http.StatusOK)
		if want := []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleAdmin, UserName: newbie.Name}}; !slices.Equal(me.JSON200.Orgs, want) {
			t.Errorf("me: got %+v, want %+v", me.JSON200.Orgs, want)
		}
		// Exactly once: the same user's retry answers their membership and
		// changes nothing (acceptInvitation's 200); nobody else gets in.
		before := dump(scanAll(t, ts))
		spec(t, "200/acceptInvitation/the accepting user's retry answers their membership", func(t *testing.T) {
			again, err := newbie.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, again, err, http.StatusOK)
			if got := again.JSON200; got.OrgId != org || got.User != a.JSON201.User ||
				!slices.Equal(slices.Sorted(slices.Values(got.TeamIds)), slices.Sorted(slices.Values(a.JSON201.TeamIds))) {
				t.Errorf("retry: got %+v, want the first answer %+v", got, a.JSON201)
			}
			if after := dump(scanAll(t, ts)); after != before {
				t.Errorf("a retried accept changed the table:\n%s", diff(before, after))
			}
		})
		again, err := ts.Invitee(t, "late", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, again, err, http.StatusNotFound, "")
		// The retry holds the token itself: the org and invitation IDs
		// with another secret are the 404 of any unknown token.
		parts := strings.Split(inv.Token, ".")
		forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
		again, err = newbie.C.AcceptInvitationWithResponse(bg, forged, nil)
		wantProblem(t, again, err, http.StatusNotFound, "")
		if got := pendingInvitations(t, w.Admin.C, org); len(got) != 0 {
			t.Errorf("pending after accept: %+v", got)
		}
	})
	t.Run("accept without teams: teamIds is an array on the first answer and on a retry", func(t *testing.T) {
		// The client validates both answers against openapi.yaml, where
		// teamIds is a required, non-nullable array.
		inv := MustInvitation(t, w.Admin.C, org, "teamless@example.com", client.RoleMember)
		joiner := ts.Invitee(t, "teamless", inv.Email)
		for i, want := range []int{http.StatusCreated, http.StatusOK} {
			a, err := joiner.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, a, err, want)
			if !bytes.Contains(a.Body, []byte(`"teamIds":[]`)) {
				t.Errorf("answer %d (%d): %s, want \"teamIds\":[]", i+1, want, a.Body)
			}
		}
	})
	t.Run("revoke: the token stops working", func(t *testing.T) {
		inv := MustInvitation(t, w.Admin.C, org, "revoked@example.com", client.RoleMember)
		rv, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
		a, err := ts.Invitee(t, "revoked", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		rv, err = w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		wantProblem(t, rv, err, http.StatusNotFound, "")
	})
	t.Run("only an owner invites an owner", func(t *testing.T) {
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner})
		wantProblem(t, r, err, http.StatusForbidden, "")
		if got := pendingInvitations(t, w.Admin.C, org); len(got) != 0 {
			t.Errorf("a refused invitation is pending: %+v", got)
		}
		inv := MustInvitation(t, w.Owner.C, org, "boss@example.com", client.RoleOwner)
		rv, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("an email an org user has is taken", func(t *testing.T) {
		for _, email := range []string{w.Member.Email, strings.ToUpper(w.Member.Email)} {
			r, err := w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: email, Role: client.RoleMember})
			wantProblem(t, r, err, http.StatusConflict, "email_taken")
		}
		// Taken between invitation and accept: the accept is refused and
		// the invitation stays pending.
		inv := MustInvitation(t, w.Owner.C, org, "contested@example.com", client.RoleMember)
		grabber := ts.Actor(t, "grabber")
		grabber.Email = "contested@example.com"
		MustUser(t, w.Owner.C, org, grabber, client.RoleMember)
		a, err := ts.Invitee(t, "contester", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusConflict, "email_taken")
		if got := invitationIDs(pendingInvitations(t, w.Admin.C, org)); !slices.Equal(got, []string{inv.Id}) {
			t.Errorf("pending after a refused accept: %v, want %s", got, inv.Id)
		}
		rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("a user already in the org cannot accept; the invitation stays usable", func(t *testing.T) {
		// A user of the org whose org email is not the one in their token
		// holds an invitation to their token's email.
		joined := ts.Invitee(t, "joined", "already@example.com")
		inOrg := joined
		inOrg.Email = "already-in-org@example.com"
		MustUser(t, w.Owner.C, org, inOrg, client.RoleMember)
		inv := MustInvitation(t, w.Owner.C, org, "already@example.com", client.RoleAdmin, w.Team.Id)
		a, err := joined.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusConflict, "user_exists")
		ou, err := w.Owner.C.GetOrgUserWithResponse(bg, org, joined.ID, nil)
		mustStatus(t, ou, err, http.StatusOK)
		if ou.JSON200.Role != client.RoleMember || ou.JSON200.Email != inOrg.Email {
			t.Errorf("the refused accept changed the user: %+v", ou.JSON200)
		}
		// Someone else with the token but another email is refused too.
		a, err = w.Member.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "invitation_email_mismatch")
		// An email that only Unicode case folding makes the invitation's
		// (the Kelvin sign K, U+212A, folds to k), and the right email in a
		// token that says it is not verified, are refused too (found by an
		// outside attack).
		kelvin := ts.Invitee(t, "kelvin", "\u212already@example.com")
		kinv := MustInvitation(t, w.Owner.C, org, "klready@example.com", client.RoleAdmin)
		a, err = kelvin.C.AcceptInvitationWithResponse(bg, kinv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "invitation_email_mismatch")
		if r, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, kinv.Id); err != nil || r.StatusCode() != http.StatusNoContent {
			t.Fatalf("revoke: %v %v", r, err)
		}
		unverified := ts.Actor(t, "unverified")
		now := ts.Clock.Now()
		unverified.C = ts.Client(t, ts.Mint(t, httpapi.Claims{Email: inv.Email, EmailVerified: ptr(false), RegisteredClaims: jwt.RegisteredClaims{
			Subject: unverified.ID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}}))
		a, err = unverified.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "invitation_email_unverified")
		rm, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, joined.ID, nil)
		mustStatus(t, rm, err, http.StatusNoContent)
		a, err = ts.Invitee(t, "rightful", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
	})
	t.Run("no invitation item is left once accepted, revoked or replaced", func(t *testing.T) {
		o := MustOrg(t, w.Owner.C, "Counted")
		team := MustTeam(t, w.Owner.C, o.Id, "Counted team")
		a := MustInvitation(t, w.Owner.C, o.Id, "a@example.com", client.RoleMember, team.Id)
		MustInvitation(t, w.Owner.C, o.Id, "b@example.com", client.RoleMember)
		b := MustInvitation(t, w.Owner.C, o.Id, "B@example.com", client.RoleAdmin)
		c := MustInvitation(t, w.Owner.C, o.Id, "c@example.com", client.RoleMember)
		if n, items := invitationItems(t, d, o.Id); n != 6 {
			t.Errorf("3 pending invitations are stored as %d items, want 6 (invitation + email pointer each):\n%s", n, strings.Join(items, "\n"))
		}
		r, err := ts.Invitee(t, "a", a.Email).C.AcceptInvitationWithResponse(bg, a.Token, nil)
		mustStatus(t, r, err, http.StatusCreated)
		r, err = ts.Invitee(t, "b", b.Email).C.AcceptInvitationWithResponse(bg, b.Token, nil)
		mustStatus(t, r, err, http.StatusCreated)
		rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, o.Id, c.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
		if n, items := invitationItems(t, d, o.Id); n != 0 {
			t.Errorf("%d invitation items left:\n%s", n, strings.Join(items, "\n"))
		}
		if got := pendingInvitations(t, w.Owner.C, o.Id); len(got) != 0 {
			t.Errorf("pending: %+v", got)
		}
	})
	// Last: it moves the server's clock past every token's expiry.
	t.Run("expiry", func(t *testing.T) {
		short := MustInvitation(t, w.Admin.C, org, "short@example.com", client.RoleMember)
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "oneday@example.com", Role: client.RoleMember, ExpiresInDays: ptr(1)})
		mustStatus(t, r, err, http.StatusCreated)
		oneDay := *r.JSON201
		if got := oneDay.ExpiresAt.Sub(oneDay.CreatedAt); got != 24*time.Hour {
			t.Errorf("expiresInDays=1: lifetime %v", got)
		}
		ts.Clock.Advance(24*time.Hour + time.Minute)
		admin := w.Admin
		renewLease(t, ts, &admin)
		if got := invitationIDs(pendingInvitations(t, admin.C, org)); !slices.Equal(got, []string{short.Id}) {
			t.Errorf("pending a day later: got %v, want only the 7-day invitation %s", got, short.Id)
		}
		late := ts.Invitee(t, "late", "oneday@example.com")
		a, err := late.C.AcceptInvitationWithResponse(bg, oneDay.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		// An expired invitation does not block a new one for its email.
		again := MustInvitation(t, admin.C, org, "oneday@example.com", client.RoleMember)
		a, err = late.C.AcceptInvitationWithResponse(bg, again.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		a, err = ts.Invitee(t, "short", short.Email).C.AcceptInvitationWithResponse(bg, short.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
	})
}

// TestInvitationOutlivesNoInviter: an invitation does not outlive its
// inviter's access. Accepting is fenced on the inviter's edge: an admin
// removed from the org, or an owner demoted, cannot come back (as another
// account) through the invitations they left: 403 inviter_lost_access,
// and nobody joins.
func TestInvitationOutlivesNoInviter(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Inviters")
	org := w.Org.Id
	t.Run("ErrInviterRemoved", func(t *testing.T) {
		admin := ts.Actor(t, "leaving-admin")
		MustUser(t, w.Owner.C, org, admin, client.RoleAdmin)
		inv := MustInvitation(t, admin.C, org, "alt-of-admin@example.com", client.RoleAdmin)
		r, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, admin.ID, nil)
		mustStatus(t, r, err, http.StatusNoContent)
		alt := ts.Invitee(t, "alt", "alt-of-admin@example.com")
		a, err := alt.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "inviter_lost_access")
		g, err := w.Owner.C.GetOrgUserWithResponse(bg, org, alt.ID, nil)
		mustStatus(t, g, err, http.StatusNotFound)
	})
	t.Run("ErrInviterDemoted", func(t *testing.T) {
		owner2 := ts.Actor(t, "second-owner")
		MustUser(t, w.Owner.C, org, owner2, client.RoleOwner)
		inv := MustInvitation(t, owner2.C, org, "new-owner@example.com", client.RoleOwner)
		r, err := w.Owner.C.UpdateOrgUserWithResponse(bg, org, owner2.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		mustStatus(t, r, err, http.StatusOK)
		a, err := ts.Invitee(t, "would-be-owner", "new-owner@example.com").C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "inviter_lost_access")
	})
	t.Run("OK with the inviter still an admin", func(t *testing.T) {
		inv := MustInvitation(t, w.Admin.C, org, "welcome@example.com", client.RoleMember)
		a, err := ts.Invitee(t, "welcome", "welcome@example.com").C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
	})
}
