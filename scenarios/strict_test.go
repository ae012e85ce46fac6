package scenarios

import (
	"testing"
)

// TestDecodeStrict decodes another kind of file with the scenario's
// decoder: unknown keys and wrong types at their positions, the caller's
// own problems at the key (or, for a key not written, where to add it),
// in file order.
func TestDecodeStrict(t *testing.T) {
	type item struct {
		Name *string `yaml:"name"`
	}
	type file struct {
		Title *string  `yaml:"title"`
		Size  *float64 `yaml:"size"`
		Items []item   `yaml:"items"`
	}
	tests := []struct {
		name, text string
		check      func(doc *Document, f *file)
		want       string
	}{
		{"good", "title: t\nsize: 2\nitems: [{name: a}]\n", func(doc *Document, f *file) {
			if *f.Title != "t" || *f.Size != 2 || *f.Items[0].Name != "a" || !doc.Written("items[0].name") || doc.Written("nope") {
				t.Errorf("decoded %+v", f)
			}
			if p := doc.KeyPos("items[0].name"); p != (Pos{File: "f.yaml", Line: 3, Col: 10}) {
				t.Errorf("items[0].name at %v", p)
			}
		}, ""},
		{"strict", "titel: t\nsize: big\nitems:\n  - {name: a, nam: b}\n", func(doc *Document, f *file) {
			if !doc.Failed("size") || doc.Failed("items[0].name") {
				t.Error("Failed: size should be, items[0].name not")
			}
			doc.Fail("title", "required")
			doc.Fail("items[0].name", "taken")
		}, `f.yaml:1:1: titel: unknown key; did you mean "title"? (allowed: title, size, items)
f.yaml:1:1: title: required
f.yaml:2:7: size: expected a number, got "big"
f.yaml:4:12: items[0].name: taken
f.yaml:4:15: items[0].nam: unknown key; did you mean "name"? (allowed: name)`},
		{"not a mapping", "- a\n", func(doc *Document, f *file) {
			if !doc.Failed("title") {
				t.Error("nothing decoded, yet title did not fail")
			}
		}, "f.yaml:1:1: a thing file is a mapping of keys, got a list"},
		{"syntax", "title: [\n", nil, "f.yaml:1:8: YAML syntax error: did not find expected node content"},
		{"empty", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f file
			doc := DecodeStrict("f.yaml", "thing file", []byte(tc.text), &f)
			if tc.check != nil {
				tc.check(doc, &f)
			}
			err := doc.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}
