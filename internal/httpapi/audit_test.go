package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/invitation"
)

// TestAuditLog is the behaviour of the audit log.
func TestAuditLog(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org := w.Org.Id
		// One change of each kind, so the log holds every action below.
		ro, err := w.Owner.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Acme, renamed"})
		mustStatus(t, ro, err, http.StatusOK)
		ru, err := w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Name: ptr("Member, renamed")})
		mustStatus(t, ru, err, http.StatusOK)
		rt, err := w.Admin.C.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Name: ptr("Team, renamed")})
		mustStatus(t, rt, err, http.StatusOK)
		rm, err := w.Admin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
		mustStatus(t, rm, err, http.StatusOK)
		MustComment(t, w.Member.C, org, w.Ticket.Id, "for the audit log")
		inv := MustInvitation(t, w.Admin.C, org, "audited@example.com", client.RoleMember)
		rr, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rr, err, http.StatusNoContent)

		spec(t, "listAuditEvents", func(t *testing.T) {
			u, err := w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.UpdateTicketJSONRequestBody{Priority: ptr(client.TicketPriorityUrgent)})
			mustStatus(t, u, err, http.StatusOK)
			requestID := u.HTTPResponse.Header.Get("X-Request-Id")
			var evs []client.AuditEvent
			var cursor *string
			for range 20 {
				r, err := w.Admin.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(100), Cursor: cursor})
				mustStatus(t, r, err, http.StatusOK)
				evs = append(evs, r.JSON200.Items...)
				if cursor = r.JSON200.NextCursor; cursor == nil {
					break
				}
			}
			if len(evs) == 0 {
				t.Fatal("no audit events")
			}
			for i := 1; i < len(evs); i++ {
				if evs[i].At.After(evs[i-1].At) {
					t.Errorf("events not newest first: %s at %s after %s at %s", evs[i].Action, evs[i].At, evs[i-1].Action, evs[i-1].At)
				}
			}
			ev := evs[0]
			if ev.Action != "ticket.update" || ev.TargetId != w.Ticket.Id || ev.ActorId != w.Requester.ID || ev.RequestId != requestID {
				t.Errorf("newest event: got %+v, want ticket.update of %s by %s in request %s", ev, w.Ticket.Id, w.Requester.ID, requestID)
			}
			found := false
			for _, ch := range ev.Changes {
				if ch.Field == "priority" {
					found = true
					if got := auditValueOf(t, ch.After); got != "urgent" {
						t.Errorf("priority after: got %v, want urgent", got)
					}
				}
			}
			if !found {
				t.Errorf("changes lack priority: %+v", ev.Changes)
			}
			actions := map[string]bool{}
			for _, ev := range evs {
				actions[ev.Action] = true
			}
			for _, a := range []string{"org.create", "org.update", "user.add", "user.update", "team.create", "team.update", "member.add", "member.update",
				"ticket.create", "ticket.update", "comment.create", "invitation.create", "invitation.revoke"} {
				if !actions[a] {
					t.Errorf("no %s event in the audit log", a)
				}
			}
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		wantForbidden(t, []forbiddenCase{
			{"listAuditEvents/member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.ListAuditEventsWithResponse(bg, w.Org.Id, nil)
			}, nil},
		})
	})
}

func requestIDOf(h http.Header) string { return h.Get("X-Request-Id") }

// wantOutcome is the audit event one mutation must write.
type wantOutcome struct {
	op                                         string // for messages
	actor, action, targetType, targetID, reqID string
	// changes: field -> {before, after} (nil = absent); nil map = not
	// checked here (see "every event records what changed").
	changes map[string][2]any
}

// changesOf renders an event's changes as field -> {before, after}.
func changesOf(t *testing.T, ev client.AuditEvent) map[string][2]any {
	t.Helper()
	out := map[string][2]any{}
	for _, c := range ev.Changes {
		pair := [2]any{auditValueOf(t, c.Before), auditValueOf(t, c.After)}
		if _, dup := out[c.Field]; dup {
			t.Errorf("%s %s: field %s changed twice", ev.Action, ev.TargetId, c.Field)
		}
		out[c.Field] = pair
	}
	return out
}

func jsonLine(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAuditLifecycle(t *testing.T) {
	ts := MustServer(t)
	owner, admin, member, joiner := ts.Actor(t, "owner"), ts.Actor(t, "admin"), ts.Actor(t, "member"), ts.Invitee(t, "joiner", "joiner@example.com")
	var want []wantOutcome // oldest first
	expect := func(op string, actor actor, h http.Header, action, targetType, targetID string, changes map[string][2]any) {
		t.Helper()
		id := requestIDOf(h)
		if id == "" {
			t.Fatalf("%s: no X-Request-Id", op)
		}
		want = append(want, wantOutcome{op: op, actor: actor.ID, action: action, targetType: targetType, targetID: targetID, reqID: id, changes: changes})
	}
	type ch = map[string][2]any

	// Every mutating operation, each once, interleaved with refused ones.
	co, err := owner.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Audited"})
	mustStatus(t, co, err, http.StatusCreated)
	org := co.JSON201.Id
	expect("createOrg", owner, co.HTTPResponse.Header, "org.create", "org", org, ch{"name": {nil, "Audited"}})

	au, err := owner.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: admin.ID, Email: admin.Email, Name: admin.Name, Role: client.RoleAdmin})
	mustStatus(t, au, err, http.StatusCreated)
	expect("addOrgUser", owner, au.HTTPResponse.Header, "user.add", "user", admin.ID, ch{"email": {nil, admin.Email}, "name": {nil, admin.Name}, "role": {nil, "admin"}})
	au, err = admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: member.ID, Email: member.Email, Name: member.Name, Role: client.RoleMember})
	mustStatus(t, au, err, http.StatusCreated)
	expect("addOrgUser", admin, au.HTTPResponse.Header, "user.add", "user", member.ID, ch{"email": {nil, member.Email}, "name": {nil, member.Name}, "role": {nil, "member"}})
	refused := func(what string, r statusCoder, err error, status int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.StatusCode() != status {
			t.Fatalf("%s: status %d, want %d: %s", what, r.StatusCode(), status, r.GetBody())
		}
	}
	var rr statusCoder
	dup := ts.Actor(t, "dup")
	rr, err = wrapSame(admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: dup.ID, Email: member.Email, Name: dup.Name, Role: client.RoleMember}))
	refused("addOrgUser with a taken email", rr, err, http.StatusConflict)

	uo, err := admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(etagOf(1))}, client.OrgUpdate{Name: "Audited Inc"})
	mustStatus(t, uo, err, http.StatusOK)
	expect("updateOrg", admin, uo.HTTPResponse.Header, "org.update", "org", org, ch{"name": {"Audited", "Audited Inc"}})
	rr, err = wrapSame(admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(etagOf(1))}, client.OrgUpdate{Name: "Stale"}))
	refused("updateOrg with a stale If-Match", rr, err, http.StatusPreconditionFailed)
	rr, err = wrapSame(member.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Not allowed"}))
	refused("updateOrg by a member", rr, err, http.StatusForbidden)

	uu, err := admin.C.UpdateOrgUserWithResponse(bg, org, member.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed Member")})
	mustStatus(t, uu, err, http.StatusOK)
	expect("updateOrgUser", admin, uu.HTTPResponse.Header, "user.update", "user", member.ID, ch{"name": {member.Name, "Renamed Member"}})

	ct, err := owner.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Desk", Description: ptr("first line")})
	mustStatus(t, ct, err, http.StatusCreated)
	team := ct.JSON201.Id
	expect("createTeam", owner, ct.HTTPResponse.Header, "team.create", "team", team, ch{"name": {nil, "Desk"}, "description": {nil, "first line"}})
	ut, err := owner.C.UpdateTeamWithResponse(bg, org, team, nil, client.TeamUpdate{Description: ptr("front line")})
	mustStatus(t, ut, err, http.StatusOK)
	expect("updateTeam", owner, ut.HTTPResponse.Header, "team.update", "team", team, ch{"description": {"first line", "front line"}})
	rr, err = wrapSame(owner.C.UpdateTeamWithResponse(bg, org, team, &client.UpdateTeamParams{IfMatch: ptr(etagOf(1))}, client.TeamUpdate{Name: ptr("Stale")}))
	refused("updateTeam with a stale If-Match", rr, err, http.StatusPreconditionFailed)

	pm, err := owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
	mustStatus(t, pm, err, http.StatusCreated)
	expect("putTeamMember (add)", owner, pm.HTTPResponse.Header, "member.add", "member", team+"/"+member.ID, ch{"role": {nil, "member"}})
	pm, err = owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
	mustStatus(t, pm, err, http.StatusOK)
	expect("putTeamMember (role change)", owner, pm.HTTPResponse.Header, "member.update", "member", team+"/"+member.ID, ch{"role": {"member", "admin"}})
	pm, err = owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
	mustStatus(t, pm, err, http.StatusOK) // the same role again: no change, no event
	rr, err = wrapSame(owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, &client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))}, client.TeamMemberPut{Role: client.RoleMember}))
	refused("putTeamMember with a stale If-Match", rr, err, http.StatusPreconditionFailed)

	key := "lc-audit-ticket-1"
	tc, err := member.C.CreateTicketWithResponse(bg, org, &client.CreateTicketParams{IdempotencyKey: &key}, client.TicketCreate{Title: "Printer", TeamId: &team})
	mustStatus(t, tc, err, http.StatusCreated)
	tk := tc.JSON201.Id
	expect("createTicket", member, tc.HTTPResponse.Header, "ticket.create", "ticket", tk, ch{"title": {nil, "Printer"}, "status": {nil, "new"}, "priority": {nil, "normal"}, "teamId": {nil, team}})
	replay, err := member.C.CreateTicketWithResponse(bg, org, &client.CreateTicketParams{IdempotencyKey: &key}, client.TicketCreate{Title: "Printer", TeamId: &team})
	mustStatus(t, replay, err, http.StatusCreated) // a replay changes nothing: no event
	if replay.JSON201.Id != tk {
		t.Fatalf("idempotent replay created ticket %s, want %s", replay.JSON201.Id, tk)
	}
	rr, err = wrapSame(member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "Nobody", AssigneeId: ptr("nobody.here")}))
	if err != nil || rr.StatusCode() < 400 || rr.StatusCode() >= 500 {
		t.Fatalf("createTicket for an unknown assignee: %v %d %s", err, rr.StatusCode(), rr.GetBody())
	}
	utk, err := admin.C.UpdateTicketWithResponse(bg, org, tk, &client.UpdateTicketParams{IfMatch: ptr(etagOf(1))}, client.TicketUpdate{Priority: ptr(client.TicketPriorityHigh)})
	mustStatus(t, utk, err, http.StatusOK)
	expect("updateTicket", admin, utk.HTTPResponse.Header, "ticket.update", "ticket", tk, ch{"priority": {"normal", "high"}})
	rr, err = wrapSame(admin.C.UpdateTicketWithResponse(bg, org, tk, &client.UpdateTicketParams{IfMatch: ptr(etagOf(1))}, client.TicketUpdate{Priority: ptr(client.TicketPriorityLow)}))
	refused("updateTicket with a stale If-Match", rr, err, http.StatusPreconditionFailed)
	cc, err := member.C.CreateCommentWithResponse(bg, org, tk, nil, client.CommentCreate{Body: "is it plugged in?"})
	mustStatus(t, cc, err, http.StatusCreated)
	expect("createComment", member, cc.HTTPResponse.Header, "comment.create", "comment", tk+"/"+cc.JSON201.Id, nil)

	ci, err := admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "joiner@example.com", Role: client.RoleMember, TeamIds: &[]string{team}})
	mustStatus(t, ci, err, http.StatusCreated)
	inv := *ci.JSON201
	expect("createInvitation", admin, ci.HTTPResponse.Header, "invitation.create", "invitation", inv.Id,
		ch{"email": {nil, "joiner@example.com"}, "role": {nil, "member"}, "teamIds": {nil, []any{team}}, "expiresAt": {nil, inv.ExpiresAt.UTC().Format(time.RFC3339)}})
	rr, err = wrapSame(admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: member.Email, Role: client.RoleMember}))
	refused("createInvitation for a taken email", rr, err, http.StatusConflict)
	rr, err = wrapSame(admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner}))
	refused("createInvitation of an owner by an admin", rr, err, http.StatusForbidden)
	ai, err := member.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	refused("acceptInvitation by a user of the org, with another email", ai, err, http.StatusForbidden)
	ai, err = joiner.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	mustStatus(t, ai, err, http.StatusCreated)
	expect("acceptInvitation", joiner, ai.HTTPResponse.Header, "invitation.accept", "user", joiner.ID,
		ch{"invitationId": {nil, inv.Id}, "email": {nil, "joiner@example.com"}, "name": {nil, ai.JSON201.User.Name}, "role": {nil, "member"}})
	// The joiner's retry answers their membership (200) and changes
	// nothing: no second event.
	ai, err = joiner.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	refused("acceptInvitation twice", ai, err, http.StatusOK)

	ci, err = owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "revoked@example.com", Role: client.RoleAdmin})
	mustStatus(t, ci, err, http.StatusCreated)
	revoked := *ci.JSON201
	expect("createInvitation", owner, ci.HTTPResponse.Header, "invitation.create", "invitation", revoked.Id,
		ch{"email": {nil, "revoked@example.com"}, "role": {nil, "admin"}, "expiresAt": {nil, revoked.ExpiresAt.UTC().Format(time.RFC3339)}})
	ri, err := admin.C.RevokeInvitationWithResponse(bg, org, revoked.Id)
	mustStatus(t, ri, err, http.StatusNoContent)
	expect("revokeInvitation", admin, ri.HTTPResponse.Header, "invitation.revoke", "invitation", revoked.Id, nil)
	rr, err = wrapSame(admin.C.RevokeInvitationWithResponse(bg, org, revoked.Id))
	refused("revokeInvitation twice", rr, err, http.StatusNotFound)

	rm, err := owner.C.RemoveTeamMemberWithResponse(bg, org, team, member.ID, nil)
	mustStatus(t, rm, err, http.StatusNoContent)
	expect("removeTeamMember", owner, rm.HTTPResponse.Header, "member.remove", "member", team+"/"+member.ID, nil)
	dt, err := member.C.DeleteTicketWithResponse(bg, org, tk, nil)
	mustStatus(t, dt, err, http.StatusNoContent)
	expect("deleteTicket", member, dt.HTTPResponse.Header, "ticket.delete", "ticket", tk, ch{"title": {"Printer", nil}})
	rr, err = wrapSame(owner.C.DeleteTeamWithResponse(bg, org, team, &client.DeleteTeamParams{IfMatch: ptr(etagOf(1))}))
	refused("deleteTeam with a stale If-Match", rr, err, http.StatusPreconditionFailed)
	dtm, err := owner.C.DeleteTeamWithResponse(bg, org, team, nil)
	mustStatus(t, dtm, err, http.StatusNoContent)
	expect("deleteTeam", owner, dtm.HTTPResponse.Header, "team.delete", "team", team, nil)
	rr, err = wrapSame(owner.C.RemoveOrgUserWithResponse(bg, org, owner.ID, nil))
	refused("removeOrgUser of the last owner", rr, err, http.StatusConflict)
	ru, err := admin.C.RemoveOrgUserWithResponse(bg, org, joiner.ID, nil)
	mustStatus(t, ru, err, http.StatusNoContent)
	expect("removeOrgUser", admin, ru.HTTPResponse.Header, "user.remove", "user", joiner.ID, ch{"email": {"joiner@example.com", nil}, "role": {"member", nil}})

	// The next month: events land in another bucket.
	ts.Clock.Advance(35 * 24 * time.Hour)
	for _, a := range []*actor{&owner, &admin, &member, &joiner} {
		renewLease(t, ts, a)
	}
	uo, err = admin.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Audited in April"})
	mustStatus(t, uo, err, http.StatusOK)
	expect("updateOrg (next month)", admin, uo.HTTPResponse.Header, "org.update", "org", org, ch{"name": {"Audited Inc", "Audited in April"}})
	tc, err = member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "April fool"})
	mustStatus(t, tc, err, http.StatusCreated)
	expect("createTicket (next month)", member, tc.HTTPResponse.Header, "ticket.create", "ticket", tc.JSON201.Id, ch{"title": {nil, "April fool"}, "status": {nil, "new"}, "priority": {nil, "normal"}})
	if m1, m2 := co.JSON201.CreatedAt.Month(), tc.JSON201.CreatedAt.Month(); m1 == m2 {
		t.Fatalf("the events do not span two months: %s and %s", co.JSON201.CreatedAt, tc.JSON201.CreatedAt)
	}

	all := allEvents(t, admin.C, org, 100, nil, nil)

	t.Run("exactly one event per mutation, none for refused ones", func(t *testing.T) {
		if len(all) != len(want) {
			var got []string
			for _, ev := range all {
				got = append(got, ev.Action)
			}
			t.Errorf("%d events, want %d (one per successful mutation); got newest first: %v", len(all), len(want), got)
		}
		for i := 0; i < len(want) && i < len(all); i++ {
			w, ev := want[len(want)-1-i], all[i]
			if ev.ActorId != w.actor || ev.Action != w.action || ev.TargetType != w.targetType || ev.TargetId != w.targetID || ev.RequestId != w.reqID {
				t.Errorf("%s: event {actor %s action %s target %s/%s request %s}, want {%s %s %s/%s %s}", w.op,
					ev.ActorId, ev.Action, ev.TargetType, ev.TargetId, ev.RequestId, w.actor, w.action, w.targetType, w.targetID, w.reqID)
				continue
			}
			if w.changes == nil {
				continue
			}
			if got := changesOf(t, ev); jsonLine(got) != jsonLine(w.changes) {
				t.Errorf("%s (%s): changes %s, want %s", w.op, w.action, jsonLine(got), jsonLine(w.changes))
			}
		}
	})
	t.Run("every event records what changed", func(t *testing.T) {
		// A removal should say what was removed, a creation what was
		// created, as user.remove and ticket.delete do.
		var empty []string
		for _, ev := range all {
			if len(ev.Changes) == 0 {
				empty = append(empty, ev.Action)
			}
		}
		if len(empty) > 0 {
			t.Errorf("events without before/after values: %v", empty)
		}
	})
	t.Run("no secret in the log", func(t *testing.T) {
		r, err := owner.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(100)})
		mustStatus(t, r, err, http.StatusOK)
		for _, s := range []string{inv.Token, revoked.Token, invitation.HashToken(inv.Token), "tokenHash"} {
			if strings.Contains(string(r.Body), s) {
				t.Errorf("the audit log shows %q", s)
			}
		}
	})
	t.Run("newest first", func(t *testing.T) {
		for i := 1; i < len(all); i++ {
			if all[i].Id >= all[i-1].Id || all[i].At.After(all[i-1].At) {
				t.Errorf("event %d (%s %s at %s) is not older than event %d (%s %s at %s)", i, all[i].Action, all[i].Id, all[i].At,
					i-1, all[i-1].Action, all[i-1].Id, all[i-1].At)
			}
		}
	})
	t.Run("limit=2 walks every event once, across months", func(t *testing.T) {
		paged := allEvents(t, admin.C, org, 2, nil, nil)
		ids := func(evs []client.AuditEvent) []string {
			out := make([]string, len(evs))
			for i, ev := range evs {
				out[i] = ev.Id
			}
			return out
		}
		if got, want := ids(paged), ids(all); !slices.Equal(got, want) {
			t.Errorf("limit=2: got %v, want %v", got, want)
		}
	})
	t.Run("since and until select by at, inclusive", func(t *testing.T) {
		if len(all) < 10 {
			t.Fatalf("only %d events", len(all))
		}
		newest, oldest := all[3], all[len(all)-4]
		since, until := oldest.At, newest.At
		got := allEvents(t, admin.C, org, 3, &since, &until)
		var gotIDs, wantIDs []string
		for _, ev := range got {
			gotIDs = append(gotIDs, ev.Action+"@"+ev.At.Format(time.RFC3339Nano))
		}
		for _, ev := range all[3 : len(all)-3] {
			wantIDs = append(wantIDs, ev.Action+"@"+ev.At.Format(time.RFC3339Nano))
		}
		if !slices.Equal(gotIDs, wantIDs) {
			t.Errorf("since=%s until=%s: got %v, want %v", since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), gotIDs, wantIDs)
		}
		// Only the second month.
		april := time.Date(tc.JSON201.CreatedAt.Year(), tc.JSON201.CreatedAt.Month(), 1, 0, 0, 0, 0, time.UTC)
		got = allEvents(t, admin.C, org, 100, &april, nil)
		if len(got) != 2 || got[0].Action != "ticket.create" || got[1].Action != "org.update" {
			t.Errorf("since %s: got %d events, want the 2 of that month", april.Format(time.DateOnly), len(got))
		}
		// Only the first.
		march := april.Add(-time.Millisecond)
		got = allEvents(t, admin.C, org, 100, nil, &march)
		if len(got) != len(all)-2 {
			t.Errorf("until %s: got %d events, want %d", march.Format(time.RFC3339Nano), len(got), len(all)-2)
		}
	})
	t.Run("a member gets 403, another org's member 404", func(t *testing.T) {
		r, err := member.C.ListAuditEventsWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusForbidden, "")
		stranger := ts.Actor(t, "stranger")
		MustOrg(t, stranger.C, "Elsewhere")
		r, err = stranger.C.ListAuditEventsWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
		r, err = joiner.C.ListAuditEventsWithResponse(bg, org, nil) // removed from the org
		wantProblem(t, r, err, http.StatusNotFound, "")
		r, err = owner.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(1)})
		mustStatus(t, r, err, http.StatusOK)
	})
}

// TestAuditLogFarFuture: an until in the far future is until now. Before,
// ?until=9999-12-31T23:59:59Z answered empty pages with a nextCursor, at 13
// Queries a page, for the 7,400 pages of months before any event (found by
// an outside attack).
func TestAuditLogFarFuture(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Audited")
	far := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	ts.Rec.Reset()
	r, err := w.Admin.C.ListAuditEventsWithResponse(bg, w.Org.Id, &client.ListAuditEventsParams{Until: &far, Limit: ptr(5)})
	mustStatus(t, r, err, http.StatusOK)
	if len(r.JSON200.Items) != 5 {
		t.Errorf("first page up to 9999: %d events, want 5 (the newest)", len(r.JSON200.Items))
	}
	if n := ts.Rec.Count(); n > 4 {
		t.Errorf("first page up to 9999: %d DynamoDB calls (%s), want the authorization read and a Query or two", n, ts.Rec.Names())
	}
}

// TestAuditLogUntilYearOne: until=0001-01-01T00:00:00Z is a bound (the
// beginning of time), not "no bound": nothing is listed.
func TestAuditLogUntilYearOne(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Year one")
	r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+w.Org.Id+"/audit-log?until=0001-01-01T00:00:00Z", w.Admin.Token, nil, "")
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(r.Body, &list); r.Status != http.StatusOK || err != nil || len(list.Items) != 0 {
		t.Errorf("until year one: %d, %d events: %s", r.Status, len(list.Items), truncate(r.Body))
	}
}

// TestAuditLogEmptyRange: since after until holds nothing: a 400 naming
// both, not an empty 200.
func TestAuditLogEmptyRange(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Ranged")
	r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+w.Org.Id+"/audit-log?since=2026-05-01T00:00:00Z&until=2026-04-01T00:00:00Z",
		w.Admin.Token, nil, "")
	got := problemErrors(t, r)
	if want := []string{"query since invalid_range", "query until invalid_range"}; !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}

// TestNoOpPatch: a PATCH that changes nothing answers 200 with the
// resource as it was: no new version, no audit event (with changes: []).
func TestNoOpPatch(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Unchanged")
	org := w.Org.Id
	orgName := w.Org.Name
	for _, c := range []struct{ name, path, body string }{
		{"updateOrg", "/v1/orgs/" + org, `{"name":` + strconv.Quote(orgName) + `}`},
		{"updateOrgUser", "/v1/orgs/" + org + "/users/" + w.Member.ID, `{"name":` + strconv.Quote(w.Member.Name) + `}`},
		{"updateTeam", "/v1/orgs/" + org + "/teams/" + w.Team.Id, `{"name":` + strconv.Quote(w.Team.Name) + `}`},
		{"updateTicket", "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id, `{"title":` + strconv.Quote(w.Ticket.Title) + `,"status":"` + string(w.Ticket.Status) + `"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := doReq(t, ts.HTTP, http.MethodGet, ts.URL+c.path, w.Owner.Token, nil, "")
			events := len(allEvents(t, w.Owner.C, org, 100, nil, nil))
			r := doReq(t, ts.HTTP, http.MethodPatch, ts.URL+c.path, w.Owner.Token, nil, c.body)
			if r.Status != http.StatusOK || r.Header.Get("ETag") != before.Header.Get("ETag") {
				t.Errorf("no-op PATCH: %d, ETag %s (before %s): %s", r.Status, r.Header.Get("ETag"), before.Header.Get("ETag"), r.Body)
			}
			if n := len(allEvents(t, w.Owner.C, org, 100, nil, nil)); n != events {
				t.Errorf("no-op PATCH wrote %d audit event(s)", n-events)
			}
		})
	}
}

// auditValueOf is an AuditValue as JSON decodes it into an any: a string,
// a []any of strings, or nil.
func auditValueOf(t *testing.T, v *client.AuditValue) any {
	t.Helper()
	if v == nil {
		return nil
	}
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
