// Package typescript holds the TypeScript client generated from openapi.yaml; its Go test type-checks it and runs its smoke flow against a real server.
package typescript
