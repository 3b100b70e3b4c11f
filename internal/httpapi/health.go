package httpapi

import (
	"bytes"
	"context"
	"errors"

	"github.com/tenantd/tenantd"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
)

// GetHealth serves GET /healthz: liveness only, no dependencies.
func (h *handlers) GetHealth(ctx context.Context, _ oapi.GetHealthRequestObject) (oapi.GetHealthResponseObject, error) {
	return oapi.GetHealth200JSONResponse{Status: oapi.HealthStatusOk}, nil
}

// ErrShuttingDown is what Deps.Ready returns once the process drains: the
// 503s of /readyz it causes are planned, and logged at INFO, not ERROR.
var ErrShuttingDown = errors.New("shutting down")

// GetReady serves GET /readyz: DynamoDB reachable and not shutting down.
func (h *handlers) GetReady(ctx context.Context, _ oapi.GetReadyRequestObject) (oapi.GetReadyResponseObject, error) {
	if h.Ready != nil {
		if err := h.Ready(ctx); err != nil {
			return nil, &errs.Error{Kind: errs.Unavailable, Code: "not_ready", Message: "the service is not ready for traffic", Err: err}
		}
	}
	return oapi.GetReady200JSONResponse{Status: oapi.HealthStatusOk}, nil
}

// GetOpenAPI serves GET /openapi.yaml: the contract the server was built from.
func (h *handlers) GetOpenAPI(ctx context.Context, _ oapi.GetOpenAPIRequestObject) (oapi.GetOpenAPIResponseObject, error) {
	return oapi.GetOpenAPI200ApplicationvndOaiOpenapiResponse{Body: bytes.NewReader(tenantd.OpenAPISpec), ContentLength: int64(len(tenantd.OpenAPISpec))}, nil
}
