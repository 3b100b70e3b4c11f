package webhook

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// attemptTracer makes the span of each delivery attempt; its zero value
// makes none.
type attemptTracer struct{ tracer trace.Tracer }

// Trace makes the worker trace each delivery attempt: a client span
// ("webhook delivery") with the attempt's DynamoDB calls under it, whose
// W3C traceparent the receiver gets with the delivery, so its own trace
// continues ours. Call it before Run. The span names the org, the
// endpoint's ID, the event's ID and type, the attempt and its outcome:
// never the endpoint's URL (it may carry a token), its secret, the
// signature or the payload.
func (w *Worker) Trace(t trace.Tracer) {
	w.tracer = attemptTracer{tracer: t}
	w.client.Transport = traceparent{base: w.client.Transport}
}

// traceAttempt starts d's attempt span; end, deferred, records the
// outcome d then has.
func (w *Worker) traceAttempt(ctx context.Context, d *Delivery) (_ context.Context, end func()) {
	if w.tracer.tracer == nil {
		return ctx, func() {}
	}
	ctx, span := w.tracer.tracer.Start(ctx, "webhook delivery", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("tenantd.org_id", d.OrgID), attribute.String("tenantd.webhook_id", d.WebhookID),
		attribute.String("webhook.event_id", d.EventID), attribute.String("webhook.event_type", d.Type),
		attribute.Int("webhook.attempt", d.Attempts+1)))
	return ctx, func() {
		span.SetAttributes(attribute.String("webhook.state", string(d.State)))
		if d.LastStatus != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", d.LastStatus))
		}
		if d.State != Delivered && d.LastError != "" {
			span.SetStatus(codes.Error, d.LastError) // the delivery log's words: never the URL
		}
		span.End()
	}
}

// traceparent sends, with each delivery, the W3C traceparent of the
// attempt's span.
type traceparent struct{ base http.RoundTripper }

func (t traceparent) RoundTrip(r *http.Request) (*http.Response, error) {
	if trace.SpanContextFromContext(r.Context()).IsValid() {
		r = r.Clone(r.Context())
		propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
	return t.base.RoundTrip(r)
}
