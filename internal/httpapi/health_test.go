package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tenantd/tenantd"
	"github.com/tenantd/tenantd/client"
)

// TestHealth is the behaviour of the operational endpoints (health, readiness, metrics, the contract).
func TestHealth(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		spec(t, "getHealth", func(t *testing.T) {
			r, err := ts.Client(t, "").GetHealthWithResponse(bg)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := r.JSON200.Status, client.HealthStatusOk; got != want {
				t.Errorf("status: got %q, want %q", got, want)
			}
		})

		spec(t, "getReady", func(t *testing.T) {
			r, err := ts.Client(t, "").GetReadyWithResponse(bg)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := r.JSON200.Status, client.HealthStatusOk; got != want {
				t.Errorf("status: got %q, want %q", got, want)
			}
		})

		t.Run("metrics", func(t *testing.T) {
			// Not an operation of the API (cmd/api serves them on their own
			// listener): the registry behind them has the request metrics.
			text := metricsText(t, ts.Registry)
			for _, name := range []string{"tenantd_request_dynamodb_calls", "tenantd_requests_total"} {
				if !strings.Contains(text, name) {
					t.Errorf("metrics lack %s:\n%s", name, truncate([]byte(text)))
				}
			}
		})

		spec(t, "getOpenAPI", func(t *testing.T) {
			r, err := ts.Client(t, "").GetOpenAPIWithResponse(bg)
			if err != nil {
				t.Errorf("the generated client cannot read GET /openapi.yaml: %v", err)
			} else {
				mustStatus(t, r, err, http.StatusOK)
			}
			resp, err := ts.HTTPClient(t, "").Get(ts.URL + "/openapi.yaml")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || !bytes.Equal(b, tenantd.OpenAPISpec) {
				t.Errorf("GET /openapi.yaml: %d, %d bytes; want 200 and openapi.yaml (%d bytes)", resp.StatusCode, len(b), len(tenantd.OpenAPISpec))
			}
		})
	})
}
