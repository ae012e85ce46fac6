package scenarios

import (
	_ "embed"
	"slices"
)

// schema.json describes schema v1 for YAML editors (yaml-language-server).
// It is generated from the raw types (schema.go: keys, doc comments, bounds)
// and the parser's tables (jsonschema_gen_test.go); TestJSONSchemaIsGenerated
// fails when it is not current. The parser, not the schema, is the
// authority on validity.
//
//go:generate go test -run TestJSONSchemaIsGenerated -update .
//go:embed schema.json
var jsonSchema []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of scenario files.
func JSONSchema() []byte { return slices.Clone(jsonSchema) }
