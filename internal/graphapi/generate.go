package graphapi

//go:generate go tool gqlgen --config gqlgen.yml
//go:generate go run ../../tools/schemahash -o schema_hash.gen.go -pkg graphapi schema
