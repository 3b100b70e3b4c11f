package graphapi

//go:generate go tool gqlgen --config gqlgen.yml
