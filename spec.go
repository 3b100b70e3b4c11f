// Package tenantd is the root of the tenantd module. It exposes the public API
// contract (openapi.yaml) so the server can serve it and tests can load it.
package tenantd

import _ "embed"

// OpenAPISpec is the raw OpenAPI 3.0 document (YAML) describing the tenantd
// public REST API.
//
//go:embed openapi.yaml
var OpenAPISpec []byte
