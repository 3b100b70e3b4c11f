package graphapi

import (
	"testing"

	"github.com/tenantd/tenantd/internal/graphapi/schemafiles"
)

// TestGeneratedCodeUpToDate guards against forgetting `make generate`
// after editing the schema: exec.gen.go must have been generated from
// schema/*.graphqls as they are (gqlgen embeds the files themselves, so
// what goes stale is the generated code; go:generate records the hash of
// the files it was generated from).
func TestGeneratedCodeUpToDate(t *testing.T) {
	sum, err := schemafiles.Hash("schema")
	if err != nil {
		t.Fatal(err)
	}
	if sum != generatedFrom {
		t.Fatal("internal/graphapi's generated code is stale: run `make generate` (or `go generate ./internal/graphapi`)")
	}
}
