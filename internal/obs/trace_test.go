package obs_test

import (
	"context"
	"testing"

	"github.com/tenantd/tenantd/internal/obs"
)

// TestTracingFromEnv: tracing is on only when the OTEL_* variables name an
// exporter or an endpoint, and never when the SDK is disabled.
func TestTracingFromEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		on   bool
	}{
		{"nothing set", nil, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"a traces endpoint, over gRPC", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true},
		{"the console exporter", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"an exporter of none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
				t.Setenv(k, c.env[k])
			}
			tr, err := obs.TracingFromEnv(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := tr != nil; got != c.on {
				t.Errorf("tracing on: %v, want %v", got, c.on)
			}
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
}

func TestTraceID(t *testing.T) {
	for traceparent, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        "4bf92f3577b34da6a3ce929d0e0e4736",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future": "4bf92f3577b34da6a3ce929d0e0e4736", // a later version may add fields
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra":  "",                                 // version 00 may not
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        "",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":        "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":        "", // upper case is not the format
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01":         "",
		"": "",
	} {
		if got := obs.TraceID(context.Background(), traceparent); got != want {
			t.Errorf("TraceID(%q) = %q, want %q", traceparent, got, want)
		}
	}
}
