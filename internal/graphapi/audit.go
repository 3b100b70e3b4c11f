package graphapi

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/page"
)

// AuditLog resolves Org.auditLog (GET /v1/orgs/{orgId}/audit-log); the
// cursor is bound to the range, as REST's.
func (r orgResolver) AuditLog(ctx context.Context, obj *Org, since, until *time.Time, first *int, after *string) (*AuditEventConnection, error) {
	var from, to time.Time
	if since != nil {
		from = *since
	}
	listing := "listAuditEvents:" + from.UTC().Format(time.RFC3339Nano) + ":now"
	if until != nil {
		to = *until
		if to.IsZero() { // year 1 is a bound, not "no bound": nothing happened before it
			to = to.Add(time.Nanosecond)
		}
		listing = "listAuditEvents:" + from.UTC().Format(time.RFC3339Nano) + ":" + to.UTC().Format(time.RFC3339Nano)
	}
	return connection(ctx, obj.p.OrgID, listing, first, after,
		func(pr page.Request) (page.Result[audit.Event], error) {
			return r.s.d.Audit.ListAuditEvents(ctx, obj.p, from, to, pr)
		},
		func(ev audit.Event) *AuditEvent { return &AuditEvent{Event: ev} })
}
