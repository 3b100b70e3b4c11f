package graphapi

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/page"
)

// AuditLog resolves Org.auditLog (GET /v1/orgs/{orgId}/audit-log).
func (r orgResolver) AuditLog(ctx context.Context, obj *Org, since, until *time.Time, first *int, after *string) (*AuditEventConnection, error) {
	from, to, listing := AuditRange(since, until)
	return connection(ctx, obj.p.OrgID, listing, first, after,
		func(pr page.Request) (page.Result[audit.Event], error) {
			return r.s.d.Audit.ListAuditEvents(ctx, obj.p, from, to, pr)
		},
		func(ev audit.Event) *AuditEvent { return &AuditEvent{Event: ev} })
}

// AuditRange is the range of an audit-log listing, in both APIs: from
// since (none: the beginning) to until (none: now, the service's clock),
// and the listing its cursors are bound to, so a page never continues
// another range's listing.
func AuditRange(since, until *time.Time) (from, to time.Time, listing string) {
	if since != nil {
		from = *since
	}
	listing = "listAuditEvents:" + from.UTC().Format(time.RFC3339Nano) + ":now"
	if until != nil {
		to = *until
		if to.IsZero() { // year 1 is a bound, not "no bound": nothing happened before it
			to = to.Add(time.Nanosecond)
		}
		listing = "listAuditEvents:" + from.UTC().Format(time.RFC3339Nano) + ":" + to.UTC().Format(time.RFC3339Nano)
	}
	return from, to, listing
}
