package scenarios

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// Document is another YAML file valnet reads (a valnet crosscheck grid)
// decoded by the scenario's own strict decoder: every unknown key (with a
// did-you-mean), duplicate key and wrong type at once, each at its
// file:line:col. The caller's checks of what it decoded add their problems
// at the keys they concern (Fail), and Err returns all of them in file
// order.
type Document struct{ d *decoder }

// DecodeStrict decodes data (named file in messages; what names the kind
// of file: "crosscheck grid") into v, a pointer to a struct whose fields
// have yaml tags and are strings, int64, float64, bool, time.Duration,
// pointers to them, structs, slices or maps of names, as a scenario's raw
// types are. An empty file decodes to nothing. The problems are in the
// Document's Err, with the caller's own.
func DecodeStrict(file, what string, data []byte, v any) *Document {
	doc := &Document{d: newDecoder(file)}
	root, err := yamlRoot(file, what, data)
	if err != nil {
		es, _ := AsErrors(err) // yamlRoot's errors are Errors
		doc.d.errs = append(doc.d.errs, es...)
		doc.d.bad[""] = true // nothing was decoded: every key counts as failed
		return doc
	}
	if root == nil || isNull(root) {
		return doc
	}
	if root.Kind != yaml.MappingNode {
		doc.d.fail(doc.d.at(root), "", fmt.Sprintf("a %s is a mapping of keys, got %s", what, describe(root)))
		doc.d.bad[""] = true
		return doc
	}
	doc.d.pos[""] = nodePos{Key: doc.d.at(root), Value: doc.d.at(root)}
	doc.d.decode(root, "", reflect.ValueOf(v).Elem())
	return doc
}

// Written reports whether key (a path like cases[2].name) is in the file.
func (doc *Document) Written(key string) bool { return doc.d.written(key) }

// Failed reports whether key, or a key above it, already has a problem:
// a later check of it would only repeat that.
func (doc *Document) Failed(key string) bool { return doc.d.failed(key) }

// KeyPos is where key was written; for a key not in the file, where its
// nearest written parent is.
func (doc *Document) KeyPos(key string) Pos { return doc.d.keyPos(key) }

// Fail adds a problem of key's value, at where it was written (or, for a
// key not in the file, at its nearest written parent: where to add it).
func (doc *Document) Fail(key, msg string, allowed ...string) {
	doc.d.fail(doc.d.valuePos(key), key, msg, allowed...)
}

// Err is every problem found, in file order (Errors), or nil.
func (doc *Document) Err() error {
	if len(doc.d.errs) == 0 {
		return nil
	}
	return doc.d.errs.sorted()
}
