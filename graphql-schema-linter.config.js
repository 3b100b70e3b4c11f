// graphql-schema-linter's configuration for internal/graphapi/schema
// (scripts/speclint.sh, in make lint and make test): every default rule
// but the three that sort, which would put a type's fields, an enum's
// values and an input's fields in alphabetical order:
//   - type-fields-sorted-alphabetically: a type's fields follow the REST
//     representation's order (id first, then its attributes, then its
//     relations and listings), so the schema reads like openapi.yaml and a
//     field's neighbours are the fields it goes with.
//   - enum-values-sorted-alphabetically: the values are in their own
//     order: a ticket's lifecycle (NEW to CLOSED), priorities from LOW to
//     URGENT, roles from OWNER down; alphabetical order would lose it.
//   - input-object-fields-sorted-alphabetically: an input's fields are in
//     the order of the REST request body and of the type they create.
module.exports = {
  schemaPaths: ['internal/graphapi/schema/*.graphqls'],
  rules: [
    'arguments-have-descriptions',
    'defined-types-are-used',
    'deprecations-have-a-reason',
    'descriptions-are-capitalized',
    'enum-values-all-caps',
    'enum-values-have-descriptions',
    'fields-are-camel-cased',
    'fields-have-descriptions',
    'input-object-values-are-camel-cased',
    'input-object-values-have-descriptions',
    'interface-fields-sorted-alphabetically',
    'relay-connection-arguments-spec',
    'relay-connection-types-spec',
    'relay-page-info-spec',
    'types-are-capitalized',
    'types-have-descriptions',
  ],
};
