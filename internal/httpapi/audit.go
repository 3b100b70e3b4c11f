package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/page"
)

// ListAuditEvents serves GET /v1/orgs/{orgId}/audit-log.
func (h *handlers) ListAuditEvents(ctx context.Context, req oapi.ListAuditEventsRequestObject) (oapi.ListAuditEventsResponseObject, error) {
	p, _, err := decided(ctx)
	if err != nil {
		return nil, err
	}
	var since, until time.Time
	if req.Params.Since != nil {
		since = *req.Params.Since
	}
	// The cursor is bound to the time range, so a page never continues
	// another range's listing. No until means now (the service's clock).
	listing := "listAuditEvents:" + since.UTC().Format(time.RFC3339Nano) + ":now"
	if req.Params.Until != nil {
		until = *req.Params.Until
		if until.IsZero() { // year 1 is a bound, not "no bound": nothing happened before it
			until = until.Add(time.Nanosecond)
		}
		listing = "listAuditEvents:" + since.UTC().Format(time.RFC3339Nano) + ":" + until.UTC().Format(time.RFC3339Nano)
	}
	r, next, err := fetchPage(ctx, h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[audit.Event], error) {
		return h.Audit.ListAuditEvents(ctx, p, since, until, pr)
	})
	if err != nil {
		return nil, err
	}
	items := mapAll(r.Items, toAuditEvent)
	return oapi.ListAuditEvents200JSONResponse{Body: oapi.AuditEventList{Items: items, NextCursor: nextPtr(next)},
		Headers: oapi.ListAuditEvents200ResponseHeaders{Link: link(ctx, next)}}, nil
}

func toAuditEvent(ev audit.Event) oapi.AuditEvent {
	out := oapi.AuditEvent{Id: ev.ID, ActorId: ev.ActorID, Action: ev.Action, TargetType: ev.TargetType, TargetId: ev.TargetID,
		RequestId: ev.RequestID, At: ev.At, Changes: make([]oapi.AuditChange, len(ev.Changes))}
	for i, c := range ev.Changes {
		ch := oapi.AuditChange{Field: c.Field}
		ch.Before, ch.After = auditValue(c.Before), auditValue(c.After)
		out.Changes[i] = ch
	}
	if ev.ClientRequestID != "" {
		out.ClientRequestId = &ev.ClientRequestID
	}
	return out
}

// auditValue is a changed field's value as the API has it: a string, a
// list of strings, or absent (nil: the field was unset).
func auditValue(v any) *oapi.AuditValue {
	var out oapi.AuditValue
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		_ = out.FromAuditValue0(v)
	case []string:
		_ = out.FromAuditValue1(v)
	case []any:
		ss := make([]string, len(v))
		for i, x := range v {
			ss[i] = fmt.Sprint(x)
		}
		_ = out.FromAuditValue1(ss)
	default:
		_ = out.FromAuditValue0(fmt.Sprint(v))
	}
	return &out
}
