package httpapi_test

// What tracing costs a request: nothing when it is off (the guard test
// below), and what BenchmarkTracing measures when it is on. Both serve GET
// ticket against the in-process DynamoDB stub of overhead_bench_test.go.

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/obs"
)

// callerTraceparent is a caller's W3C trace context.
// allocsChild marks the test process TestTracingOffCostsNothing starts to
// measure in.
const allocsChild = "TENANTD_TEST_ALLOCS_CHILD"

const callerTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// tracingWith is tracing into exp through a batch processor, as cmd/api's
// (its exporter aside), sampling with s.
func tracingWith(exp sdktrace.SpanExporter, s sdktrace.Sampler) *obs.Tracing {
	return &obs.Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(s)),
		Propagator: propagation.TraceContext{}}
}

// getTicketWith serves GET ticket on h with the header name: value.
func (env *benchEnv) getTicketWith(tb testing.TB, h http.Handler, name, value string) {
	req := httptest.NewRequest(http.MethodGet, "/v1/orgs/"+benchOrgID+"/tickets/"+benchTicket, nil)
	req.Header.Set("Authorization", "Bearer "+env.token)
	req.Header.Set(name, value)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET ticket: %d %s", rec.Code, rec.Body.String())
	}
}

// TestTracingOffCostsNothing: with tracing off, a request allocates what
// it allocates without any tracing code, whatever it carries and whatever
// the process's OpenTelemetry globals hold: a caller's traceparent (whose
// trace ID the log line still names) costs no allocation, and a
// TracerProvider and propagator installed globally (as a library might)
// are never reached (no span is made, no allocation added). Against that,
// the same request traced allocates more (the measure can see it).
//
// It measures in a test process of its own: AllocsPerRun counts every
// goroutine's allocations, and in the package's whole run the servers of
// earlier tests leave work behind that allocates all along (twice a fresh
// clone's .ci/run saw 744 allocations against 742). And a process's
// measure can differ from the next one's: beside two CPU hogs, 2 of 12
// processes measured 746 for each request with a traceparent against 744
// without, and the other ten the same for both. A cost of the code shows in
// every process, so it fails only when three processes in turn each find one.
func TestTracingOffCostsNothing(t *testing.T) {
	if os.Getenv(allocsChild) == "" {
		var failed []string
		for range 3 {
			cmd := exec.Command(os.Args[0], "-test.run=^TestTracingOffCostsNothing$", "-test.count=1")
			// No DynamoDB Local: the measure runs against the in-process stub.
			cmd.Env = append(os.Environ(), allocsChild+"=1", dynamotest.EnvEndpoint+"=http://127.0.0.1:1")
			out, err := cmd.CombinedOutput()
			if err == nil {
				return
			}
			failed = append(failed, fmt.Sprintf("%v\n%s", err, out))
		}
		t.Fatalf("the measure in each of three processes of its own:\n%s", strings.Join(failed, "\n"))
	}
	env := newBenchEnv(t)
	off := env.server(t, true, true)
	// AllocsPerRun counts every goroutine's allocations, so background
	// work (a rate-limit lease, an earlier test's idle connection) adds to
	// a measure now and then, never takes away: the least of five measures
	// is the request's own. One allocation either way is still let pass;
	// the traceId the log line would read costs more.
	allocs := func(h http.Handler, name, value string) float64 {
		env.getTicketWith(t, h, name, value) // warm: the token cache, the pools
		least := math.Inf(1)
		for range 5 {
			least = min(least, testing.AllocsPerRun(100, func() { env.getTicketWith(t, h, name, value) }))
		}
		return least
	}
	base := allocs(off, "X-Not-Traced", callerTraceparent) // the same header, by another name
	if got := allocs(off, "Traceparent", callerTraceparent); got > base+1 {
		t.Errorf("tracing off, a caller's traceparent: %.0f allocs per request, want %.0f (none for the log line's traceId)", got, base)
	}

	exp := tracetest.NewInMemoryExporter()
	defer otel.SetTracerProvider(otel.GetTracerProvider())
	defer otel.SetTextMapPropagator(otel.GetTextMapPropagator())
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if got := allocs(off, "Traceparent", callerTraceparent); got > base+1 {
		t.Errorf("tracing off, OpenTelemetry's globals set: %.0f allocs per request, want %.0f", got, base)
	}
	if spans := exp.GetSpans(); len(spans) > 0 {
		t.Errorf("tracing off made %d spans through the globals, the first %q", len(spans), spans[0].Name)
	}

	on := env.serverWith(t, true, true, func(d *httpapi.Deps) { d.Tracing = tracingWith(tracetest.NewNoopExporter(), sdktrace.AlwaysSample()) })
	if got := allocs(on, "Traceparent", callerTraceparent); got <= base {
		t.Errorf("tracing on: %.0f allocs per request, not above off's %.0f: the measure cannot see tracing", got, base)
	}
}

// BenchmarkTracing is GET ticket (stub answered in process) with tracing
// off, on (every request sampled, spans batched to an exporter that drops
// them: the SDK's cost, not the network's), and on with every request
// sampled out (the cost of a request the sampler drops).
func BenchmarkTracing(b *testing.B) {
	env := newBenchEnv(b)
	for _, c := range []struct {
		name    string
		tracing *obs.Tracing
	}{
		{"off", nil},
		{"on", tracingWith(tracetest.NewNoopExporter(), sdktrace.AlwaysSample())},
		{"on-sampled-out", tracingWith(tracetest.NewNoopExporter(), sdktrace.NeverSample())},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := env.serverWith(b, true, true, func(d *httpapi.Deps) { d.Tracing = c.tracing })
			benchLoop(b, func() { env.getTicketWith(b, h, "X-Not-Traced", callerTraceparent) })
		})
	}
}
