package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/org"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/team"
	"github.com/tenantd/tenantd/internal/ticket"
)

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ifMatch parses an If-Match header into a version (0 = absent or "*").
// A value that names no version can match nothing: 412.
func ifMatch(h *string) (int64, error) {
	if h == nil {
		return 0, nil
	}
	s := strings.TrimSpace(*h)
	if s == "" || s == "*" {
		return 0, nil
	}
	s = strings.TrimPrefix(s, "W/")
	s = strings.Trim(s, `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, errs.ErrVersion
	}
	return v, nil
}

func pageReq(limit *int, cursor *string) page.Request {
	var p page.Request
	if limit != nil {
		p.Limit = *limit
	}
	if cursor != nil {
		p.After = *cursor
	}
	return p
}

// link builds the RFC 8288 Link header for the next page, or nil.
func link(ctx context.Context, next string) *string {
	if next == "" {
		return nil
	}
	u := *requestURL(ctx)
	q := u.Query()
	q.Set("cursor", next)
	u.RawQuery = q.Encode()
	s := fmt.Sprintf(`<%s>; rel="next"`, (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String())
	return &s
}

func nextPtr(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toOrg(o org.Org) oapi.Org {
	return oapi.Org{Id: o.ID, Name: o.Name, Version: o.Version, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func toOrgUser(u org.User) oapi.OrgUser {
	return oapi.OrgUser{UserId: u.UserID, Email: u.Email, Name: u.Name, Role: oapi.Role(u.Role), JoinedAt: u.JoinedAt, Version: u.Version}
}

func toOrgUsers(us []org.User) []oapi.OrgUser {
	out := make([]oapi.OrgUser, len(us))
	for i, u := range us {
		out[i] = toOrgUser(u)
	}
	return out
}

func toTeam(t team.Team) oapi.Team {
	return oapi.Team{Id: t.ID, Name: t.Name, Description: t.Description, MemberCount: t.MemberCount,
		Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func toMembership(m team.Member) oapi.Membership {
	return oapi.Membership{TeamId: m.TeamID, UserId: m.UserID, Role: oapi.Role(m.Role), JoinedAt: m.JoinedAt, TeamName: strPtr(m.TeamName)}
}

func toMemberships(ms []team.Member) []oapi.Membership {
	out := make([]oapi.Membership, len(ms))
	for i, m := range ms {
		out[i] = toMembership(m)
	}
	return out
}

func toTicket(t ticket.Ticket) oapi.Ticket {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	return oapi.Ticket{Id: t.ID, Title: t.Title, Description: t.Description, Status: oapi.TicketStatus(t.Status),
		Priority: oapi.TicketPriority(t.Priority), RequesterId: t.RequesterID, AssigneeId: strPtr(t.AssigneeID),
		TeamId: strPtr(t.TeamID), Tags: tags, CommentCount: t.CommentCount, Version: t.Version,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func toComment(c ticket.Comment) oapi.Comment {
	return oapi.Comment{Id: c.ID, TicketId: c.TicketID, AuthorId: c.AuthorID, Body: c.Body, CreatedAt: c.CreatedAt}
}

func toComments(cs []ticket.Comment) []oapi.Comment {
	out := make([]oapi.Comment, len(cs))
	for i, c := range cs {
		out[i] = toComment(c)
	}
	return out
}

func roleOf(r oapi.Role) authz.Role { return authz.Role(r) }
