package obs_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/store"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// flaky fails the first n requests with a real 500 from "DynamoDB".
type flaky struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.n.Add(-1) >= 0 {
		return &http.Response{StatusCode: 500, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body:    io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`)),
			Request: r}, nil
	}
	return f.next.RoundTrip(r)
}

// TestRequestAccounting proves what the request log and metrics report: a
// request's calls, its attempts (retries included) and the capacity
// DynamoDB says it consumed.
func TestRequestAccounting(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := obs.NewMetrics(reg)
	fault := &flaky{next: http.DefaultTransport}
	cfg := dynamotest.Config(t)
	cfg.HTTPClient = &http.Client{Transport: fault}
	client := store.NewClient(cfg, store.Options{Endpoint: dynamotest.Endpoint(), APIOptions: []func(*middleware.Stack) error{m.DynamoDB}})
	name := dynamotest.TableName(t)
	if err := store.Migrate(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	get := &dynamodb.GetItemInput{TableName: aws.String(name), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "ORG#x"}, "sk": &types.AttributeValueMemberS{Value: "#METADATA"}}}

	t.Run("OK one call", func(t *testing.T) {
		rctx, calls := obs.WithCalls(ctx)
		if _, err := client.GetItem(rctx, get); err != nil {
			t.Fatal(err)
		}
		n, attempts, capacity := calls.Snapshot()
		if n != 1 || attempts != 1 {
			t.Errorf("calls, attempts: got %d, %d; want 1, 1", n, attempts)
		}
		if capacity <= 0 {
			t.Errorf("capacity: got %v, want > 0 (ReturnConsumedCapacity is requested)", capacity)
		}
	})
	t.Run("OK a retry is one call, two attempts", func(t *testing.T) {
		fault.n.Store(1)
		rctx, calls := obs.WithCalls(ctx)
		if _, err := client.GetItem(rctx, get); err != nil {
			t.Fatal(err)
		}
		if n, attempts, _ := calls.Snapshot(); n != 1 || attempts != 2 {
			t.Errorf("calls, attempts: got %d, %d; want 1, 2", n, attempts)
		}
		if got := testutil.ToFloat64(mustRetries(t, reg)); got != 1 {
			t.Errorf("tenantd_dynamodb_retries_total{GetItem}: got %v, want 1", got)
		}
	})
}

func mustRetries(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tenantd_dynamodb_retries_total" {
			for _, metric := range mf.GetMetric() {
				for _, l := range metric.GetLabel() {
					if l.GetValue() == "GetItem" {
						return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return metric.GetCounter().GetValue() })
					}
				}
			}
		}
	}
	t.Fatal("no retries metric for GetItem")
	return nil
}
