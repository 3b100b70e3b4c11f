// Package obs is tenantd's observability: what each request cost in
// DynamoDB calls, retries and capacity (counted by an SDK middleware), the
// Prometheus metrics built from it, and the one structured log line per
// request.
package obs

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Calls is what one request spent on DynamoDB.
type Calls struct {
	mu       sync.Mutex
	Calls    int     // logical API calls
	Attempts int     // HTTP attempts, retries included
	Capacity float64 // consumed capacity units, as DynamoDB reported them
	// Operation, when set, names what a request ran beyond its route (a
	// GraphQL operation's type and root fields): from a bounded set.
	Operation string
}

func (c *Calls) add(calls, attempts int, capacity float64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Calls += calls
	c.Attempts += attempts
	c.Capacity += capacity
}

// Snapshot returns the counts so far.
func (c *Calls) Snapshot() (calls, attempts int, capacity float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Calls, c.Attempts, c.Capacity
}

// SetOperation records, on ctx's Calls (if any), what the request ran
// beyond its route: a value from a bounded set (it becomes a label, and
// an attribute of the request's span when it is traced).
func SetOperation(ctx context.Context, op string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() && op != "" {
		span.SetAttributes(attribute.String("tenantd.graphql.operation", op))
	}
	if c := callsFrom(ctx); c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.Operation = op
	}
}

// OperationOf returns what SetOperation recorded.
func (c *Calls) OperationOf() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Operation
}

type callsKey struct{}

// WithCalls returns ctx carrying a fresh Calls to count into.
func WithCalls(ctx context.Context) (context.Context, *Calls) {
	c := &Calls{}
	return context.WithValue(ctx, callsKey{}, c), c
}

func callsFrom(ctx context.Context) *Calls {
	c, _ := ctx.Value(callsKey{}).(*Calls)
	return c
}

// Metrics are tenantd's Prometheus collectors.
type Metrics struct {
	dynamoSeconds   *prometheus.HistogramVec
	dynamoCapacity  *prometheus.CounterVec
	dynamoRetries   *prometheus.CounterVec
	callsPerRequest *prometheus.HistogramVec
	capPerRequest   *prometheus.HistogramVec
	dispatchLag     prometheus.Histogram
	oldestDue       prometheus.Gauge
}

// NewMetrics registers the collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		dynamoSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tenantd_dynamodb_call_duration_seconds", Help: "DynamoDB API calls by operation, retries included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"operation"}),
		dynamoCapacity: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantd_dynamodb_consumed_capacity_units_total", Help: "Capacity units DynamoDB reported as consumed, by operation.",
		}, []string{"operation"}),
		dynamoRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantd_dynamodb_retries_total", Help: "DynamoDB attempts beyond the first, by operation.",
		}, []string{"operation"}),
		callsPerRequest: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tenantd_request_dynamodb_calls", Help: "DynamoDB calls made by one HTTP request, by method and route.",
			Buckets: []float64{0, 1, 2, 3, 4, 6, 10, 20},
		}, []string{"method", "route"}),
		capPerRequest: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tenantd_request_dynamodb_capacity_units", Help: "DynamoDB capacity consumed by one HTTP request, by method and route.",
			Buckets: []float64{0, .5, 1, 2, 4, 8, 16, 32},
		}, []string{"method", "route"}),
		dispatchLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tenantd_webhook_dispatch_lag_seconds", Help: "From a change to its audit event's deliveries made, for each event this process dispatched.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		oldestDue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenantd_webhook_oldest_due_seconds", Help: "How long the oldest delivery due, at this process's worker's last look, had been due.",
		}),
	}
	reg.MustRegister(m.dynamoSeconds, m.dynamoCapacity, m.dynamoRetries, m.callsPerRequest, m.capPerRequest, m.dispatchLag, m.oldestDue)
	return m
}

// DynamoDB is the smithy API option that times every call, asks DynamoDB
// for the capacity it consumed, and counts both into the request's Calls.
func (m *Metrics) DynamoDB(stack *middleware.Stack) error {
	err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("tenantd.obs",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			requestCapacity(in.Parameters)
			op := middleware.GetOperationName(ctx)
			start := time.Now()
			attempts := &attemptCounter{}
			out, md, err := next.HandleInitialize(context.WithValue(ctx, attemptsKey{}, attempts), in)
			capacity := consumed(out.Result)
			m.dynamoSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
			m.dynamoCapacity.WithLabelValues(op).Add(capacity)
			if n := attempts.n; n > 1 {
				m.dynamoRetries.WithLabelValues(op).Add(float64(n - 1))
			}
			callsFrom(ctx).add(1, max(attempts.n, 1), capacity)
			return out, md, err
		}), middleware.Before)
	if err != nil {
		return err
	}
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("tenantd.obs.attempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if a, ok := ctx.Value(attemptsKey{}).(*attemptCounter); ok {
				a.n++
			}
			return next.HandleFinalize(ctx, in)
		}), "Retry", middleware.After)
}

type attemptsKey struct{}
type attemptCounter struct{ n int }

// requestCapacity asks for ConsumedCapacity on every read and write.
func requestCapacity(params any) {
	const total = types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactGetItemsInput:
		in.ReturnConsumedCapacity = total
	}
}

func sum(ccs ...types.ConsumedCapacity) float64 {
	var t float64
	for _, c := range ccs {
		if c.CapacityUnits != nil {
			t += *c.CapacityUnits
		}
	}
	return t
}

func consumed(result any) float64 {
	one, many := consumedCapacity(result)
	if one != nil {
		return sum(*one)
	}
	return sum(many...)
}

// consumedCapacity is what a call's output says it consumed: one entry
// (the single-table operations) or many (the batches and transactions).
func consumedCapacity(result any) (one *types.ConsumedCapacity, many []types.ConsumedCapacity) {
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		return out.ConsumedCapacity, nil
	case *dynamodb.QueryOutput:
		return out.ConsumedCapacity, nil
	case *dynamodb.PutItemOutput:
		return out.ConsumedCapacity, nil
	case *dynamodb.UpdateItemOutput:
		return out.ConsumedCapacity, nil
	case *dynamodb.DeleteItemOutput:
		return out.ConsumedCapacity, nil
	case *dynamodb.BatchGetItemOutput:
		return nil, out.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		return nil, out.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		return nil, out.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return nil, out.ConsumedCapacity
	}
	return nil, nil
}

// ObserveRequest records what one HTTP request cost in DynamoDB calls and
// capacity, by method and route (both from bounded sets: see Method).
func (m *Metrics) ObserveRequest(method, route string, calls int, capacity float64) {
	m.callsPerRequest.WithLabelValues(method, route).Observe(float64(calls))
	m.capPerRequest.WithLabelValues(method, route).Observe(capacity)
}

// DispatchLag records how long after its change an event was dispatched.
func (m *Metrics) DispatchLag(d time.Duration) { m.dispatchLag.Observe(d.Seconds()) }

// OldestDue records how long the oldest delivery due has been due.
func (m *Metrics) OldestDue(d time.Duration) { m.oldestDue.Set(d.Seconds()) }
