package graphapi

// gqlgen rewrites exec.gen.go and models.gen.go; safegen puts them back
// when it fails, so the package stays buildable.
//go:generate go run ../../tools/safegen -files exec.gen.go,models.gen.go -- go tool gqlgen --config gqlgen.yml
//go:generate go run ../../tools/schemahash -o schema_hash.gen.go -pkg graphapi schema
