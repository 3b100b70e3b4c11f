package obs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	//lint:ignore SA1019 the contrib instrumentation of aws-sdk-go-v2 the project uses; its successor (smithy-go's tracing adapter) is not served by the module proxy here
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Tracing is the process's OpenTelemetry tracing. A nil *Tracing is
// tracing off: nothing on the request path then touches OpenTelemetry, so
// it costs no allocation (TestTracingOffCostsNothing).
type Tracing struct {
	// Provider makes the spans (the SDK's, exporting them; tests give an
	// in-memory one).
	Provider trace.TracerProvider
	// Propagator reads a caller's trace context (W3C traceparent by
	// default) from a request's headers.
	Propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
}

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME
// (or OTEL_RESOURCE_ATTRIBUTES) names another.
const ServiceName = "tenantd"

// TracingFromEnv is the tracing the standard OTEL_* variables configure,
// nil (off) when they configure none. It is on when an OTLP endpoint is
// set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// or OTEL_TRACES_EXPORTER names an exporter (otlp, console), and off
// whatever else is set when OTEL_SDK_DISABLED is true or
// OTEL_TRACES_EXPORTER is none. The SDK reads the rest itself: the
// exporter and its protocol (autoexport: OTEL_EXPORTER_OTLP_PROTOCOL,
// http/protobuf by default), headers and timeouts, the sampler
// (OTEL_TRACES_SAMPLER, parentbased_always_on by default), the batch
// processor's bounds (OTEL_BSP_*), the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES) and the propagators (OTEL_PROPAGATORS,
// tracecontext,baggage by default).
func TracingFromEnv(ctx context.Context) (*Tracing, error) {
	exporter := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || exporter == "none" || exporter == "" && endpoint == "" {
		return nil, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(ServiceName)), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Propagator: autoprop.NewTextMapPropagator(), shutdown: tp.Shutdown}, nil
}

// Shutdown exports the spans still buffered, within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Tracer is the tracer of an instrumentation scope (a package's name).
func (t *Tracing) Tracer(scope string) trace.Tracer {
	return t.Provider.Tracer(scope)
}

// DynamoDB are the smithy API options (otelaws) that make a client span
// of each DynamoDB call made within a traced request or delivery attempt,
// with the table, index and operation, and the capacity the call consumed
// (aws.dynamodb.consumed_capacity, as DynamoDB reported it, and its total
// in tenantd.dynamodb.capacity_units). A call made outside any span (the
// workers' polling, the change stream's) starts no trace of its own. The
// attributes name keys' shapes at most (projections, index names), never
// a key's or an item's values.
func (t *Tracing) DynamoDB() []func(*middleware.Stack) error {
	var opts []func(*middleware.Stack) error
	otelaws.AppendMiddlewares(&opts,
		otelaws.WithTracerProvider(childSpans{tp: t.Provider}),
		// DynamoDB continues no trace: send it no trace headers.
		otelaws.WithTextMapPropagator(propagation.NewCompositeTextMapPropagator()),
		otelaws.WithAttributeBuilder(otelaws.DefaultAttributeBuilder, otelaws.DynamoDBAttributeBuilder, capacityAttributes))
	return opts
}

// capacityAttributes are the capacity a call consumed.
func capacityAttributes(_ context.Context, _ middleware.InitializeInput, out middleware.InitializeOutput) []attribute.KeyValue {
	one, ccs := consumedCapacity(out.Result)
	if one != nil {
		ccs = []types.ConsumedCapacity{*one}
	}
	if len(ccs) == 0 {
		return nil
	}
	items := make([]string, 0, len(ccs))
	for _, cc := range ccs {
		b, _ := json.Marshal(cc)
		items = append(items, string(b))
	}
	return []attribute.KeyValue{semconv.AWSDynamoDBConsumedCapacity(items...), attribute.Float64("tenantd.dynamodb.capacity_units", sum(ccs...))}
}

// childSpans is a TracerProvider whose tracers start a span only under
// one already in the context (a request's, a delivery attempt's): the
// process's own background calls make no traces of their own.
type childSpans struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (c childSpans) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childTracer{t: c.tp.Tracer(name, opts...)}
}

type childTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (c childTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx) // a no-op span
	}
	return c.t.Start(ctx, name, opts...)
}

// TraceID is the trace a request belongs to, for its log line: its
// span's when tracing is on, else the trace its caller's W3C traceparent
// names (so the caller's trace finds the line either way); "" when
// neither. With tracing off it allocates nothing.
func TraceID(ctx context.Context, traceparent string) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	// version "-" trace-id "-" parent-id "-" flags (W3C Trace Context,
	// section 3.2): 2+1+32+1+16+1+2 characters; version ff is invalid, and
	// so is an all-zero trace-id.
	if len(traceparent) < 55 || traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-' ||
		traceparent[:2] == "ff" || len(traceparent) > 55 && traceparent[:2] == "00" {
		return ""
	}
	id, zero := traceparent[3:35], true
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
		zero = zero && c == '0'
	}
	if zero {
		return ""
	}
	return id
}
