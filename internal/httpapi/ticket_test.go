package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd/client"
)

// TestTicket is the behaviour of tickets and comments.
func TestTicket(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org := w.Org.Id
		spec(t, "listUserTickets/include=user&expand=requester,assignee", func(t *testing.T) {
			r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID, &client.ListUserTicketsParams{
				Include: ptr(client.ListUserTicketsParamsIncludeUser),
				Expand:  &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
			mustStatus(t, r, err, http.StatusOK)
			if r.JSON200.User == nil || r.JSON200.User.UserId != w.Requester.ID || r.JSON200.User.Email != w.Requester.Email {
				t.Errorf("user: got %+v, want %s", r.JSON200.User, w.Requester.ID)
			}
			if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
				t.Fatalf("tickets: got %v, want %v", got, want)
			}
			tk := r.JSON200.Items[0]
			if tk.Requester == nil || tk.Requester.UserId != w.Requester.ID {
				t.Errorf("requester not expanded: %+v", tk.Requester)
			}
			if tk.Assignee == nil || tk.Assignee.UserId != w.Assignee.ID {
				t.Errorf("assignee not expanded: %+v", tk.Assignee)
			}
		})

		spec(t, "listUserTickets/plain", func(t *testing.T) {
			r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID, nil)
			mustStatus(t, r, err, http.StatusOK)
			if r.JSON200.User != nil {
				t.Errorf("user present without include=user")
			}
			if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
				t.Errorf("tickets: got %v, want %v", got, want)
			}
			if tk := r.JSON200.Items[0]; tk.Requester != nil || tk.Assignee != nil {
				t.Errorf("users expanded without expand")
			}
		})

		spec(t, "listAssignedTickets", func(t *testing.T) {
			r, err := w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, &client.ListAssignedTicketsParams{
				Expand: &client.TicketExpand{client.TicketExpansionAssignee}})
			mustStatus(t, r, err, http.StatusOK)
			if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
				t.Fatalf("tickets: got %v, want %v", got, want)
			}
			if tk := r.JSON200.Items[0]; tk.Assignee == nil || tk.Assignee.UserId != w.Assignee.ID || tk.Requester != nil {
				t.Errorf("expand=assignee: requester %+v assignee %+v", tk.Requester, tk.Assignee)
			}
			r, err = w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Requester.ID, nil)
			mustStatus(t, r, err, http.StatusOK)
			if got := len(r.JSON200.Items); got != 0 {
				t.Errorf("requester has %d assigned tickets, want 0", got)
			}
		})

		spec(t, "getTicket", func(t *testing.T) {
			r, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, r, err, http.StatusOK)
			tk := r.JSON200
			if tk.Id != w.Ticket.Id || tk.Title != w.Ticket.Title || tk.RequesterId != w.Requester.ID || tk.Status != client.TicketStatusNew ||
				tk.Priority != client.TicketPriorityNormal || !slices.Equal(tk.Tags, []string{"hardware"}) ||
				tk.AssigneeId == nil || *tk.AssigneeId != w.Assignee.ID || tk.TeamId == nil || *tk.TeamId != w.Team.Id {
				t.Errorf("ticket: got %+v", tk)
			}
			if tk.Comments != nil || tk.Requester != nil || tk.Assignee != nil {
				t.Errorf("embedded data without include/expand")
			}
			wantETag(t, r.HTTPResponse.Header, tk.Version)
		})

		spec(t, "getTicket/include=comments&expand=requester,assignee, after two createComment", func(t *testing.T) {
			c1 := MustComment(t, w.Member.C, org, w.Ticket.Id, "is it plugged in?")
			c2 := MustComment(t, w.Requester.C, org, w.Ticket.Id, "yes")
			r, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{
				Include: ptr(client.GetTicketParamsIncludeComments),
				Expand:  &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
			mustStatus(t, r, err, http.StatusOK)
			tk := r.JSON200
			if tk.Comments == nil {
				t.Fatal("comments missing with include=comments")
			}
			var ids []string
			for _, c := range *tk.Comments {
				ids = append(ids, c.Id)
			}
			if got, want := ids, []string{c1.Id, c2.Id}; !slices.Equal(got, want) {
				t.Errorf("comments (oldest first): got %v, want %v", got, want)
			}
			if got, want := tk.CommentCount, 2; got != want {
				t.Errorf("commentCount: got %d, want %d", got, want)
			}
			if tk.Requester == nil || tk.Requester.UserId != w.Requester.ID || tk.Assignee == nil || tk.Assignee.UserId != w.Assignee.ID {
				t.Errorf("expand: requester %+v assignee %+v", tk.Requester, tk.Assignee)
			}
			wantETag(t, r.HTTPResponse.Header, tk.Version)
			w.Ticket = *tk
		})

		spec(t, "listComments", func(t *testing.T) {
			r, err := w.Member.C.ListCommentsWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := len(r.JSON200.Items), 2; got != want {
				t.Fatalf("items: got %d, want %d", got, want)
			}
			if c := r.JSON200.Items[0]; c.Body != "is it plugged in?" || c.AuthorId != w.Member.ID || c.TicketId != w.Ticket.Id {
				t.Errorf("comment: got %+v", c)
			}
		})

		spec(t, "updateTicket/by the assignee", func(t *testing.T) {
			r, err := w.Assignee.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, &client.UpdateTicketParams{IfMatch: ptr(etagOf(w.Ticket.Version))},
				client.UpdateTicketJSONRequestBody{Status: ptr(client.TicketStatusOpen), Priority: ptr(client.TicketPriorityHigh),
					Tags: &[]string{"hardware", "printer"}})
			mustStatus(t, r, err, http.StatusOK)
			tk := r.JSON200
			if tk.Status != client.TicketStatusOpen || tk.Priority != client.TicketPriorityHigh || !slices.Equal(tk.Tags, []string{"hardware", "printer"}) ||
				tk.Version != w.Ticket.Version+1 || tk.CommentCount != 2 || tk.Title != w.Ticket.Title {
				t.Errorf("ticket: got %+v", tk)
			}
			wantETag(t, r.HTTPResponse.Header, tk.Version)
			w.Ticket = *tk
		})

		spec(t, "listTickets/status filter", func(t *testing.T) {
			second := MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "second"})
			r, err := w.Member.C.ListTicketsWithResponse(bg, org, nil)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := ticketIDs(r.JSON200.Items), []string{second.Id, w.Ticket.Id}; !slices.Equal(got, want) {
				t.Errorf("all tickets (newest first): got %v, want %v", got, want)
			}
			for status, want := range map[client.TicketStatus][]string{
				client.TicketStatusOpen: {w.Ticket.Id}, client.TicketStatusNew: {second.Id}, client.TicketStatusClosed: nil} {
				r, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Status: ptr(status)})
				mustStatus(t, r, err, http.StatusOK)
				if got := ticketIDs(r.JSON200.Items); !slices.Equal(got, want) {
					t.Errorf("status=%s: got %v, want %v", status, got, want)
				}
			}
			r, err = w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{
				Expand: &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
			mustStatus(t, r, err, http.StatusOK)
			for _, tk := range r.JSON200.Items {
				if tk.Requester == nil || tk.Requester.UserId != tk.RequesterId {
					t.Errorf("ticket %s: requester not expanded", tk.Id)
				}
				if (tk.AssigneeId != nil) != (tk.Assignee != nil) {
					t.Errorf("ticket %s: assignee expanded %v for assigneeId %v", tk.Id, tk.Assignee != nil, tk.AssigneeId)
				}
			}
		})

		spec(t, "listTeamTickets/status filter", func(t *testing.T) {
			r, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
				t.Errorf("team tickets: got %v, want %v", got, want)
			}
			r, err = w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Status: ptr(client.TicketStatusOpen),
				Expand: &client.TicketExpand{client.TicketExpansionRequester}})
			mustStatus(t, r, err, http.StatusOK)
			if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
				t.Fatalf("status=open: got %v, want %v", got, want)
			}
			if tk := r.JSON200.Items[0]; tk.Requester == nil || tk.Assignee != nil {
				t.Errorf("expand=requester: requester %+v assignee %+v", tk.Requester, tk.Assignee)
			}
			r, err = w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Status: ptr(client.TicketStatusNew)})
			mustStatus(t, r, err, http.StatusOK)
			if got := ticketIDs(r.JSON200.Items); len(got) != 0 {
				t.Errorf("status=new: got %v, want none", got)
			}
		})

		spec(t, "updateTicket/null unassigns and unroutes", func(t *testing.T) {
			body := client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullNullable[string](), TeamId: nullable.NewNullNullable[string]()}
			r, err := w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, body)
			mustStatus(t, r, err, http.StatusOK)
			if r.JSON200.AssigneeId != nil || r.JSON200.TeamId != nil {
				t.Errorf("ticket still assigned/routed: %+v", r.JSON200)
			}
			la, err := w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, nil)
			mustStatus(t, la, err, http.StatusOK)
			if got := ticketIDs(la.JSON200.Items); len(got) != 0 {
				t.Errorf("assigned tickets after unassign: %v", got)
			}
			lt, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, lt, err, http.StatusOK)
			if got := ticketIDs(lt.JSON200.Items); len(got) != 0 {
				t.Errorf("team tickets after unrouting: %v", got)
			}
			// And back: assign and route again.
			body = client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullableWithValue(w.Assignee.ID), TeamId: nullable.NewNullableWithValue(w.Team.Id)}
			r, err = w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, body)
			mustStatus(t, r, err, http.StatusOK)
			if r.JSON200.AssigneeId == nil || *r.JSON200.AssigneeId != w.Assignee.ID || r.JSON200.TeamId == nil || *r.JSON200.TeamId != w.Team.Id {
				t.Errorf("ticket not reassigned: %+v", r.JSON200)
			}
		})
	})
	t.Run("201", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Initech")
		org := w.Org.Id
		spec(t, "createTicket", func(t *testing.T) {
			r, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "VPN down", Description: ptr("since 9am"),
				Priority: ptr(client.TicketPriorityUrgent), TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID, Tags: &[]string{"net", "vpn"}})
			mustStatus(t, r, err, http.StatusCreated)
			tk := r.JSON201
			if tk.Title != "VPN down" || tk.Description != "since 9am" || tk.Priority != client.TicketPriorityUrgent || tk.Status != client.TicketStatusNew ||
				tk.RequesterId != w.Member.ID || tk.AssigneeId == nil || *tk.AssigneeId != w.Assignee.ID || tk.TeamId == nil || *tk.TeamId != w.Team.Id ||
				!slices.Equal(tk.Tags, []string{"net", "vpn"}) || tk.CommentCount != 0 || tk.Version != 1 {
				t.Errorf("ticket: got %+v", tk)
			}
			wantETag(t, r.HTTPResponse.Header, 1)
		})

		spec(t, "createTicket/assigned to oneself", func(t *testing.T) {
			r, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "I'll fix it myself", AssigneeId: &w.Member.ID})
			mustStatus(t, r, err, http.StatusCreated)
			if tk := r.JSON201; tk.RequesterId != w.Member.ID || tk.AssigneeId == nil || *tk.AssigneeId != w.Member.ID {
				t.Errorf("ticket: got %+v", tk)
			}
		})

		spec(t, "createTicket/defaults", func(t *testing.T) {
			r, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "minimal"})
			mustStatus(t, r, err, http.StatusCreated)
			tk := r.JSON201
			if tk.Priority != client.TicketPriorityNormal || tk.Description != "" || tk.Tags == nil || len(tk.Tags) != 0 || tk.AssigneeId != nil || tk.TeamId != nil {
				t.Errorf("ticket: got %+v", tk)
			}
		})

		spec(t, "createComment", func(t *testing.T) {
			r, err := w.Member.C.CreateCommentWithResponse(bg, org, w.Ticket.Id, nil, client.CommentCreate{Body: "me too"})
			mustStatus(t, r, err, http.StatusCreated)
			if c := r.JSON201; c.Body != "me too" || c.AuthorId != w.Member.ID || c.TicketId != w.Ticket.Id || len(c.Id) != 26 {
				t.Errorf("comment: got %+v", c)
			}
			g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
			if got, want := g.JSON200.CommentCount, 1; got != want {
				t.Errorf("commentCount: got %d, want %d", got, want)
			}
		})
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		spec(t, "deleteTicket/by the requester", func(t *testing.T) {
			MustComment(t, w.Requester.C, org, w.Ticket.Id, "never mind")
			r, err := w.Requester.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, &client.DeleteTicketParams{IfMatch: ptr(etagOf(w.Ticket.Version))})
			mustStatus(t, r, err, http.StatusNoContent)
			g, err := w.Owner.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			wantProblem(t, g, err, http.StatusNotFound, "")
			l, err := w.Owner.C.ListCommentsWithResponse(bg, org, w.Ticket.Id, nil)
			if err == nil && l.StatusCode() == http.StatusOK && len(l.JSON200.Items) != 0 {
				t.Errorf("comments of a deleted ticket are still listed: %+v", l.JSON200.Items)
			}
			lt, err := w.Owner.C.ListTicketsWithResponse(bg, org, nil)
			mustStatus(t, lt, err, http.StatusOK)
			if len(lt.JSON200.Items) != 0 {
				t.Errorf("tickets after delete: %v", ticketIDs(lt.JSON200.Items))
			}
		})
	})
	t.Run("400", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Globex")
		org, owner, member := w.Org.Id, w.Owner.C, w.Member.C
		// Unknown and read-only properties are refused, and nothing changes.
		wantRefusedBodies(t, w, []refusedBody{
			{"createTicket/body with requesterId", func(b io.Reader) (statusCoder, error) {
				return member.CreateTicketWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"title":"Sneaky","requesterId":"` + w.Owner.ID + `"}`},
			{"createTicket/body with status", func(b io.Reader) (statusCoder, error) {
				return member.CreateTicketWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"title":"Sneaky","status":"closed"}`},
			{"updateTicket/body with requesterId", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{"title":"Hacked","requesterId":"` + w.Owner.ID + `"}`},
			{"updateTicket/body with version", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{"title":"Hacked","version":42}`},
			{"updateTicket/body with commentCount", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{"title":"Hacked","commentCount":42}`},
			{"createComment/body with authorId", func(b io.Reader) (statusCoder, error) {
				return member.CreateCommentWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{"body":"hi","authorId":"` + w.Owner.ID + `"}`},
			// Not unknown, but invalid all the same.
			{"updateTicket/an empty patch", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{}`},
			{"updateTicket/a bad status", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{"status":"lost"}`},
			{"updateTicket/duplicate tags", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, jsonType, b)
			}, `{"tags":["a","a"]}`},
			{"createTicket/not JSON", func(b io.Reader) (statusCoder, error) {
				return member.CreateTicketWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"title":`},
			{"createTicket/an array", func(b io.Reader) (statusCoder, error) {
				return member.CreateTicketWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `[{"title":"x"}]`},
		})
		// Invalid IDs, and invalid query parameters, never reach DynamoDB.
		overflow := "8" + strings.Repeat("0", 25) // 26 Crockford characters, beyond 128 bits
		wantRefused(t, ts, []refusedRequest{
			{"getTicket/ticketId a#b", func() (statusCoder, error) { return owner.GetTicketWithResponse(bg, org, "a#b", nil) }},
			{"deleteTicket/ticketId a lowercase ULID", func() (statusCoder, error) {
				return owner.DeleteTicketWithResponse(bg, org, strings.ToLower(w.Ticket.Id), nil)
			}},
			{"getTicket/ticketId an overflowing ULID", func() (statusCoder, error) { return owner.GetTicketWithResponse(bg, org, overflow, nil) }},
			{"listUserTickets/userId with a space", func() (statusCoder, error) { return owner.ListUserTicketsWithResponse(bg, org, "a b", nil) }},
			{"createTicket/teamId a#b", func() (statusCoder, error) {
				return member.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", TeamId: ptr("a#b")})
			}},
			{"createTicket/assigneeId a#b", func() (statusCoder, error) {
				return member.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", AssigneeId: ptr("a#b")})
			}},
			{"listTickets/limit=101", func() (statusCoder, error) {
				return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(101)})
			}},
			{"listTickets/status=lost", func() (statusCoder, error) {
				return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Status: ptr(client.TicketStatus("lost"))})
			}},
			{"getTicket/expand=everything", func() (statusCoder, error) {
				return owner.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Expand: &client.TicketExpand{"everything"}})
			}},
		})
		wantInvalidCursors(t, []cursorCase{
			{"listTickets/cursor of another status filter", func(t *testing.T) (statusCoder, error) {
				MustTicket(t, owner, org, client.TicketCreate{Title: "one more"})
				l, err := owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(1), Status: ptr(client.TicketStatusNew)})
				mustStatus(t, l, err, http.StatusOK)
				if l.JSON200.NextCursor == nil {
					t.Fatal("no nextCursor")
				}
				return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Cursor: l.JSON200.NextCursor, Status: ptr(client.TicketStatusOpen)})
			}},
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		org := w.Org.Id
		wantForbidden(t, []forbiddenCase{
			{"updateTicket/member updates someone else's ticket", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.UpdateTicketJSONRequestBody{Title: ptr("Pwned")})
			}, func(t *testing.T) {
				g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
				mustStatus(t, g, err, http.StatusOK)
				if g.JSON200.Title != w.Ticket.Title || g.JSON200.Version != w.Ticket.Version {
					t.Errorf("ticket changed: %+v", g.JSON200)
				}
			}},
			{"deleteTicket/assignee", func(t *testing.T) (statusCoder, error) {
				return w.Assignee.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, nil)
			}, nil},
			{"deleteTicket/team member of the ticket's team", func(t *testing.T) (statusCoder, error) {
				return w.TeamMember.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, nil)
			}, func(t *testing.T) {
				g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
				mustStatus(t, g, err, http.StatusOK)
			}},
		})
	})
	t.Run("404", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Wonka")
		org, c := w.Org.Id, w.Member.C
		unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
		// A listing under a team, ticket or user that does not exist in the
		// org is 404 like the resource itself (an existence read happens
		// only when the page is empty).
		gone := MustTeam(t, w.Owner.C, org, "Gone")
		d, err := w.Owner.C.DeleteTeamWithResponse(bg, org, gone.Id, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		tk := MustTicket(t, c, org, client.TicketCreate{Title: "Gone"})
		dt, err := w.Owner.C.DeleteTicketWithResponse(bg, org, tk.Id, nil)
		mustStatus(t, dt, err, http.StatusNoContent)
		const nobody = "not.a.member"
		wantNotFound(t, []notFoundCase{
			{"getTicket/unknown ticket", "", func() (statusCoder, error) { return c.GetTicketWithResponse(bg, org, unknown, nil) }},
			{"getTicket/unknown ticket with comments", "", func() (statusCoder, error) {
				return c.GetTicketWithResponse(bg, org, unknown, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
			}},
			{"updateTicket/unknown ticket", "", func() (statusCoder, error) {
				return w.Owner.C.UpdateTicketWithResponse(bg, org, unknown, nil, client.UpdateTicketJSONRequestBody{Title: ptr("x")})
			}},
			{"deleteTicket/unknown ticket", "", func() (statusCoder, error) { return w.Owner.C.DeleteTicketWithResponse(bg, org, unknown, nil) }},
			{"createComment/unknown ticket", "", func() (statusCoder, error) {
				return c.CreateCommentWithResponse(bg, org, unknown, nil, client.CommentCreate{Body: "hello?"})
			}},
			{"listTeamTickets/a deleted team", "team_not_found", func() (statusCoder, error) { return c.ListTeamTicketsWithResponse(bg, org, gone.Id, nil) }},
			{"listComments/a deleted ticket", "ticket_not_found", func() (statusCoder, error) { return c.ListCommentsWithResponse(bg, org, tk.Id, nil) }},
			{"listUserTickets/a user not in the org", "user_not_found", func() (statusCoder, error) { return c.ListUserTicketsWithResponse(bg, org, nobody, nil) }},
			{"listUserTickets/a user not in the org, with the user", "user_not_found", func() (statusCoder, error) {
				return c.ListUserTicketsWithResponse(bg, org, nobody, &client.ListUserTicketsParams{Include: ptr(client.ListUserTicketsParamsIncludeUser)})
			}},
			{"listAssignedTickets/a user not in the org", "user_not_found", func() (statusCoder, error) {
				return c.ListAssignedTicketsWithResponse(bg, org, nobody, nil)
			}},
		})
		t.Run("an existing parent with nothing under it is an empty 200", func(t *testing.T) {
			empty := MustTeam(t, w.Owner.C, org, "Empty queue")
			r, err := c.ListTeamTicketsWithResponse(bg, org, empty.Id, nil)
			mustStatus(t, r, err, http.StatusOK)
			a, err := c.ListAssignedTicketsWithResponse(bg, org, w.Member.ID, nil)
			mustStatus(t, a, err, http.StatusOK)
		})
	})
	t.Run("409", func(t *testing.T) {
		g := &gate{}
		ts := MustServer(t, withTransport(g.wrap), withRequestTimeout(time.Minute))
		w := MustWorld(t, ts, "Stark")
		spec(t, "createComment/its Idempotency-Key held by a request still running", func(t *testing.T) {
			hc := ts.HTTPClient(t, w.Member.Token)
			url := ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets/" + w.Ticket.Id + "/comments"
			wantKeyInUse(t, g, "Held comment", func() apiRespE {
				return doReqE(hc, http.MethodPost, url, "", http.Header{"Idempotency-Key": {"held-comment"}}, `{"body":"Held comment"}`)
			})
		})
		org, owner := w.Org.Id, w.Owner.C
		wantConflicts(t, []conflictCase{
			{"createTicket/for an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", TeamId: ptr("01ARZ3NDEKTSV4RRFFQ69G5FAV")})
			}},
			{"createTicket/for an assignee outside the org", "assignee_not_org_member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", AssigneeId: ptr("outsider")})
			}},
			{"updateTicket/reassigned to a user outside the org", "assignee_not_org_member", func(t *testing.T) (statusCoder, error) {
				return w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil,
					client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullableWithValue("outsider")})
			}},
			{"updateTicket/rerouted to an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
				return w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil,
					client.UpdateTicketJSONRequestBody{TeamId: nullable.NewNullableWithValue("01ARZ3NDEKTSV4RRFFQ69G5FAV")})
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
			tk, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, tk, err, http.StatusOK)
			if tk.JSON200.Version != w.Ticket.Version || *tk.JSON200.AssigneeId != w.Assignee.ID || *tk.JSON200.TeamId != w.Team.Id {
				t.Errorf("ticket changed: %+v", tk.JSON200)
			}
		})
	})
	t.Run("412", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Cyberdyne")
		org, owner := w.Org.Id, w.Owner.C
		stale := ptr(etagOf(99))
		wantStale(t, []staleCase{
			{"updateTicket", func() (statusCoder, error) {
				return owner.UpdateTicketWithResponse(bg, org, w.Ticket.Id, &client.UpdateTicketParams{IfMatch: stale}, client.UpdateTicketJSONRequestBody{Title: ptr("x")})
			}},
			{"deleteTicket", func() (statusCoder, error) {
				return owner.DeleteTicketWithResponse(bg, org, w.Ticket.Id, &client.DeleteTicketParams{IfMatch: stale})
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
			tk, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, tk, err, http.StatusOK)
			if tk.JSON200.Version != 1 || tk.JSON200.Title != w.Ticket.Title {
				t.Errorf("ticket changed: %+v", tk.JSON200)
			}
		})
	})
}

// TestDeleteTicketRacingComments: comments posted while their ticket is
// deleted. An acknowledged comment is readable unless its ticket's DELETE
// was acknowledged; a deleted ticket's comments are 404, and none is left
// in the table.
func TestDeleteTicketRacingComments(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Comment race")
	org := w.Org.Id
	hc := raceClient(t, 8)
	type result struct {
		ticket   string
		deleted  bool
		comments []string
	}
	var mu sync.Mutex
	var results []result
	var posts statusCounts
	for round := range 20 {
		tk := MustTicket(t, w.Member.C, org, client.TicketCreate{Title: fmt.Sprintf("Doomed %d", round)})
		res := result{ticket: tk.Id}
		parallel(7, func(i int) {
			if i == 3 {
				r := doReqE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/tickets/"+tk.Id, w.Owner.Token, nil, "")
				if r.Err != nil || (r.Status != http.StatusNoContent) {
					t.Errorf("delete: %v %d %s", r.Err, r.Status, r.Body)
					return
				}
				mu.Lock()
				res.deleted = true
				mu.Unlock()
				return
			}
			r := doReqE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets/"+tk.Id+"/comments", w.Member.Token, nil, `{"body":"racing"}`)
			if r.Err != nil {
				t.Errorf("comment: %v", r.Err)
				return
			}
			posts.add(r.Status)
			switch r.Status {
			case http.StatusCreated:
				var c client.Comment
				decodeJSON(t, r.Body, &c)
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
	if n := len(itemsOf(t, ts, "Comment", org)); n != 0 {
		t.Errorf("%d comments of deleted tickets left", n)
	}
}

// TestTicketFilters: the ticket listing filters by priority and by
// assignee within a status, and sorts oldest first, each on an index (one
// Query, never a page filtered in memory); priority with assignee, which no
// index serves, is a 400 naming both; a cursor continues only its own
// filter and order.
func TestTicketFilters(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Filtered")
	org, c := w.Org.Id, w.Member.C
	mk := func(title string, p client.TicketPriority, assignee *string) string {
		return MustTicket(t, c, org, client.TicketCreate{Title: title, Priority: &p, AssigneeId: assignee}).Id
	}
	urgentA := mk("urgent, assigned", client.TicketPriorityUrgent, &w.Assignee.ID)
	urgent := mk("urgent", client.TicketPriorityUrgent, nil)
	lowA := mk("low, assigned", client.TicketPriorityLow, &w.Assignee.ID)
	r, err := w.Assignee.C.UpdateTicketWithResponse(bg, org, lowA, nil, client.UpdateTicketJSONRequestBody{Status: ptr(client.TicketStatusOpen)})
	mustStatus(t, r, err, http.StatusOK)
	list := func(t *testing.T, q string) []string {
		t.Helper()
		ts.Rec.Reset()
		resp := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?"+q, w.Member.Token, nil, "")
		if resp.Status != http.StatusOK {
			t.Fatalf("?%s: %d %s", q, resp.Status, resp.Body)
		}
		var l client.TicketList
		if err := json.Unmarshal(resp.Body, &l); err != nil {
			t.Fatal(err)
		}
		if got := ts.Rec.Names(); strings.Count(got, "Query") != 1 {
			t.Errorf("?%s: %s, want the authorization read and one Query", q, got)
		}
		return ticketIDs(l.Items)
	}
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"priority=urgent", []string{urgent, urgentA}},
		{"priority=urgent&status=new&order=asc", []string{urgentA, urgent}},
		{"priority=low&status=new", nil},
		{"assigneeId=" + w.Assignee.ID + "&status=open", []string{lowA}},
		{"assigneeId=" + w.Assignee.ID + "&status=new", []string{urgentA, w.Ticket.Id}}, // and the world's ticket
	} {
		if got := list(t, c.q); !slices.Equal(got, c.want) {
			t.Errorf("?%s: %v, want %v", c.q, got, c.want)
		}
	}
	t.Run("order=asc is oldest first", func(t *testing.T) {
		asc, desc := list(t, "order=asc"), list(t, "")
		slices.Reverse(desc)
		if !slices.Equal(asc, desc) {
			t.Errorf("order=asc %v is not newest-first reversed %v", asc, desc)
		}
	})
	spec(t, "400/listTickets/priority with assigneeId", func(t *testing.T) {
		got := problemErrors(t, doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?priority=urgent&assigneeId="+w.Assignee.ID, w.Member.Token, nil, ""))
		if want := []string{"query assigneeId unserved_filter", "query priority unserved_filter"}; !slices.Equal(got, want) {
			t.Errorf("errors %q, want %q", got, want)
		}
	})
	spec(t, "400/listTickets/a cursor of another filter or order", func(t *testing.T) {
		resp := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?limit=1", w.Member.Token, nil, "")
		var l client.TicketList
		if err := json.Unmarshal(resp.Body, &l); err != nil || l.NextCursor == nil {
			t.Fatalf("first page: %v %s", err, resp.Body)
		}
		for _, q := range []string{"order=asc", "priority=urgent"} {
			r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?limit=1&"+q+"&cursor="+url.QueryEscape(*l.NextCursor), w.Member.Token, nil, "")
			if r.Status != http.StatusBadRequest || problemCode(r.Body) != "invalid_cursor" {
				t.Errorf("the default listing's cursor with ?%s: %d %s, want 400 invalid_cursor", q, r.Status, r.Body)
			}
		}
	})
	mustHealthy(t, ts)
}
