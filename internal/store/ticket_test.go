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
