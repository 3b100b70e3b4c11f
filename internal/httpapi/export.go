package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/export"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
)

// exportListing binds an export's cursors, as a listing's name binds its
// own.
const exportListing = "exportOrg"

// errExportStalled ends an export whose page read took longer than the
// request deadline.
var errExportStalled = errs.E(errs.Unavailable, "timeout", "a page of the export took longer than the request deadline; resume from the last cursor")

// maxExportsPerOrg bounds an org's exports running at once on one replica:
// each holds a connection as long as the org's rate limit paces it, and
// the connections are every tenant's (MAX_CONNECTIONS).
const maxExportsPerOrg = 2

var errExportsBusy = &withHeader{errs.E(errs.TooManyRequests, "rate_limited",
	"this organization has %d exports running on this server: retry when one ends", maxExportsPerOrg), map[string]string{"Retry-After": "5"}}

// exports counts each org's exports running on this replica.
type exports struct {
	mu sync.Mutex
	n  map[string]int
}

// start counts an export of org in, if it has room; end counts it out.
func (e *exports) start(org string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n[org] >= maxExportsPerOrg {
		return false
	}
	e.n[org]++
	return true
}

func (e *exports) end(org string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n[org]--; e.n[org] <= 0 {
		delete(e.n, org)
	}
}

// ExportOrg serves GET /v1/orgs/{orgId}/export: everything the org holds,
// as NDJSON streamed while it is read (export.go's answer below), at most
// maxExportsPerOrg at once per org and replica (429 past it).
func (h *handlers) ExportOrg(ctx context.Context, req oapi.ExportOrgRequestObject) (oapi.ExportOrgResponseObject, error) {
	p, f := decided(ctx)
	x, err := h.Export.ExportOrg(p, *f.Org, h.inFlight())
	if err != nil {
		return nil, err
	}
	if req.Params.Cursor != nil {
		at, err := h.cursors.Decode(p.OrgID, exportListing, *req.Params.Cursor)
		if err == nil && at != "" {
			err = x.Resume(at)
		}
		if err != nil {
			return nil, page.ErrBadCursor
		}
	}
	if !isHead(ctx) && !h.exports.start(p.OrgID) {
		return nil, errExportsBusy
	}
	return exportAnswer{h: h, ctx: ctx, x: x, orgID: p.OrgID, gzip: acceptsGzip(original(ctx).Header.Values("Accept-Encoding"))}, nil
}

// exportAnswer streams an export, each page's lines sent before the next
// page is read, on a context of its own: cancelled when the client goes
// away or a page takes longer than the request deadline. Each write gets
// WRITE_TIMEOUT, so a client that stops reading loses its connection.
type exportAnswer struct {
	h     *handlers
	ctx   context.Context
	x     *export.Export
	orgID string
	gzip  bool
}

func (a exportAnswer) VisitExportOrgResponse(w http.ResponseWriter) error {
	hdr := w.Header()
	hdr.Set(echo.HeaderContentType, "application/x-ndjson")
	hdr.Set(echo.HeaderVary, echo.HeaderAcceptEncoding)
	if a.gzip {
		hdr.Set(echo.HeaderContentEncoding, "gzip")
	}
	w.WriteHeader(http.StatusOK)
	if isHead(a.ctx) {
		return nil
	}
	defer a.h.exports.end(a.orgID)
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(a.ctx))
	defer cancel(nil)
	client := original(a.ctx).Context() // net/http's: cancelled when the client goes away
	defer context.AfterFunc(client, func() { cancel(context.Canceled) })()
	id, _ := IdentityFrom(a.ctx)
	s := &exportSink{h: a.h, orgID: a.orgID, id: id, decided: clock.Or(a.h.Now)(), w: w, rc: http.NewResponseController(w)}
	if a.gzip {
		s.gz = gzip.NewWriter(w)
	}
	s.progress = time.AfterFunc(a.h.RequestTimeout, func() { cancel(errExportStalled) })
	defer s.progress.Stop()
	err := a.x.Run(ctx, s)
	s.progress.Stop()
	if err != nil {
		if client.Err() != nil {
			a.h.Logger.Debug("export: the client went away", "requestId", hdr.Get(echo.HeaderXRequestID), "err", err)
			return nil
		}
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		p := toProblem(err)
		p.RequestId = hdr.Get(echo.HeaderXRequestID)
		level := slog.LevelWarn
		if p.Status >= 500 {
			level = slog.LevelError
		}
		a.h.Logger.Log(a.ctx, level, "export ended early", "status", p.Status, "code", p.Code, "orgId", a.orgID, "requestId", p.RequestId, "err", err.Error())
		if s.line("error", map[string]oapi.Problem{"error": p}, "") != nil {
			return nil
		}
	}
	if err := s.flush(); err != nil || s.gz == nil {
		return nil
	}
	if s.gz.Close() == nil {
		_ = s.rc.Flush()
	}
	return nil
}

// exportSink writes an export's records as lines, each with its cursor,
// sent before each page is read; it spends the org's rate limit for every
// page but the first, and decides the caller's access again once the last
// decision is reauthorizeAfter old.
type exportSink struct {
	h        *handlers
	orgID    string
	id       authz.Identity
	decided  time.Time // when the caller's access was last decided
	w        http.ResponseWriter
	rc       *http.ResponseController
	gz       *gzip.Writer // nil: sent as is
	buf      bytes.Buffer
	reads    int
	progress *time.Timer
}

func (s *exportSink) Read(ctx context.Context) error {
	s.progress.Stop()
	if err := s.flush(); err != nil {
		return err
	}
	if s.reads++; s.reads > 1 {
		if err := s.pace(ctx); err != nil {
			return err
		}
	}
	if now := clock.Or(s.h.Now)(); now.Sub(s.decided) >= reauthorizeAfter {
		if err := s.reauthorize(ctx, now); err != nil {
			return err
		}
		s.decided = now
	}
	s.progress.Reset(s.h.RequestTimeout)
	return nil
}

// reauthorizeAfter is how long an export reads on one decision of its
// caller's access (an owner removed while it runs).
const reauthorizeAfter = time.Second

// reauthorize decides the caller's access to the export again, as
// AuthorizeOrg did (access.Authorize), then the export's own rule.
func (s *exportSink) reauthorize(ctx context.Context, now time.Time) error {
	d, err := access.Authorize(s.id, s.orgID, access.Target{}, false, now, s.h.KeyUse, func() (access.Found, error) {
		return s.h.Access.OrgAccess(ctx, s.orgID, s.id.UserID, access.Target{})
	})
	if err != nil {
		return err
	}
	return authz.Authorize(d.Principal, authz.OrgExport, authz.Facts{})
}

// pace spends a request of the org's bucket, waiting for one when it is
// empty, at most the request deadline.
func (s *exportSink) pace(ctx context.Context) error {
	l := s.h.RateLimit
	if l.Off() {
		return nil
	}
	until := time.Now().Add(s.h.RequestTimeout)
	for {
		d := l.Take(ctx, orgBucket(s.orgID))
		if d.Allowed {
			return nil
		}
		wait := max(d.RetryAfter, time.Millisecond)
		if time.Now().Add(wait).After(until) {
			return errLimited
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

func (s *exportSink) Write(r export.Record) error {
	v, err := wireOf(r.Value)
	if err != nil {
		return err
	}
	return s.line(r.Type, v, s.h.cursors.Encode(s.orgID, exportListing, r.After.String()))
}

// line adds a line to the buffer: {"type":…, v's fields, "cursor":…} (no
// cursor when empty).
func (s *exportSink) line(typ string, v any, cursor string) error {
	obj, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.buf.WriteString(`{"type":"` + typ + `"`)
	if len(obj) > 2 {
		s.buf.WriteByte(',')
		s.buf.Write(obj[1 : len(obj)-1])
	}
	if cursor != "" {
		s.buf.WriteString(`,"cursor":"` + cursor + `"`)
	}
	s.buf.WriteString("}\n")
	return nil
}

// flush sends what the buffer holds, compressed when asked, with a new
// write deadline.
func (s *exportSink) flush() error {
	if s.buf.Len() == 0 {
		return nil
	}
	if s.h.WriteTimeout > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.h.WriteTimeout))
	}
	var err error
	if s.gz != nil {
		if _, err = s.gz.Write(s.buf.Bytes()); err == nil {
			err = s.gz.Flush()
		}
	} else {
		_, err = s.w.Write(s.buf.Bytes())
	}
	s.buf.Reset()
	if err != nil {
		return err
	}
	return s.rc.Flush()
}

// wireOf is an export's object as the API represents it elsewhere (the
// handlers' own encoders: one fact), or its summary.
func wireOf(v any) (any, error) {
	switch v := v.(type) {
	case tenant.Org:
		return toOrg(v), nil
	case tenant.User:
		return toOrgUser(v), nil
	case membership.Team:
		return toTeam(v), nil
	case membership.Membership:
		return toMembership(v), nil
	case ticket.Ticket:
		return toTicket(v), nil
	case ticket.Comment:
		return toComment(v), nil
	case invitation.Invitation:
		return toInvitation(v), nil
	case webhook.Subscription:
		return toWebhook(v), nil
	case audit.Event:
		return toAuditEvent(v), nil
	case export.Summary:
		counts := map[string]int64{}
		for i, typ := range export.Types {
			counts[typ] = v.Counts[i]
		}
		return struct {
			Counts        map[string]int64 `json:"counts"`
			AuditPosition time.Time        `json:"auditPosition"`
		}{counts, v.Audit}, nil
	}
	return nil, fmt.Errorf("export: an object of type %T", v)
}

// acceptsGzip reports whether Accept-Encoding accepts gzip (RFC 9110
// 12.5.3): named with a weight above 0, or, when not named, "*" is.
func acceptsGzip(values []string) bool {
	named, star := -1.0, -1.0
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			if k, w, ok := strings.Cut(params, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(w), 64); err == nil {
					q = f
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				named = q
			case "*":
				star = q
			}
		}
	}
	if named >= 0 {
		return named > 0
	}
	return star > 0
}
