package scenarios

import (
	_ "embed"
	"slices"
)

// schema.json describes schema v1 for YAML editors (yaml-language-server).
// TestJSONSchemaMatchesWalker checks it accepts exactly the keys the parser
// does; the parser, not the schema, is the authority on validity.
//
//go:embed schema.json
var jsonSchema []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of scenario files.
func JSONSchema() []byte { return slices.Clone(jsonSchema) }
