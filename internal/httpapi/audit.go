package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/page"
)

// ListAuditEvents serves GET /v1/orgs/{orgId}/audit-log.
func (h *handlers) ListAuditEvents(ctx context.Context, req oapi.ListAuditEventsRequestObject) (oapi.ListAuditEventsResponseObject, error) {
	p, _ := decided(ctx)
	since, until, listing := graphapi.AuditRange(req.Params.Since, req.Params.Until)
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[audit.Event], error) {
		return h.Audit.ListAuditEvents(ctx, p, since, until, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListAuditEvents200JSONResponse{Body: oapi.AuditEventList{Items: mapAll(r.Items, toAuditEvent), NextCursor: strPtr(next)},
		Headers: oapi.ListAuditEvents200ResponseHeaders{Link: link(ctx, next)}}, nil
}

func toAuditEvent(ev audit.Event) oapi.AuditEvent {
	out := oapi.AuditEvent{Id: ev.ID, ActorId: ev.ActorID, Action: ev.Action, TargetType: ev.TargetType, TargetId: ev.TargetID,
		RequestId: ev.RequestID, ClientRequestId: strPtr(ev.ClientRequestID), At: ev.At, Changes: make([]oapi.AuditChange, len(ev.Changes))}
	for i, c := range ev.Changes {
		out.Changes[i] = oapi.AuditChange{Field: c.Field, Before: auditValue(c.Before), After: auditValue(c.After)}
	}
	return out
}

// auditValue is a changed field's value as both APIs render it
// (graphapi.AuditValue): a string, a list of strings, or absent (nil: the
// field was unset).
func auditValue(v any) *oapi.AuditValue {
	var out oapi.AuditValue
	switch v := graphapi.AuditValue(v).(type) {
	case string:
		_ = out.FromAuditValue0(v)
	case []string:
		_ = out.FromAuditValue1(v)
	default:
		return nil
	}
	return &out
}
