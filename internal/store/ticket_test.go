package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The write rules of tickets and comments: every conditional write, its
// error kind and code, and that a refused write changes nothing.

func TestCreateTicket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID
	other := f.newOrg(t, "Other", "u_zed")
	otherTeam := f.team(other.ID, "Their team")
	must(t, f.Teams.CreateTeam(ctx, otherTeam, f.member(otherTeam, "u_zed", authz.Owner), ev(otherTeam)))

	t.Run("OK", func(t *testing.T) {
		tk := f.ticket(org, "u_bob", "Printer on fire", ticket.StatusNew)
		tk.AssigneeID, tk.TeamID, tk.Tags = "u_alice", s.Eng.ID, []string{"hardware", "urgent"}
		must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
		got, err := f.Tickets.GetTicket(ctx, org, tk.ID)
		must(t, err)
		if !reflect.DeepEqual(got, tk) {
			t.Errorf("got %+v, want %+v", got, tk)
		}
	})

	cases := []struct {
		name string
		edit func(*ticket.Ticket)
		kind errs.Kind
		code string
	}{
		{"ErrRequesterNotInOrg", func(tk *ticket.Ticket) { tk.RequesterID = "u_ghost" }, errs.NotFound, "user_not_found"},
		{"ErrRequesterOfAnotherOrg", func(tk *ticket.Ticket) { tk.RequesterID = "u_zed" }, errs.NotFound, "user_not_found"},
		{"ErrAssigneeNotOrgMember", func(tk *ticket.Ticket) { tk.AssigneeID = "u_ghost" }, errs.Conflict, "assignee_not_org_member"},
		{"ErrAssigneeOfAnotherOrg", func(tk *ticket.Ticket) { tk.AssigneeID = "u_zed" }, errs.Conflict, "assignee_not_org_member"},
		{"ErrTeamNotFound", func(tk *ticket.Ticket) { tk.TeamID = f.ids.New() }, errs.Conflict, "team_not_found"},
		{"ErrTeamOfAnotherOrg", func(tk *ticket.Ticket) { tk.TeamID = otherTeam.ID }, errs.Conflict, "team_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := f.ticket(org, "u_alice", "Bad reference", ticket.StatusNew)
			c.edit(&tk)
			err := f.mustUnchanged(t, func() error { return f.Tickets.CreateTicket(ctx, tk, ev(tk)) })
			wantErr(t, err, c.kind, c.code)
		})
	}

	t.Run("ErrInvalidStatus", func(t *testing.T) {
		f.Rec.Reset()
		tk := f.ticket(org, "u_alice", "Bad status", "wontfix")
		wantErr(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)), errs.Invalid, "invalid_status")
		f.wantNoCalls(t)
	})
}

func TestUpdateTicket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID
	all := page.Request{Limit: 100}

	listed := func(t *testing.T, r page.Result[ticket.Ticket], err error, id string) bool {
		t.Helper()
		must(t, err)
		return slices.Contains(ticketIDs(r.Items), id)
	}
	current := func(t *testing.T, id string) ticket.Ticket {
		t.Helper()
		tk, err := f.Tickets.GetTicket(ctx, org, id)
		must(t, err)
		return tk
	}

	tk := f.ticket(org, "u_alice", "Login broken", ticket.StatusNew)
	tk.TeamID, tk.AssigneeID = s.Eng.ID, "u_bob"
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	t.Run("OK status change moves GSI3 and GSI5 keys", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.Status, next.Version = ticket.StatusOpen, prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{Status: ticket.StatusNew}, all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed as new")
		}
		r, err = f.Tickets.ListTickets(ctx, org, ticket.Filter{Status: ticket.StatusOpen}, all)
		if !listed(t, r, err, tk.ID) {
			t.Error("not listed as open")
		}
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, ticket.StatusNew, all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed in the team's new tickets")
		}
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, ticket.StatusOpen, all)
		if !listed(t, r, err, tk.ID) {
			t.Error("not listed in the team's open tickets")
		}
		r, err = f.Tickets.ListTickets(ctx, org, ticket.Filter{}, all)
		must(t, err)
		if got, want := ticketIDs(r.Items), []string{tk.ID}; !slices.Equal(got, want) {
			t.Errorf("all tickets: got %v, want %v", got, want)
		}
		if got, want := current(t, tk.ID), next; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})

	t.Run("OK unassign", func(t *testing.T) {
		r, err := f.Tickets.ListAssignedTickets(ctx, org, "u_bob", all)
		if !listed(t, r, err, tk.ID) {
			t.Fatal("not assigned to bob before")
		}
		prev := current(t, tk.ID)
		next := prev
		next.AssigneeID, next.Version = "", prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err = f.Tickets.ListAssignedTickets(ctx, org, "u_bob", all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed as assigned to bob")
		}
		if got, want := current(t, tk.ID).AssigneeID, ""; got != want {
			t.Errorf("assignee: got %q, want %q", got, want)
		}
	})

	t.Run("OK move to another team and out of teams", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.TeamID, next.Version = s.Design.ID, prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err := f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, "", all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed in Engineering")
		}
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Design.ID, ticket.StatusOpen, all)
		if !listed(t, r, err, tk.ID) {
			t.Error("not listed in Design")
		}
		prev = next
		next.TeamID, next.Version = "", prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Design.ID, "", all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed in Design")
		}
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := tk // version 1
		next := stale
		next.Title, next.Version = "Stale", 2
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
		// With a new assignee the update runs in a transaction: same answer.
		next.AssigneeID = "u_alice"
		err = f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrAssigneeNotOrgMember", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.AssigneeID, next.Version = "u_ghost", prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "assignee_not_org_member")
	})

	t.Run("ErrTeamNotFound", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.TeamID, next.Version = f.ids.New(), prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "team_not_found")
	})

	t.Run("ErrTicketNotFound", func(t *testing.T) {
		missing := f.ticket(org, "u_alice", "Missing", ticket.StatusNew)
		next := missing
		next.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, missing, next, ev(next)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})

	t.Run("OK a concurrent comment is not overwritten", func(t *testing.T) {
		read := current(t, tk.ID) // read before the comment lands
		c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "me too", CreatedAt: f.now}
		must(t, f.Tickets.CreateComment(ctx, c, ev(c)))
		next := read
		next.Title, next.Version = "Login broken for everyone", read.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, read, next, ev(next)))
		got := current(t, tk.ID)
		if got, want := got.CommentCount, read.CommentCount+1; got != want {
			t.Errorf("commentCount: got %d, want %d", got, want)
		}
		if got, want := got.Title, next.Title; got != want {
			t.Errorf("title: got %q, want %q", got, want)
		}
	})
}

func TestCreateComment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Busy ticket", ticket.StatusOpen)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	t.Run("OK concurrent", func(t *testing.T) {
		const n = 20
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for i := range n {
			c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob",
				Body: fmt.Sprintf("comment %d", i), CreatedAt: f.now}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- f.Tickets.CreateComment(ctx, c, ev(c))
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Errorf("AddComment: %v", err)
			}
		}
		got, err := f.Tickets.GetTicket(ctx, org, tk.ID)
		must(t, err)
		if got, want := got.CommentCount, n; got != want {
			t.Errorf("commentCount: got %d, want %d", got, want)
		}
		r, err := f.Tickets.ListComments(ctx, org, tk.ID, page.Request{Limit: 100})
		must(t, err)
		if got, want := len(r.Items), n; got != want {
			t.Errorf("comments: got %d, want %d", got, want)
		}
	})

	t.Run("ErrTicketNotFound", func(t *testing.T) {
		c := ticket.Comment{OrgID: org, TicketID: f.ids.New(), ID: f.ids.New(), AuthorID: "u_bob", Body: "hello?", CreatedAt: f.now}
		err := f.mustUnchanged(t, func() error { return f.Tickets.CreateComment(ctx, c, ev(c)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})

	t.Run("ErrTicketOfAnotherOrg", func(t *testing.T) {
		other := f.newOrg(t, "Other", "u_bob")
		c := ticket.Comment{OrgID: other.ID, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "sneaky", CreatedAt: f.now}
		err := f.mustUnchanged(t, func() error { return f.Tickets.CreateComment(ctx, c, ev(c)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})
}

func TestDeleteTicket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Doomed", ticket.StatusNew)
	tk.TeamID, tk.AssigneeID = s.Eng.ID, "u_bob"
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
	for i := range 3 {
		must(t, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob",
			Body: fmt.Sprint("c", i), CreatedAt: f.now}, evOrg(org)))
	}
	keeper := f.ticket(org, "u_alice", "Keeper", ticket.StatusNew)
	must(t, f.Tickets.CreateTicket(ctx, keeper, ev(keeper)))
	must(t, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: keeper.ID, ID: f.ids.New(), AuthorID: "u_bob",
		Body: "stays", CreatedAt: f.now}, evOrg(org)))

	t.Run("ErrStaleVersion", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Tickets.DeleteTicket(ctx, org, tk.ID, 5, evOrg(org)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrTicketNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Tickets.DeleteTicket(ctx, org, f.ids.New(), 0, evOrg(org)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})

	t.Run("OK", func(t *testing.T) {
		must(t, f.Tickets.DeleteTicket(ctx, org, tk.ID, 1, evOrg(org)))
		_, err := f.Tickets.GetTicket(ctx, org, tk.ID)
		wantErr(t, err, errs.NotFound, "ticket_not_found")
		if keys := f.keysWithPrefix(t, "ORG#"+org+"#TICKET#"+tk.ID); len(keys) != 0 {
			t.Errorf("items left in the ticket's partition: %v", keys)
		}
		r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{}, page.Request{})
		must(t, err)
		if got, want := ticketIDs(r.Items), []string{keeper.ID}; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
		for name, list := range map[string]func() (page.Result[ticket.Ticket], error){
			"team": func() (page.Result[ticket.Ticket], error) {
				return f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, "", page.Request{})
			},
			"assigned": func() (page.Result[ticket.Ticket], error) {
				return f.Tickets.ListAssignedTickets(ctx, org, "u_bob", page.Request{})
			},
		} {
			r, err := list()
			must(t, err)
			if len(r.Items) != 0 {
				t.Errorf("%s tickets: got %v, want none", name, ticketIDs(r.Items))
			}
		}
		c, err := f.Tickets.ListComments(ctx, org, keeper.ID, page.Request{})
		must(t, err)
		if got, want := len(c.Items), 1; got != want {
			t.Errorf("the other ticket's comments: got %d, want %d", got, want)
		}
	})
}

// TestCreatesProveTheActor: a create is proved by its actor fence, and a
// failed fence is the answer before any other failed condition of the
// transaction: a member removed after the decision learns nothing of the
// team or ticket they name. The table is unchanged.
func TestCreatesProveTheActor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := MustSampled(t)
	o := f.newOrg(t, "Proving", "u_pam")
	by := func(userID, action, target string) audit.Event {
		p := authz.Principal{Identity: authz.Identity{UserID: userID}, OrgID: o.ID}
		return audit.NewEvent(ctx, eventIDs, audit.By(p, authz.Grant{Floor: authz.Member}), action, target, "x", f.now, nil)
	}
	t.Run("ErrFenced/before the team's and the ticket's own failures", func(t *testing.T) {
		nt := f.ticket(o.ID, "u_zed", "Stranger's", ticket.StatusNew)
		nt.TeamID = f.ids.New() // no such team: its check fails too
		err := f.mustUnchanged(t, func() error { return f.Tickets.CreateTicket(ctx, nt, by("u_zed", "ticket.create", "ticket")) })
		wantErr(t, err, errs.NotFound, "org_not_found")
		c := ticket.Comment{OrgID: o.ID, TicketID: f.ids.New(), ID: f.ids.New(), AuthorID: "u_zed", Body: "hi", CreatedAt: f.now} // no such ticket either
		err = f.mustUnchanged(t, func() error { return f.Tickets.CreateComment(ctx, c, by("u_zed", "comment.create", "comment")) })
		wantErr(t, err, errs.NotFound, "org_not_found")
	})
	t.Run("ErrKeyRevoked/a key revoked after the decision", func(t *testing.T) {
		actor := authz.KeyActorPrefix + f.ids.New() // the key is gone (revoked) by the time of the write
		nt := f.ticket(o.ID, actor, "Filed by a revoked key", ticket.StatusNew)
		err := f.mustUnchanged(t, func() error { return f.Tickets.CreateTicket(ctx, nt, by(actor, "ticket.create", "ticket")) })
		wantErr(t, err, errs.Unauthenticated, "invalid_token")
		c := ticket.Comment{OrgID: o.ID, TicketID: f.ids.New(), ID: f.ids.New(), AuthorID: actor, Body: "hi", CreatedAt: f.now}
		err = f.mustUnchanged(t, func() error { return f.Tickets.CreateComment(ctx, c, by(actor, "comment.create", "comment")) })
		wantErr(t, err, errs.Unauthenticated, "invalid_token")
	})
}

// Every field's round trip through the store: the guard described in
// fields_test.go.

func TestTicketFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_requester", "u_assignee", "u_assignee2")
	teams := make([]membership.Team, 2)
	for i := range teams {
		teams[i] = f.team(org.ID, fmt.Sprint("Team ", i))
		must(t, f.Teams.CreateTeam(ctx, teams[i], f.member(teams[i], "u_requester", authz.Owner), ev(teams[i])))
	}
	requester := f.user(org.ID, "u_requester", "u_requester@example.com", "u_requester", authz.Owner)
	assignee := f.user(org.ID, "u_assignee", "u_assignee@example.com", "u_assignee", authz.Member)
	tk := ticket.Ticket{OrgID: org.ID, ID: f.ids.New(), Title: "Every field", Description: "A ticket with every field set",
		Status: ticket.StatusOpen, Priority: ticket.PriorityHigh, RequesterID: "u_requester", AssigneeID: "u_assignee",
		TeamID: teams[0].ID, Tags: []string{"billing", "login"}, CommentCount: 5, Version: 3, CreatedAt: f.at(1), UpdatedAt: f.at(2),
		Requester: &requester, Assignee: &assignee} // derived: see read
	mustFull(t, tk)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	// read reads want back through every getter and every index that
	// should hold it.
	read := func(t *testing.T, want ticket.Ticket) {
		t.Helper()
		// Derived, not stored: Requester and Assignee are filled by reads
		// that expand them (BatchGetOrgUsers, one call per page).
		want = zeroed(t, want, "Requester", "Assignee")
		got, err := f.Tickets.GetTicket(ctx, org.ID, want.ID)
		must(t, err)
		wantSame(t, "GetTicket", got, want)
		got, _, err = f.Tickets.GetTicketWithComments(ctx, org.ID, want.ID, 10)
		must(t, err)
		wantSame(t, "GetTicketWithComments", got, want)
		listings := map[string]ticket.Filter{
			"ListTickets (GSI1)":                    {},
			"ListTickets oldest first (GSI1)":       {Oldest: true},
			"ListTickets by status (GSI3)":          {Status: want.Status},
			"ListTickets by priority (GSI6)":        {Priority: want.Priority},
			"ListTickets by priority+status (GSI6)": {Priority: want.Priority, Status: want.Status},
		}
		if want.AssigneeID != "" {
			listings["ListTickets by assignee (GSI4)"] = ticket.Filter{AssigneeID: want.AssigneeID}
			listings["ListTickets by assignee+status (GSI7)"] = ticket.Filter{AssigneeID: want.AssigneeID, Status: want.Status}
		}
		for what, filter := range listings {
			r, err := f.Tickets.ListTickets(ctx, org.ID, filter, fieldsPage)
			wantOne(t, what, r.Items, err, want)
		}
		r, err := f.Tickets.ListUserTickets(ctx, org.ID, want.RequesterID, fieldsPage)
		wantOne(t, "ListUserTickets (GSI2)", r.Items, err, want)
		if want.AssigneeID != "" {
			r, err := f.Tickets.ListAssignedTickets(ctx, org.ID, want.AssigneeID, fieldsPage)
			wantOne(t, "ListAssignedTickets (GSI4)", r.Items, err, want)
		}
		if want.TeamID != "" {
			r, err := f.Tickets.ListTeamTickets(ctx, org.ID, want.TeamID, "", fieldsPage)
			wantOne(t, "ListTeamTickets (GSI5)", r.Items, err, want)
			r, err = f.Tickets.ListTeamTickets(ctx, org.ID, want.TeamID, want.Status, fieldsPage)
			wantOne(t, "ListTeamTickets by status (GSI5)", r.Items, err, want)
		}
	}
	// gone asserts no index still files the ticket under prev's keys.
	gone := func(t *testing.T, prev ticket.Ticket) {
		t.Helper()
		for what, filter := range map[string]ticket.Filter{
			"old status (GSI3)":                   {Status: prev.Status},
			"old priority (GSI6)":                 {Priority: prev.Priority},
			"old assignee (GSI4)":                 {AssigneeID: prev.AssigneeID},
			"old assignee and status (GSI7)":      {AssigneeID: prev.AssigneeID, Status: prev.Status},
			"old assignee and new status (GSI7)":  {AssigneeID: prev.AssigneeID, Status: ticket.StatusPending},
			"old priority and new status (GSI6)":  {Priority: prev.Priority, Status: ticket.StatusPending},
			"old priority and old status (GSI6)":  {Priority: prev.Priority, Status: prev.Status},
			"new priority and old status (GSI6)":  {Priority: ticket.PriorityLow, Status: prev.Status},
			"old status, oldest first (GSI3 asc)": {Status: prev.Status, Oldest: true},
		} {
			r, err := f.Tickets.ListTickets(ctx, org.ID, filter, fieldsPage)
			wantNone(t, "ListTickets by "+what, r.Items, err)
		}
		r, err := f.Tickets.ListAssignedTickets(ctx, org.ID, prev.AssigneeID, fieldsPage)
		wantNone(t, "ListAssignedTickets of the old assignee (GSI4)", r.Items, err)
		r, err = f.Tickets.ListTeamTickets(ctx, org.ID, prev.TeamID, "", fieldsPage)
		wantNone(t, "ListTeamTickets of the old team (GSI5)", r.Items, err)
	}

	t.Run("create", func(t *testing.T) { read(t, tk) })

	t.Run("update", func(t *testing.T) {
		prev := zeroed(t, tk, "Requester", "Assignee") // as read
		other := f.user(org.ID, "u_assignee2", "u_assignee2@example.com", "u_assignee2", authz.Member)
		next := ticket.Ticket{OrgID: tk.OrgID, ID: tk.ID, Title: "Every field, changed", Description: "Another description",
			Status: ticket.StatusPending, Priority: ticket.PriorityLow, AssigneeID: "u_assignee2", TeamID: teams[1].ID,
			Tags: []string{"refund"}, Version: 4, UpdatedAt: f.at(12),
			// An update must leave these: see kept.
			RequesterID: "u_assignee", CommentCount: 6, CreatedAt: f.at(13), Requester: &other, Assignee: &requester}
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "ID") // the ticket's key
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		// Kept: CommentCount belongs to CreateComment's transaction (an
		// update that wrote it would undo a concurrent comment);
		// RequesterID is who raised the ticket, and UpdateTicket writes
		// neither it nor its GSI2 key; CreatedAt is when it was raised.
		want := copied(t, next, prev, "CommentCount", "RequesterID", "CreatedAt")
		read(t, want)
		gone(t, prev)

		// Empty values are removed, with the sparse index keys they make.
		prev, next = want, want
		next.Description, next.AssigneeID, next.TeamID, next.Tags = "", "", "", []string{}
		next.Version, next.UpdatedAt = 5, f.at(14)
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		read(t, next)
		r, err := f.Tickets.ListAssignedTickets(ctx, org.ID, prev.AssigneeID, fieldsPage)
		wantNone(t, "ListAssignedTickets after unassigning (GSI4)", r.Items, err)
		r, err = f.Tickets.ListTickets(ctx, org.ID, ticket.Filter{AssigneeID: prev.AssigneeID, Status: prev.Status}, fieldsPage)
		wantNone(t, "ListTickets by assignee+status after unassigning (GSI7)", r.Items, err)
		r, err = f.Tickets.ListTeamTickets(ctx, org.ID, prev.TeamID, "", fieldsPage)
		wantNone(t, "ListTeamTickets after leaving the team (GSI5)", r.Items, err)
	})
}

func TestCommentFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_requester", "u_author")
	tk := f.ticket(org.ID, "u_requester", "Commented", ticket.StatusOpen)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
	c := ticket.Comment{OrgID: org.ID, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_author", Body: "Every field of a comment",
		CreatedAt: f.at(1)}
	mustFull(t, c)
	must(t, f.Tickets.CreateComment(ctx, c, ev(c)))

	// Comments are immutable: there is no update to check.
	got, err := f.Tickets.GetComment(ctx, org.ID, tk.ID, c.ID)
	must(t, err)
	wantSame(t, "GetComment", got, c)
	r, err := f.Tickets.ListComments(ctx, org.ID, tk.ID, fieldsPage)
	wantOne(t, "ListComments", r.Items, err, c)
	parent, comments, err := f.Tickets.GetTicketWithComments(ctx, org.ID, tk.ID, 10)
	wantOne(t, "GetTicketWithComments", comments, err, c)
	// The comment's transaction counts it on the ticket and touches it.
	tk.CommentCount, tk.UpdatedAt = 1, c.CreatedAt
	wantSame(t, "the commented ticket", parent, tk)
}
