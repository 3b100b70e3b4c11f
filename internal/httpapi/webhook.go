package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/webhook"
)

// toWebhook is a subscription's wire form: never its secret.
func toWebhook(s webhook.Subscription) oapi.Webhook {
	return oapi.Webhook{Id: s.ID, Url: s.URL, Events: s.Events, Description: strPtr(s.Description), Active: s.Active, Version: s.Version,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, FailingSince: optional.Of(s.FailingSince)}
}

// withSecret is the one answer that shows a subscription's secret.
func withSecret(s webhook.Subscription) oapi.WebhookCreated {
	w := toWebhook(s)
	return oapi.WebhookCreated{Id: w.Id, Url: w.Url, Events: w.Events, Description: w.Description, Active: w.Active,
		FailingSince: w.FailingSince, Version: w.Version, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, Secret: s.Secret}
}

// CreateWebhook serves POST /v1/orgs/{orgId}/webhooks.
func (h *handlers) CreateWebhook(ctx context.Context, req oapi.CreateWebhookRequestObject) (oapi.CreateWebhookResponseObject, error) {
	p, _ := decided(ctx)
	in := webhook.New{ID: newResourceID(ctx), URL: req.Body.Url, Events: req.Body.Events}
	optional.Set(&in.Description, req.Body.Description)
	s, err := h.Webhooks.CreateWebhook(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return oapi.CreateWebhook201JSONResponse{Body: withSecret(s), Headers: oapi.CreateWebhook201ResponseHeaders{ETag: etag(s.Version)}}, nil
}

// ListWebhooks serves GET /v1/orgs/{orgId}/webhooks.
func (h *handlers) ListWebhooks(ctx context.Context, req oapi.ListWebhooksRequestObject) (oapi.ListWebhooksResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listWebhooks", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[webhook.Subscription], error) {
		return h.Webhooks.ListWebhooks(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListWebhooks200JSONResponse{Body: oapi.WebhookList{Items: mapAll(r.Items, toWebhook), NextCursor: strPtr(next)},
		Headers: oapi.ListWebhooks200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// GetWebhook serves GET /v1/orgs/{orgId}/webhooks/{webhookId}.
func (h *handlers) GetWebhook(ctx context.Context, req oapi.GetWebhookRequestObject) (oapi.GetWebhookResponseObject, error) {
	p, _ := decided(ctx)
	s, err := h.Webhooks.GetWebhook(ctx, p, req.WebhookId)
	if err != nil {
		return nil, err
	}
	return oapi.GetWebhook200JSONResponse{Body: toWebhook(s), Headers: oapi.GetWebhook200ResponseHeaders{ETag: etag(s.Version)}}, nil
}

// UpdateWebhook serves PATCH /v1/orgs/{orgId}/webhooks/{webhookId}.
func (h *handlers) UpdateWebhook(ctx context.Context, req oapi.UpdateWebhookRequestObject) (oapi.UpdateWebhookResponseObject, error) {
	p, _ := decided(ctx)
	s, err := h.Webhooks.UpdateWebhook(ctx, p, req.WebhookId, webhook.Patch{URL: req.Body.Url, Events: req.Body.Events,
		Description: req.Body.Description, Active: req.Body.Active}, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	return oapi.UpdateWebhook200JSONResponse{Body: toWebhook(s), Headers: oapi.UpdateWebhook200ResponseHeaders{ETag: etag(s.Version)}}, nil
}

// DeleteWebhook serves DELETE /v1/orgs/{orgId}/webhooks/{webhookId}.
func (h *handlers) DeleteWebhook(ctx context.Context, req oapi.DeleteWebhookRequestObject) (oapi.DeleteWebhookResponseObject, error) {
	p, _ := decided(ctx)
	if err := h.Webhooks.DeleteWebhook(ctx, p, req.WebhookId, ifMatch(req.Params.IfMatch)); err != nil {
		return nil, err
	}
	return oapi.DeleteWebhook204Response{}, nil
}

// RotateWebhookSecret serves POST /v1/orgs/{orgId}/webhooks/{webhookId}/rotate-secret.
func (h *handlers) RotateWebhookSecret(ctx context.Context, req oapi.RotateWebhookSecretRequestObject) (oapi.RotateWebhookSecretResponseObject, error) {
	p, _ := decided(ctx)
	s, err := h.Webhooks.RotateWebhookSecret(ctx, p, req.WebhookId)
	if err != nil {
		return nil, err
	}
	return oapi.RotateWebhookSecret200JSONResponse(withSecret(s)), nil
}

func toDelivery(d webhook.Delivery) oapi.WebhookDelivery {
	out := oapi.WebhookDelivery{Id: d.EventID, Type: d.Type, State: oapi.WebhookDeliveryState(d.State), Attempts: d.Attempts,
		LastError: strPtr(d.LastError), CreatedAt: d.CreatedAt, LastStatus: optional.Of(d.LastStatus), NextAttemptAt: optional.Of(d.NextAttempt)}
	if d.Attempts > 0 {
		out.LatencyMs = &d.LatencyMs
	}
	return out
}

// ListWebhookDeliveries serves GET /v1/orgs/{orgId}/webhooks/{webhookId}/deliveries.
func (h *handlers) ListWebhookDeliveries(ctx context.Context, req oapi.ListWebhookDeliveriesRequestObject) (oapi.ListWebhookDeliveriesResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listWebhookDeliveries/"+req.WebhookId, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[webhook.Delivery], error) {
		return h.Deliveries.ListWebhookDeliveries(ctx, p, req.WebhookId, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListWebhookDeliveries200JSONResponse{Body: oapi.WebhookDeliveryList{Items: mapAll(r.Items, toDelivery), NextCursor: strPtr(next)},
		Headers: oapi.ListWebhookDeliveries200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// RedeliverWebhook serves POST /v1/orgs/{orgId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver.
func (h *handlers) RedeliverWebhook(ctx context.Context, req oapi.RedeliverWebhookRequestObject) (oapi.RedeliverWebhookResponseObject, error) {
	p, _ := decided(ctx)
	d, err := h.Deliveries.RedeliverWebhook(ctx, p, req.WebhookId, req.DeliveryId)
	if err != nil {
		return nil, err
	}
	return oapi.RedeliverWebhook202JSONResponse(toDelivery(d)), nil
}
