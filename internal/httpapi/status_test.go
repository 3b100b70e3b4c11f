package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/httpapi"
)

var bg = context.Background()

// wantETag asserts the ETag header is the quoted version.
// wantETag asserts the ETag names version: "<version>-<digest>".
func wantETag(tb testing.TB, h http.Header, version int64) {
	tb.Helper()
	if got := h.Get("ETag"); !regexp.MustCompile(fmt.Sprintf(`^"%d-[0-9a-f]{16}"$`, version)).MatchString(got) {
		tb.Errorf("ETag: got %q, want \"%d-<digest>\"", got, version)
	}
}

func TestStatus400(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Globex")
	org := w.Org.Id
	owner := w.Owner.C

	// Unknown and read-only properties are refused, and nothing changes.
	type bodyCase struct {
		name string
		do   func(body io.Reader) (statusCoder, error)
		body string
	}
	json := "application/json"
	bodies := []bodyCase{
		{"createOrg/id", func(b io.Reader) (statusCoder, error) { return owner.CreateOrgWithBodyWithResponse(bg, nil, json, b) },
			`{"name":"x","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"updateOrg/orgId", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"name":"Hacked","orgId":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"updateOrg/version", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"name":"Hacked","version":99}`},
		{"addOrgUser/version", func(b io.Reader) (statusCoder, error) {
			return owner.AddOrgUserWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"userId":"sneaky","email":"s@example.com","name":"S","role":"member","version":7}`},
		{"updateOrgUser/userId", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgUserWithBodyWithResponse(bg, org, w.Member.ID, nil, json, b)
		}, `{"name":"Hacked","userId":"someone-else"}`},
		{"createTeam/memberCount", func(b io.Reader) (statusCoder, error) {
			return owner.CreateTeamWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"name":"Sneaky","memberCount":1000}`},
		{"updateTeam/memberCount", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, json, b)
		}, `{"name":"Hacked","memberCount":1000}`},
		{"updateTeam/id", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, json, b)
		}, `{"name":"Hacked","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"putTeamMember/userId", func(b io.Reader) (statusCoder, error) {
			return owner.PutTeamMemberWithBodyWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, json, b)
		}, `{"role":"owner","userId":"someone-else"}`},
		{"createTicket/requesterId", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"title":"Sneaky","requesterId":"` + w.Owner.ID + `"}`},
		{"createTicket/status", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"title":"Sneaky","status":"closed"}`},
		{"updateTicket/requesterId", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"title":"Hacked","requesterId":"` + w.Owner.ID + `"}`},
		{"updateTicket/version", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"title":"Hacked","version":42}`},
		{"updateTicket/commentCount", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"title":"Hacked","commentCount":42}`},
		{"createComment/authorId", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateCommentWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"body":"hi","authorId":"` + w.Owner.ID + `"}`},
		{"createInvitation/orgId", func(b io.Reader) (statusCoder, error) {
			return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"email":"x@example.com","role":"member","orgId":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"createInvitation/token", func(b io.Reader) (statusCoder, error) {
			return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"email":"x@example.com","role":"member","token":"chosen-by-the-client-0123456789"}`},
		{"createInvitation/expiresInDays=31", func(b io.Reader) (statusCoder, error) {
			return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"email":"x@example.com","role":"member","expiresInDays":31}`},
		// Not unknown, but invalid all the same.
		{"updateOrg/empty name", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"name":""}`},
		{"updateTeam/empty patch", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, json, b)
		}, `{}`},
		{"updateTicket/empty patch", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{}`},
		{"updateTicket/bad status", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"status":"lost"}`},
		{"updateTicket/duplicate tags", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"tags":["a","a"]}`},
		{"updateOrgUser/bad email", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgUserWithBodyWithResponse(bg, org, w.Member.ID, nil, json, b)
		}, `{"email":"not an email"}`},
		{"addOrgUser/bad role", func(b io.Reader) (statusCoder, error) {
			return owner.AddOrgUserWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"userId":"x","email":"x@example.com","name":"X","role":"root"}`},
		{"createTicket/not JSON", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"title":`},
		{"createTicket/array", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`[{"title":"x"}]`},
	}
	snapshot := func(t *testing.T) string {
		t.Helper()
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
	for _, c := range bodies {
		t.Run("body/"+c.name, func(t *testing.T) {
			before := snapshot(t)
			r, err := c.do(strings.NewReader(c.body))
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if after := snapshot(t); after != before {
				t.Errorf("a refused request changed data:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// Invalid IDs never reach DynamoDB.
	overflow := "8" + strings.Repeat("0", 25) // 26 Crockford characters, beyond 128 bits
	ids := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"orgId a#b", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, "a#b", nil) }},
		{"orgId lowercase ULID", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, strings.ToLower(org), nil) }},
		{"orgId too short", func() (statusCoder, error) { return owner.ListTeamsWithResponse(bg, org[:25], nil) }},
		{"orgId with I", func() (statusCoder, error) { return owner.ListTeamsWithResponse(bg, "I"+org[1:], nil) }},
		{"orgId overflowing ULID", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, overflow, nil) }},
		{"orgId key injection", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, org+"#USER#x", nil) }},
		{"teamId a#b", func() (statusCoder, error) { return owner.GetTeamWithResponse(bg, org, "a#b", nil) }},
		{"teamId lowercase ULID", func() (statusCoder, error) {
			return owner.GetTeamWithResponse(bg, org, strings.ToLower(w.Team.Id), nil)
		}},
		{"teamId overflowing ULID", func() (statusCoder, error) { return owner.GetTeamWithResponse(bg, org, overflow, nil) }},
		{"ticketId a#b", func() (statusCoder, error) { return owner.GetTicketWithResponse(bg, org, "a#b", nil) }},
		{"ticketId lowercase ULID", func() (statusCoder, error) {
			return owner.DeleteTicketWithResponse(bg, org, strings.ToLower(w.Ticket.Id), nil)
		}},
		{"ticketId overflowing ULID", func() (statusCoder, error) { return owner.GetTicketWithResponse(bg, org, overflow, nil) }},
		{"userId a#b", func() (statusCoder, error) { return owner.GetOrgUserWithResponse(bg, org, "a#b", nil) }},
		{"userId 129 chars", func() (statusCoder, error) {
			return owner.GetOrgUserWithResponse(bg, org, strings.Repeat("u", 129), nil)
		}},
		{"userId 129 chars in team member", func() (statusCoder, error) {
			return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, strings.Repeat("u", 129), nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"userId with space", func() (statusCoder, error) { return owner.ListUserTicketsWithResponse(bg, org, "a b", nil) }},
		{"userId with slash", func() (statusCoder, error) { return owner.RemoveOrgUserWithResponse(bg, org, "a/b", nil) }},
		{"invitationId lowercase ULID", func() (statusCoder, error) {
			return owner.RevokeInvitationWithResponse(bg, org, strings.ToLower(w.Team.Id))
		}},
		{"invitationId a#b", func() (statusCoder, error) { return owner.RevokeInvitationWithResponse(bg, org, "a#b") }},
		{"invitation token too short", func() (statusCoder, error) { return owner.AcceptInvitationWithResponse(bg, "short", nil) }},
		{"invitation token with #", func() (statusCoder, error) {
			return owner.AcceptInvitationWithResponse(bg, org+"."+org+"#"+strings.Repeat("x", 43), nil)
		}},
		{"teamId in createInvitation body", func() (statusCoder, error) {
			return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "x@example.com", Role: client.RoleMember, TeamIds: &[]string{"a#b"}})
		}},
		{"teamId in createTicket body", func() (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", TeamId: ptr("a#b")})
		}},
		{"assigneeId in createTicket body", func() (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", AssigneeId: ptr("a#b")})
		}},
	}
	for _, c := range ids {
		t.Run("ids/"+c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do()
			if err != nil {
				t.Fatal(err)
			}
			// An ID with a '/' cannot route: 404 is the router's answer.
			if got := r.StatusCode(); got != http.StatusBadRequest && !(got == http.StatusNotFound && strings.Contains(c.name, "slash")) {
				t.Errorf("status: got %d, want 400: %s", got, r.GetBody())
			}
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}

	// limit and other query parameters.
	for _, c := range []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"limit=0", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: ptr(0)})
		}},
		{"limit=101", func() (statusCoder, error) {
			return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(101)})
		}},
		{"limit=-1", func() (statusCoder, error) {
			return owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(-1)})
		}},
		{"status=lost", func() (statusCoder, error) {
			return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Status: ptr(client.TicketStatus("lost"))})
		}},
		{"expand=everything", func() (statusCoder, error) {
			return owner.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Expand: &client.TicketExpand{"everything"}})
		}},
		{"include=secrets", func() (statusCoder, error) {
			return owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsInclude("secrets"))})
		}},
		{"cursor too long", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(strings.Repeat("a", 2049))})
		}},
	} {
		t.Run("query/"+c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do()
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}

	t.Run("createOrg/token without email", func(t *testing.T) {
		c := ts.Client(t, ts.Token(t, ts.UniqueID("noemail"), "", "No Email"))
		r, err := c.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "x"})
		wantProblem(t, r, err, http.StatusBadRequest, "email_claim_required")
	})

	// Cursors: tampered, from another org, from another listing, expired.
	for range 3 {
		MustTeam(t, owner, org, ts.UniqueID("team"))
	}
	first, err := owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: ptr(1)})
	mustStatus(t, first, err, http.StatusOK)
	if first.JSON200.NextCursor == nil {
		t.Fatal("no nextCursor with limit=1")
	}
	cursor := *first.JSON200.NextCursor
	other := MustOrg(t, owner, "Globex Two")
	for range 2 {
		MustTeam(t, owner, other.Id, ts.UniqueID("team"))
	}
	for _, c := range []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"tampered signature", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(flipLast(cursor))})
		}},
		{"tampered payload", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(tamperPayload(t, cursor))})
		}},
		{"garbage", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr("not-a-cursor")})
		}},
		{"from another org", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, other.Id, &client.ListTeamsParams{Cursor: &cursor})
		}},
		{"from another listing", func() (statusCoder, error) {
			return owner.ListOrgUsersWithResponse(bg, org, &client.ListOrgUsersParams{Cursor: &cursor})
		}},
		{"from another status filter", func() (statusCoder, error) {
			MustTicket(t, owner, org, client.TicketCreate{Title: "one more"})
			l, err := owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(1), Status: ptr(client.TicketStatusNew)})
			mustStatus(t, l, err, http.StatusOK)
			if l.JSON200.NextCursor == nil {
				t.Fatal("no nextCursor")
			}
			return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Cursor: l.JSON200.NextCursor, Status: ptr(client.TicketStatusOpen)})
		}},
		{"from another team", func() (statusCoder, error) {
			tm := MustTeam(t, owner, org, ts.UniqueID("team"))
			for _, a := range []actor{w.Admin, w.Member} {
				MustMember(t, owner, org, tm.Id, a.ID, client.RoleMember)
			}
			l, err := owner.ListTeamMembersWithResponse(bg, org, tm.Id, &client.ListTeamMembersParams{Limit: ptr(1)})
			mustStatus(t, l, err, http.StatusOK)
			if l.JSON200.NextCursor == nil {
				t.Fatal("no nextCursor")
			}
			return owner.ListTeamMembersWithResponse(bg, org, w.Team.Id, &client.ListTeamMembersParams{Cursor: l.JSON200.NextCursor})
		}},
		{"from another user (listOrgs)", func() (statusCoder, error) {
			l, err := owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(1)})
			mustStatus(t, l, err, http.StatusOK)
			if l.JSON200.NextCursor == nil {
				t.Fatal("no nextCursor")
			}
			return w.Admin.C.ListOrgsWithResponse(bg, &client.ListOrgsParams{Cursor: l.JSON200.NextCursor})
		}},
		{"expired", func() (statusCoder, error) {
			ts.Clock.Advance(25 * time.Hour)
			c := ts.Client(t, ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name))
			return c.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: &cursor})
		}},
	} {
		t.Run("cursor/"+c.name, func(t *testing.T) {
			r, err := c.do()
			wantProblem(t, r, err, http.StatusBadRequest, "invalid_cursor")
		})
	}
}

func flipLast(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}

// tamperPayload rewrites the cursor's payload (keeping its signature).
func tamperPayload(t *testing.T, cursor string) string {
	t.Helper()
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return "x" + cursor
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "x" + cursor
	}
	b = bytes.Replace(b, []byte(`"e":`), []byte(`"e":9`), 1) // a later expiry
	return base64.RawURLEncoding.EncodeToString(b) + "." + sig
}

func TestStatus401(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Hooli")
	now := ts.Clock.Now()
	claims := func(sub string, iat, exp time.Time) httpapi.Claims {
		return httpapi.Claims{Email: "x@example.com", RegisteredClaims: jwt.RegisteredClaims{Subject: sub,
			IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp)}}
	}
	algNone, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(w.Owner.ID, now, now.Add(time.Hour))).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret, err := httpapi.MintHS256("another-secret-another-secret-another-secret", claims(w.Owner.ID, now, now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	hs384, err := jwt.NewWithClaims(jwt.SigningMethodHS384, claims(w.Owner.ID, now, now.Add(time.Hour))).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	valid := ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name)
	cases := []struct{ name, header string }{
		{"missing", ""},
		{"garbage", "Bearer garbage"},
		{"not bearer", "Basic " + base64.StdEncoding.EncodeToString([]byte("owner:pw"))},
		{"bearer without token", "Bearer "},
		{"token without scheme", valid},
		{"expired", "Bearer " + ts.mint(t, claims(w.Owner.ID, now.Add(-3*time.Hour), now.Add(-2*time.Hour)))},
		{"no exp", "Bearer " + ts.mint(t, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: w.Owner.ID, IssuedAt: jwt.NewNumericDate(now)}})},
		{"issued in the future", "Bearer " + ts.mint(t, claims(w.Owner.ID, now.Add(time.Hour), now.Add(2*time.Hour)))},
		{"alg none", "Bearer " + algNone},
		{"wrong secret", "Bearer " + wrongSecret},
		{"HS384", "Bearer " + hs384},
		{"tampered payload", "Bearer " + tamperJWT(t, valid)},
		{"invalid sub", "Bearer " + ts.mint(t, claims("a#b", now, now.Add(time.Hour)))},
		{"empty sub", "Bearer " + ts.mint(t, claims("", now, now.Add(time.Hour)))},
	}
	hc := ts.HTTPClient(t, "")
	reqs := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/me", ""},
		{http.MethodGet, "/v1/orgs", ""},
		{http.MethodPost, "/v1/orgs", `{"name":"x"}`},
		{http.MethodGet, "/v1/orgs/" + w.Org.Id, ""},
		{http.MethodDelete, "/v1/orgs/" + w.Org.Id, ""},
		{http.MethodPatch, "/v1/orgs/" + w.Org.Id + "/tickets/" + w.Ticket.Id, `{"title":"x"}`},
		{http.MethodGet, "/v1/orgs/" + w.Org.Id + "/teams/" + w.Team.Id + "/members/" + w.TeamAdmin.ID, ""},
		{http.MethodPost, "/v1/invitations/" + MustInvitation(t, w.Owner.C, w.Org.Id, "unauthenticated@example.com", client.RoleMember).Token + "/accept", ""},
		{http.MethodGet, "/v1/orgs/" + w.Org.Id + "/audit-log", ""},
	}
	for _, c := range cases {
		for _, rq := range reqs {
			t.Run(c.name+"/"+rq.method+" "+rq.path, func(t *testing.T) {
				var body io.Reader
				if rq.body != "" {
					body = strings.NewReader(rq.body)
				}
				req, err := http.NewRequest(rq.method, ts.URL+rq.path, body)
				if err != nil {
					t.Fatal(err)
				}
				if rq.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if c.header != "" {
					req.Header.Set("Authorization", c.header)
				}
				ts.Rec.Reset()
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				if got, want := resp.StatusCode, http.StatusUnauthorized; got != want {
					t.Fatalf("status: got %d, want %d: %s", got, want, b)
				}
				if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", got)
				}
				if got, want := problemOf(t, b).Code, "invalid_token"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if got := ts.Rec.Count(); got != 0 {
					t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
				}
			})
		}
	}
	t.Run("generated client without token", func(t *testing.T) {
		r, err := ts.Client(t, "").GetMeWithResponse(bg)
		wantProblem(t, r, err, http.StatusUnauthorized, "invalid_token")
		if r.Headers401 == nil || !strings.HasPrefix(r.Headers401.WWWAuthenticate, "Bearer") {
			t.Errorf("WWW-Authenticate: got %+v", r.Headers401)
		}
	})
	t.Run("token within leeway", func(t *testing.T) {
		tok := ts.mint(t, claims(w.Owner.ID, now.Add(-time.Hour), ts.Clock.Now().Add(-10*time.Second)))
		r, err := ts.Client(t, tok).GetMeWithResponse(bg)
		mustStatus(t, r, err, http.StatusOK)
	})
}

// tamperJWT changes the payload's subject while keeping the signature.
func tamperJWT(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["sub"] = "someone-else"
	b, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func TestStatus403(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Vandelay")
	org := w.Org.Id
	newcomer := func(t *testing.T) actor { t.Helper(); return ts.Actor(t, "newcomer") }
	cases := []struct {
		name string
		do   func(t *testing.T) (statusCoder, error)
		// unchanged re-reads what the request must not have changed.
		check func(t *testing.T)
	}{
		{"member PATCHes org", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Pwned"})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetOrgWithResponse(bg, org, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Name != w.Org.Name || g.JSON200.Version != w.Org.Version {
				t.Errorf("org changed: %+v", g.JSON200)
			}
		}},
		{"team owner PATCHes org", func(t *testing.T) (statusCoder, error) {
			return w.TeamOwner.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Pwned"})
		}, nil},
		{"admin deletes org", func(t *testing.T) (statusCoder, error) { return w.Admin.C.DeleteOrgWithResponse(bg, org, nil) }, nil},
		{"member creates team", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Rogue"})
		}, func(t *testing.T) {
			l, err := w.Member.C.ListTeamsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 1 {
				t.Errorf("teams: %d, want 1", len(l.JSON200.Items))
			}
		}},
		{"team owner creates team", func(t *testing.T) (statusCoder, error) {
			return w.TeamOwner.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Rogue"})
		}, nil},
		{"admin grants owner (add)", func(t *testing.T) (statusCoder, error) {
			a := newcomer(t)
			return w.Admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleOwner})
		}, nil},
		{"admin grants owner (update)", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Member.ID, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Role != client.RoleMember || g.JSON200.Version != 1 {
				t.Errorf("member changed: %+v", g.JSON200)
			}
		}},
		{"admin grants owner to themself", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
		}, nil},
		{"admin demotes owner", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleMember)})
		}, nil},
		{"admin removes owner", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.RemoveOrgUserWithResponse(bg, org, w.Owner.ID, nil)
		}, func(t *testing.T) {
			g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Owner.ID, nil)
			mustStatus(t, g, err, http.StatusOK)
		}},
		{"member adds user", func(t *testing.T) (statusCoder, error) {
			a := newcomer(t)
			return w.Member.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleMember})
		}, nil},
		{"member promotes themself", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		}, nil},
		{"member removes another member", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.RemoveOrgUserWithResponse(bg, org, w.Requester.ID, nil)
		}, nil},
		{"team member renames team", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Name: ptr("Pwned")})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Name != w.Team.Name || g.JSON200.Version != w.Team.Version {
				t.Errorf("team changed: %+v", g.JSON200)
			}
		}},
		{"team member adds a member", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
			wantProblem(t, g, err, http.StatusNotFound, "")
		}},
		{"team member promotes themself", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
		}, nil},
		{"org member deletes team", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.DeleteTeamWithResponse(bg, org, w.Team.Id, nil)
		}, nil},
		{"org member removes a team member", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil)
		}, nil},
		{"member invites", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "friend@example.com", Role: client.RoleMember})
		}, func(t *testing.T) {
			l, err := w.Owner.C.ListInvitationsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 0 {
				t.Errorf("invitations: %+v", l.JSON200.Items)
			}
		}},
		{"admin invites an owner", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner})
		}, nil},
		{"member lists invitations", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.ListInvitationsWithResponse(bg, org, nil)
		}, nil},
		{"team owner revokes an invitation", func(t *testing.T) (statusCoder, error) {
			inv := MustInvitation(t, w.Owner.C, org, "kept@example.com", client.RoleMember)
			return w.TeamOwner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		}, func(t *testing.T) {
			l, err := w.Owner.C.ListInvitationsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 1 {
				t.Errorf("invitations: %+v", l.JSON200.Items)
			}
		}},
		{"member reads the audit log", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.ListAuditEventsWithResponse(bg, org, nil)
		}, nil},
		{"member updates someone else's ticket", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.UpdateTicketJSONRequestBody{Title: ptr("Pwned")})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Title != w.Ticket.Title || g.JSON200.Version != w.Ticket.Version {
				t.Errorf("ticket changed: %+v", g.JSON200)
			}
		}},
		{"assignee deletes ticket", func(t *testing.T) (statusCoder, error) {
			return w.Assignee.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, nil)
		}, nil},
		{"team member deletes ticket of their team", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, nil)
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusForbidden, "forbidden")
			if c.check != nil {
				c.check(t)
			}
		})
	}
}

func TestStatus404(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Wonka")
	org, c := w.Org.Id, w.Member.C
	unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	stranger := ts.Actor(t, "stranger")
	cases := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"unknown org", func() (statusCoder, error) { return c.GetOrgWithResponse(bg, unknown, nil) }},
		{"org of which the caller is not a member", func() (statusCoder, error) { return stranger.C.GetOrgWithResponse(bg, org, nil) }},
		{"unknown org user", func() (statusCoder, error) { return c.GetOrgUserWithResponse(bg, org, "nobody", nil) }},
		{"update unknown org user", func() (statusCoder, error) {
			return w.Owner.C.UpdateOrgUserWithResponse(bg, org, "nobody", nil, client.OrgUserUpdate{Name: ptr("x")})
		}},
		{"remove unknown org user", func() (statusCoder, error) { return w.Owner.C.RemoveOrgUserWithResponse(bg, org, "nobody", nil) }},
		{"unknown team", func() (statusCoder, error) { return c.GetTeamWithResponse(bg, org, unknown, nil) }},
		{"unknown team with members", func() (statusCoder, error) {
			return c.GetTeamWithResponse(bg, org, unknown, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		}},
		{"update unknown team", func() (statusCoder, error) {
			return w.Owner.C.UpdateTeamWithResponse(bg, org, unknown, nil, client.TeamUpdate{Name: ptr("x")})
		}},
		{"delete unknown team", func() (statusCoder, error) { return w.Owner.C.DeleteTeamWithResponse(bg, org, unknown, nil) }},
		{"team member who is not in the team", func() (statusCoder, error) {
			return c.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
		}},
		{"put member into unknown team", func() (statusCoder, error) {
			return w.Owner.C.PutTeamMemberWithResponse(bg, org, unknown, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"remove non-member from team", func() (statusCoder, error) {
			return w.Owner.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
		}},
		{"unknown ticket", func() (statusCoder, error) { return c.GetTicketWithResponse(bg, org, unknown, nil) }},
		{"unknown ticket with comments", func() (statusCoder, error) {
			return c.GetTicketWithResponse(bg, org, unknown, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
		}},
		{"update unknown ticket", func() (statusCoder, error) {
			return w.Owner.C.UpdateTicketWithResponse(bg, org, unknown, nil, client.UpdateTicketJSONRequestBody{Title: ptr("x")})
		}},
		{"delete unknown ticket", func() (statusCoder, error) { return w.Owner.C.DeleteTicketWithResponse(bg, org, unknown, nil) }},
		{"comment on unknown ticket", func() (statusCoder, error) {
			return c.CreateCommentWithResponse(bg, org, unknown, nil, client.CommentCreate{Body: "hello?"})
		}},
		{"revoke unknown invitation", func() (statusCoder, error) { return w.Owner.C.RevokeInvitationWithResponse(bg, org, unknown) }},
		{"accept unknown token", func() (statusCoder, error) {
			return stranger.C.AcceptInvitationWithResponse(bg, org+"."+unknown+"."+strings.Repeat("x", 43), nil)
		}},
		{"accept a token with a wrong secret", func() (statusCoder, error) {
			inv := MustInvitation(t, w.Owner.C, org, "guessed@example.com", client.RoleMember)
			parts := strings.Split(inv.Token, ".")
			return stranger.C.AcceptInvitationWithResponse(bg, parts[0]+"."+parts[1]+"."+flipLast(parts[2]), nil)
		}},
		{"accept twice", func() (statusCoder, error) {
			inv := MustInvitation(t, w.Owner.C, org, "twice@example.com", client.RoleMember)
			r, err := ts.Invitee(t, "first", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, r, err, http.StatusCreated)
			return ts.Invitee(t, "second", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
		{"accept a replaced invitation", func() (statusCoder, error) {
			old := MustInvitation(t, w.Owner.C, org, "replaced@example.com", client.RoleMember)
			MustInvitation(t, w.Owner.C, org, "replaced@example.com", client.RoleAdmin)
			return stranger.C.AcceptInvitationWithResponse(bg, old.Token, nil)
		}},
		{"accept an invitation to a deleted org", func() (statusCoder, error) {
			o := MustOrg(t, stranger.C, "Vanishing")
			inv := MustInvitation(t, stranger.C, o.Id, "vanishing@example.com", client.RoleMember)
			d, err := stranger.C.DeleteOrgWithResponse(bg, o.Id, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			return ts.Invitee(t, "latecomer", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
		{"orgs of a deleted org", func() (statusCoder, error) {
			o := MustOrg(t, stranger.C, "Short-lived")
			d, err := stranger.C.DeleteOrgWithResponse(bg, o.Id, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			return stranger.C.ListTeamsWithResponse(bg, o.Id, nil)
		}},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			r, err := cs.do()
			wantProblem(t, r, err, http.StatusNotFound, "")
		})
	}
	t.Run("unknown org and non-member org look the same", func(t *testing.T) {
		a, err := stranger.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, a, err, http.StatusNotFound)
		b, err := stranger.C.GetOrgWithResponse(bg, unknown, nil)
		mustStatus(t, b, err, http.StatusNotFound)
		pa, pb := problemOf(t, a.Body), problemOf(t, b.Body)
		if pa.Code != pb.Code || pa.Detail != pb.Detail || pa.Title != pb.Title || pa.Type != pb.Type {
			t.Errorf("distinguishable 404s:\n%+v\n%+v", pa, pb)
		}
	})
	t.Run("unrouted path", func(t *testing.T) {
		resp, err := w.Member.HTTP.Get(ts.URL + "/v1/nothing-here")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusNotFound; got != want {
			t.Errorf("status: got %d, want %d", got, want)
		}
	})
	t.Run("accept an expired invitation", func(t *testing.T) {
		inv := MustInvitation(t, w.Owner.C, org, "expired@example.com", client.RoleMember)
		ts.Clock.Advance(8 * 24 * time.Hour)
		late := ts.Invitee(t, "late", inv.Email) // a token minted after the jump
		r, err := late.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
	})
}

func TestStatus409(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Stark")
	org := w.Org.Id
	owner := w.Owner.C
	cases := []struct {
		name, code string
		do         func(t *testing.T) (statusCoder, error)
	}{
		{"last owner demotes themself", "last_owner", func(t *testing.T) (statusCoder, error) {
			return owner.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		}},
		{"last owner leaves", "last_owner", func(t *testing.T) (statusCoder, error) {
			return owner.RemoveOrgUserWithResponse(bg, org, w.Owner.ID, nil)
		}},
		{"duplicate email on add", "email_taken", func(t *testing.T) (statusCoder, error) {
			a := ts.Actor(t, "dup")
			return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: w.Member.Email, Name: a.Name, Role: client.RoleMember})
		}},
		{"duplicate email on add, other case", "email_taken", func(t *testing.T) (statusCoder, error) {
			a := ts.Actor(t, "dup")
			return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: strings.ToUpper(w.Member.Email), Name: a.Name, Role: client.RoleMember})
		}},
		{"duplicate email on update", "email_taken", func(t *testing.T) (statusCoder, error) {
			return owner.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Email: &w.Member.Email})
		}},
		{"user already in org", "user_exists", func(t *testing.T) (statusCoder, error) {
			return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: w.Member.ID, Email: "other-" + w.Member.Email, Name: "x", Role: client.RoleMember})
		}},
		{"team member who is not in the org", "not_org_member", func(t *testing.T) (statusCoder, error) {
			return w.TeamAdmin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, "outsider", nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"ticket for an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", TeamId: ptr("01ARZ3NDEKTSV4RRFFQ69G5FAV")})
		}},
		{"ticket for an assignee outside the org", "assignee_not_org_member", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", AssigneeId: ptr("outsider")})
		}},
		{"reassign to a user outside the org", "assignee_not_org_member", func(t *testing.T) (statusCoder, error) {
			return w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil,
				client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullableWithValue("outsider")})
		}},
		{"reroute to an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
			return w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil,
				client.UpdateTicketJSONRequestBody{TeamId: nullable.NewNullableWithValue("01ARZ3NDEKTSV4RRFFQ69G5FAV")})
		}},
		{"invitation for a user's email", "email_taken", func(t *testing.T) (statusCoder, error) {
			return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: w.Member.Email, Role: client.RoleMember})
		}},
		{"invitation to an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
			return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "teamless@example.com", Role: client.RoleMember,
				TeamIds: &[]string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
		}},
		{"accepting while already a user", "user_exists", func(t *testing.T) (statusCoder, error) {
			// A user of the org whose org email is not their token's: the
			// invitation to their token's email is theirs, but they are in.
			joined := ts.Invitee(t, "joined", "already@example.com")
			inOrg := joined
			inOrg.Email = "already-in-org@example.com"
			MustUser(t, owner, org, inOrg, client.RoleMember)
			inv := MustInvitation(t, owner, org, "already@example.com", client.RoleMember)
			return joined.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
		{"accepting an email taken meanwhile", "email_taken", func(t *testing.T) (statusCoder, error) {
			inv := MustInvitation(t, owner, org, "contested@example.com", client.RoleMember)
			first := ts.Actor(t, "first")
			first.Email = "contested@example.com"
			MustUser(t, owner, org, first, client.RoleMember)
			return ts.Invitee(t, "second", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusConflict, c.code)
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := owner.GetOrgUserWithResponse(bg, org, w.Owner.ID, nil)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Role != client.RoleOwner || g.JSON200.Version != 1 {
			t.Errorf("owner changed: %+v", g.JSON200)
		}
		a, err := owner.GetOrgUserWithResponse(bg, org, w.Admin.ID, nil)
		mustStatus(t, a, err, http.StatusOK)
		if a.JSON200.Email != w.Admin.Email || a.JSON200.Version != 1 {
			t.Errorf("admin changed: %+v", a.JSON200)
		}
		tk, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, tk, err, http.StatusOK)
		if tk.JSON200.Version != w.Ticket.Version || *tk.JSON200.AssigneeId != w.Assignee.ID || *tk.JSON200.TeamId != w.Team.Id {
			t.Errorf("ticket changed: %+v", tk.JSON200)
		}
		tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if tm.JSON200.MemberCount != 4 {
			t.Errorf("memberCount: %d, want 4", tm.JSON200.MemberCount)
		}
	})
	t.Run("with two owners the first may step down", func(t *testing.T) {
		MustUser(t, owner, org, ts.Actor(t, "second-owner"), client.RoleOwner)
		r, err := owner.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		mustStatus(t, r, err, http.StatusOK)
	})
}

func TestStatus412(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Cyberdyne")
	org, owner := w.Org.Id, w.Owner.C
	stale := ptr(etagOf(99))
	cases := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"updateOrg", func() (statusCoder, error) {
			return owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: stale}, client.OrgUpdate{Name: "x"})
		}},
		{"updateOrg/not a version", func() (statusCoder, error) {
			return owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(`"abc"`)}, client.OrgUpdate{Name: "x"})
		}},
		{"deleteOrg", func() (statusCoder, error) {
			return owner.DeleteOrgWithResponse(bg, org, &client.DeleteOrgParams{IfMatch: stale})
		}},
		{"updateOrgUser", func() (statusCoder, error) {
			return owner.UpdateOrgUserWithResponse(bg, org, w.Member.ID, &client.UpdateOrgUserParams{IfMatch: stale}, client.OrgUserUpdate{Name: ptr("x")})
		}},
		{"removeOrgUser", func() (statusCoder, error) {
			return owner.RemoveOrgUserWithResponse(bg, org, w.Member.ID, &client.RemoveOrgUserParams{IfMatch: stale})
		}},
		{"updateTeam", func() (statusCoder, error) {
			return owner.UpdateTeamWithResponse(bg, org, w.Team.Id, &client.UpdateTeamParams{IfMatch: stale}, client.TeamUpdate{Name: ptr("x")})
		}},
		{"deleteTeam", func() (statusCoder, error) {
			return owner.DeleteTeamWithResponse(bg, org, w.Team.Id, &client.DeleteTeamParams{IfMatch: stale})
		}},
		{"putTeamMember/existing", func() (statusCoder, error) {
			return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.PutTeamMemberParams{IfMatch: stale}, client.TeamMemberPut{Role: client.RoleAdmin})
		}},
		{"putTeamMember/new", func() (statusCoder, error) {
			return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, &client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))}, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"removeTeamMember", func() (statusCoder, error) {
			return owner.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.RemoveTeamMemberParams{IfMatch: stale})
		}},
		{"updateTicket", func() (statusCoder, error) {
			return owner.UpdateTicketWithResponse(bg, org, w.Ticket.Id, &client.UpdateTicketParams{IfMatch: stale}, client.UpdateTicketJSONRequestBody{Title: ptr("x")})
		}},
		{"deleteTicket", func() (statusCoder, error) {
			return owner.DeleteTicketWithResponse(bg, org, w.Ticket.Id, &client.DeleteTicketParams{IfMatch: stale})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.do()
			wantProblem(t, r, err, http.StatusPreconditionFailed, "version_mismatch")
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Version != 1 || g.JSON200.Name != w.Org.Name || len(*g.JSON200.Users) != 8 {
			t.Errorf("org changed: %+v", g.JSON200)
		}
		for _, u := range *g.JSON200.Users {
			if u.Version != 1 {
				t.Errorf("user %s changed: %+v", u.UserId, u)
			}
		}
		tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		mustStatus(t, tm, err, http.StatusOK)
		if tm.JSON200.Version != 1 || tm.JSON200.MemberCount != 4 || len(*tm.JSON200.Members) != 4 {
			t.Errorf("team changed: %+v", tm.JSON200)
		}
		for _, m := range *tm.JSON200.Members {
			if m.UserId == w.TeamMember.ID && m.Role != client.RoleMember {
				t.Errorf("team member's role changed: %+v", m)
			}
		}
		tk, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, tk, err, http.StatusOK)
		if tk.JSON200.Version != 1 || tk.JSON200.Title != w.Ticket.Title {
			t.Errorf("ticket changed: %+v", tk.JSON200)
		}
	})
	t.Run("lost update", func(t *testing.T) {
		g, err := w.Admin.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
		tag := g.HTTPResponse.Header.Get("ETag")
		r, err := owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: &tag}, client.OrgUpdate{Name: "First"})
		mustStatus(t, r, err, http.StatusOK)
		r, err = w.Admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: &tag}, client.OrgUpdate{Name: "Second"})
		wantProblem(t, r, err, http.StatusPreconditionFailed, "version_mismatch")
		g, err = w.Admin.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Name != "First" {
			t.Errorf("name: got %q, want First", g.JSON200.Name)
		}
	})
}

func TestStatus413(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Massive")
	org := w.Org.Id
	big := func() string { return `{"title":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}` }
	cases := []struct {
		name string
		do   func(body io.Reader) (statusCoder, error)
	}{
		{"createOrg", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.CreateOrgWithBodyWithResponse(bg, nil, "application/json", b)
		}},
		{"updateOrg", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.UpdateOrgWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
		{"addOrgUser", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.AddOrgUserWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
		{"createTicket", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
		{"updateTicket", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, "application/json", b)
		}},
		{"createComment", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateCommentWithBodyWithResponse(bg, org, w.Ticket.Id, nil, "application/json", b)
		}},
		{"createInvitation", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.CreateInvitationWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
	}
	for _, c := range cases {
		t.Run(c.name+"/Content-Length", func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do(strings.NewReader(big()))
			wantProblem(t, r, err, http.StatusRequestEntityTooLarge, "body_too_large")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
		t.Run(c.name+"/chunked", func(t *testing.T) {
			ts.Rec.Reset()
			// A reader of unknown length: the request is sent chunked, with
			// no Content-Length for the server to check up front.
			r, err := c.do(io.MultiReader(strings.NewReader(big())))
			wantProblem(t, r, err, http.StatusRequestEntityTooLarge, "body_too_large")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := w.Owner.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Version != 1 || g.JSON200.CommentCount != 0 {
			t.Errorf("ticket changed: %+v", g.JSON200)
		}
	})
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
